// Daemons: long-running functions that accompany every object from its creation (or the
// operator's start) until its deletion (or the operator's exit). Both daemons fail their first
// 3 attempts and are restarted 1 second later (kopf::TemporaryError's delay), then ping.
// Run it with: kopf run examples/14-daemons/example.cpp --verbose -A --standalone
#include <chrono>
#include <kopf/kopf.hpp>
#include <string>

namespace {

// Python's repr() of a JSON value, as Kopf's f"{spec['field']!r}" prints it: 'text' for strings.
std::string repr(const kopf::json& value) {
    return value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump();
}

}  // namespace

// Synchronous daemons run on threads of their own and cannot be interrupted: they must check
// `ctx.stopped`. This daemon exits after 3 attempts and then 30 seconds of running (unless
// stopped).
void background_sync(kopf::Context& ctx) {
    if (ctx.retry < 3) {
        ctx.patch.status()["message"] = "Failed " + std::to_string(ctx.retry + 1) + " times.";
        throw kopf::TemporaryError("Simulated failure.", 1);
    }

    const auto started = std::chrono::steady_clock::now();
    while (!ctx.stopped && std::chrono::steady_clock::now() - started <= std::chrono::seconds(30)) {
        ctx.logger.info("=> Ping from a sync daemon: field={}, retry={}",
                        repr(ctx.spec.at("field")), ctx.retry);
        ctx.stopped.wait(5.0);
    }

    ctx.patch.status()["message"] = "Accompanying is finished.";
}
KOPF_DAEMON(background_sync, "kopfexamples", {.backoff = 3});

// Coroutine daemons do not need the `ctx.stopped` flag: they can rely on kopf::CancelledError
// thrown at their kopf::sleep (Kopf's asyncio.CancelledError). This daemon runs forever (until
// stopped, i.e. cancelled 1 second after the stop request). Yet it fails to start 3 first times.
kopf::Task<void> background_async(kopf::Context& ctx) {
    if (ctx.retry < 3) {
        throw kopf::TemporaryError("Simulated failure.", 1);
    }

    while (true) {
        ctx.logger.info("=> Ping from an async daemon: field={}", repr(ctx.spec.at("field")));
        co_await kopf::sleep(5.0);
    }
}
KOPF_DAEMON(background_async, "kopfexamples",
            {.backoff = 3,
             .cancellation_backoff = 1.0,
             .cancellation_timeout = 0.5,
             .annotations = {{"someannotation", "somevalue"}}});

// Kopf marks this example for its e2e tests with these stop words; Kopf++'s equivalent is
// tests/e2e/daemons_examples_test.cpp:
//   E2E_CREATION_STOP_WORDS = ["=> Ping from"]
//   E2E_DELETION_STOP_WORDS = ["'background_async' is cancelled",
//                              "'background_sync' is cancelled",
//                              "'background_async' has exited"]
