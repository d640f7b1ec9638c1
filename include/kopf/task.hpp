// Coroutines for handlers without Asio in the public headers.
//
// `kopf::Task<T>` is a lazy coroutine type. Async handlers return it and may `co_await` other
// tasks and the awaitables below. The library bridges tasks to its event loop through the
// `kopf::Executor` interface, so operator files need only <coroutine>.
//
//     kopf::Task<kopf::json> create_fn(kopf::Context& ctx) {
//         co_await kopf::sleep(1.5);
//         co_return kopf::json{{"message", "slept well"}};
//     }
//
// Temporaries in co_await (the one rule for every coroutine, ours and yours): g++ 12 destroys
// a lambda's closure or a braced temporary (`Type{...}`, `{...}` as an argument) that is
// created inside a `co_await` expression twice. When the closure owns heap memory (a captured
// std::string, std::function or shared_ptr), that is a double free. Name such temporaries
// before the co_await; plain calls, named objects and `std::move(named)` are safe:
//
//     auto work = [data] { return crunch(data); };     // not: co_await run_blocking([data]...)
//     auto result = co_await kopf::run_blocking(std::move(work));
//
// Once named, an argument lives only as long as its name: a coroutine parameter taken by
// reference must bind to that named object itself, not to a temporary converted from it (a
// lambda passed for a `const std::function&` dangles at the first suspension). Coroutines
// take their arguments by value for this reason.
//
// The project's sources are checked for this by tests/lint/coroutine_temporaries_test.cpp.
#pragma once

#include <chrono>
#include <coroutine>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace kopf {

/// Thrown into a coroutine daemon that is cancelled by force (its `cancellation_timeout`), at
/// its pending `kopf::sleep` or `ctx.stopped.wait()` and at every later one (Kopf's
/// asyncio.CancelledError). Catch it to clean up; the daemon is not restarted.
class CancelledError : public std::runtime_error {
  public:
    CancelledError() : std::runtime_error("The coroutine is cancelled.") {}
};

namespace detail {
class BackgroundTasks;       // the operator's background tasks (the library's)
struct BackgroundTaskState;  // one of them

/// The object whose handler is running (Kopf's cause_var), opaque: kopf::adopt() and the other
/// hierarchy functions (kopf/hierarchies.hpp) use it when no owner is given. The library sets it
/// for each handler invocation; kopf's awaitables (kopf::sleep, kopf::run_blocking, API calls,
/// ctx.stopped.wait()) carry it across `co_await`, as a coroutine may resume anywhere.
std::shared_ptr<const void> current_cause() noexcept;
void set_current_cause(std::shared_ptr<const void> cause) noexcept;
}  // namespace detail

/// Where coroutines continue: implemented inside the library on top of the event loop
/// (and by a manual, virtual-time executor for tests).
class Executor {
  public:
    virtual ~Executor() = default;
    /// Run `fn` on the loop soon.
    virtual void post(std::function<void()> fn) = 0;
    /// Run `fn` on the loop after `seconds` (of the executor's clock).
    virtual void post_after(double seconds, std::function<void()> fn) = 0;
    /// The executor's clock, in seconds (steady time unless the executor keeps its own).
    virtual double now() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    /// Run blocking `work` on the worker pool (settings.execution.max_workers), then `done` on the
    /// loop.
    virtual void run_blocking(std::function<void()> work, std::function<void()> done) = 0;
    /// Whether the coroutines on this executor are cancelled (a daemon stopped by force): the
    /// awaitables then throw kopf::CancelledError when they resume.
    virtual bool cancelled() const { return false; }
    /// The operator's background tasks that kopf::spawn adds to; none outside an operator.
    virtual detail::BackgroundTasks* background_tasks() const { return nullptr; }
};

namespace detail {

struct PromiseBase {
    Executor* executor = nullptr;
    std::coroutine_handle<> continuation = nullptr;
    std::exception_ptr error;
};

struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) noexcept {
        auto next = self.promise().continuation;
        return next ? next : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
};

