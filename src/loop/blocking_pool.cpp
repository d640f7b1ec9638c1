#include "loop/blocking_pool.hpp"

#include <stdexcept>

namespace kopf::loop {

BlockingPool::BlockingPool(std::size_t threads) {
    workers_.reserve(threads);
    idle_.reserve(threads);
    // Every thread starts idle, waiting to be woken: the order of taking jobs does not depend on
    // how fast the threads start.
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < threads; ++i) {
        auto worker = std::make_unique<Worker>();
        idle_.push_back(worker.get());
        worker->thread = std::thread([this, w = worker.get()] { serve(*w); });
        workers_.push_back(std::move(worker));
    }
}

BlockingPool::~BlockingPool() {
    join();
}

void BlockingPool::submit(std::function<void()> job) {
    Worker* sleeper = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw std::logic_error("The pool of synchronous handlers is stopped.");
        jobs_.push_back(std::move(job));
        if (!idle_.empty()) {
            sleeper = idle_.back();
            idle_.pop_back();
            sleeper->woken = true;
        }
    }
    if (sleeper) sleeper->wake.notify_one();  // unlocked: the sleeper takes the mutex at once
}

void BlockingPool::serve(Worker& worker) {
    std::unique_lock lock(mutex_);
    while (true) {
        worker.wake.wait(lock, [&worker] { return worker.woken; });  // idle_ lists it
        worker.woken = false;
        while (!jobs_.empty()) {
            auto job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            job = nullptr;  // its captures die outside the lock too
            lock.lock();
        }
        if (stopping_) return;
        idle_.push_back(&worker);
    }
}

std::size_t BlockingPool::idle_threads() {
    std::lock_guard lock(mutex_);
    return idle_.size();
}

void BlockingPool::join() {
    std::vector<Worker*> sleepers;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        sleepers.swap(idle_);
        for (auto* sleeper : sleepers) sleeper->woken = true;
    }
    for (auto* sleeper : sleepers) sleeper->wake.notify_one();
    for (auto& worker : workers_) {
        if (worker->thread.joinable()) worker->thread.join();
    }
}

}  // namespace kopf::loop
