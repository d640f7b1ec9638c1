// The loop's delays (post_after), which every timer, daemon sleep, retry backoff and queue
// deadline of an operator goes through: a callback never runs before its delay, delays run in
// the order they come due (those due together in the order they were asked for), a callback may
// ask for more, an exception out of one leaves the others working, and cancel_timers() drops
// what is pending. Real io_context, real clock.
#include "loop/loop_executor.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
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

}  // namespace
