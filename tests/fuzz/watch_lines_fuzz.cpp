// Fuzz target: a watch stream as the API client reads it. Arbitrary bytes arrive in chunks of
// arbitrary sizes and are split into lines; each line is decoded as a watch event (only a
// WatchingError may come out of that) and goes through the JSON codec: the parser, the two
// resourceVersion scanners that run before any parse, and the serializer, which must write
// exactly what nlohmann's dump() writes and read back as the same value. The lines of one
// input are also parsed in place, one after the other, into one tree (as the daemons' views
// take the events of an object): after each, the tree is what parse_json() gives of the line's
// object, or, for a line without one, exactly what it was. A second tree takes the same lines
// with the previous object's text remembered (values whose text did not change passed over):
// it must stay the same as the first.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "clients/errors.hpp"
#include "clients/json_codec.hpp"
#include "clients/json_in_place.hpp"
#include "clients/lines.hpp"
#include "fuzz/support/fuzz.hpp"

namespace {

using kopf::fuzz::violated;

kopf::json views;         // the tree the lines of one input are parsed into
kopf::json walked_views;  // the same, with the text of the previous object remembered
kopf::clients::RememberedText remembered;

void check_remembered(std::string_view line) {
    const std::string before = walked_views.dump();
    const std::string text_before = remembered.text;
    try {
        (void)kopf::clients::parse_event_object_in_place(line, walked_views, {}, {}, &remembered);
    } catch (const std::invalid_argument&) {
        if (walked_views.dump() != before || remembered.text != text_before)
            violated("a refused line changed the tree or the text remembered", line);
    }
    if (walked_views.dump() != views.dump())
        violated("the tree walked beside the remembered text differs", line);
}

void check_in_place(std::string_view line, const kopf::json& value) {
    const std::string before = views.dump();
    const bool has_object = !value.is_discarded() && value.is_object() &&
                            value.contains("object") && value["object"].is_object();
    try {
        (void)kopf::clients::parse_event_object_in_place(line, views, {}, {});
    } catch (const std::invalid_argument&) {
        if (has_object) violated("parse_event_object_in_place() refuses an event", line);
        if (views.dump() != before) violated("a refused line changed the tree", line);
        return;
    }
    if (!has_object)
        violated("parse_event_object_in_place() accepts a line without an object", line);
    if (views.dump() != value["object"].dump())
        violated("the tree parsed in place differs from the parsed object", line);
}

void check_line(std::string_view line) {
    using namespace kopf::clients;
    try {
        const WatchLine event = decode_watch_line(line, "fuzzed stream");
        if (event.type == "ERROR") (void)watch_error_status(event.object);
    } catch (const WatchingError&) {
    }
    (void)find_resource_version(line);
    (void)sole_resource_version(line);
    (void)kopf::clients::sole_uid(line);
    const kopf::json value = parse_json_or_discarded(line);
    check_in_place(line, value);
    check_remembered(line);
    if (value.is_discarded()) {
        try {
            (void)parse_json(line);
            violated("parse_json() accepts a line that parse_json_or_discarded() refuses");
        } catch (const std::invalid_argument&) {
        }
        return;
    }
    std::string fast;
    std::string slow;
    bool fast_failed = false;
    bool slow_failed = false;
    try {
        fast = dump_json(value);
    } catch (const kopf::json::exception&) {
        fast_failed = true;
    }
    try {
        slow = value.dump();
    } catch (const kopf::json::exception&) {
        slow_failed = true;
    }
    if (fast_failed != slow_failed || fast != slow)
        violated("dump_json() differs from dump()", line);
    if (!fast_failed && parse_json(fast) != value)
        violated("a dumped value reads back changed", line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    // The first byte sets the chunk size, as reads from a socket cut the stream anywhere.
    const std::size_t chunk = 1 + data[0] % 64;
    const std::string_view stream = kopf::fuzz::as_text(data + 1, size - 1);
    // A small line limit, so that the too-long-line path is reached too.
    kopf::clients::LineSplitter splitter(2048);
    views = kopf::json::object();
    walked_views = kopf::json::object();
    remembered.clear();
    try {
        for (std::size_t at = 0; at < stream.size(); at += chunk)
            splitter.feed(stream.substr(at, chunk), check_line);
    } catch (const std::length_error&) {
        return 0;  // documented: a line over the limit is a broken stream
    }
    if (!splitter.tail().empty()) check_line(splitter.tail());
    return 0;
}
