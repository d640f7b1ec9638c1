// The operator of the `daemons` group of bench/run.sh (bench/daemons_load.cpp starts it): one
// coroutine daemon per BenchObject labelled `bench-daemon: "on"`, which only waits until it is
// stopped. Objects labelled otherwise are watched but get no daemon (the per-object baseline:
// the difference is the daemon's own cost).
//
//   export KOPF_BENCH_RECORDS=/tmp/records.txt KOPF_BENCH_EXPECTED=10000 KUBECONFIG=...
//   kopf run bench/operators/daemons_operator.cpp --standalone -n default
//
// $KOPF_BENCH_PROCESSING_LIMIT sets settings.queueing.processing_limit (0: unlimited, to measure
// the start-up burst without the limit); unset or empty: the default.
//
// Records (appended with O_APPEND): "daemons <how many have started> <µs since the epoch>" for
// the first daemon, every 1% of $KOPF_BENCH_EXPECTED, and the last one — not one line per daemon,
// so that recording costs the operator nothing measurable.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <stdexcept>
#include <string>

namespace {

std::int64_t now_microseconds() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void record(long count, std::int64_t at) {
    static const int fd = [] {
        const char* path = std::getenv("KOPF_BENCH_RECORDS");
        return path ? ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }();
    if (fd < 0) return;
    char line[64];
    const int size =
        std::snprintf(line, sizeof line, "daemons %ld %lld\n", count, static_cast<long long>(at));
    if (::write(fd, line, size) != size)
        std::perror("daemons_operator: write to KOPF_BENCH_RECORDS");
}

const long expected = [] {
    const char* text = std::getenv("KOPF_BENCH_EXPECTED");
    return text ? std::atol(text) : 0L;
}();
std::atomic<long> started{0};

const kopf::Selector kBenchObjects{"bench.kopf.dev", "v1", "benchobjects"};

}  // namespace

kopf::Task<void> idle_daemon(kopf::Context& ctx) {
    const long count = started.fetch_add(1) + 1;
    const long step = expected >= 100 ? expected / 100 : 1;
    if (count == 1 || count % step == 0 || count == expected) record(count, now_microseconds());
    co_await ctx.stopped.wait();
}
KOPF_DAEMON(idle_daemon, kBenchObjects, {.labels = {{"bench-daemon", "on"}}});

void configure(kopf::ActivityContext& ctx) {
    const char* limit = std::getenv("KOPF_BENCH_PROCESSING_LIMIT");
    if (!limit || !*limit) return;
    char* end = nullptr;
    const long value = std::strtol(limit, &end, 10);
    if (*end != '\0' || value < 0) {
        throw std::runtime_error(std::string("KOPF_BENCH_PROCESSING_LIMIT='") + limit +
                                 "' is not a non-negative integer");
    }
    ctx.settings.queueing.processing_limit = static_cast<std::size_t>(value);
}
KOPF_ON_STARTUP(configure);
