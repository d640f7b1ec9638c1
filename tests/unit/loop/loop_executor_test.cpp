// The loop's delays (post_after), which every timer, daemon sleep, retry backoff and queue
// deadline of an operator goes through: a callback never runs before its delay, delays run in
// the order they come due (those due together in the order they were asked for), a callback may
// ask for more, an exception out of one leaves the others working, and cancel_timers() drops
// what is pending. Real io_context, real clock. And the operator's loop driven with a coalescing
// window (run_until_stopped): everything posted runs, in order, until the stop flag; bursts are
// taken in windows; a lone chain of requests and answers meets few of them.
#include "loop/loop_executor.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using kopf::loop::LoopExecutor;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(LoopExecutorDelays, NoCallbackRunsBeforeItsDelayAndTheyRunInTheOrderTheyComeDue) {
    boost::asio::io_context io;
    LoopExecutor loop(io, 1);
    const auto start = Clock::now();
    struct Ran {
        std::string name;
        double asked;
        double at;
    };
    std::vector<Ran> ran;
    // Asked for out of order, some due in the same millisecond, one at once.
    for (const auto& [name, delay] : std::vector<std::pair<std::string, double>>{
             {"c", 0.030}, {"a", 0.010}, {"b1", 0.0201}, {"b2", 0.0202}, {"now", 0}, {"d", 0.05}}) {
        loop.post_after(delay, [&, name = name, delay = delay] {
            ran.push_back({name, delay, seconds_since(start)});
        });
    }
    io.run();
    ASSERT_EQ(ran.size(), 6u);
    const std::vector<std::string> order{"now", "a", "b1", "b2", "c", "d"};
    for (std::size_t i = 0; i < ran.size(); ++i) {
        EXPECT_EQ(ran[i].name, order[i]);
        EXPECT_GE(ran[i].at, ran[i].asked) << ran[i].name << " ran early";
    }
}

TEST(LoopExecutorDelays, ManyDelaysWithTheirCapturesAllRunOnce) {
    boost::asio::io_context io;
    LoopExecutor loop(io, 1);
    auto counts = std::make_shared<std::vector<int>>(2000, 0);
    const auto start = Clock::now();
    for (int i = 0; i < 2000; ++i) {
        // Spread over 40 ms, a heap-held capture each (as a sleeping coroutine's waiter is).
        auto payload = std::make_shared<std::string>(std::to_string(i));
        const double delay = (i % 40) / 1000.0;
        loop.post_after(delay, [counts, payload, i, delay, start] {
            EXPECT_EQ(*payload, std::to_string(i));
            EXPECT_GE(seconds_since(start), delay);
            ++(*counts)[i];
        });
    }
    io.run();
    for (int i = 0; i < 2000; ++i) EXPECT_EQ((*counts)[i], 1) << "delay " << i;
    // The callbacks (and their captures) are gone once run.
    EXPECT_EQ(counts.use_count(), 1);
}

TEST(LoopExecutorDelays, ACallbackMayAskForMoreDelaysEarlierOrLaterThanThePendingOnes) {
    boost::asio::io_context io;
    LoopExecutor loop(io, 1);
    std::vector<std::string> ran;
    loop.post_after(0.040, [&] { ran.push_back("late"); });
    loop.post_after(0.005, [&] {
        ran.push_back("first");
        loop.post_after(0, [&] { ran.push_back("at once"); });
        loop.post_after(0.010, [&] { ran.push_back("before late"); });
        loop.post_after(0.060, [&] { ran.push_back("last"); });
    });
    io.run();
    EXPECT_EQ(ran, (std::vector<std::string>{"first", "at once", "before late", "late", "last"}));
}

// A callback that throws: the exception leaves the loop, and nothing else is lost — neither the
// delays due in the same millisecond, nor the later ones, nor those asked for afterwards.
TEST(LoopExecutorDelays, ACallbackThatThrowsLeavesTheOtherDelaysWorking) {
    boost::asio::io_context io;
    LoopExecutor loop(io, 1);
    std::vector<std::string> ran;
    loop.post_after(0.005, [] { throw std::runtime_error("a handler's bug"); });
    loop.post_after(0.005, [&] { ran.push_back("beside it"); });
    loop.post_after(0.005, [&] { ran.push_back("and after"); });
    loop.post_after(0.030, [&] { ran.push_back("later"); });
    EXPECT_THROW(io.run(), std::runtime_error);
    loop.post_after(0.001, [&] { ran.push_back("asked after the throw"); });
    io.restart();
    io.run();
    EXPECT_EQ(ran, (std::vector<std::string>{"beside it", "and after", "asked after the throw",
                                             "later"}));
}

TEST(LoopExecutorDelays, CancelledDelaysNeverRunAndReleaseTheirCaptures) {
    boost::asio::io_context io;
    LoopExecutor loop(io, 1);
    auto capture = std::make_shared<int>(0);
    bool ran = false;
    loop.post_after(0.010, [&ran, capture] { ran = true; });
    loop.post_after(0.001, [&loop] { loop.cancel_timers(); });
    const auto start = Clock::now();
    io.run();  // returns: nothing is pending any more
    EXPECT_FALSE(ran);
    EXPECT_EQ(capture.use_count(), 1);
    EXPECT_LT(seconds_since(start), 5.0);
    loop.post_after(0, [&ran] { ran = true; });  // after the end: dropped too
    io.restart();
    io.run();
    EXPECT_FALSE(ran);
}

