#include "loop/cancellable_executor.hpp"

namespace kopf::loop {

void CancellableExecutor::post_after(double seconds, std::function<void()> fn) {
    if (cancelled()) {
        loop_.post(std::move(fn));
        return;
    }
    const unsigned long id = ++last_id_;
    pending_.emplace(id, std::move(fn));
    loop_.post_after(seconds, [weak = weak_self(), id] {
        if (auto self = weak.lock()) self->fire(id);
    });
}

void CancellableExecutor::wake_pending() {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, fn] : pending) loop_.post(std::move(fn));
}

void CancellableExecutor::fire(unsigned long id) {
    auto found = pending_.find(id);
    if (found == pending_.end()) return;
    auto fn = std::move(found->second);
    pending_.erase(found);
    if (on_resume) on_resume();
    fn();
}

}  // namespace kopf::loop
