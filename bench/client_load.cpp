// The client layer's figures (bench/run.sh, group "client"): how fast the Kubernetes API client
// turns watch streams into events, and how much memory its paged listing needs. Objects are
// BenchObjects (bench.kopf.dev/v1; `operator_load crd` creates the resource) shaped like real
// custom objects: labels, annotations, nested spec lists, and — for the "handled" ones — Kopf's
// diff-base annotation and status.
//
//   client_load parse    --url URL [--objects 200] [--millis 2000] [--seed 1]
//       creates ~2 KB and ~5 KB objects, records the watch streams the server sends for them,
//       then replays each stream cut at random chunk boundaries (1..64 KiB, as the transport
//       reads them) through the client's line splitter and watch-line decoding, on one thread.
//   client_load watch    --url URL --events N [--connections 4]
//       the real ApiClient watches the resource (list, then watch) while writer threads create
//       N ~2 KB objects; events/s received and the client thread's CPU per event.
//   client_load populate --url URL --objects N [--connections 4]
//   client_load list     --url URL --mode pages|whole [--page-size 500]
//       pages: ApiClient::list_pages (limit/continue, what the watcher's initial listing uses);
//       whole: ApiClient::list (all pages joined into one list). Time and peak RSS growth
//       (VmHWM after − VmRSS before), in a fresh process for each mode.
//
// Every figure is printed as one line "<name>: ..." that bench/run.sh picks up.
#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "clients/api.hpp"
#include "clients/json_codec.hpp"
#include "clients/lines.hpp"
#include "load_client.hpp"

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using bench::Connection;
using bench::Endpoint;
using bench::in_parallel;
using bench::http::verb;
using nlohmann::json;

const std::string kCollection = "/apis/bench.kopf.dev/v1/namespaces/default/benchobjects";

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time of the calling thread: the figures are "on one core", whatever else runs.
double thread_cpu_seconds() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// User + system CPU of the whole process (the client's loop, its parsing, its threads).
double process_cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM").
long status_kb(const std::string& key) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
    }
    throw std::runtime_error("/proc/self/status has no " + key);
}

struct Options {
    std::string command;
    std::map<std::string, std::string> flags;

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
            if (used != it->second.size() || value <= 0) throw std::invalid_argument("");
            return value;
        } catch (const std::exception&) {
            throw std::invalid_argument("--" + name + " needs a positive integer, got '" +
                                        it->second + "'");
        }
    }
    Endpoint endpoint() const { return Endpoint::parse(text("url")); }
};

std::string object_name(const std::string& prefix, long i) {
    char name[64];
    std::snprintf(name, sizeof name, "%s-%07ld", prefix.c_str(), i);
    return name;
}

