// A single-threaded executor with a virtual clock: posts run in order, timers fire in time
// order without real waiting, blocking work runs inline. For tests and simulations.
#pragma once

#include <deque>
#include <functional>
#include <kopf/task.hpp>
#include <map>

namespace kopf::loop {

class VirtualExecutor final : public Executor {
  public:
    void post(std::function<void()> fn) override { ready_.push_back(std::move(fn)); }
    void post_after(double seconds, std::function<void()> fn) override {
        if (seconds > 0) ++timers_set_;
        timers_.emplace(now_ + (seconds > 0 ? seconds : 0), std::move(fn));
    }
    void run_blocking(std::function<void()> work, std::function<void()> done) override {
        work();
        post(std::move(done));
    }
    /// Run until nothing is left; the virtual clock jumps to each timer's due time.
    void run();
    /// Run what is due until `deadline` (timers in time order), then set the clock to it.
    void run_until(double deadline);
    /// Run what is due in the next `seconds` of virtual time, then set the clock to their end.
    void advance(double seconds) { run_until(now_ + seconds); }
    double now() const override { return now_; }
    /// How many functions were posted with a delay: the wake-ups a real loop's timer would make.
    unsigned long timers_set() const { return timers_set_; }

  private:
    std::deque<std::function<void()>> ready_;
    std::multimap<double, std::function<void()>> timers_;
    double now_ = 0;
    unsigned long timers_set_ = 0;
};

/// Run a task to completion on a fresh virtual executor; rethrows its exception.
template <class T>
T run_sync(Task<T> task) {
    VirtualExecutor ex;
    std::exception_ptr error;
    std::optional<T> value;
    start_detached<T>(ex, std::move(task), [&](std::exception_ptr e, std::optional<T> v) {
        error = e;
        value = std::move(v);
    });
    ex.run();
    if (error) std::rethrow_exception(error);
    return std::move(*value);
}

}  // namespace kopf::loop
