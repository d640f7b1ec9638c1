// Operator-wide hooks: startup handlers (one of them retried 3 times), a cleanup handler, a
// login handler, probes (reported by the liveness endpoint, `kopf run --liveness URL`), and an
// event handler that starts a background task per pod, which the cleanup handler stops.
// Run it with: kopf run examples/13-hooks/example.cpp --verbose -A --standalone
//     --liveness http://127.0.0.1:8080/healthz      (then: curl http://127.0.0.1:8080/healthz)
#include <chrono>
#include <iostream>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>  // kopf::OperatorFlag
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>

namespace {

// Kopf's asyncio.Lock, made by a startup handler (Python's needs the running loop to exist).
std::unique_ptr<std::mutex> LOCK;
// [namespace][name]: the stop flags of the pods' background tasks.
std::map<std::string, std::map<std::string, std::shared_ptr<kopf::OperatorFlag>>> STOPPERS;

}  // namespace

kopf::Task<void> startup_fn_simple(kopf::ActivityContext& ctx) {
    ctx.logger.info("Initialising the task-lock...");
    LOCK = std::make_unique<std::mutex>();
    co_return;
}
KOPF_ON_STARTUP(startup_fn_simple, {});

kopf::Task<void> startup_fn_retried(kopf::ActivityContext& ctx) {
    if (ctx.retry < 3) {
        throw kopf::TemporaryError("Going to succeed in " + std::to_string(3 - ctx.retry) + "s", 1);
    } else {
        ctx.logger.info("Starting retried...");
        // throw kopf::PermanentError("Unable to start!");
    }
    co_return;
}
KOPF_ON_STARTUP(startup_fn_retried, {});

kopf::Task<void> cleanup_fn(kopf::ActivityContext& ctx) {
    ctx.logger.info("Cleaning up...");
    {
        const std::lock_guard lock(*LOCK);  // the pods' event handlers may still run
        for (auto& [namespace_, flags] : STOPPERS) {
            for (auto& [name, flag] : flags) flag->set();
        }
    }
    ctx.logger.info("All pod-tasks are requested to stop...");
    co_return;
}
KOPF_ON_CLEANUP(cleanup_fn, {});

kopf::Task<std::optional<kopf::ConnectionInfo>> login_fn(kopf::ActivityContext& ctx) {
    (void)ctx;
    std::cout << "Logging in in 2s..." << std::endl;
    co_await kopf::sleep(2.0);

    // An equivalent of the built-in login with the kubeconfig (Kopf's example reads it with
    // pykube), but with credentials that expire in 30 s, so that the login runs again.
    std::optional<kopf::ConnectionInfo> info = kopf::login_with_kubeconfig();
    if (info) info->expiration = std::chrono::system_clock::now() + std::chrono::seconds(30);
    co_return info;
}
KOPF_ON_LOGIN(login_fn, {.errors = kopf::ErrorsMode::PERMANENT});

kopf::Task<kopf::json> tasks_count(kopf::ActivityContext& ctx) {
    (void)ctx;
    const std::lock_guard lock(*LOCK);
    std::size_t count = 0;
    for (const auto& [namespace_, flags] : STOPPERS) count += flags.size();
    co_return count;
}
KOPF_ON_PROBE(tasks_count, {});

kopf::Task<kopf::json> monitored_objects(kopf::ActivityContext& ctx) {
    (void)ctx;
    const std::lock_guard lock(*LOCK);
    kopf::json result = kopf::json::object();
    for (const auto& [namespace_, flags] : STOPPERS) {
        auto& names = result[namespace_] = kopf::json::array();
        for (const auto& [name, flag] : flags) names.push_back(name);  // sorted: a std::map
    }
    co_return result;
}
KOPF_ON_PROBE(monitored_objects, {});

namespace {

kopf::Task<void> task_fn(std::shared_ptr<kopf::Logger> logger,
                         std::shared_ptr<kopf::OperatorFlag> shouldstop) {
    static thread_local std::mt19937 random{std::random_device{}()};
    while (!shouldstop->is_set()) {
        co_await kopf::sleep(std::uniform_int_distribution<int>(1, 10)(random));
        logger->info("Served by the background task.");
    }
    logger->info("Serving is finished by request.");
}

}  // namespace

kopf::Task<void> pod_task(kopf::Context& ctx) {
    std::shared_ptr<kopf::OperatorFlag> flag;
    {
        const std::lock_guard lock(*LOCK);
        auto& flags = STOPPERS[ctx.namespace_];
        if (!flags.contains(ctx.name))
            flag = flags[ctx.name] = std::make_shared<kopf::OperatorFlag>();
    }
    if (flag) co_await kopf::spawn(task_fn(ctx.logger_ptr, flag));
}
KOPF_ON_EVENT(pod_task, "pods");
