// Kubernetes Events about objects (Kopf's "Events"): the body Kopf posts, the message cut,
// the mapping of log levels to event types, and the queue that posts them asynchronously.
// Posting failures are logged and never stop the operator; Events about Events are never posted.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kopf::runtime {

inline constexpr std::size_t max_event_message_length = 1024;

// Cuts a message longer than 1024 characters to its head + "..." + tail (1024 in total).
std::string cut_event_message(const std::string& message);

// "Debug", "Normal", "Warning", "Error", "Fatal" for log-derived events (reason "Logging").
std::string event_type_for_level(LogLevel level);

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

// A thread-safe queue of Events waiting to be posted by the operator's poster.
class EventQueue {
  public:
    void push(EventPost post);
    std::vector<EventPost> take_all();
    // Called (from the pushing thread) after each push: the runtime wakes its poster with it.
    // Replaces every wake-up installed before; nullptr removes them all.
    void set_wakeup(std::function<void()> wakeup);
    // One more wake-up next to the others (several posters may serve one queue: whichever
    // takes the Events posts them); returns its id for remove_wakeup().
    std::size_t add_wakeup(std::function<void()> wakeup);
    void remove_wakeup(std::size_t id);

  private:
    std::mutex mutex_;
    std::vector<EventPost> pending_;
    std::map<std::size_t, std::function<void()>> wakeups_;
    std::size_t next_wakeup_ = 0;
};

}  // namespace kopf::runtime
