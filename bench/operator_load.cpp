// The load side of the operator benchmarks (bench/run.sh drives it): it creates the
// benchmark resource and its objects, watches for the operator's results, paces updates and
// reads the timestamps that bench/operators/bench_operator.cpp records. It talks to the API
// server directly over keep-alive loopback connections (bench/load_client.hpp), so it costs
// the machine little next to the server and the operator it measures.
//
//   operator_load crd      --url URL [--status-subresource 0|1]
//   operator_load rv       --url URL    (the current resourceVersion)
//   operator_load size     --url URL    (bytes of one stored object's JSON)
//   operator_load create   --url URL --objects N [--first 0] [--spec-bytes 2048] [--connections 4]
//                          [--rate R] [--timeout 600]
//   operator_load update   --url URL --objects N --rate R --seconds S --records FILE
//   operator_load update-once --url URL --objects N --round K [--first 0] [--connections 4]
//                          [--rate R] [--timeout 600]
//   operator_load resume   --records FILE --count N --start-us T0 [--timeout 600]
//   operator_load limit    --url URL --objects N [--patches 2] [--status-patches 0]
//                          [--spec-bytes 2048]
//
// --rate R paces the requests at R per second (the i-th due at start + i / R, whichever
// connection sends it); without it, or with 0, they go as fast as the server answers.
//
// Every figure is printed as one line "<name>: ..." that bench/run.sh picks up.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "load_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using bench::Connection;
using bench::Endpoint;
using bench::in_parallel;
using bench::http::verb;

const std::string kCollection = "/apis/bench.kopf.dev/v1/namespaces/default/benchobjects";
const char* kCrdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
// Without a status subresource, the operator's status writes ride in the same merge-patch as
// its annotations; with one (`crd --status-subresource 1`, as in Kopf's examples and most real
// CRDs), the server ignores `status` in patches of the object itself, and the operator sends it
// in a second merge-patch to .../<name>/status.
const char* kCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "benchobjects.bench.kopf.dev"},
  "spec": {"group": "bench.kopf.dev", "scope": "Namespaced",
    "names": {"plural": "benchobjects", "singular": "benchobject", "kind": "BenchObject"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})";

