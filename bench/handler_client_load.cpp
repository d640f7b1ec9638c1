// The API client as handlers use it (kopf/api.hpp): an operator embedded in this process serves
// BenchObjects; a synchronous handler makes N gets and N merge-patches of one ConfigMap with
// `.wait()` (on the worker pool), an async handler the same with `co_await` (on the loop).
// Prints, per form and verb, requests/s and the process's CPU per request (user+sys of the whole
// process over the span: the loop thread doing the HTTP, the handler's thread, nothing else busy).
//
//   KUBECONFIG=... handler_client_load --requests 5000 [--coalescing-window SECONDS]
//
// --coalescing-window sets settings.queueing.coalescing_window (0: off, to compare).
// The API server (another process) must serve bench.kopf.dev/v1 benchobjects
// (`operator_load crd --url URL`).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

double process_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Span {
    std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
    double cpu = process_cpu_seconds();
};

struct Figures {
    std::mutex mutex;
    std::string lines;
    int finished = 0;
};
Figures figures;
long requests = 2000;

void report(const std::string& form, const char* verb, const Span& start) {
    const Span end;
    const double wall = std::chrono::duration<double>(end.wall - start.wall).count();
    const double cpu = end.cpu - start.cpu;
    char line[256];
    std::snprintf(line, sizeof line,
                  "handler-%s %s: %ld requests in %.3f s = %.0f requests/s, client CPU %.1f us per "
                  "request\n",
                  form.c_str(), verb, requests, wall, requests / wall, cpu / requests * 1e6);
    std::lock_guard lock(figures.mutex);
    figures.lines += line;
}

void finished() {
    std::lock_guard lock(figures.mutex);
    ++figures.finished;
}

kopf::json sync_fn(kopf::Context& ctx) {
    if (ctx.name != "client-sync") return nullptr;
    const kopf::Api configmaps = ctx.api("configmaps", "default");
    configmaps.get("bench-target").wait();  // resolved and connected before timing
    Span start;
    for (long i = 0; i < requests; ++i) configmaps.get("bench-target").wait();
    report("sync", "get", start);
    start = Span();
    for (long i = 0; i < requests; ++i) {
        kopf::json patch = {{"data", {{"n", std::to_string(i)}}}};
        configmaps.patch("bench-target", patch).wait();
    }
    report("sync", "merge-patch", start);
    finished();
    return nullptr;
}

kopf::Task<kopf::json> async_fn(kopf::Context& ctx) {
    if (ctx.name != "client-async") co_return nullptr;
    const kopf::Api configmaps = ctx.api("configmaps", "default");
    co_await configmaps.get("bench-target");
    Span start;
    for (long i = 0; i < requests; ++i) co_await configmaps.get("bench-target");
    report("async", "get", start);
    start = Span();
    for (long i = 0; i < requests; ++i) {
        kopf::json patch = {{"data", {{"n", std::to_string(i)}}}};
        co_await configmaps.patch("bench-target", patch);
    }
    report("async", "merge-patch", start);
    finished();
    co_return nullptr;
}

bool wait_finished(int count) {
    for (int i = 0; i < 6000; ++i) {
        {
            std::lock_guard lock(figures.mutex);
            if (figures.finished >= count) return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<double> coalescing_window;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--requests") requests = std::atol(argv[i + 1]);
        if (std::string(argv[i]) == "--coalescing-window")
            coalescing_window = std::atof(argv[i + 1]);
    }
    if (requests <= 0) {
        std::fprintf(stderr,
                     "usage: handler_client_load [--requests N] [--coalescing-window SECONDS]  "
                     "(KUBECONFIG set)\n");
        return 2;
    }
    try {
        auto credentials = kopf::login_with_kubeconfig();
        if (!credentials) throw std::runtime_error("no kubeconfig: set KUBECONFIG");
        kopf::Client admin(*credentials);
        kopf::json target = {{"metadata", {{"name", "bench-target"}}}, {"data", {{"n", "0"}}}};
        admin.api("configmaps", "default").create_or_get(target).wait();

        kopf::Registry registry;
        kopf::on::create sync_handler(registry, "benchobjects", {.id = "sync_fn"}, sync_fn);
        kopf::on::create async_handler(registry, "benchobjects", {.id = "async_fn"}, async_fn);
        kopf::OperatorSettings settings;
        settings.posting.enabled = false;
        if (coalescing_window) settings.queueing.coalescing_window = *coalescing_window;
        kopf::OperatorFlag stop, ready;
        std::string failure;
        kopf::RunOptions options;
        options.namespaces = {"default"};
        options.standalone = true;
        options.registry = &registry;
        options.settings = &settings;
        options.stop_flag = &stop;
        options.ready_flag = &ready;
        std::thread operator_thread([&] {
            try {
                kopf::operator_(options);
            } catch (const std::exception& error) {
                failure = error.what();
            }
            ready.set();
        });
        ready.wait();
        if (!failure.empty()) throw std::runtime_error(failure);

        auto objects = admin.api("bench.kopf.dev/v1/benchobjects", "default");
        for (const char* name : {"client-sync", "client-async"}) {
            kopf::json body = {{"apiVersion", "bench.kopf.dev/v1"},
                               {"kind", "BenchObject"},
                               {"metadata", {{"name", name}}},
                               {"spec", kopf::json::object()}};
            objects.create(body).wait();
            if (!wait_finished(name == std::string("client-sync") ? 1 : 2)) {
                throw std::runtime_error(std::string("the handler for ") + name +
                                         " did not finish");
            }
        }
        stop.set();
        operator_thread.join();
        std::fputs(figures.lines.c_str(), stdout);
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "handler_client_load: %s\n", error.what());
        return 1;
    }
}
