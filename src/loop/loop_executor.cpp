#include "loop/loop_executor.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <exception>

namespace asio = boost::asio;

namespace kopf::loop {

namespace {
std::chrono::steady_clock::duration duration_of(double seconds) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::max(0.0, seconds)));
}
}  // namespace

LoopExecutor::LoopExecutor(asio::io_context& io, std::size_t workers,
                           std::function<void(const std::function<void()>&)> around_blocking)
    : io_(io), pool_(workers), around_blocking_(std::move(around_blocking)) {}

LoopExecutor::~LoopExecutor() {
    pool_.join();
}

void LoopExecutor::post(std::function<void()> fn) {
    asio::post(io_, std::move(fn));
}

void LoopExecutor::post_after(double seconds, std::function<void()> fn) {
    auto timer = std::make_shared<asio::steady_timer>(io_, duration_of(seconds));
    const auto id = ++next_timer_;
    timers_.emplace(id, timer);
    timer->async_wait([this, id, timer, fn = std::move(fn)](const boost::system::error_code& ec) {
        timers_.erase(id);
        if (!ec && !cancelled_) fn();
    });
}

void LoopExecutor::cancel_timers() {
    cancelled_ = true;
    for (auto& [id, timer] : timers_) timer->cancel();
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

}  // namespace kopf::loop