// A custom object of about `spec_bytes` of spec, shaped like a workload description. A handled
// object also carries what Kopf writes: the diff-base annotation (the spec again, as an escaped
// JSON string) and the handler's result and progress in status.
json realistic_object(const std::string& name, std::size_t spec_bytes, bool handled) {
    json spec = {
        {"replicas", 3},
        {"image", "registry.example.com/platform/service:1.24.3"},
        {"enabled", true},
        {"ratio", 0.75},
        {"resources",
         {{"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}},
          {"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}},
        {"ports",
         json::array({{{"name", "http"}, {"containerPort", 8080}, {"protocol", "TCP"}},
                      {{"name", "metrics"}, {"containerPort", 9090}, {"protocol", "TCP"}}})},
        {"env", json::array()},
    };
    for (int i = 0; spec.dump().size() < spec_bytes; ++i) {
        spec["env"].push_back({{"name", "SETTING_" + std::to_string(i)},
                               {"value", "value-" + std::to_string(i * 7919) + "-of-the-setting"}});
    }
    json object = {
        {"apiVersion", "bench.kopf.dev/v1"},
        {"kind", "BenchObject"},
        {"metadata",
         {{"name", name},
          {"labels",
           {{"app.kubernetes.io/name", "service"}, {"app.kubernetes.io/part-of", "bench"}}},
          {"annotations", {{"team.example.com/owner", "platform"}}}}},
        {"spec", spec},
    };
    if (handled) {
        object["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"] =
            json{{"spec", spec}}.dump();
        object["metadata"]["finalizers"] = json::array({"kopf.zalando.org/KopfFinalizerMarker"});
        object["status"] = {{"create_fn", {{"message", "handled"}}}};
    }
    return object;
}

void create_objects(const Endpoint& endpoint, const std::string& prefix, long count,
                    long connections, std::size_t spec_bytes, bool handled) {
    in_parallel(endpoint, count, connections, [&](long i, Connection& connection) {
        const std::string name = object_name(prefix, i);
        auto response = connection.send(verb::post, kCollection,
                                        realistic_object(name, spec_bytes, handled).dump());
        if (response.result_int() != 201) {
            throw std::runtime_error("creating " + name + " failed with HTTP " +
                                     std::to_string(response.result_int()) + ": " +
                                     response.body());
        }
    });
}

std::string current_resource_version(Connection& connection) {
    auto response = connection.send(verb::get, kCollection + "?limit=1");
    if (response.result_int() != 200) {
        throw std::runtime_error("listing " + kCollection +
                                 " failed (is the CRD created?): " + response.body());
    }
    return json::parse(response.body())["metadata"]["resourceVersion"].get<std::string>();
}

// The raw body of the server's watch stream from `resource_version` until `events` lines.
std::string record_stream(Connection& connection, const std::string& resource_version,
                          long events) {
    std::string body;
    long lines = 0;
    const int status = connection.stream(
        kCollection + "?watch=true&resourceVersion=" + resource_version,
        [&](std::string_view data) {
            body.append(data);
            lines += static_cast<long>(std::count(data.begin(), data.end(), '\n'));
            return lines < events;
        });
    if (status != 200) throw std::runtime_error("watching " + kCollection + " failed: " + body);
    if (lines < events) {
        throw std::runtime_error("the watch stream ended after " + std::to_string(lines) + " of " +
                                 std::to_string(events) + " events");
    }
    return body;
}

// What the client does with one watch line (ApiClient::watch_objs, src/clients/watching.cpp): parse
// it (with the client's JSON codec), check its shape, read the type and the object's
// resourceVersion, and move the object into a WatchEvent. Kept step for step in line with
// watching.cpp.
struct LineDecoder {
    long events = 0;
    std::size_t versions = 0;  // consumed so that nothing is optimised away

    void operator()(std::string_view line) {
        auto event = kopf::clients::parse_json_or_discarded(line);
        if (event.is_discarded() || !event.is_object() || !event.contains("object")) {
            throw std::runtime_error("malformed line in the recorded stream: " +
                                     std::string(line.substr(0, 200)));
        }
        std::string type = event.value("type", "");
        json& object = event["object"];
        std::string version;
        if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
            version = object["metadata"].value("resourceVersion", "");
        }
        kopf::clients::WatchEvent delivered{type, std::move(object), false};
        versions += version.size() + delivered.type.size();
        ++events;
    }
};

struct ParseResult {
    double megabytes_per_second = 0;
    double events_per_second = 0;
    double event_bytes = 0;
};

ParseResult replay(const std::string& stream, long events_in_stream, double seconds,
                   unsigned seed) {
    std::mt19937 random(seed);
    std::uniform_int_distribution<std::size_t> chunk_size(1, 64 * 1024);
    std::vector<std::string_view> chunks;
    for (std::size_t at = 0; at < stream.size();) {
        const std::size_t size = std::min(chunk_size(random), stream.size() - at);
        chunks.emplace_back(stream.data() + at, size);
        at += size;
    }
    LineDecoder decoder;
    long passes = 0;
    const double start = thread_cpu_seconds();
    double used = 0;
    do {
        kopf::clients::LineSplitter splitter;
        for (auto chunk : chunks) splitter.feed(chunk, decoder);
        if (!splitter.tail().empty()) throw std::runtime_error("the recorded stream ends mid-line");
        ++passes;
        used = thread_cpu_seconds() - start;
    } while (used < seconds);
    if (decoder.events != passes * events_in_stream || decoder.versions == 0) {
        throw std::runtime_error("decoded " + std::to_string(decoder.events) +
                                 " events, expected " + std::to_string(passes * events_in_stream));
    }
    ParseResult result;
    result.megabytes_per_second = static_cast<double>(stream.size()) * passes / used / 1e6;
    result.events_per_second = static_cast<double>(decoder.events) / used;
    result.event_bytes = static_cast<double>(stream.size()) / events_in_stream;
    return result;
}

int command_parse(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long objects = options.number("objects", 200);
    const double seconds = static_cast<double>(options.number("millis", 2000)) / 1000.0;
    const unsigned seed = static_cast<unsigned>(options.number("seed", 1));
    Connection connection(endpoint);
    struct Shape {
        const char* label;
        const char* prefix;
        std::size_t spec_bytes;
        bool handled;
    };
    for (const Shape& shape :
         {Shape{"2KB", "parse-small", 1500, false}, Shape{"5KB", "parse-large", 2000, true}}) {
        const std::string from = current_resource_version(connection);
        create_objects(endpoint, shape.prefix, objects, 4, shape.spec_bytes, shape.handled);
        Connection watching(endpoint);  // a stream left open cannot carry further requests
        const std::string stream = record_stream(watching, from, objects);
        const ParseResult result = replay(stream, objects, seconds, seed);
        std::printf(
            "parse-%s: %ld events of %.0f B each, replayed in chunks of 1..65536 B: %.1f MB/s, "
            "%.0f events/s on one core\n",
            shape.label, objects, result.event_bytes, result.megabytes_per_second,
            result.events_per_second);
    }
    return 0;
}

kopf::structs::Resource bench_objects() {
    kopf::structs::Resource resource;
    resource.group = "bench.kopf.dev";
    resource.version = "v1";
    resource.plural = "benchobjects";
    resource.kind = "BenchObject";
    resource.namespaced = true;
    return resource;
}

std::unique_ptr<kopf::clients::ApiClient> make_client(asio::io_context& io,
                                                      const std::string& url) {
    kopf::ConnectionInfo info;
    info.server = url;
    auto vault = std::make_shared<kopf::structs::Vault>();
    vault->populate({{"bench", info}});
    return std::make_unique<kopf::clients::ApiClient>(io.get_executor(), vault,
                                                      kopf::clients::ReloginFn{});
}

// Runs the coroutine to its end on `io`, rethrowing its failure.
template <class T>
T run(asio::io_context& io, asio::awaitable<T> awaitable) {
    std::exception_ptr failure;
    std::optional<T> result;
    asio::co_spawn(io, std::move(awaitable), [&](std::exception_ptr error, T value) {
        failure = error;
        if (!error) result = std::move(value);
        io.stop();
    });
    io.restart();
    io.run();
    if (failure) std::rethrow_exception(failure);
    if (!result) throw std::runtime_error("the client's coroutine did not finish");
    return std::move(*result);
}

asio::awaitable<int> watch_until(kopf::clients::ApiClient& api, kopf::clients::StopSignal& stop,
                                 std::function<void(kopf::clients::WatchEvent&&)> on_event,
                                 std::function<void()> on_listed) {
    kopf::clients::WatchRequest request{.resource = bench_objects(),
                                        .namespace_ = "default",
                                        .on_event = std::move(on_event),
                                        .stop = &stop,
                                        .on_listed = std::move(on_listed)};
    auto watching = api.watch_objs(std::move(request));
    co_await std::move(watching);
    co_return 0;
}

int command_watch(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long events = options.number("events");
    const long connections = options.number("connections", 4);
    asio::io_context io;
    auto api = make_client(io, options.text("url"));
    kopf::clients::StopSignal stop;
    std::thread writer;
    std::atomic<bool> writer_failed{false};
    std::string writer_failure;
    long received = 0;
    Clock::time_point started;
    double cpu_started = 0;
    double elapsed = 0;
    double cpu_used = 0;
    auto on_listed = [&] {
        if (writer.joinable()) return;  // a relisting; the writer is already running
        started = Clock::now();
        cpu_started = thread_cpu_seconds();
        writer = std::thread([&] {
            try {
                create_objects(endpoint, "watch", events, connections, 1500, false);
            } catch (const std::exception& e) {
                writer_failure = e.what();
                writer_failed = true;
                stop.stop();
            }
        });
    };
    auto on_event = [&](kopf::clients::WatchEvent&& event) {
        if (event.type != "ADDED" || received >= events) return;
        if (++received == events) {
            elapsed = seconds_since(started);
            cpu_used = thread_cpu_seconds() - cpu_started;
            stop.stop();
        }
    };
    run(io, watch_until(*api, stop, on_event, on_listed));
    if (writer.joinable()) writer.join();
    if (writer_failed) throw std::runtime_error("the writer failed: " + writer_failure);
    if (received < events) throw std::runtime_error("the watch ended before every event arrived");
    std::printf(
        "watch: %ld events received in %.2f s = %.0f events/s; client thread CPU %.1f us per "
        "event\n",
        events, elapsed, static_cast<double>(events) / elapsed,
        cpu_used * 1e6 / static_cast<double>(events));
    return 0;
}

int command_populate(const Options& options) {
    const long objects = options.number("objects");
    const auto start = Clock::now();
    create_objects(options.endpoint(), "listed", objects, options.number("connections", 4), 1500,
                   false);
    std::printf("populate: %ld objects in %.2f s\n", objects, seconds_since(start));
    return 0;
}

asio::awaitable<long> list_page_by_page(kopf::clients::ApiClient& api, std::size_t page_size,
                                        long& largest_page, std::size_t& one_object_bytes) {
    long count = 0;
    std::function<void(std::vector<json> &&)> on_page = [&](std::vector<json>&& items) {
        if (!items.empty() && one_object_bytes == 0) one_object_bytes = items.front().dump().size();
        largest_page = std::max(largest_page, static_cast<long>(items.size()));
        count += static_cast<long>(items.size());
    };
    auto listing = api.list_pages(bench_objects(), "default", {}, page_size, std::move(on_page));
    co_await std::move(listing);
    co_return count;
}

asio::awaitable<long> list_whole(kopf::clients::ApiClient& api, std::size_t& one_object_bytes) {
    auto listing = api.list(bench_objects(), "default");
    json list = co_await std::move(listing);
    const auto& items = list.at("items");
    if (!items.empty()) one_object_bytes = items.front().dump().size();
    co_return static_cast<long>(items.size());  // the list is alive until here: its peak counts
}

int command_list(const Options& options) {
    const std::string mode = options.text("mode");
    if (mode != "pages" && mode != "whole") {
        throw std::invalid_argument("--mode must be 'pages' or 'whole', got '" + mode + "'");
    }
    const auto page_size = static_cast<std::size_t>(options.number(
        "page-size", static_cast<long>(kopf::clients::WatchSettings{}.list_page_size)));
    asio::io_context io;
    auto api = make_client(io, options.text("url"));
    run(io, api->read_version());  // connection and client state exist before the baseline
    const long rss_before = status_kb("VmRSS");
    long largest_page = 0;
    std::size_t one_object_bytes = 0;
    const auto start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    const long count =
        mode == "pages"
            ? run(io, list_page_by_page(*api, page_size, largest_page, one_object_bytes))
            : run(io, list_whole(*api, one_object_bytes));
    const double elapsed = seconds_since(start);
    const double cpu_used = process_cpu_seconds() - cpu_start;
    const long peak = status_kb("VmHWM");
    const double list_megabytes = static_cast<double>(one_object_bytes) * count / 1e6;
    const std::string paging =
        mode == "pages"
            ? fmt::format("pages of {} (largest handed over: {})", page_size, largest_page)
            : std::string("ApiClient::list's own page size");
    std::printf(
        "list-%s: %ld objects in %s, in %.3f s, client CPU %.2f s; peak RSS %+.1f MB over %.1f MB "
        "before; objects' JSON %.1f MB (%zu B each)\n",
        mode.c_str(), count, paging.c_str(), elapsed, cpu_used,
        static_cast<double>(peak - rss_before) / 1024.0, static_cast<double>(rss_before) / 1024.0,
        list_megabytes, one_object_bytes);
    return 0;
}

Options parse_options(int argc, char** argv) {
    if (argc < 2) throw std::invalid_argument("missing command");
    Options options;
    options.command = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag.rfind("--", 0) != 0 || i + 1 >= argc) {
            throw std::invalid_argument("expected --option VALUE, got '" + flag + "'");
        }
        options.flags[flag.substr(2)] = argv[++i];
    }
    return options;
}

}  // namespace

int main(int argc, char** argv) {
    const char* usage =
        "usage: client_load parse|watch|populate|list --url http://127.0.0.1:PORT [--objects N] "
        "[--events N] [--millis MS] [--connections C] [--mode pages|whole] [--page-size P]\n";
    try {
        const Options options = parse_options(argc, argv);
        if (options.command == "parse") return command_parse(options);
        if (options.command == "watch") return command_watch(options);
        if (options.command == "populate") return command_populate(options);
        if (options.command == "list") return command_list(options);
        throw std::invalid_argument("unknown command '" + options.command + "'");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "client_load: %s\n%s", e.what(), usage);
        return 2;
    }
}
