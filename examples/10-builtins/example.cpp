// Built-in resources: every Pod seen at startup or created is scheduled to be killed after a
// timeout (30 s, or $EXAMPLE_POD_KILLER_TIMEOUT seconds) by a background task; deleting the Pod
// earlier cancels the task. The deletion handler puts Kopf's finalizer on every Pod.
// Run it with: kopf run examples/10-builtins/example.cpp --verbose -A --standalone
//
// Pods are deleted with the operator's own API client (ctx.api), where Kopf's example uses a
// third-party one (pykube). The handlers and the tasks all run on the operator's event loop, as
// in Kopf, so the task table needs no lock.
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <map>
#include <memory>
#include <string>

namespace {

// namespace -> name -> the Pod's killer
std::map<std::string, std::map<std::string, kopf::BackgroundTask>> tasks;

double killer_timeout() {
    const char* text = std::getenv("EXAMPLE_POD_KILLER_TIMEOUT");
    if (text && *text) return std::strtod(text, nullptr);
    return 30;
}

// Kopf's `finally:` of the killer: the task leaves the table however it ends.
struct Forget {
    std::string namespace_;
    std::string name;
    ~Forget() {
        auto found = tasks.find(namespace_);
        if (found != tasks.end()) found->second.erase(name);
    }
};

kopf::Task<void> pod_killer(std::string namespace_, std::string name,
                            std::shared_ptr<kopf::Logger> logger, kopf::Api pods, double timeout) {
    Forget forget{namespace_, name};
    try {
        logger->info("=== Pod killing happens in {}s.", timeout);
        co_await kopf::sleep(timeout);
        logger->info("=== Pod killing happens NOW!");
        co_await pods.delete_(name);
    } catch (const kopf::CancelledError&) {
        logger->info("=== Pod killing is cancelled!");
    }
}

}  // namespace

kopf::Task<void> pod_in_sight(kopf::Context& ctx) {
    if (ctx.namespace_.rfind("kube-", 0) == 0) co_return;
    auto killer = pod_killer(ctx.namespace_, ctx.name, ctx.logger_ptr,
                             ctx.api("pods", ctx.namespace_), killer_timeout());
    kopf::BackgroundTask task = co_await kopf::spawn(std::move(killer), "pod_killer");
    tasks[ctx.namespace_][ctx.name] = task;
}
KOPF_ON_RESUME(pod_in_sight, "pods");
KOPF_ON_CREATE(pod_in_sight, "pods");

kopf::Task<void> pod_deleted(kopf::Context& ctx) {
    auto in_namespace = tasks.find(ctx.namespace_);
    if (in_namespace == tasks.end()) co_return;
    auto found = in_namespace->second.find(ctx.name);
    if (found == in_namespace->second.end()) co_return;
    found->second.cancel();  // it will also remove itself from `tasks`
}
KOPF_ON_DELETE(pod_deleted, "pods");
