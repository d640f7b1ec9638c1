// Kubernetes Events (Kopf's clients/events.py): the Event bodies Kopf posts, and posting one
// through the client (ApiClient::post_event).
#include "clients/events.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <stdexcept>

#include "clients/api.hpp"
#include "clients/api_impl.hpp"

namespace kopf::clients {

std::string cut_event_message(const std::string& message) {
    if (message.size() <= max_event_message_length) return message;
    const std::string infix = "...";
    const std::size_t head = max_event_message_length / 2 - infix.size() / 2;
    const std::size_t tail = max_event_message_length - head - infix.size();
    return message.substr(0, head) + infix + message.substr(message.size() - tail);
}

std::optional<EventPost> build_event(const json& object, const std::string& type,
                                     const std::string& reason, const std::string& message,
                                     const EventIdentity& identity,
                                     std::chrono::system_clock::time_point now) {
    // A whole body, or an ObjectReference with its name, uid and namespace at the top level.
    const json& meta =
        object.contains("metadata") && object["metadata"].is_object() ? object["metadata"] : object;
    const std::string api_version = object.value("apiVersion", "");
    const std::string kind = object.value("kind", "");
    if (kind == "Event" && (api_version == "v1" || api_version == "events.k8s.io/v1")) {
        return std::nullopt;  // no events about events: they would loop
    }
    const std::string object_namespace = meta.value("namespace", "");
    const std::string namespace_ =
        object_namespace.empty() ? identity.default_namespace : object_namespace;

    const auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(now);
    const auto micros =
        std::chrono::duration_cast<std::chrono::microseconds>(now - seconds).count();
    const std::time_t time = std::chrono::system_clock::to_time_t(seconds);
    std::tm utc{};
    gmtime_r(&time, &utc);
    const std::string timestamp =
        fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}+00:00", utc, static_cast<int>(micros));

    json involved = {{"apiVersion", api_version},
                     {"kind", kind},
                     {"name", meta.value("name", "")},
                     {"uid", meta.value("uid", "")},
                     {"namespace", object_namespace}};
    json body = {
        {"metadata", {{"namespace", namespace_}, {"generateName", identity.name_prefix}}},
        {"action", "Action?"},
        {"type", type},
        {"reason", reason},
        {"message", cut_event_message(message)},
        {"reportingComponent", identity.reporting_component},
        {"reportingInstance", identity.reporting_instance},
        {"source", {{"component", identity.reporting_component}}},
        {"involvedObject", std::move(involved)},
        {"firstTimestamp", timestamp},
        {"lastTimestamp", timestamp},
        {"eventTime", timestamp},
    };
    return EventPost{namespace_, std::move(body)};
}

Awaitable<json> ApiClient::post_event(json involved, std::string type, std::string reason,
                                      std::string message, std::string source_component) {
    EventIdentity identity;
    identity.reporting_component = source_component;
    auto post = build_event(involved, type, reason, message, identity);
    if (!post) {
        throw std::invalid_argument("No Events are posted about Events: they would loop.");
    }
    structs::Resource events;
    events.version = "v1";
    events.plural = "events";
    events.kind = "Event";
    const std::string path = events.path(post->namespace_);
    co_return co_await impl_->call("POST", path, post->body, "application/json");
}

}  // namespace kopf::clients
