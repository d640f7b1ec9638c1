// The threads that run synchronous handlers (Kopf's thread-pool executor).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kopf::loop {

// A fixed set of threads taking jobs in order. The most recently idle thread takes the next
// job, and each job wakes at most one sleeping thread: a steady trickle of short handlers is
// served by one warm thread with one wake-up per job (Asio's pool rotated through all threads
// and made almost twice the futex calls per job).
class BlockingPool {
  public:
    explicit BlockingPool(std::size_t threads);
    ~BlockingPool();
    BlockingPool(const BlockingPool&) = delete;
    BlockingPool& operator=(const BlockingPool&) = delete;

    // Queues a job. Jobs must not throw; after join() they are refused with std::logic_error.
    void submit(std::function<void()> job);
    // Runs the queued jobs to the end, then stops and joins the threads. Idempotent.
    void join();
    // Threads waiting for a job.
    std::size_t idle_threads();
    // At most `limit` jobs run at once from now on (threads are added when it grows beyond
    // them; surplus threads stay asleep when it shrinks). 0 counts as 1.
    void set_limit(std::size_t limit);

  private:
    // A condition variable, not a semaphore: libstdc++'s semaphores spin with sched_yield
    // before they sleep, which on a busy core switched threads three times per job.
    struct Worker {
        std::condition_variable wake;
        bool woken = false;  // under the pool's mutex
        std::thread thread;
    };
    void serve(Worker& worker);

    std::mutex mutex_;
    std::deque<std::function<void()>> jobs_;
    std::vector<Worker*> idle_;  // the most recently idle last
    bool stopping_ = false;
    std::size_t limit_ = 0;   // threads allowed to run jobs at once
    std::size_t active_ = 0;  // threads woken and not yet idle again
    std::vector<std::unique_ptr<Worker>> workers_;
    void add_worker();                                    // under the mutex
    void wake_within_limit(std::vector<Worker*>& woken);  // under the mutex
};

}  // namespace kopf::loop
