// All at once: startup and cleanup handlers, several creation handlers (one of them fails its
// first attempt and is retried), update, field and deletion handlers, Kubernetes Events, a pod
// created as a child of the object, and an event handler of the labelled pods.
// Run it with: kopf run examples/99-all-at-once/example.cpp --verbose -A --standalone
//
// The pod is created with the operator's own API client (ctx.api), where Kopf's example uses a
// third-party one (pykube): a synchronous handler runs on the worker pool and may block on it.
#include <chrono>
#include <iostream>
#include <kopf/events.hpp>
#include <kopf/kopf.hpp>
#include <stdexcept>
#include <thread>

namespace {

kopf::json create_children(const kopf::json& owner) {
    (void)owner;
    return kopf::json::array();
}

void wait_for_something() {
    // Note: intentionally blocking (synchronous handlers run on the worker pool).
    std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

kopf::Task<void> startup_fn_simple(kopf::ActivityContext& ctx) {
    ctx.logger.info("Starting in 1s...");
    co_await kopf::sleep(1);
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
    ctx.logger.info("Cleaning up in 3s...");
    co_await kopf::sleep(3);
}
KOPF_ON_CLEANUP(cleanup_fn, {});

kopf::json create_1(kopf::Context& ctx) {
    const kopf::json children = create_children(ctx.body);

    kopf::info(ctx.body, "AnyReason");
    kopf::event(ctx.body, "Warning", "SomeReason", "Cannot do something");
    kopf::event(children, "Normal", "SomeReason", "Created as part of the job1step");

    return {{"job1-status", 100}};
}
KOPF_ON_CREATE(create_1, "kopfexamples");

kopf::json create_2(kopf::Context& ctx) {
    wait_for_something();  // specific for job2, e.g. an external API poller

    if (!ctx.retry) {
        // will be retried by the framework, even if it has been restarted
        throw std::runtime_error("Whoops!");
    }

    return {{"job2-status", 100}};
}
KOPF_ON_CREATE(create_2, "kopfexamples");

void update(kopf::Context& ctx) {
    std::cout << "Handling the diff" << std::endl;
    std::cout << ctx.diff << std::endl;
}
KOPF_ON_UPDATE(update, "kopfexamples");

void update_lst(kopf::Context& ctx) {
    std::cout << "Handling the FIELD = " << ctx.old.dump() << " -> " << ctx.new_.dump()
              << std::endl;
}
KOPF_ON_FIELD(update_lst, "kopfexamples", {.field = "spec.lst"});

void delete_(kopf::Context& ctx) {
    (void)ctx;
}
KOPF_ON_DELETE(delete_, "kopfexamples", {.id = "delete"});

void create_pod(kopf::Context& ctx) {
    // Render the pod with some spec fields used in the template.
    kopf::json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"spec",
         {{"containers",
           {{{"name", "the-only-one"},
             {"image", "busybox"},
             {"command", {"sh", "-x", "-c", "sleep 1"}}}}}}},
    };

    // Make it our child: assign the namespace, name, labels, owner references, etc.
    kopf::adopt(pod, ctx.body);
    kopf::label(pod, {{"application", "kopf-example-10"}});

    // Actually create an object by requesting the Kubernetes API.
    ctx.api("pods").create(pod).wait();
}
KOPF_ON_CREATE(create_pod, "kopfexamples");

void example_pod_change(kopf::Context& ctx) {
    ctx.logger.info("This pod is special for us.");
}
KOPF_ON_EVENT(example_pod_change, "pods", {.labels = {{"application", "kopf-example-10"}}});
