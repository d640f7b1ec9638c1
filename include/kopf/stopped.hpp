// The stop flag of daemons and timers (`ctx.stopped`), Kopf's `stopped` kwarg.
//
//     void monitor(kopf::Context& ctx) {                 // a synchronous daemon (own thread)
//         while (!ctx.stopped) {
//             ctx.logger.info("field={}", ctx.spec["field"].dump());
//             ctx.stopped.wait(10s);                     // wakes at once when stopped
//         }
//     }
//     kopf::Task<void> monitor_async(kopf::Context& ctx) {  // a coroutine daemon (the loop)
//         while (!ctx.stopped) co_await ctx.stopped.wait(10s);
//     }
//
// Checking or waiting on the flag (and, in coroutine daemons, waking from `kopf::sleep`) is also
// when a daemon's `ctx.patch` is sent and its body views (`ctx.body`, `ctx.spec`, ...) are
// refreshed to the object's latest state: do not keep references into them across those points.
// Outside daemons and timers the flag is never set and wait() returns at once.
#pragma once

#include <chrono>
#include <coroutine>
#include <functional>
#include <kopf/task.hpp>
#include <memory>
#include <string>

namespace kopf {

/// A duration in seconds: `2.5`, `30`, or a std::chrono duration (`std::chrono::seconds(30)`).
struct Seconds {
    double value = 0;
    Seconds() = default;
    Seconds(double seconds) : value(seconds) {}  // NOLINT: implicit by design
    template <class Rep, class Period>
    Seconds(std::chrono::duration<Rep, Period> d)  // NOLINT: implicit by design
        : value(std::chrono::duration<double>(d).count()) {}
    operator double() const { return value; }  // NOLINT: implicit by design
};

/// Why a daemon or timer was asked to stop; several reasons may combine (Kopf's
/// DaemonStoppingReason).
enum class StopReason : unsigned {
    NONE = 0,
    DONE = 1 << 0,              ///< the daemon has exited, whatever the reason
    FILTERS_MISMATCH = 1 << 1,  ///< the object no longer matches the handler's filters
    RESOURCE_DELETED = 1 << 2,  ///< the object is marked for deletion
    OPERATOR_PAUSING = 1 << 3,  ///< the operator pauses (peering)
    OPERATOR_EXITING = 1 << 4,  ///< the operator exits
    DAEMON_SIGNALLED = 1 << 5,  ///< the graceful stop phase (cancellation_backoff) has begun
    DAEMON_CANCELLED = 1 << 6,  ///< the forced phase: coroutines are cancelled
    DAEMON_ABANDONED = 1 << 7,  ///< the framework gave up waiting; the daemon is orphaned
};
constexpr StopReason operator|(StopReason a, StopReason b) {
    return static_cast<StopReason>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr StopReason operator&(StopReason a, StopReason b) {
    return static_cast<StopReason>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
constexpr bool any(StopReason r) {
    return r != StopReason::NONE;
}
/// "RESOURCE_DELETED|DAEMON_SIGNALLED", or "NONE".
std::string to_string(StopReason reason);

namespace detail {
class StopFlag;  // the library's shared state of one daemon's flag
}

/// `ctx.stopped`: test it, wait on it, read why it was set.
class DaemonStopped {
  public:
    DaemonStopped() = default;
    explicit DaemonStopped(std::shared_ptr<detail::StopFlag> flag) : flag_(std::move(flag)) {}

    /// True once the daemon is asked to stop.
    explicit operator bool() const { return is_set(); }
    bool is_set() const;
    /// Why it was asked to stop (NONE while it runs).
    StopReason reason() const;

    /// The result of wait(): in a synchronous daemon, the wait is already over when wait()
    /// returns; in a coroutine daemon, `co_await` it. Converts to true if the flag is set.
    class Wait {
      public:
        explicit operator bool() const;
        bool await_ready() const noexcept { return done_; }
        template <class P>
        bool await_suspend(std::coroutine_handle<P> h) {
            cause_ = detail::current_cause();
            return suspend(h.promise().executor, h);
        }
        /// True if stopped, false on timeout. Throws kopf::CancelledError if the daemon is
        /// cancelled by force (cancellation_timeout).
        bool await_resume() const;

      private:
        friend class DaemonStopped;
        Wait(std::shared_ptr<detail::StopFlag> flag, double timeout, bool done)
            : flag_(std::move(flag)), timeout_(timeout), done_(done) {}
        bool suspend(Executor* executor, std::coroutine_handle<> h);
        std::shared_ptr<detail::StopFlag> flag_;
        double timeout_;
        bool done_;
        std::shared_ptr<const void> cause_{};  // the awaiting handler's object (task.hpp)
    };
    /// Wait until stopped or `timeout` passes (Kopf's `stopped.wait(10)`); without a timeout,
    /// until stopped.
    Wait wait(Seconds timeout) const;
    Wait wait() const;

    /// Calls `callback` once when the flag is set (at once if it is set already), on the
    /// thread that sets it (the operator's loop). Nothing happens for an empty flag.
    void on_set(std::function<void()> callback) const;

  private:
    std::shared_ptr<detail::StopFlag> flag_;
};

}  // namespace kopf