template <class T>
struct Storage {
    std::optional<T> value;
    template <class U>
    void return_value(U&& v) {
        value.emplace(std::forward<U>(v));
    }
    T take() { return std::move(*value); }
};

template <>
struct Storage<void> {
    void return_void() {}
    void take() {}
};

}  // namespace detail

/// A lazy coroutine producing a T (or void). Awaitable from other tasks.
template <class T = void>
class [[nodiscard]] Task {
  public:
    struct promise_type : detail::PromiseBase, detail::Storage<T> {
        Task get_return_object() {
            return Task(std::coroutine_handle<promise_type>::from_promise(*this));
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        detail::FinalAwaiter final_suspend() noexcept { return {}; }
        void unhandled_exception() { this->error = std::current_exception(); }
    };

    Task() = default;
    explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
    Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    Task& operator=(Task&& other) noexcept {
        if (this != &other) {
            if (handle_) handle_.destroy();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    ~Task() {
        if (handle_) handle_.destroy();
    }

    bool await_ready() const noexcept { return !handle_ || handle_.done(); }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
        handle_.promise().executor = parent.promise().executor;
        handle_.promise().continuation = parent;
        return handle_;
    }
    T await_resume() {
        if (handle_.promise().error) std::rethrow_exception(handle_.promise().error);
        return handle_.promise().take();
    }

    /// Low-level access for the library's executors.
    std::coroutine_handle<promise_type> handle() const noexcept { return handle_; }

  private:
    std::coroutine_handle<promise_type> handle_ = nullptr;
};

namespace detail {

struct Detached {
    struct promise_type : PromiseBase {
        template <class... Args>
        explicit promise_type(Executor& ex, Args&&...) {
            executor = &ex;
        }
        Detached get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

template <class T>
Detached run_detached(Executor& /*ex*/, Task<T> task,
                      std::function<void(std::exception_ptr, std::optional<T>)> done) {
    std::exception_ptr error;
    std::optional<T> value;
    try {
        value.emplace(co_await task);
    } catch (...) {
        error = std::current_exception();
    }
    done(error, std::move(value));
}

inline Detached run_detached_void(Executor& /*ex*/, Task<void> task,
                                  std::function<void(std::exception_ptr)> done) {
    std::exception_ptr error;
    try {
        co_await task;
    } catch (...) {
        error = std::current_exception();
    }
    done(error);
}

}  // namespace detail

/// Start a task on an executor; `done` receives the exception (if any) or the value. The
/// library's own starting of coroutines; operator code uses `co_await kopf::spawn(task)`.
template <class T>
void start_detached(Executor& ex, Task<T> task,
                    std::function<void(std::exception_ptr, std::optional<T>)> done) {
    ex.post(
        [&ex, t = std::make_shared<Task<T>>(std::move(task)), done = std::move(done)]() mutable {
            detail::run_detached<T>(ex, std::move(*t), std::move(done));
        });
}

/// Start a void task on an executor; `done` receives the exception, if any.
inline void start_detached(Executor& ex, Task<void> task,
                           std::function<void(std::exception_ptr)> done) {
    ex.post(
        [&ex, t = std::make_shared<Task<void>>(std::move(task)), done = std::move(done)]() mutable {
            detail::run_detached_void(ex, std::move(*t), std::move(done));
        });
}

/// A handle of a background task started with `kopf::spawn(task)`. Cheap to copy; the task
/// runs whether or not any handle is kept.
class BackgroundTask {
  public:
    BackgroundTask() = default;
    explicit BackgroundTask(std::shared_ptr<detail::BackgroundTaskState> state)
        : state_(std::move(state)) {}

    /// Cancels the task (from any thread): its pending `kopf::sleep` or stop-flag wait, and
    /// every later one, throw kopf::CancelledError (Kopf's task.cancel()). No effect once done.
    void cancel() const;
    /// True once the task has ended: returned, failed or cancelled.
    bool done() const;
    /// True once cancel() was called or the operator cancelled it at its exit.
    bool cancelled() const;
    /// The name given to kopf::spawn (for log lines).
    const std::string& name() const;

