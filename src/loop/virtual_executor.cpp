#include "loop/virtual_executor.hpp"

namespace kopf::loop {

void VirtualExecutor::run() {
    while (!ready_.empty() || !timers_.empty()) {
        while (!ready_.empty()) {
            auto fn = std::move(ready_.front());
            ready_.pop_front();
            fn();
        }
        if (!timers_.empty()) {
            auto it = timers_.begin();
            now_ = std::max(now_, it->first);
            auto fn = std::move(it->second);
            timers_.erase(it);
            fn();
        }
    }
}

void VirtualExecutor::run_until(double deadline) {
    for (;;) {
        while (!ready_.empty()) {
            auto fn = std::move(ready_.front());
            ready_.pop_front();
            fn();
        }
        if (timers_.empty() || timers_.begin()->first > deadline) break;
        auto it = timers_.begin();
        now_ = std::max(now_, it->first);
        auto fn = std::move(it->second);
        timers_.erase(it);
        fn();
    }
    now_ = std::max(now_, deadline);
}

}  // namespace kopf::loop
