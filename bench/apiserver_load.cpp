// Load generator for the embedded API server: a minimal keep-alive HTTP client
// (no framework) that measures what the server itself can take. It is also
// "the limit" against which the operator benchmarks compare.
//
//   apiserver_load --url http://127.0.0.1:PORT --objects 10000 --seconds 10 --connections 4
//
// Phases: create a CRD, create N objects, then merge-patch random objects for the
// given time over C connections while W watchers count the events they receive,
// then list everything once. Prints one line per figure.
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::string host = "127.0.0.1";
    std::string port;
    int objects = 10000;
    int seconds = 10;
    int connections = 4;
    int watchers = 10;
    int spec_bytes = 200;
    std::string server_pid;  // when given: the server's memory around the list
};

// A "VmRSS"/"VmHWM" line of /proc/<pid>/status, in kB (-1 when unreadable).
long proc_status_kb(const std::string& pid, const std::string& key) {
    std::FILE* file = std::fopen(("/proc/" + pid + "/status").c_str(), "r");
    if (!file) return -1;
    char line[256];
    long value = -1;
    while (std::fgets(line, sizeof line, file)) {
        if (std::strncmp(line, key.c_str(), key.size()) == 0 && line[key.size()] == ':') {
            value = std::atol(line + key.size() + 1);
            break;
        }
    }
    std::fclose(file);
    return value;
}

// Resets the peak RSS of a process (VmHWM := VmRSS), so the next peak belongs to what follows.
bool reset_peak_rss(const std::string& pid) {
    std::FILE* file = std::fopen(("/proc/" + pid + "/clear_refs").c_str(), "w");
    if (!file) return false;
    const bool ok = std::fputs("5", file) >= 0;
    return std::fclose(file) == 0 && ok;
}

class Connection {
  public:
    explicit Connection(const Options& options) : stream_(ioc_) {
        tcp::resolver resolver(ioc_);
        stream_.connect(resolver.resolve(options.host, options.port));
        stream_.socket().set_option(tcp::no_delay(true));
    }

    http::response<http::string_body> send(http::verb verb, const std::string& target,
                                           std::string body = {},
                                           const char* content_type = "application/json") {
        http::request<http::string_body> request{verb, target, 11};
        request.set(http::field::host, "127.0.0.1");
        request.set(http::field::accept, "application/json");
        if (!body.empty()) {
            request.set(http::field::content_type, content_type);
            request.body() = std::move(body);
            request.prepare_payload();
        }
        http::write(stream_, request);
        http::response_parser<http::string_body> parser;
        parser.body_limit(boost::none);  // a list of 100k objects is far beyond the default 8 MB
        http::read(stream_, buffer_, parser);
        return parser.release();
    }

    tcp::socket& socket() { return stream_.socket(); }
    beast::flat_buffer& buffer() { return buffer_; }

  private:
    asio::io_context ioc_;
    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
};

const char* kCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "benchobjects.bench.kopf.dev"},
  "spec": {"group": "bench.kopf.dev", "scope": "Namespaced",
    "names": {"plural": "benchobjects", "singular": "benchobject", "kind": "BenchObject"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})";

const std::string kCollection = "/apis/bench.kopf.dev/v1/namespaces/default/benchobjects";

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

void ensure(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what);
}

// Reads a chunked watch stream and counts newline-terminated events until `stop`.
void watch_and_count(const Options& options, std::atomic<long>& events, std::atomic<bool>& stop) {
    Connection connection(options);
    http::request<http::empty_body> request{
        http::verb::get, kCollection + "?watch=true&resourceVersion=0&allowWatchBookmarks=false",
        11};
    request.set(http::field::host, "127.0.0.1");
    http::write(connection.socket(), request);
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(connection.socket(), connection.buffer(), parser);
    char chunk[65536];
    connection.socket().non_blocking(false);
    while (!stop.load(std::memory_order_relaxed) && !parser.is_done()) {
        parser.get().body().data = chunk;
        parser.get().body().size = sizeof chunk;
        beast::error_code ec;
        // read_some: count what has arrived instead of waiting for a full buffer.
        http::read_some(connection.socket(), connection.buffer(), parser, ec);
        if (ec && ec != http::error::need_buffer) break;
        const std::size_t got = sizeof chunk - parser.get().body().size;
        long lines = 0;
        for (std::size_t i = 0; i < got; ++i) lines += chunk[i] == '\n';
        events.fetch_add(lines, std::memory_order_relaxed);
    }
}