  private:
    std::shared_ptr<detail::BackgroundTaskState> state_;
};

namespace detail {
// What `co_await kopf::spawn(...)` awaits: starts the task on the awaiting coroutine's loop.
class Spawning {
  public:
    Spawning(Task<void> task, std::string name) : task_(std::move(task)), name_(std::move(name)) {}
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
        start(h.promise().executor);
        return false;  // goes on at once
    }
    BackgroundTask await_resume();

  private:
    void start(Executor* executor);
    Task<void> task_;
    std::string name_;
    BackgroundTask started_{};
    std::exception_ptr error_{};
};
}  // namespace detail

/// `co_await kopf::spawn(task)`: starts a coroutine in the background on the operator's event
/// loop and goes on at once (Kopf's asyncio.create_task()). Call it from a coroutine of the
/// operator: an async handler, daemon, timer, activity, or another background task.
///
///     kopf::Task<void> pod_killer(kopf::Api pods, std::string name, double timeout);
///     kopf::Task<void> pod_in_sight(kopf::Context& ctx) {
///         kopf::BackgroundTask killer = co_await kopf::spawn(
///             pod_killer(ctx.api("pods", ctx.namespace_), ctx.name, 30), "pod-killer");
///         ...   // keep `killer` to cancel it later: killer.cancel()
///     }
///
/// A task that throws is logged with its name (kopf::CancelledError ends it quietly). At the
/// operator's exit, tasks still running get 5 seconds to finish, then are cancelled; the API
/// client closes after them. Outside an operator's coroutine the co_await throws
/// std::logic_error.
inline detail::Spawning spawn(Task<void> task, std::string name = "background task") {
    return detail::Spawning(std::move(task), std::move(name));
}

/// `co_await kopf::sleep(seconds)`: suspend the coroutine without blocking the loop.
/// In a daemon cancelled by force, it wakes at once and throws kopf::CancelledError.
struct sleep {
    double seconds;
    Executor* executor = nullptr;
    std::shared_ptr<const void> cause = nullptr;
    explicit sleep(double s) : seconds(s) {}
    template <class Rep, class Period>
    explicit sleep(std::chrono::duration<Rep, Period> d)
        : seconds(std::chrono::duration<double>(d).count()) {}
    bool await_ready() const noexcept { return seconds <= 0; }
    template <class P>
    void await_suspend(std::coroutine_handle<P> h) {
        executor = h.promise().executor;
        cause = detail::current_cause();
        executor->post_after(seconds, [h] { h.resume(); });
    }
    void await_resume() const {
        if (executor) detail::set_current_cause(cause);
        if (executor && executor->cancelled()) throw CancelledError();
    }
};

/// `co_await kopf::run_blocking(fn)`: run a blocking function on the worker pool.
/// Pass a named function object (see "Temporaries in co_await" above).
template <class F>
struct run_blocking {
    F fn;
    using R = decltype(fn());
    std::conditional_t<std::is_void_v<R>, std::monostate, std::optional<R>> result;
    std::exception_ptr error;
    std::shared_ptr<const void> cause = nullptr;
    explicit run_blocking(F f) : fn(std::move(f)) {}
    bool await_ready() const noexcept { return false; }
    template <class P>
    void await_suspend(std::coroutine_handle<P> h) {
        cause = detail::current_cause();
        h.promise().executor->run_blocking(
            [this] {
                // The worker thread works for the awaiting coroutine: the same current object.
                const auto previous = detail::current_cause();
                detail::set_current_cause(cause);
                try {
                    if constexpr (std::is_void_v<R>) {
                        fn();
                    } else {
                        result.emplace(fn());
                    }
                } catch (...) {
                    error = std::current_exception();
                }
                detail::set_current_cause(previous);
            },
            [h] { h.resume(); });
    }
    R await_resume() {
        detail::set_current_cause(cause);
        if (error) std::rethrow_exception(error);
        if constexpr (!std::is_void_v<R>) return std::move(*result);
    }
};

}  // namespace kopf
