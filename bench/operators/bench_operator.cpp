// The operator that bench/run.sh measures: one creation handler with a small result (so every
// object goes through the full Kopf cycle: progress, result in status, diff base), an update
// handler and a resume handler that record what the benchmark needs, and a field handler on
// spec.round (set only by `operator_load update-once`, so it runs for those updates and never at
// creation), which does nothing: an update of spec.round is the diff, two handlers and the diff
// base rewritten.
//
//   export KOPF_BENCH_RECORDS=/tmp/records.txt KUBECONFIG=...
//   kopf run bench/operators/bench_operator.cpp --standalone -n default
//
// Records (one line each, appended with O_APPEND so concurrent handlers never interleave):
//   "update <µs from the writer's spec.stamp to this call>"   (steady-state latency; only when
//                                                              the writer set spec.stamp > 0)
//   "resume <µs since the epoch>"                               (resume at start-up)
//
// $KOPF_BENCH_LEASE="DURATION,RENEW_DEADLINE,RETRY_PERIOD" (seconds) sets settings.leasing for
// the standby figures (run with --lease NAME); unset or empty: the defaults.
// $KOPF_BENCH_IDLE_TIMEOUT (seconds) sets settings.queueing.idle_timeout (the smoke run shortens
// the objects' workers' exit with it); unset or empty: the default, 5 s.
// $KOPF_BENCH_COALESCING_WINDOW (seconds) sets settings.queueing.coalescing_window (0: off, to
// compare); unset or empty: the default.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

std::int64_t now_microseconds() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Appends one line to $KOPF_BENCH_RECORDS (nothing when the variable is unset).
void record(const char* kind, std::int64_t value) {
    static const int fd = [] {
        const char* path = std::getenv("KOPF_BENCH_RECORDS");
        return path ? ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }();
    if (fd < 0) return;
    char line[64];
    const int size =
        std::snprintf(line, sizeof line, "%s %lld\n", kind, static_cast<long long>(value));
    if (::write(fd, line, size) != size) std::perror("bench_operator: write to KOPF_BENCH_RECORDS");
}

const kopf::Selector kBenchObjects{"bench.kopf.dev", "v1", "benchobjects"};

}  // namespace

kopf::json create_fn(kopf::Context&) {
    return {{"message", "handled"}};
}
KOPF_ON_CREATE(create_fn, kBenchObjects);

// The steady-state writer puts its wall-clock time (µs since the epoch) into spec.stamp with
// each update; objects are created with 0 there, and other updates leave it alone.
void update_fn(kopf::Context& ctx) {
    const std::int64_t called = now_microseconds();
    const auto stamp = ctx.spec.find("stamp");
    if (stamp != ctx.spec.end() && stamp->is_number_integer() && stamp->get<std::int64_t>() > 0) {
        record("update", called - stamp->get<std::int64_t>());
    }
}
KOPF_ON_UPDATE(update_fn, kBenchObjects);

void round_fn(kopf::Context&) {}
KOPF_ON_FIELD(round_fn, kBenchObjects, {.field = "spec.round"});

void resume_fn(kopf::Context&) {
    record("resume", now_microseconds());
}
KOPF_ON_RESUME(resume_fn, kBenchObjects);

namespace {

// Seconds from $NAME, if set: a number, positive (or zero when `zero_allowed`).
std::optional<double> seconds_from_env(const char* name, bool zero_allowed) {
    const char* text = std::getenv(name);
    if (!text || !*text) return std::nullopt;
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (*end != '\0' || !(seconds > 0 || (zero_allowed && seconds == 0))) {
        throw std::runtime_error(std::string(name) + "='" + text + "' is not a " +
                                 (zero_allowed ? "non-negative" : "positive") +
                                 " number of seconds");
    }
    return seconds;
}

}  // namespace

void configure(kopf::ActivityContext& ctx) {
    if (const auto idle = seconds_from_env("KOPF_BENCH_IDLE_TIMEOUT", false)) {
        ctx.settings.queueing.idle_timeout = *idle;
    }
    if (const auto window = seconds_from_env("KOPF_BENCH_COALESCING_WINDOW", true)) {
        ctx.settings.queueing.coalescing_window = *window;
    }
    const char* lease = std::getenv("KOPF_BENCH_LEASE");
    if (!lease || !*lease) return;
    double duration = 0, renew_deadline = 0, retry_period = 0;
    if (std::sscanf(lease, "%lf,%lf,%lf", &duration, &renew_deadline, &retry_period) != 3) {
        throw std::runtime_error(std::string("KOPF_BENCH_LEASE='") + lease +
                                 "' is not DURATION,RENEW_DEADLINE,RETRY_PERIOD in seconds");
    }
    ctx.settings.leasing.lease_duration = duration;
    ctx.settings.leasing.renew_deadline = renew_deadline;
    ctx.settings.leasing.retry_period = retry_period;
}
KOPF_ON_STARTUP(configure);
