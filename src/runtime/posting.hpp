// Posting Kubernetes Events from handlers: kopf::event / info / warn / exception put Events
// into the running operator's queue; its poster sends them asynchronously (serving.cpp).
// Outside a running operator the Events are queued until one starts.
#pragma once

#include <kopf/events.hpp>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <string>

#include "runtime/events.hpp"

namespace kopf::runtime {

EventQueue& posting_queue();
// The identity of posted Events (settings.posting) and whether explicit posting is enabled.
void set_posting_identity(EventIdentity identity, bool enabled);
// settings.posting.level: the least level of explicit info()/warn()/exception() Events posted.
void set_posting_level(LogLevel level);
// Queues one Event per object (`objects` is one body or an array of bodies, nested or not),
// if posting is enabled and `level` (the level an Event of this kind stands for) is at least
// settings.posting.level.
void post_event(const json& objects, const std::string& type, const std::string& reason,
                const std::string& message, LogLevel level = LogLevel::CRITICAL);

}  // namespace kopf::runtime
