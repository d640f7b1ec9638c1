#include "loop/loop_executor.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <exception>
#include <iterator>
#include <thread>

namespace asio = boost::asio;

namespace kopf::loop {

namespace {
// A delay of a century stands for "never" (an infinite setting): nanoseconds since the clock's
// epoch must not overflow. Negative and NaN delays are none.
constexpr double kLongestDelay = 100.0 * 365 * 24 * 3600;
std::chrono::steady_clock::duration duration_of(double seconds) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::min(std::max(0.0, seconds), kLongestDelay)));
}
}  // namespace

LoopExecutor::LoopExecutor(asio::io_context& io, std::size_t workers,
                           std::function<void(const std::function<void()>&)> around_blocking)
    : io_(io), pool_(workers), around_blocking_(std::move(around_blocking)), wheel_(io) {}

LoopExecutor::~LoopExecutor() {
    pool_.join();
    // Pending delays go while the members are whole: a callback's captures may ask for more on
    // their way out (ignored now).
    cancel_timers();
}

void LoopExecutor::post(std::function<void()> fn) {
    asio::post(io_, std::move(fn));
}

void LoopExecutor::post_after(double seconds, std::function<void()> fn) {
    if (cancelled_) return;
    // Rounded up: never earlier than asked, and every delay due in the same millisecond is one
    // entry of the same bucket.
    const auto deadline = std::chrono::steady_clock::now() + duration_of(seconds);
    const Tick tick = std::chrono::ceil<TickDuration>(deadline.time_since_epoch()).count();
    due_[tick].push_back(std::move(fn));
    if (!firing_ && (!armed_for_ || tick < *armed_for_)) arm();
}

void LoopExecutor::arm() {
    if (due_.empty()) {
        armed_for_.reset();
        return;
    }
    const Tick tick = due_.begin()->first;
    armed_for_ = tick;
    // Re-arming cancels the wait armed before (its handler sees operation_aborted).
    wheel_.expires_at(std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(TickDuration(tick))));
    wheel_.async_wait([this](const boost::system::error_code& ec) {
        if (ec != asio::error::operation_aborted) fire();
    });
}

void LoopExecutor::fire() {
    armed_for_.reset();
    firing_ = true;
    // Armed again once, for what is left, however this ends (a callback may throw out of it).
    struct Rearm {
        LoopExecutor& self;
        ~Rearm() {
            self.firing_ = false;
            if (!self.cancelled_) self.arm();
        }
    } rearm{*this};
    const Tick now =
        std::chrono::floor<TickDuration>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    // One bucket at a time, taken out first: its callbacks may add delays (even to a bucket
    // due now, which this loop then runs too).
    while (!cancelled_ && !due_.empty() && due_.begin()->first <= now) {
        const Tick tick = due_.begin()->first;
        auto bucket = std::move(due_.begin()->second);
        due_.erase(due_.begin());
        for (auto fn = bucket.begin(); fn != bucket.end() && !cancelled_; ++fn) {
            try {
                (*fn)();
            } catch (...) {
                // The rest of the bucket stays due, ahead of what its callbacks added: whoever
                // runs the loop decides whether it goes on.
                auto& rest = due_[tick];
                rest.insert(rest.begin(), std::make_move_iterator(std::next(fn)),
                            std::make_move_iterator(bucket.end()));
                throw;
            }
        }
    }
}

void LoopExecutor::cancel_timers() {
    cancelled_ = true;
    armed_for_.reset();
    wheel_.cancel();
    // Destroyed outside the map: a callback's captures may post on their way out.
    auto dropped = std::move(due_);
    due_.clear();
}

void LoopExecutor::run_blocking(std::function<void()> work, std::function<void()> done) {
    ++blocking_;
    try {
        pool_.submit([this, work = std::move(work), done = std::move(done)]() mutable {
            if (around_blocking_) {
                around_blocking_(work);
            } else {
                work();
            }
            --blocking_;
            asio::post(io_, std::move(done));
        });
    } catch (...) {
        --blocking_;
        throw;
    }
}

void run_to_completion(asio::io_context& io, LoopExecutor& executor, Task<void> task) {
    bool finished = false;
    std::exception_ptr error;
    kopf::start_detached(executor, std::move(task), [&](std::exception_ptr e) {
        error = e;
        finished = true;
    });
    while (!finished) {
        io.restart();
        io.run_one();
    }
    if (error) std::rethrow_exception(error);
}

void sleep_on_loop(asio::io_context& io, double seconds) {
    asio::steady_timer timer(io, duration_of(seconds));
    bool fired = false;
    timer.async_wait([&](const boost::system::error_code&) { fired = true; });
    while (!fired) {
        io.restart();
        io.run_one();
    }
}

std::size_t run_until_stopped(asio::io_context& io, const std::atomic<bool>& stop,
                              double coalescing_window) {
    // A window pays off when the handlers it gathers are more than a lone chain's answer brings
    // (measured: 2 for a handler's requests made one at a time; 20-40 in 2 ms at 1,000 objects
    // per second). After one that did not, some ordinary wake-ups come before the next try:
    // twice as many after each further miss, so a lone chain meets a window ever more rarely;
    // and a try at least every second, so a burst after a long quiet time is batched soon.
    constexpr std::size_t kWorthwhileBatch = 8;
    constexpr std::size_t kFirstRetryAfter = 200;
    constexpr std::size_t kLongestRetryAfter = 200 * 1024;
    constexpr auto kLongestWithoutTry = std::chrono::seconds(1);
    const auto window = duration_of(coalescing_window);
    std::size_t windows = 0;
    std::size_t retry_after = kFirstRetryAfter;
    std::size_t wakeups_before_retry = 0;
    auto last_try = std::chrono::steady_clock::now();
    while (!stop) {
        io.restart();
        io.run_one();  // waits for work
        if (window == std::chrono::steady_clock::duration::zero()) continue;
        if (wakeups_before_retry > 0) {
            --wakeups_before_retry;
            if (std::chrono::steady_clock::now() - last_try < kLongestWithoutTry) continue;
        }
        last_try = std::chrono::steady_clock::now();
        while (!stop) {
            io.restart();
            io.poll();  // everything ready, and what that makes ready
            if (stop) break;
            std::this_thread::sleep_for(window);
            ++windows;
            io.restart();
            if (io.poll() >= kWorthwhileBatch) {
                retry_after = kFirstRetryAfter;
                continue;
            }
            wakeups_before_retry = retry_after;
            retry_after = std::min(retry_after * 2, kLongestRetryAfter);
            break;
        }
    }
    return windows;
}

}  // namespace kopf::loop