std::string object_name(long i) {
    char name[32];
    std::snprintf(name, sizeof name, "bench-%07ld", i);
    return name;
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::int64_t wall_microseconds() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

struct Options {
    std::string command;
    std::map<std::string, std::string> flags;

    bool has(const std::string& name) const { return flags.count(name) > 0; }
    std::string text(const std::string& name, const std::string& fallback = {}) const {
        auto it = flags.find(name);
        if (it != flags.end()) return it->second;
        if (fallback.empty()) throw std::invalid_argument("missing option --" + name);
        return fallback;
    }
    long number(const std::string& name, long fallback = -1) const {
        auto it = flags.find(name);
        if (it == flags.end()) {
            if (fallback < 0) throw std::invalid_argument("missing option --" + name);
            return fallback;
        }
        try {
            std::size_t used = 0;
            const long value = std::stol(it->second, &used);
            if (used != it->second.size() || value < 0) throw std::invalid_argument("");
            return value;
        } catch (const std::exception&) {
            throw std::invalid_argument("--" + name + " needs a non-negative integer, got '" +
                                        it->second + "'");
        }
    }
    Endpoint endpoint() const { return Endpoint::parse(text("url")); }
};

std::string spec_json(long spec_bytes) {
    return nlohmann::json(
               {{"filler", std::string(static_cast<std::size_t>(spec_bytes), 'x')}, {"stamp", 0}})
        .dump();
}

// The current global resourceVersion (each write to the server advances it by one).
long current_resource_version(Connection& connection) {
    auto response = connection.send(verb::get, kCollection + "?limit=1");
    if (response.result_int() != 200) {
        throw std::runtime_error("listing " + kCollection + " failed: " + response.body());
    }
    return std::stol(
        nlohmann::json::parse(response.body())["metadata"]["resourceVersion"].get<std::string>());
}

// Scans watch-event lines cheaply (no JSON parsing): the object's name and resourceVersion are
// the first occurrences of those keys. An object counts as handled when its line contains
// `marker` (followed by a non-digit when `marker_ends_a_number`): `"create_fn":{` for a result
// in status.create_fn; `\"round\":K` for a diff base (a JSON string inside the annotation, hence
// the escaped quotes) that has seen spec.round = K.
class HandledTracker {
  public:
    // Tracks the objects bench-<first> .. bench-<first + objects - 1>.
    explicit HandledTracker(long objects, long first = 0, std::string marker = "\"create_fn\":{",
                            bool marker_ends_a_number = false)
        : handled_(static_cast<std::size_t>(objects), false),
          first_(first),
          marker_(std::move(marker)),
          marker_ends_a_number_(marker_ends_a_number) {}

    void feed(std::string_view data) {
        while (!data.empty()) {
            const auto newline = data.find('\n');
            if (newline == std::string_view::npos) {
                partial_.append(data);
                return;
            }
            if (partial_.empty()) {
                scan(data.substr(0, newline));
            } else {
                partial_.append(data.substr(0, newline));
                scan(partial_);
                partial_.clear();
            }
            data.remove_prefix(newline + 1);
        }
    }
    long count() const { return count_.load(); }
    long last_resource_version() const { return last_rv_; }
    void restart() { partial_.clear(); }

  private:
    void scan(std::string_view line) {
        static constexpr std::string_view kRv = "\"resourceVersion\":\"";
        if (auto at = line.find(kRv); at != std::string_view::npos) {
            last_rv_ = std::atol(line.data() + at + kRv.size());
        }
        const auto marked = line.find(marker_);
        if (marked == std::string_view::npos) return;
        if (marker_ends_a_number_) {
            const auto after = marked + marker_.size();
            if (after < line.size() && line[after] >= '0' && line[after] <= '9') return;
        }
        static constexpr std::string_view kName = "\"name\":\"bench-";
        const auto at = line.find(kName);
        if (at == std::string_view::npos) return;
        const long index = std::atol(line.data() + at + kName.size()) - first_;
        if (index < 0 || index >= static_cast<long>(handled_.size()) || handled_[index]) return;
        handled_[index] = true;
        count_.fetch_add(1);
    }

    std::vector<bool> handled_;
    long first_ = 0;
    std::string marker_;
    bool marker_ends_a_number_ = false;
    std::atomic<long> count_{0};
    long last_rv_ = 0;
    std::string partial_;
};

void create_object(Connection& connection, long i, const std::string& spec) {
    const std::string body = R"({"apiVersion":"bench.kopf.dev/v1","kind":"BenchObject",)"
                             R"("metadata":{"name":")" +
                             object_name(i) + R"("},"spec":)" + spec + "}";
    auto response = connection.send(verb::post, kCollection, body);
    if (response.result_int() != 201) {
        throw std::runtime_error("creating " + object_name(i) + " failed with HTTP " +
                                 std::to_string(response.result_int()) + ": " + response.body());
    }
}

