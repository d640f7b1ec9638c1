#include "core/intents/stoppers.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace kopf {

std::string to_string(StopReason reason) {
    static const std::pair<StopReason, const char*> names[] = {
        {StopReason::DONE, "DONE"},
        {StopReason::FILTERS_MISMATCH, "FILTERS_MISMATCH"},
        {StopReason::RESOURCE_DELETED, "RESOURCE_DELETED"},
        {StopReason::OPERATOR_PAUSING, "OPERATOR_PAUSING"},
        {StopReason::OPERATOR_EXITING, "OPERATOR_EXITING"},
        {StopReason::DAEMON_SIGNALLED, "DAEMON_SIGNALLED"},
        {StopReason::DAEMON_CANCELLED, "DAEMON_CANCELLED"},
        {StopReason::DAEMON_ABANDONED, "DAEMON_ABANDONED"},
    };
    std::string out;
    for (const auto& [bit, name] : names) {
        if (!any(reason & bit)) continue;
        if (!out.empty()) out += "|";
        out += name;
    }
    return out.empty() ? "NONE" : out;
}

bool DaemonStopped::is_set() const {
    if (!flag_) return false;
    if (flag_->checkpoint) flag_->checkpoint();
    return flag_->is_set();
}

StopReason DaemonStopped::reason() const {
    return flag_ ? flag_->reason() : StopReason::NONE;
}

DaemonStopped::Wait DaemonStopped::wait(Seconds timeout) const {
    if (!flag_) return Wait(nullptr, timeout, true);
    if (flag_->mode() == detail::StopFlag::Mode::BLOCKING) {
        flag_->wait_blocking(timeout);
        if (flag_->checkpoint) flag_->checkpoint();
        return Wait(flag_, timeout, true);
    }
    return Wait(flag_, timeout, flag_->is_set() || timeout.value == 0);
}

DaemonStopped::Wait DaemonStopped::wait() const {
    return wait(Seconds(-1));
}

void DaemonStopped::on_set(std::function<void()> callback) const {
    if (flag_) flag_->on_set(std::move(callback));
}

DaemonStopped::Wait::operator bool() const {
    return flag_ && flag_->is_set();
}

bool DaemonStopped::Wait::suspend(Executor* executor, std::coroutine_handle<> h) {
    return flag_->suspend(*executor, h, timeout_);
}

bool DaemonStopped::Wait::await_resume() const {
    if (!flag_) return false;
    if (!done_) detail::set_current_cause(cause_);
    if (flag_->mode() == detail::StopFlag::Mode::SUSPENDING) {
        if (flag_->cancelled()) throw CancelledError();
        if (flag_->checkpoint) flag_->checkpoint();
    }
    return flag_->is_set();
}

}  // namespace kopf

namespace kopf::detail {

bool StopFlag::is_set() const {
    return reason() != StopReason::NONE;
}

StopReason StopFlag::reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
}

void StopFlag::set(StopReason reason) {
    std::vector<std::pair<Executor*, std::shared_ptr<Waiter>>> waiters;
    std::vector<std::function<void()>> callbacks;
    {
        std::lock_guard lock(mutex_);
        reason_ = reason_ | reason;
        waiters.swap(waiters_);
        callbacks.swap(callbacks_);
    }
    if (changed_) changed_->notify_all();
    for (auto& [executor, waiter] : waiters) {
        // A wait that ended by its timeout is left alone: its executor may be gone since.
        if (!waiter->resumed) executor->post([waiter] { resume(waiter); });
    }
    for (auto& callback : callbacks) callback();
}

void StopFlag::on_set(std::function<void()> callback) {
    {
        std::lock_guard lock(mutex_);
        if (reason_ == StopReason::NONE) {
            callbacks_.push_back(std::move(callback));
            return;
        }
    }
    callback();
}

bool StopFlag::wait_blocking(double timeout) {
    std::unique_lock lock(mutex_);
    const auto is_set = [this] { return reason_ != StopReason::NONE; };
    if (!changed_) {  // a coroutine's flag, waited on by a thread: never woken, only polled
        throw std::logic_error("a coroutine daemon's stop flag cannot be waited on by blocking");
    }
    if (timeout < 0) {
        changed_->wait(lock, is_set);
        return true;
    }
    return changed_->wait_for(lock, std::chrono::duration<double>(timeout), is_set);
}

bool StopFlag::suspend(Executor& executor, std::coroutine_handle<> h, double timeout) {
    auto waiter = std::make_shared<Waiter>();
    waiter->handle = h;
    {
        std::lock_guard lock(mutex_);
        if (reason_ != StopReason::NONE) return false;
        // Waits that ended by their timeout are forgotten here (the timeout does not touch the
        // flag, which may be gone by then): the list holds the current waits and a few more.
        waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                      [](const auto& w) { return w.second->resumed; }),
                       waiters_.end());
        waiters_.emplace_back(&executor, waiter);
    }
    if (timeout >= 0) {
        // Woken by the flag first, the waiter is resumed already: this does nothing then.
        executor.post_after(timeout, [waiter] { resume(waiter); });
    }
    return true;
}

void StopFlag::resume(const std::shared_ptr<Waiter>& waiter) {
    if (waiter->resumed) return;
    waiter->resumed = true;
    waiter->handle.resume();
}

}  // namespace kopf::detail
