// A stop signal for long-running client operations (watch streams, backoff sleeps).
//
// stop() may be called from any thread; the registered callbacks run at once in the caller's
// thread and must only post work to the event loop (the client layer's callbacks do).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace kopf::clients {

class StopSignal {
  public:
    void stop() {
        std::map<std::uint64_t, std::function<void()>> callbacks;
        {
            std::lock_guard lock(mutex_);
            if (stopped_) return;
            stopped_ = true;
            callbacks.swap(callbacks_);
        }
        for (auto& [id, callback] : callbacks) callback();
    }
    bool stopped() const {
        std::lock_guard lock(mutex_);
        return stopped_;
    }
    // Runs the callback at once if already stopped. Returns an id for remove().
    std::uint64_t add(std::function<void()> callback) {
        {
            std::lock_guard lock(mutex_);
            if (!stopped_) {
                callbacks_.emplace(++next_id_, std::move(callback));
                return next_id_;
            }
        }
        callback();
        return 0;
    }
    void remove(std::uint64_t id) {
        std::lock_guard lock(mutex_);
        callbacks_.erase(id);
    }

  private:
    mutable std::mutex mutex_;
    bool stopped_ = false;
    std::uint64_t next_id_ = 0;
    std::map<std::uint64_t, std::function<void()>> callbacks_;
};

// Removes a callback when the scope ends.
class StopCallback {
  public:
    StopCallback(StopSignal* signal, std::function<void()> callback)
        : signal_(signal), id_(signal ? signal->add(std::move(callback)) : 0) {}
    ~StopCallback() {
        if (signal_ && id_) signal_->remove(id_);
    }
    StopCallback(const StopCallback&) = delete;
    StopCallback& operator=(const StopCallback&) = delete;

  private:
    StopSignal* signal_;
    std::uint64_t id_;
};

}  // namespace kopf::clients
