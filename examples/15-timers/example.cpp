// Timers: functions called every few seconds for every object while it exists, whether it
// changes or not; but only once the object has been left unchanged for `idle` seconds.
// Run it with: kopf run examples/15-timers/example.cpp --verbose -A --standalone
#include <kopf/kopf.hpp>
#include <string>

namespace {

// Python's repr() of a JSON value, as Kopf's f"{spec['field']!r}" prints it: 'text' for strings.
std::string repr(const kopf::json& value) {
    return value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump();
}

}  // namespace

// Synchronous timers run on the worker pool (settings.execution.max_workers).
void every_few_seconds_sync(kopf::Context& ctx) {
    ctx.logger.info("Ping from a sync timer: field={}", repr(ctx.spec.at("field")));
}
KOPF_TIMER(every_few_seconds_sync, "kopfexamples", {.interval = 2, .idle = 5});

// Coroutine timers run on the operator's event loop.
kopf::Task<void> every_few_seconds_async(kopf::Context& ctx) {
    ctx.logger.info("Ping from an async timer: field={}", repr(ctx.spec.at("field")));
    co_return;
}
KOPF_TIMER(every_few_seconds_async, "kopfexamples", {.interval = 4, .idle = 10});
