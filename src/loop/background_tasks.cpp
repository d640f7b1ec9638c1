#include "loop/background_tasks.hpp"

#include <stdexcept>

#include "loop/cancellable_executor.hpp"

namespace kopf::loop {

// The executor of one background task: cancelled by its handle or at the operator's exit.
class TaskExecutor final : public CancellableExecutor {
  public:
    using CancellableExecutor::CancellableExecutor;
    bool cancelled() const override { return cancelled_; }
    void cancel() {
        if (cancelled_) return;
        cancelled_ = true;
        wake_pending();
    }

  private:
    bool cancelled_ = false;
};

}  // namespace kopf::loop

namespace kopf::detail {

using loop::TaskExecutor;

void BackgroundTasks::start(std::shared_ptr<detail::BackgroundTaskState> state, Task<void> task) {
    auto executor = std::make_shared<TaskExecutor>(loop_);
    state->executor = executor;
    state->tasks = weak_from_this();
    live_.insert(state);
    if (state->cancel_requested) executor->cancel();
    std::function<void(std::exception_ptr)> done = [self = shared_from_this(), state,
                                                    executor](std::exception_ptr error) {
        state->done = true;
        self->live_.erase(state);
        if (!error) return;
        try {
            std::rethrow_exception(error);
        } catch (const CancelledError&) {
            // The normal end of a cancelled task.
        } catch (...) {
            if (self->on_failure_) self->on_failure_(state->name, std::current_exception());
        }
    };
    kopf::start_detached(*executor, std::move(task), std::move(done));
}

bool BackgroundTasks::post(std::function<void()> fn) {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    loop_.post(std::move(fn));
    return true;
}

void BackgroundTasks::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
}

void BackgroundTasks::cancel(detail::BackgroundTaskState& state) {
    state.cancel_requested = true;
    if (state.executor) state.executor->cancel();
}

std::size_t BackgroundTasks::cancel_all() {
    const auto tasks = live_;  // a cancelled task may finish (and leave live_) at once
    for (const auto& state : tasks) cancel(*state);
    return tasks.size();
}

}  // namespace kopf::detail

namespace kopf {

void BackgroundTask::cancel() const {
    if (!state_ || state_->done || state_->cancel_requested.exchange(true)) return;
    auto tasks = state_->tasks.lock();
    if (!tasks) return;
    tasks->post([state = state_] {
        if (state->executor) detail::BackgroundTasks::cancel(*state);
    });
}

bool BackgroundTask::done() const {
    return !state_ || state_->done;
}

bool BackgroundTask::cancelled() const {
    return state_ && state_->cancel_requested;
}

const std::string& BackgroundTask::name() const {
    static const std::string none;
    return state_ ? state_->name : none;
}

namespace detail {

void Spawning::start(Executor* executor) {
    BackgroundTasks* tasks = executor ? executor->background_tasks() : nullptr;
    if (!tasks) {
        error_ = std::make_exception_ptr(std::logic_error(
            "kopf::spawn(" + name_ +
            ") needs a running operator's event loop: co_await it in an async handler, daemon, "
            "timer, activity or background task of the operator."));
        return;
    }
    auto state = std::make_shared<BackgroundTaskState>();
    state->name = std::move(name_);
    tasks->start(state, std::move(task_));
    started_ = BackgroundTask(std::move(state));
}

BackgroundTask Spawning::await_resume() {
    if (error_) std::rethrow_exception(error_);
    return std::move(started_);
}

}  // namespace detail
}  // namespace kopf
