// Built-in resources: every Pod seen at startup or created is scheduled to be killed after a
// timeout (30 s, or $EXAMPLE_POD_KILLER_TIMEOUT seconds) by a background task; deleting the Pod
// earlier cancels the task. The deletion handler puts Kopf's finalizer on every Pod.
// Run it with: kopf run examples/10-builtins/example.cpp --verbose -A --standalone
//
// Pods are deleted with the operator's own API client (ctx.api), where Kopf's example uses a
// third-party one (pykube).
#include <atomic>
#include <coroutine>
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace {

// A background killer of one Pod: cancelled by the Pod's deletion, or done (the Pod is deleted
// by us). The deletion handler removes it from `tasks` either way.
struct KillerTask {
    std::atomic<bool> cancelled = false;
    std::atomic<bool> killed = false;
};

std::mutex tasks_mutex;
std::map<std::string, std::shared_ptr<KillerTask>> tasks;  // "namespace/name" -> task

double killer_timeout() {
    const char* text = std::getenv("EXAMPLE_POD_KILLER_TIMEOUT");
    if (text && *text) return std::strtod(text, nullptr);
    return 30;
}

// The executor that runs the current coroutine: for starting background tasks on the same loop,
// as asyncio.create_task() does.
struct current_executor {
    kopf::Executor* executor = nullptr;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> handle) noexcept {
        executor = handle.promise().executor;
        return false;  // continue at once
    }
    kopf::Executor* await_resume() const noexcept { return executor; }
};

kopf::Task<void> pod_killer(kopf::Api pods, std::string name, std::shared_ptr<KillerTask> task,
                            double timeout) {
    // Sleep in short steps to notice a cancellation soon.
    for (double slept = 0; slept < timeout && !task->cancelled; slept += 0.1) {
        co_await kopf::sleep(0.1);
    }
    if (!task->cancelled) {
        task->killed = true;
        co_await pods.delete_(name);
    }
}

}  // namespace

kopf::Task<void> pod_in_sight(kopf::Context& ctx) {
    if (ctx.namespace_.rfind("kube-", 0) == 0) co_return;
    const double timeout = killer_timeout();
    auto task = std::make_shared<KillerTask>();
    {
        std::lock_guard lock(tasks_mutex);
        tasks[ctx.namespace_ + "/" + ctx.name] = task;
    }
    ctx.logger.info("=== Pod killing happens in {}s.", timeout);
    kopf::Executor* executor = co_await current_executor();
    kopf::spawn(*executor, pod_killer(ctx.api("pods", ctx.namespace_), ctx.name, task, timeout),
                [](std::exception_ptr) {});
}
KOPF_ON_RESUME(pod_in_sight, "pods");
KOPF_ON_CREATE(pod_in_sight, "pods");

void pod_deleted(kopf::Context& ctx) {
    std::shared_ptr<KillerTask> task;
    {
        std::lock_guard lock(tasks_mutex);
        auto it = tasks.find(ctx.namespace_ + "/" + ctx.name);
        if (it == tasks.end()) return;
        task = it->second;
        tasks.erase(it);
    }
    if (task->killed) {
        ctx.logger.info("=== Pod killing has happened.");
    } else {
        task->cancelled = true;
        ctx.logger.info("=== Pod killing is cancelled!");
    }
}
KOPF_ON_DELETE(pod_deleted, "pods");
