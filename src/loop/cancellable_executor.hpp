// Coroutines that can be cancelled by force: an executor over the loop that keeps its pending
// delays, so that a cancellation wakes them at once and the awaitables (kopf::sleep, the stop
// flag's waits) throw kopf::CancelledError as they resume. Used by daemons and by background
// tasks (kopf::spawn). Loop thread only, except where said.
#pragma once

#include <functional>
#include <kopf/task.hpp>
#include <memory>
#include <unordered_map>

namespace kopf::loop {

class CancellableExecutor : public Executor,
                            public std::enable_shared_from_this<CancellableExecutor> {
  public:
    explicit CancellableExecutor(Executor& loop) : loop_(loop) {}

    void post(std::function<void()> fn) override { loop_.post(std::move(fn)); }
    void post_after(double seconds, std::function<void()> fn) override;
    void run_blocking(std::function<void()> work, std::function<void()> done) override {
        loop_.run_blocking(std::move(work), std::move(done));
    }
    double now() const override { return loop_.now(); }
    detail::BackgroundTasks* background_tasks() const override { return loop_.background_tasks(); }

    /// Every pending delay fires now (call it once cancelled() is true).
    void wake_pending();

    /// Runs before a coroutine resumes from one of its own delays (daemons refresh their body
    /// views and send their patch there).
    std::function<void()> on_resume;

  protected:
    Executor& loop() const { return loop_; }
    /// What the pending delays' callbacks hold on to: this executor, as owned by a shared_ptr
    /// (or, for one that is a member of a larger object, that object's).
    virtual std::weak_ptr<CancellableExecutor> weak_self() { return weak_from_this(); }

  private:
    void fire(unsigned long id);

    Executor& loop_;
    std::unordered_map<unsigned long, std::function<void()>> pending_;
    unsigned long last_id_ = 0;
};

}  // namespace kopf::loop
