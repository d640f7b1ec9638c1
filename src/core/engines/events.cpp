#include "core/engines/events.hpp"

namespace kopf::runtime {

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
