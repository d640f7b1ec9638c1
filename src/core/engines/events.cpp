#include "core/engines/events.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

namespace kopf::runtime {

std::string cut_event_message(const std::string& message) {
    if (message.size() <= max_event_message_length) return message;
    const std::string infix = "...";
    const std::size_t head = max_event_message_length / 2 - infix.size() / 2;
    const std::size_t tail = max_event_message_length - head - infix.size();
    return message.substr(0, head) + infix + message.substr(message.size() - tail);
}

std::string event_type_for_level(LogLevel level) {
    switch (level) {
        case LogLevel::DEBUG:
            return "Debug";
        case LogLevel::INFO:
            return "Normal";
        case LogLevel::WARNING:
            return "Warning";
        case LogLevel::ERROR:
            return "Error";
        case LogLevel::CRITICAL:
            return "Fatal";
    }
    return "Normal";
}

std::optional<EventPost> build_event(const json& object, const std::string& type,
                                     const std::string& reason, const std::string& message,
                                     const EventIdentity& identity,
                                     std::chrono::system_clock::time_point now) {
    const json empty = json::object();
    const json& meta =
        object.contains("metadata") && object["metadata"].is_object() ? object["metadata"] : empty;
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

void EventQueue::push(EventPost post) {
    std::vector<std::function<void()>> wakeups;
    {
        std::lock_guard lock(mutex_);
        pending_.push_back(std::move(post));
        for (const auto& [id, wakeup] : wakeups_) wakeups.push_back(wakeup);
    }
    for (const auto& wakeup : wakeups) wakeup();
}

std::vector<EventPost> EventQueue::take_all() {
    std::lock_guard lock(mutex_);
    std::vector<EventPost> out;
    out.swap(pending_);
    return out;
}

void EventQueue::set_wakeup(std::function<void()> wakeup) {
    std::lock_guard lock(mutex_);
    wakeups_.clear();
    if (wakeup) wakeups_.emplace(next_wakeup_++, std::move(wakeup));
}

std::size_t EventQueue::add_wakeup(std::function<void()> wakeup) {
    std::lock_guard lock(mutex_);
    const std::size_t id = next_wakeup_++;
    if (wakeup) wakeups_.emplace(id, std::move(wakeup));
    return id;
}

void EventQueue::remove_wakeup(std::size_t id) {
    std::lock_guard lock(mutex_);
    wakeups_.erase(id);
}

}  // namespace kopf::runtime
