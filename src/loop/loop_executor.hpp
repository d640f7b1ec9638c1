// The operator's event loop as a kopf::Executor: coroutines continue on the loop's thread, timers
// are Asio timers, and blocking work (synchronous handlers) runs in a bounded pool of threads.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <kopf/task.hpp>
#include <map>
#include <optional>
#include <vector>

#include "loop/blocking_pool.hpp"

namespace kopf::loop {

class LoopExecutor final : public kopf::Executor {
  public:
    // `around_blocking` wraps every piece of blocking work on its worker thread (the operator
    // installs its per-thread state there, e.g. where its handlers' Events go); may be empty.
    LoopExecutor(boost::asio::io_context& io, std::size_t workers,
                 std::function<void(const std::function<void()>&)> around_blocking = {});
    ~LoopExecutor() override;
    LoopExecutor(const LoopExecutor&) = delete;
    LoopExecutor& operator=(const LoopExecutor&) = delete;

    void post(std::function<void()> fn) override;
    void post_after(double seconds, std::function<void()> fn) override;
    void run_blocking(std::function<void()> work, std::function<void()> done) override;
    detail::BackgroundTasks* background_tasks() const override { return background_tasks_; }
    // Where kopf::spawn puts the operator's background tasks (they must outlive this executor's
    // use by coroutines).
    void set_background_tasks(detail::BackgroundTasks* tasks) { background_tasks_ = tasks; }

    // At the end of the operator: pending delays (idle workers, wake-ups) will never fire.
    void cancel_timers();
    // Blocking work still running in the pool.
    std::size_t blocking() const { return blocking_; }
    // At most this many synchronous handlers at once (settings.execution.max_workers, which
    // startup handlers may change after the pool is made).
    void set_max_workers(std::size_t workers) { pool_.set_limit(workers); }
    // Waits for the blocking work still running; nothing new may be started after it.
    void join() { pool_.join(); }

  private:
    boost::asio::io_context& io_;
    BlockingPool pool_;
    std::function<void(const std::function<void()>&)> around_blocking_;
    std::atomic<std::size_t> blocking_{0};
    // Delays (post_after) wait in buckets of one millisecond, all behind one Asio timer armed for
    // the earliest: 10,000 timers ticking every second cost one wake-up of the loop per busy
    // millisecond rather than one per timer, and no timer object of their own.
    using TickDuration = std::chrono::milliseconds;
    using Tick = TickDuration::rep;  // milliseconds of the steady clock
    void arm();
    void fire();
    std::map<Tick, std::vector<std::function<void()>>> due_;
    boost::asio::steady_timer wheel_;
    std::optional<Tick> armed_for_;  // the bucket the timer is armed for, if it is
    bool firing_ = false;            // fire() arms the timer once at its end
    bool cancelled_ = false;
    detail::BackgroundTasks* background_tasks_ = nullptr;
};

// Runs one coroutine to completion on the loop, driving it from the calling thread (before and
// after the operator serves); rethrows the coroutine's exception.
void run_to_completion(boost::asio::io_context& io, LoopExecutor& executor, Task<void> task);

// Sleeps while the loop keeps running (its other work goes on).
void sleep_on_loop(boost::asio::io_context& io, double seconds);

// Drives the operator's loop from this thread until `stop` is set by what runs on it.
//
// With a coalescing window (seconds, > 0; settings.queueing.coalescing_window), the thread
// batches its wake-ups while that pays off: once everything ready has run, it sleeps for the
// window and then runs what arrived meanwhile (watch events, API answers, handlers' results) in
// one go, for as long as each window brings a batch worth the wait. When one brings less (a
// lone chain of requests, each waiting for the last one's answer, or a quiet operator), the
// thread waits for work as usual and tries a window again only after many ordinary wake-ups (or
// a second), so such a chain is slowed by one window per that many steps. Returns the windows
// slept.
std::size_t run_until_stopped(boost::asio::io_context& io, const std::atomic<bool>& stop,
                              double coalescing_window);

}  // namespace kopf::loop
