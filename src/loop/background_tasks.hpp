// Background coroutines on the operator's loop (kopf::spawn, Kopf's asyncio.create_task()): each
// runs on a cancellable executor of its own; the operator cancels those still running at its exit.
// Loop thread only, except where said.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <kopf/task.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace kopf::loop {
class TaskExecutor;
}

namespace kopf::detail {

class BackgroundTasks;

// One background task, shared by its public handles (kopf::BackgroundTask) and the loop.
struct BackgroundTaskState {
    std::string name;
    std::atomic<bool> done{false};
    std::atomic<bool> cancel_requested{false};  // any thread; acted upon on the loop
    std::weak_ptr<BackgroundTasks> tasks{};
    std::shared_ptr<loop::TaskExecutor> executor{};  // loop only
};

class BackgroundTasks : public std::enable_shared_from_this<BackgroundTasks> {
  public:
    // How a task's failure (any exception but kopf::CancelledError) is reported.
    using OnFailure = std::function<void(const std::string& name, std::exception_ptr error)>;

    BackgroundTasks(Executor& loop, OnFailure on_failure)
        : loop_(loop), on_failure_(std::move(on_failure)) {}

    // Starts the task (its state made by the caller, possibly on another thread).
    void start(std::shared_ptr<detail::BackgroundTaskState> state, Task<void> task);
    // Cancels one task: its pending and later waits throw kopf::CancelledError.
    static void cancel(detail::BackgroundTaskState& state);
    // Cancels every task still running; returns how many.
    std::size_t cancel_all();
    std::size_t running() const { return live_.size(); }

    // Any thread: runs `fn` on the loop unless the operator has ended (then false).
    bool post(std::function<void()> fn);
    // At the operator's end, before its loop goes: later posts are dropped.
    void close();

  private:
    std::mutex mutex_;  // guards closed_
    bool closed_ = false;
    Executor& loop_;
    OnFailure on_failure_;
    std::set<std::shared_ptr<detail::BackgroundTaskState>> live_;
};

}  // namespace kopf::detail
