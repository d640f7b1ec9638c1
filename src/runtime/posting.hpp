// Posting Kubernetes Events from handlers: kopf::event / info / warn / exception put Events
// into the running operator's queue; its poster sends them asynchronously (serving.cpp).
// Outside a running operator the Events are queued until one starts.
#pragma once

#include <kopf/json.hpp>
#include <string>

#include "runtime/events.hpp"

namespace kopf::runtime {

EventQueue& posting_queue();
// The identity of posted Events (settings.posting) and whether explicit posting is enabled.
void set_posting_identity(EventIdentity identity, bool enabled);
// Queues one Event per object (`objects` is one body or an array of bodies).
void post_event(const json& objects, const std::string& type, const std::string& reason,
                const std::string& message);

}  // namespace kopf::runtime

namespace kopf {

// Kopf's kopf.event(): an Event of any type about one object or an array of objects.
void event(const json& objects, const std::string& type, const std::string& reason,
           const std::string& message);
// type "Normal"
void info(const json& objects, const std::string& reason, const std::string& message);
// type "Warning"
void warn(const json& objects, const std::string& reason, const std::string& message);
// type "Error"; the message gets the current exception's text appended; the reason defaults to
// the exception's type name.
void exception(const json& objects, const std::string& reason = "",
               const std::string& message = "");

}  // namespace kopf
