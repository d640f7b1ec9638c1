// The pool of synchronous handlers: every job runs once, off the caller's thread; a trickle of
// jobs is served by one thread; join() finishes what was queued and refuses new jobs.
#include "loop/blocking_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace {

using kopf::loop::BlockingPool;

// Waits until `count` reaches `expected`, for at most 30 s (the test then fails).
bool wait_for(std::mutex& mutex, std::condition_variable& changed, const int& count, int expected) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return count >= expected; });
}

TEST(BlockingPool, RunsEveryJobOnceOffTheCallersThread) {
    BlockingPool pool(4);
    std::mutex mutex;
    std::condition_variable changed;
    int done = 0;
    std::multiset<int> seen;
    bool on_caller = false;
    const auto caller = std::this_thread::get_id();
    for (int i = 0; i < 500; ++i) {
        pool.submit([&, i] {
            std::lock_guard lock(mutex);
            seen.insert(i);
            on_caller |= std::this_thread::get_id() == caller;
            ++done;
            changed.notify_all();
        });
    }
    ASSERT_TRUE(wait_for(mutex, changed, done, 500));
    std::lock_guard lock(mutex);
    EXPECT_EQ(seen.size(), 500u);
    for (int i = 0; i < 500; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
    EXPECT_FALSE(on_caller);
}

TEST(BlockingPool, OneJobAtATimeIsServedByTheSameWarmThread) {
    BlockingPool pool(6);
    std::mutex mutex;
    std::condition_variable changed;
    int done = 0;
    std::set<std::thread::id> threads;
    for (int i = 0; i < 50; ++i) {
        // The previous job's thread is back to sleep before the next job comes.
        while (pool.idle_threads() < 6) std::this_thread::yield();
        pool.submit([&] {
            std::lock_guard lock(mutex);
            threads.insert(std::this_thread::get_id());
            ++done;
            changed.notify_all();
        });
        ASSERT_TRUE(wait_for(mutex, changed, done, i + 1));
    }
    std::lock_guard lock(mutex);
    EXPECT_EQ(threads.size(), 1u);
}

TEST(BlockingPool, SlowJobsDoNotHoldUpOthersWhileThreadsAreFree) {
    BlockingPool pool(3);
    std::mutex mutex;
    std::condition_variable changed;
    int started = 0;
    bool release = false;
    for (int i = 0; i < 3; ++i) {
        pool.submit([&] {
            std::unique_lock lock(mutex);
            ++started;
            changed.notify_all();
            changed.wait(lock, [&] { return release; });
        });
    }
    // All three block at once: each got its own thread.
    ASSERT_TRUE(wait_for(mutex, changed, started, 3));
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    changed.notify_all();
    pool.join();
    EXPECT_EQ(started, 3);
}

TEST(BlockingPool, ALimitSetLaterBoundsTheJobsRunningAtOnceBothWays) {
    BlockingPool pool(4);
    pool.set_limit(1);  // as a startup handler's settings.execution.max_workers = 1
    std::atomic<int> now{0}, most{0}, done{0};
    const auto job = [&] {
        const int running = ++now;
        int seen = most;
        while (running > seen && !most.compare_exchange_weak(seen, running)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        --now;
        ++done;
    };
    for (int i = 0; i < 6; ++i) pool.submit(job);
    while (done < 6) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(most.load(), 1);

    // Raised beyond the threads it has: more threads, more jobs at once.
    pool.set_limit(6);
    most = 0;
    std::mutex mutex;
    std::condition_variable changed;
    int started = 0;
    bool release = false;
    for (int i = 0; i < 6; ++i) {
        pool.submit([&] {
            std::unique_lock lock(mutex);
            ++started;
            changed.notify_all();
            changed.wait(lock, [&] { return release; });
        });
    }
    ASSERT_TRUE(wait_for(mutex, changed, started, 6));
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    changed.notify_all();
    pool.join();
}

TEST(BlockingPool, JoinFinishesTheQueuedJobsThenRefusesNewOnes) {
    std::atomic<int> done = 0;
    BlockingPool pool(1);
    for (int i = 0; i < 100; ++i) {
        pool.submit([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            ++done;
        });
    }
    pool.join();
    EXPECT_EQ(done.load(), 100);
    EXPECT_THROW(pool.submit([] {}), std::logic_error);
    pool.join();  // twice is harmless, as is the destructor after it
}

}  // namespace
