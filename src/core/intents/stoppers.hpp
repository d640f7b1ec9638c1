// The stop flag of one daemon or timer (Kopf's intents/stoppers.py): set by the daemons engine on
// the loop, read and waited on by the daemon — on its own thread (synchronous daemons, blocking
// waits) or on the loop (coroutines, suspending waits).
#pragma once

#include <condition_variable>
#include <coroutine>
#include <functional>
#include <kopf/stopped.hpp>
#include <kopf/task.hpp>
#include <memory>
#include <mutex>
#include <vector>

namespace kopf::detail {

// Part of its daemon's allocation (one per daemon): nothing in it needs shared ownership of
// the flag itself, and a coroutine daemon's flag has no condition variable.
class StopFlag {
  public:
    /// How the daemon waits: BLOCKING on its own thread, or SUSPENDING as a coroutine.
    enum class Mode { BLOCKING, SUSPENDING };
    explicit StopFlag(Mode mode)
        : mode_(mode),
          changed_(mode == Mode::BLOCKING ? std::make_unique<std::condition_variable>() : nullptr) {
    }
    StopFlag(const StopFlag&) = delete;
    StopFlag& operator=(const StopFlag&) = delete;

    Mode mode() const { return mode_; }
    bool is_set() const;
    bool has(StopReason reason) const { return any(this->reason() & reason); }
    StopReason reason() const;
    /// Adds `reason`; the first one wakes every waiter. On the loop.
    void set(StopReason reason);
    /// The daemon is cancelled by force: its coroutine's waits throw kopf::CancelledError.
    bool cancelled() const { return has(StopReason::DAEMON_CANCELLED); }

    /// Blocks the calling thread until the flag is set or `timeout` seconds pass (forever if
    /// negative); true if set.
    bool wait_blocking(double timeout);
    /// Arranges for `h` to be resumed through `executor` when the flag is set or `timeout`
    /// seconds pass (never if negative); false if already set (do not suspend). On the loop.
    bool suspend(Executor& executor, std::coroutine_handle<> h, double timeout);
    /// Calls `callback` once when the flag is first set (at once if it is set already).
    void on_set(std::function<void()> callback);

    /// Runs at the daemon's own checks and waits of `ctx.stopped` (the engine refreshes the
    /// body views and sends the patch there); empty for flags of no daemon.
    std::function<void()> checkpoint;

  private:
    struct Waiter {
        std::coroutine_handle<> handle;
        bool resumed = false;
    };
    static void resume(const std::shared_ptr<Waiter>& waiter);

    const Mode mode_;
    mutable std::mutex mutex_;
    std::unique_ptr<std::condition_variable> changed_;  // BLOCKING only
    StopReason reason_ = StopReason::NONE;
    std::vector<std::pair<Executor*, std::shared_ptr<Waiter>>> waiters_;
    std::vector<std::function<void()>> callbacks_;
};

/// `co_await` until the flag is set or `timeout` passes, resumed through `executor` (the
/// engine's own waits: they neither throw on cancellation nor run the checkpoint).
struct FlagSleep {
    StopFlag& flag;
    Executor& executor;
    double timeout;
    bool await_ready() const { return timeout == 0 || flag.is_set(); }
    bool await_suspend(std::coroutine_handle<> h) { return flag.suspend(executor, h, timeout); }
    void await_resume() const noexcept {}
};

}  // namespace kopf::detail