int command_crd(const Options& options) {
    Connection connection(options.endpoint());
    const long status_subresource = options.number("status-subresource", 0);
    if (status_subresource > 1) {
        throw std::invalid_argument("--status-subresource needs 0 or 1, got " +
                                    std::to_string(status_subresource));
    }
    nlohmann::json crd = nlohmann::json::parse(kCrd);
    if (status_subresource == 1) {
        crd["spec"]["versions"][0]["subresources"] = {{"status", nlohmann::json::object()}};
    }
    auto response = connection.send(verb::post, kCrdPath, crd.dump());
    if (response.result_int() != 201 && response.result_int() != 409) {
        throw std::runtime_error("creating the CRD failed: " + response.body());
    }
    for (int attempt = 0; attempt < 200; ++attempt) {
        if (connection.send(verb::get, kCollection + "?limit=1").result_int() == 200) return 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("the benchmark resource was not served 10 s after its CRD");
}

// The size of one stored object's JSON (the first benchmark object), in bytes.
int command_size(const Options& options) {
    Connection connection(options.endpoint());
    auto response = connection.send(verb::get, kCollection + "/" + object_name(0));
    if (response.result_int() != 200) {
        throw std::runtime_error("reading " + object_name(0) + " failed: " + response.body());
    }
    std::printf("%zu\n", response.body().size());
    return 0;
}

int command_rv(const Options& options) {
    Connection connection(options.endpoint());
    std::printf("%ld\n", current_resource_version(connection));
    return 0;
}

// Follows the collection's watch from a resourceVersion on on its own thread, feeding a tracker,
// until the tracker has counted every object it tracks (reconnecting from the last
// resourceVersion seen when the server ends the stream).
class TrackingWatch {
  public:
    TrackingWatch(const Endpoint& endpoint, HandledTracker& tracker, long objects, long from_rv)
        : tracker_(tracker), objects_(objects) {
        thread_ = std::thread([this, endpoint, from_rv] { follow(endpoint, from_rv); });
        while (!watching_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    TrackingWatch(const TrackingWatch&) = delete;
    TrackingWatch& operator=(const TrackingWatch&) = delete;
    // After wait_for_all the thread ends by itself; otherwise (the load failed and threw) it may be
    // blocked in a read that nothing would end, and is left to the process's exit.
    ~TrackingWatch() {
        stop_ = true;
        if (tracker_.count() >= objects_) {
            thread_.join();
        } else {
            thread_.detach();
        }
    }

    // Waits until every tracked object is counted; on the timeout, reports `what` and ends the
    // process (the watch thread may be blocked in a read that nothing would end).
    void wait_for_all(Clock::time_point deadline, long timeout, const char* what) {
        while (tracker_.count() < objects_ && Clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        if (tracker_.count() < objects_) {
            std::fprintf(stderr, "operator_load: only %ld of %ld %s were handled within %ld s\n",
                         tracker_.count(), objects_, what, timeout);
            std::fflush(stderr);
            std::_Exit(1);
        }
        stop_ = true;
    }

  private:
    void follow(const Endpoint& endpoint, long from) {
        while (!stop_) {
            try {
                Connection connection(endpoint);
                watching_ = true;
                connection.stream(kCollection +
                                      "?watch=true&allowWatchBookmarks=false&resourceVersion=" +
                                      std::to_string(from),
                                  [&](std::string_view data) {
                                      tracker_.feed(data);
                                      return !stop_ && tracker_.count() < objects_;
                                  });
                if (tracker_.count() >= objects_) return;
                tracker_.restart();
                if (tracker_.last_resource_version() > from)
                    from = tracker_.last_resource_version();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "operator_load: watch: %s (reconnecting)\n", e.what());
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
    }

    HandledTracker& tracker_;
    long objects_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> watching_{false};
    std::thread thread_;
};

// The arrival rate of --rate (0: as fast as the server answers), and how it reads in output.
double arrival_rate(const Options& options) {
    return static_cast<double>(options.number("rate", 0));
}
std::string pacing(double rate) {
    return rate > 0 ? "paced at " + std::to_string(static_cast<long>(rate)) + "/s"
                    : "as fast as accepted";
}

// Creates N objects (bench-<first> on) over C connections, as fast as accepted or at --rate R,
// and waits (on a watch) until every one shows the operator's result in status.create_fn.
int command_create(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long objects = options.number("objects");
    const long first = std::max(0L, options.number("first", 0));
    const long connections = std::max(1L, options.number("connections", 4));
    const long timeout = options.number("timeout", 600);
    const double rate = arrival_rate(options);
    const std::string spec = spec_json(options.number("spec-bytes", 2048));

    Connection admin(endpoint);
    HandledTracker tracker(objects, first);
    TrackingWatch watch(endpoint, tracker, objects, current_resource_version(admin));

    const auto start = Clock::now();
    in_parallel(endpoint, objects, connections, [&](long i, Connection& connection) {
        bench::wait_until_due(start, i, rate);
        create_object(connection, first + i, spec);
    });
    const double accepted = seconds_since(start);
    std::printf("accepted: %ld objects in %.2f s = %.0f objects/s over %ld connections (%s)\n",
                objects, accepted, static_cast<double>(objects) / accepted, connections,
                pacing(rate).c_str());
    std::fflush(stdout);

    watch.wait_for_all(start + std::chrono::seconds(timeout), timeout, "objects");
    const double handled_seconds = seconds_since(start);
    std::printf("handled: %ld objects in %.2f s = %.0f objects/s\n", objects, handled_seconds,
                static_cast<double>(objects) / handled_seconds);
    std::fflush(stdout);
    return 0;
}

// Updates of handled objects: merge-patches spec.round = K of each of N objects once (bench-<first>
// on, in order, as fast as accepted or at --rate R), so that the operator's update handler and
// its field handler on spec.round run, and waits (on a watch) until the diff base of every one
// shows round K. K must differ from the objects' current round (they are created without one).
int command_update_once(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long objects = options.number("objects");
    const long first = std::max(0L, options.number("first", 0));
    const long round = options.number("round");
    const long connections = std::max(1L, options.number("connections", 4));
    const long timeout = options.number("timeout", 600);
    const double rate = arrival_rate(options);
    const std::string body = R"({"spec":{"round":)" + std::to_string(round) + "}}";

    Connection admin(endpoint);
    HandledTracker tracker(objects, first, R"(\"round\":)" + std::to_string(round), true);
    TrackingWatch watch(endpoint, tracker, objects, current_resource_version(admin));

    const auto start = Clock::now();
    in_parallel(endpoint, objects, connections, [&](long i, Connection& connection) {
        bench::wait_until_due(start, i, rate);
        auto response = connection.send(verb::patch, kCollection + "/" + object_name(first + i),
                                        body, "application/merge-patch+json");
        if (response.result_int() != 200) {
            throw std::runtime_error("patching " + object_name(first + i) + " failed with HTTP " +
                                     std::to_string(response.result_int()) + ": " +
                                     response.body());
        }
    });
    const double accepted = seconds_since(start);
    std::printf("updated: %ld objects in %.2f s = %.0f updates/s over %ld connections (%s)\n",
                objects, accepted, static_cast<double>(objects) / accepted, connections,
                pacing(rate).c_str());
    std::fflush(stdout);

    watch.wait_for_all(start + std::chrono::seconds(timeout), timeout, "updates");
    const double handled_seconds = seconds_since(start);
    std::printf("handled: %ld updates in %.2f s = %.0f updates/s\n", objects, handled_seconds,
                static_cast<double>(objects) / handled_seconds);
    std::fflush(stdout);
    return 0;
}

// Reads "<kind> <value>" lines of the records file from `offset` on.
std::vector<std::int64_t> read_records(const std::string& path, std::streamoff offset,
                                       const std::string& kind) {
    std::ifstream file(path);
    std::vector<std::int64_t> values;
    if (!file) return values;
    file.seekg(offset);
    std::string word;
    std::int64_t value = 0;
    while (file >> word >> value) {
        if (word == kind) values.push_back(value);
    }
    return values;
}

std::streamoff file_size(const std::string& path) {
    std::ifstream file(path, std::ios::ate);
    return file ? static_cast<std::streamoff>(file.tellg()) : 0;
}

double percentile(std::vector<std::int64_t> values, double fraction) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto rank =
        static_cast<std::size_t>(std::lround(fraction * static_cast<double>(values.size() - 1)));
    return static_cast<double>(values[std::min(rank, values.size() - 1)]);
}

// Steady state: merge-patches spec.stamp (the writer's wall clock) of `rate` objects per second
// for `seconds`, each object at most once per pass over all of them, then reads the latencies
// that the update handler recorded.
int command_update(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long objects = options.number("objects");
    const long rate = std::max(1L, options.number("rate"));
    const long seconds = options.number("seconds");
    const long connections = std::max(1L, options.number("connections", 4));
    const std::string records = options.text("records");
    const std::streamoff offset = file_size(records);

    std::vector<long> order(static_cast<std::size_t>(objects));
    std::iota(order.begin(), order.end(), 0L);
    std::shuffle(order.begin(), order.end(), std::mt19937(42));
    const long total = rate * seconds;
    std::atomic<long> sent{0};
    const auto start = Clock::now();
    const auto interval = std::chrono::duration<double>(1.0 / static_cast<double>(rate));
    in_parallel(endpoint, total, connections, [&](long k, Connection& connection) {
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(k)));
        const std::string body =
            R"({"spec":{"stamp":)" + std::to_string(wall_microseconds()) + "}}";
        auto response =
            connection.send(verb::patch, kCollection + "/" + object_name(order[k % objects]), body,
                            "application/merge-patch+json");
        if (response.result_int() != 200) {
            throw std::runtime_error("patching failed with HTTP " +
                                     std::to_string(response.result_int()) + ": " +
                                     response.body());
        }
        sent.fetch_add(1);
    });
    const double sending = seconds_since(start);

    std::vector<std::int64_t> latencies;
    const auto deadline = Clock::now() + std::chrono::seconds(options.number("timeout", 30));
    while (Clock::now() < deadline) {
        latencies = read_records(records, offset, "update");
        if (static_cast<long>(latencies.size()) >= sent) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::printf(
        "steady: %ld updates in %.1f s (%.0f/s) to %ld objects; handler called for %zu; "
        "latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
        sent.load(), sending, static_cast<double>(sent.load()) / sending, objects, latencies.size(),
        percentile(latencies, 0.50) / 1000.0, percentile(latencies, 0.99) / 1000.0,
        percentile(latencies, 1.0) / 1000.0);
    return latencies.empty() ? 1 : 0;
}

// Resume at start-up: waits until `count` resume handlers have recorded their call and reports
// the last one relative to the operator's start (`start-us`, wall-clock µs).
int command_resume(const Options& options) {
    const std::string records = options.text("records");
    const long count = options.number("count");
    const std::int64_t started = options.number("start-us");
    const auto deadline = Clock::now() + std::chrono::seconds(options.number("timeout", 600));
    std::vector<std::int64_t> stamps;
    while (Clock::now() < deadline) {
        stamps = read_records(records, 0, "resume");
        if (static_cast<long>(stamps.size()) >= count) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (static_cast<long>(stamps.size()) < count) {
        std::fprintf(stderr, "operator_load: only %zu of %ld resume handlers ran in time\n",
                     stamps.size(), count);
        return 1;
    }
    std::sort(stamps.begin(), stamps.end());
    std::printf("resumed: %ld resume handlers, first %.2f s and last %.2f s after the start\n",
                count, static_cast<double>(stamps.front() - started) / 1e6,
                static_cast<double>(stamps[count - 1] - started) / 1e6);
    return 0;
}

// The limit: the same requests the operator makes for each object (create, then `patches`
// merge-patches shaped like Kopf's progress, result and diff-base writes, then `status-patches`
// merge-patches of the status subresource), sent straight to the server by this minimal client.
// With status patches (a CRD with a status subresource), the result goes to .../<name>/status
// and the first patch of the object itself carries the annotations only, as the operator does.
int command_limit(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long objects = options.number("objects");
    const long patches = options.number("patches", 2);
    const long status_patches = options.number("status-patches", 0);
    const long connections = std::max(1L, options.number("connections", 4));
    const std::string spec = spec_json(options.number("spec-bytes", 2048));
    const std::string progress =
        R"({"started":"2024-01-01T00:00:00.000000+00:00","stopped":"2024-01-01T00:00:00.001000+00:00",)"
        R"("purpose":"create","retries":1,"success":true})";
    const std::string diff_base = nlohmann::json(R"({"spec":)" + spec + "}\n").dump();
    const std::string annotations = R"({"metadata":{"annotations":{"kopf.zalando.org/create_fn":)" +
                                    nlohmann::json(progress).dump() +
                                    R"(,"kopf.zalando.org/last-handled-configuration":)" +
                                    diff_base + "}}";
    const std::string result = R"("status":{"create_fn":{"message":"handled"}})";
    const std::string first_patch =
        status_patches > 0 ? annotations + "}" : annotations + "," + result + "}";
    const std::string status_patch = "{" + result + "}";
    const std::string later_patch =
        R"({"metadata":{"annotations":{"kopf.zalando.org/create_fn":null}}})";

    const auto start = Clock::now();
    in_parallel(endpoint, objects, connections, [&](long i, Connection& connection) {
        create_object(connection, i, spec);
        for (long p = 0; p < patches; ++p) {
            auto response =
                connection.send(verb::patch, kCollection + "/" + object_name(i),
                                p == 0 ? first_patch : later_patch, "application/merge-patch+json");
            if (response.result_int() != 200) {
                throw std::runtime_error("patching failed with HTTP " +
                                         std::to_string(response.result_int()) + ": " +
                                         response.body());
            }
        }
        for (long p = 0; p < status_patches; ++p) {
            auto response =
                connection.send(verb::patch, kCollection + "/" + object_name(i) + "/status",
                                status_patch, "application/merge-patch+json");
            if (response.result_int() != 200) {
                throw std::runtime_error("patching the status failed with HTTP " +
                                         std::to_string(response.result_int()) + ": " +
                                         response.body());
            }
        }
    });
    const double elapsed = seconds_since(start);
    std::printf(
        "limit: %ld objects created and patched %ld times each, their status %ld times, in %.2f "
        "s = %.0f objects/s (%.0f requests/s)\n",
        objects, patches, status_patches, elapsed, static_cast<double>(objects) / elapsed,
        static_cast<double>(objects * (1 + patches + status_patches)) / elapsed);
    return 0;
}

int usage() {
    std::fprintf(
        stderr,
        "usage: operator_load crd|rv|size|create|update|update-once|resume|limit "
        "--url http://127.0.0.1:PORT [--objects N] [--first K] [--spec-bytes B] [--connections C] "
        "[--rate R] [--seconds S] [--round K] [--records FILE] [--count N] [--start-us T] "
        "[--patches K] [--status-patches K] [--status-subresource 0|1] [--timeout S]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    Options options;
    options.command = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag.rfind("--", 0) != 0 || i + 1 >= argc) {
            std::fprintf(stderr, "operator_load: expected '--option value', got '%s'\n",
                         flag.c_str());
            return usage();
        }
        options.flags[flag.substr(2)] = argv[i + 1];
    }
    try {
        if (options.command == "crd") return command_crd(options);
        if (options.command == "rv") return command_rv(options);
        if (options.command == "size") return command_size(options);
        if (options.command == "create") return command_create(options);
        if (options.command == "update") return command_update(options);
        if (options.command == "update-once") return command_update_once(options);
        if (options.command == "resume") return command_resume(options);
        if (options.command == "limit") return command_limit(options);
        std::fprintf(stderr, "operator_load: unknown command '%s'\n", options.command.c_str());
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "operator_load %s: %s\n", options.command.c_str(), e.what());
        return 1;
    }
}
