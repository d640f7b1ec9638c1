#include "clients/lines.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "clients/errors.hpp"
#include "clients/json_codec.hpp"

namespace kopf::clients {

void LineSplitter::throw_too_long() const {
    throw std::length_error(
        fmt::format("A line in the stream exceeds {} bytes without a line break", max_line_bytes_));
}

namespace {
std::string string_field(const json& object, const char* key) {
    if (!object.is_object()) return {};
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}
}  // namespace

WatchLine decode_watch_line(std::string_view line, const std::string& stream) {
    json event = parse_json_or_discarded(line);
    if (event.is_discarded() || !event.is_object() || !event.contains("object")) {
        throw WatchingError(fmt::format("Malformed line in the watch stream of {}: {}", stream,
                                        std::string(line.substr(0, 200))));
    }
    WatchLine decoded;
    decoded.type = string_field(event, "type");
    decoded.object = std::move(event["object"]);
    if (decoded.object.is_object()) {
        const auto meta = decoded.object.find("metadata");
        if (meta != decoded.object.end())
            decoded.resource_version = string_field(*meta, "resourceVersion");
    }
    return decoded;
}

std::pair<int, std::string> watch_error_status(const json& object) {
    int code = 0;
    if (object.is_object()) {
        const auto found = object.find("code");
        if (found != object.end() && found->is_number_integer()) code = found->get<int>();
    }
    return {code, string_field(object, "message")};
}

}  // namespace kopf::clients
