// The operator that tests/chaos/chaos_test.cpp runs with `kopf run` and kills with SIGKILL:
// creation, update, field and deletion handlers of ChaosObjects that leave their side effects
// outside the process, as one line each appended (O_APPEND) to $KOPF_CHAOS_RECORDS:
//
//   "<event> <handler> <object name> <spec.step>"   event: start | held | done
//
// "done" is the handler's side effect: the test counts them, one per handler and change. While
// the file $KOPF_CHAOS_HOLD exists, a handler that starts writes "held" and waits there (before
// its side effect), so that the test's SIGKILL lands in the middle of a handler.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <kopf/kopf.hpp>
#include <string>
#include <thread>

namespace {

const kopf::Selector kChaosObjects{"chaos.kopf.dev", "v1", "chaosobjects"};

void record(const char* event, const char* handler, const kopf::Context& ctx) {
    static const int fd = [] {
        const char* path = std::getenv("KOPF_CHAOS_RECORDS");
        return path ? ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }();
    if (fd < 0) return;
    const std::string line = std::string(event) + " " + handler + " " + ctx.name + " " +
                             std::to_string(ctx.spec.value("step", -1)) + "\n";
    // One write(2) per line: concurrent handlers never interleave within a line.
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        std::perror("chaos_operator: write to KOPF_CHAOS_RECORDS");
    }
}

bool held() {
    const char* path = std::getenv("KOPF_CHAOS_HOLD");
    return path && std::filesystem::exists(path);
}

void handle(const char* handler, const kopf::Context& ctx) {
    record("start", handler, ctx);
    if (held()) {
        record("held", handler, ctx);
        while (held()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A little work, so that handlers are often in flight when a fault arrives.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    record("done", handler, ctx);
}

}  // namespace

void configure(kopf::ActivityContext& ctx) {
    // Short backoffs so that a test run converges in seconds after each fault.
    ctx.settings.networking.error_backoffs = {0.1, 0.2, 0.5, 1, 1, 2, 2, 3};
    ctx.settings.networking.request_timeout = 30;
    ctx.settings.queueing.error_delays = {0.5, 1, 1, 2, 2, 3};
    ctx.settings.watching.inactivity_timeout = 15;
    ctx.settings.posting.enabled = false;
}
KOPF_ON_STARTUP(configure, {});

void create_fn(kopf::Context& ctx) {
    handle("create", ctx);
}
KOPF_ON_CREATE(create_fn, kChaosObjects, {.id = "create"});

void update_fn(kopf::Context& ctx) {
    handle("update", ctx);
}
KOPF_ON_UPDATE(update_fn, kChaosObjects, {.id = "update"});

void field_fn(kopf::Context& ctx) {
    handle("field", ctx);
}
KOPF_ON_FIELD(field_fn, kChaosObjects, {.id = "field", .field = "spec.field"});

void delete_fn(kopf::Context& ctx) {
    handle("delete", ctx);
}
KOPF_ON_DELETE(delete_fn, kChaosObjects, {.id = "delete"});
