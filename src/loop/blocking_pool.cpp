#include "loop/blocking_pool.hpp"

#include <algorithm>
#include <stdexcept>

namespace kopf::loop {

BlockingPool::BlockingPool(std::size_t threads) : limit_(std::max<std::size_t>(threads, 1)) {
    workers_.reserve(limit_);
    idle_.reserve(limit_);
    // Every thread starts idle, waiting to be woken: the order of taking jobs does not depend on
    // how fast the threads start.
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < limit_; ++i) add_worker();
}

void BlockingPool::add_worker() {
    auto worker = std::make_unique<Worker>();
    idle_.push_back(worker.get());
    worker->thread = std::thread([this, w = worker.get()] { serve(*w); });
    workers_.push_back(std::move(worker));
}

void BlockingPool::wake_within_limit(std::vector<Worker*>& woken) {
    while (active_ < limit_ && !idle_.empty() && woken.size() < jobs_.size()) {
        Worker* sleeper = idle_.back();
        idle_.pop_back();
        sleeper->woken = true;
        ++active_;
        woken.push_back(sleeper);
    }
}

void BlockingPool::set_limit(std::size_t limit) {
    std::vector<Worker*> woken;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        limit_ = std::max<std::size_t>(limit, 1);
        while (workers_.size() < limit_) add_worker();
        wake_within_limit(woken);
    }
    for (auto* sleeper : woken) sleeper->wake.notify_one();
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
        if (!idle_.empty() && active_ < limit_) {
            sleeper = idle_.back();
            idle_.pop_back();
            sleeper->woken = true;
            ++active_;
        }
    }
    if (sleeper) sleeper->wake.notify_one();  // unlocked: the sleeper takes the mutex at once
}

void BlockingPool::serve(Worker& worker) {
    std::unique_lock lock(mutex_);
    while (true) {
        worker.wake.wait(lock, [&worker] { return worker.woken; });  // idle_ lists it
        worker.woken = false;
        // A thread beyond a lowered limit stops taking jobs: the others go on with them.
        while (!jobs_.empty() && (active_ <= limit_ || stopping_)) {
            auto job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            job = nullptr;  // its captures die outside the lock too
            lock.lock();
        }
        if (stopping_) return;
        --active_;
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
