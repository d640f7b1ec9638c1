// A virtual-time kopf::Executor for runtime tests: nothing runs until the test advances time.
#pragma once

#include <functional>
#include <kopf/task.hpp>
#include <map>
#include <utility>

namespace kopf::testing {

class ManualExecutor final : public kopf::Executor {
  public:
    void post(std::function<void()> fn) override { post_after(0, std::move(fn)); }
    void post_after(double seconds, std::function<void()> fn) override {
        if (seconds > 0) ++timers_set_;
        queue_.emplace(std::make_pair(now_ + seconds, next_++), std::move(fn));
    }
    void run_blocking(std::function<void()> work, std::function<void()> done) override {
        work();
        post(std::move(done));
    }
    // Runs everything due up to now + seconds, in time order.
    void advance(double seconds) {
        const double until = now_ + seconds;
        while (!queue_.empty() && queue_.begin()->first.first <= until) {
            auto node = queue_.extract(queue_.begin());
            now_ = node.key().first;
            node.mapped()();
        }
        now_ = until;
    }
    double now() const override { return now_; }
    // How many times a delayed function was scheduled: a real loop's timer wake-ups.
    unsigned long timers_set() const { return timers_set_; }

  private:
    double now_ = 0;
    unsigned long next_ = 0;
    unsigned long timers_set_ = 0;
    std::multimap<std::pair<double, unsigned long>, std::function<void()>> queue_;
};

}  // namespace kopf::testing
