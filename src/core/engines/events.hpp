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

#include "clients/events.hpp"

namespace kopf::runtime {

// The Event bodies are built by the client layer (clients/events.hpp).
using clients::build_event;
using clients::cut_event_message;
using clients::EventIdentity;
using clients::EventPost;
using clients::max_event_message_length;

// "Debug", "Normal", "Warning", "Error", "Fatal" for log-derived events (reason "Logging").
std::string event_type_for_level(LogLevel level);

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