// A pending callback whose capture asks for another delay while it is destroyed (a daemon's last
// reference going with the executor, say) must not touch a half-destroyed executor.
TEST(LoopExecutorDelays, PendingDelaysGoWithTheExecutorEvenIfTheirCapturesPostOnTheWayOut) {
    boost::asio::io_context io;
    bool posted_on_the_way_out = false;
    {
        LoopExecutor loop(io, 1);
        struct PostsWhenDestroyed {
            LoopExecutor& loop;
            bool& posted;
            ~PostsWhenDestroyed() {
                loop.post_after(0.001, [] { ADD_FAILURE() << "ran after the executor's end"; });
                posted = true;
            }
        };
        auto capture = std::make_shared<PostsWhenDestroyed>(loop, posted_on_the_way_out);
        loop.post_after(10, [capture] {});
    }
    EXPECT_TRUE(posted_on_the_way_out);
    io.run();  // the timer's cancelled wait completes and touches nothing
}

// Settings may say "never" with an infinite number of seconds, and a computed delay may be NaN:
// neither may overflow the clock or run the callback early.
TEST(LoopExecutorDelays, InfiniteDelaysWaitAndNaNOrNegativeOnesRunAtOnce) {
    boost::asio::io_context io;
    LoopExecutor loop(io, 1);
    std::vector<std::string> ran;
    loop.post_after(std::numeric_limits<double>::infinity(), [&] { ran.push_back("never"); });
    loop.post_after(1e300, [&] { ran.push_back("never either"); });
    loop.post_after(std::numeric_limits<double>::quiet_NaN(), [&] { ran.push_back("nan"); });
    loop.post_after(-5, [&] { ran.push_back("negative"); });
    loop.post_after(0.02, [&] { loop.cancel_timers(); });
    io.run();
    EXPECT_EQ(ran, (std::vector<std::string>{"nan", "negative"}));
}

// Bursts from another thread (as watch events and answers arrive): all run on the driving
// thread, in the order posted, with their heap captures; windows are taken because they pay off;
// the flag set by the last one ends the loop.
TEST(LoopDriving, BurstsAreTakenInWindowsAndEverythingRunsInOrderUntilTheStopFlag) {
    for (const double window : {0.0, 0.005}) {
        boost::asio::io_context io;
        std::atomic<bool> stop{false};
        std::vector<std::string> ran;
        const auto driver = std::this_thread::get_id();
        bool off_thread = false;
        constexpr int kBursts = 60, kPerBurst = 40;
        std::thread producer([&] {
            for (int burst = 0; burst < kBursts; ++burst) {
                for (int i = 0; i < kPerBurst; ++i) {
                    auto payload =
                        std::make_shared<std::string>(std::to_string(burst * kPerBurst + i));
                    boost::asio::post(io, [&, payload] {
                        off_thread |= std::this_thread::get_id() != driver;
                        ran.push_back(*payload);
                    });
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            boost::asio::post(io, [&] { stop = true; });
        });
        // Keeps the loop waiting for work rather than running out of it.
        auto guard = boost::asio::make_work_guard(io);
        const std::size_t windows = kopf::loop::run_until_stopped(io, stop, window);
        producer.join();
        ASSERT_EQ(ran.size(), static_cast<std::size_t>(kBursts * kPerBurst)) << window;
        for (std::size_t i = 0; i < ran.size(); ++i) ASSERT_EQ(ran[i], std::to_string(i));
        EXPECT_FALSE(off_thread);
        if (window == 0) {
            EXPECT_EQ(windows, 0u);
        } else {
            EXPECT_GE(windows, 2u) << "bursts of " << kPerBurst << " were not taken in windows";
        }
    }
}

// A handler's requests made one at a time: each answer comes ~0.1 ms after its request (another
// thread plays the server). A window never gathers more than one answer, so after a miss the
// loop tries again ever more rarely: a few windows over 2,000 steps, not one per step.
TEST(LoopDriving, ALoneChainOfRequestsMeetsFewWindows) {
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    std::atomic<bool> stop{false};
    std::mutex mutex;
    std::condition_variable asked;
    std::optional<int> request;  // the step waiting for its answer
    bool server_done = false;
    constexpr int kSteps = 2000;
    int answered = 0;
    std::function<void(int)> send = [&](int step) {
        std::lock_guard lock(mutex);
        request = step;
        asked.notify_one();
    };
    std::thread server([&] {
        for (;;) {
            std::unique_lock lock(mutex);
            asked.wait(lock, [&] { return request.has_value() || server_done; });
            if (server_done) return;
            const int step = *request;
            request.reset();
            lock.unlock();
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            auto answer = std::make_shared<std::string>("answer " + std::to_string(step));
            boost::asio::post(io, [&, step, answer] {
                ASSERT_EQ(*answer, "answer " + std::to_string(step));
                if (++answered == kSteps) {
                    stop = true;
                } else {
                    send(step + 1);
                }
            });
        }
    });
    boost::asio::post(io, [&] { send(0); });
    const auto started = Clock::now();
    const std::size_t windows = kopf::loop::run_until_stopped(io, stop, 0.002);
    const double took = seconds_since(started);
    {
        std::lock_guard lock(mutex);
        server_done = true;
        asked.notify_one();
    }
    server.join();
    EXPECT_EQ(answered, kSteps);
    // Tries after 0, 200, 600, 1,400 and 3,000 ordinary wake-ups (at most one per step's), and
    // one more per second that the chain took (a slow machine's).
    EXPECT_GE(windows, 1u);
    EXPECT_LE(windows, 6u + static_cast<std::size_t>(took)) << took << " s";
}

}  // namespace