int run(const Options& options) {
    Connection admin(options);
    auto crd = admin.send(http::verb::post,
                          "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", kCrd);
    ensure(crd.result_int() == 201 || crd.result_int() == 409,
           "CRD creation failed: " + crd.body());
    for (int i = 0; i < 100; ++i) {
        if (admin.send(http::verb::get, kCollection).result_int() == 200) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }

    const std::string filler(options.spec_bytes, 'x');
    auto start = Clock::now();
    for (int i = 0; i < options.objects; ++i) {
        nlohmann::json object = {{"apiVersion", "bench.kopf.dev/v1"},
                                 {"kind", "BenchObject"},
                                 {"metadata", {{"name", "obj-" + std::to_string(i)}}},
                                 {"spec", {{"filler", filler}, {"n", 0}}}};
        auto response = admin.send(http::verb::post, kCollection, object.dump());
        ensure(response.result_int() == 201 || response.result_int() == 409,
               "create failed: " + response.body());
    }
    double create_seconds = seconds_since(start);
    std::printf("create: %d objects in %.2f s = %.0f objects/s (1 connection)\n", options.objects,
                create_seconds, options.objects / create_seconds);

    std::atomic<bool> stop{false};
    std::atomic<long> events{0};
    std::vector<std::thread> watchers;
    for (int w = 0; w < options.watchers; ++w)
        watchers.emplace_back([&] { watch_and_count(options, events, stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    events = 0;

    std::atomic<long> patches{0};
    std::atomic<long> failures{0};
    std::vector<std::thread> writers;
    start = Clock::now();
    const auto deadline = start + std::chrono::seconds(options.seconds);
    for (int c = 0; c < options.connections; ++c) {
        writers.emplace_back([&, c] {
            Connection connection(options);
            std::mt19937 random(c);
            long n = 0;
            while (Clock::now() < deadline) {
                const int i = static_cast<int>(random() % options.objects);
                auto response =
                    connection.send(http::verb::patch, kCollection + "/obj-" + std::to_string(i),
                                    R"({"spec":{"n":)" + std::to_string(++n) + "}}",
                                    "application/merge-patch+json");
                if (response.result_int() == 200) {
                    patches.fetch_add(1, std::memory_order_relaxed);
                } else {
                    failures.fetch_add(1, std::memory_order_relaxed);
                }
            }
        });
    }
    for (auto& t : writers) t.join();
    const double patch_seconds = seconds_since(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long delivered = events.load();
    stop = true;
    std::printf(
        "patch: %ld merge-patches in %.2f s = %.0f requests/s over %d connections (%ld failed)\n",
        patches.load(), patch_seconds, patches.load() / patch_seconds, options.connections,
        failures.load());
    std::printf("watch: %ld events delivered to %d watchers = %.0f events/s\n", delivered,
                options.watchers, delivered / patch_seconds);
    // Watchers block in read; closing the process ends them.
    for (auto& t : watchers) t.detach();

    long rss_before = -1;
    if (!options.server_pid.empty() && reset_peak_rss(options.server_pid)) {
        rss_before = proc_status_kb(options.server_pid, "VmRSS");
    }
    start = Clock::now();
    auto list = admin.send(http::verb::get, kCollection);
    const double list_seconds = seconds_since(start);
    std::printf("list: %d objects, %.1f MB in %.3f s\n", options.objects, list.body().size() / 1e6,
                list_seconds);
    if (rss_before >= 0) {
        const long peak = proc_status_kb(options.server_pid, "VmHWM");
        std::printf(
            "list-memory: server RSS %.1f MB before the list, peak %.1f MB during it "
            "(+%.1f MB for a %.1f MB response)\n",
            rss_before / 1024.0, peak / 1024.0, (peak - rss_before) / 1024.0,
            list.body().size() / 1e6);
    }
    std::fflush(stdout);
    std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--url") {
            const auto colon = value.rfind(':');
            options.port = value.substr(colon + 1);
        } else if (flag == "--objects") {
            options.objects = std::stoi(value);
        } else if (flag == "--seconds") {
            options.seconds = std::stoi(value);
        } else if (flag == "--connections") {
            options.connections = std::stoi(value);
        } else if (flag == "--watchers") {
            options.watchers = std::stoi(value);
        } else if (flag == "--server-pid") {
            options.server_pid = value;
        } else {
            std::fprintf(stderr, "apiserver_load: unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    if (options.port.empty()) {
        std::fprintf(stderr,
                     "usage: apiserver_load --url http://127.0.0.1:PORT [--objects N] "
                     "[--seconds S] [--connections C] [--watchers W] [--server-pid PID]\n");
        return 2;
    }
    try {
        return run(options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "apiserver_load: %s\n", e.what());
        return 1;
    }
}
