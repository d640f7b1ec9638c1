// Kubernetes Events as Kopf posts them: the body (Kopf's fields, its "Action?" action, its
// timestamps), the message cut to 1024 characters, and no Events about Events. The one builder of
// Event bodies: the operator's posting (core/engines/posting) and ApiClient::post_event use it.
#pragma once

#include <chrono>
#include <cstddef>
#include <kopf/json.hpp>
#include <optional>
#include <string>

namespace kopf::clients {

inline constexpr std::size_t max_event_message_length = 1024;

// Cuts a message longer than 1024 characters to its head + "..." + tail (1024 in total).
std::string cut_event_message(const std::string& message);

struct EventIdentity {
    std::string reporting_component = "kopf";   // settings.posting.reporting_component
    std::string reporting_instance = "dev";     // settings.posting.reporting_instance
    std::string name_prefix = "kopf-event-";    // settings.posting.event_name_prefix
    std::string default_namespace = "default";  // for cluster-scoped objects
};

// One Event to post: the namespace to post it into and the v1 Event body.
struct EventPost {
    std::string namespace_;
    json body;
};

// Kopf's Event body about `object` (a full object body or just its reference fields).
// Returns nothing for objects that are Events themselves (no events about events).
std::optional<EventPost> build_event(
    const json& object, const std::string& type, const std::string& reason,
    const std::string& message, const EventIdentity& identity = {},
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

}  // namespace kopf::clients
