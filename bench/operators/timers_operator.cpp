// The timer operator of the `daemons` group of bench/run.sh (bench/daemons_load.cpp starts it):
// one coroutine timer per BenchObject, every second (Kopf's default: the interval runs from the
// end of one tick to the start of the next), which patches status.tick.
//
//   export KOPF_BENCH_RECORDS=/tmp/records.txt KUBECONFIG=...
//   kopf run bench/operators/timers_operator.cpp --standalone -n default
//
// Records: "tick <start, µs since the epoch> <lateness µs>" per tick, where the lateness is this
// start − (the object's previous start + the interval); "tick0 <start> 0" for an object's first
// tick. Lines are buffered and written every 64 KB or 0.5 s, not one write per tick, so that
// recording adds next to nothing to the operator's CPU per tick.
//
// $KOPF_BENCH_COALESCING_WINDOW (seconds, e.g. 0 to compare) sets
// settings.queueing.coalescing_window; unset or empty: the default.
// $KOPF_BENCH_BESIDE=create adds a creation handler beside the timer, as most operators have
// (the echoes of its ticks then meet the changing handlers' rules too).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

constexpr double kInterval = 1.0;  // seconds

std::int64_t now_microseconds() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class Records {
  public:
    void add(const char* kind, std::int64_t start, std::int64_t lateness) {
        if (fd_ < 0) return;
        char line[80];
        const int size =
            std::snprintf(line, sizeof line, "%s %lld %lld\n", kind, static_cast<long long>(start),
                          static_cast<long long>(lateness));
        std::lock_guard lock(mutex_);
        buffer_.append(line, static_cast<std::size_t>(size));
        if (buffer_.size() >= 64 * 1024 || start - flushed_ >= 500'000) {
            if (::write(fd_, buffer_.data(), buffer_.size()) !=
                static_cast<ssize_t>(buffer_.size()))
                std::perror("timers_operator: write to KOPF_BENCH_RECORDS");
            buffer_.clear();
            flushed_ = start;
        }
    }

  private:
    int fd_ = [] {
        const char* path = std::getenv("KOPF_BENCH_RECORDS");
        return path ? ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }();
    std::mutex mutex_;
    std::string buffer_;
    std::int64_t flushed_ = 0;
};
Records records;

std::atomic<long> ticks{
    0};  // all objects' ticks: each patch carries a new value, so it is a real write

const kopf::Selector kBenchObjects{"bench.kopf.dev", "v1", "benchobjects"};

}  // namespace

kopf::Task<void> tick_fn(kopf::Context& ctx) {
    const std::int64_t start = now_microseconds();
    kopf::json& previous = ctx.memo["bench_previous_tick"];
    if (previous.is_number_integer()) {
        const auto expected =
            previous.get<std::int64_t>() + static_cast<std::int64_t>(kInterval * 1e6);
        records.add("tick", start, start - expected);
    } else {
        records.add("tick0", start, 0);
    }
    previous = start;
    ctx.patch.status()["tick"] = ticks.fetch_add(1) + 1;
    co_return;
}
KOPF_TIMER(tick_fn, kBenchObjects, {.interval = kInterval});

kopf::json create_fn(kopf::Context&) {
    return {{"message", "created"}};
}
const auto beside = [] {
    const char* what = std::getenv("KOPF_BENCH_BESIDE");
    if (!what || std::string_view(what) != "create") return std::unique_ptr<kopf::on::create>();
    return std::make_unique<kopf::on::create>(kBenchObjects,
                                              kopf::HandlerOptions{.id = "create_fn"}, create_fn);
}();

void configure(kopf::ActivityContext& ctx) {
    // Out of range is refused by the operator's own check, which names the setting.
    if (const char* window = std::getenv("KOPF_BENCH_COALESCING_WINDOW"); window && *window) {
        char* end = nullptr;
        ctx.settings.queueing.coalescing_window = std::strtod(window, &end);
        if (*end != '\0') {
            throw std::runtime_error(std::string("KOPF_BENCH_COALESCING_WINDOW='") + window +
                                     "' is not a number of seconds");
        }
    }
}
KOPF_ON_STARTUP(configure);
