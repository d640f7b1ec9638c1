// The operator's Prometheus metrics against the embedded API server: the series move as objects
// are handled (handler outcomes and retries, watch events, workers, API requests), the output
// passes `promtool check metrics`, a real Prometheus server scrapes it, and bad endpoints are
// refused at the start with the option named.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <kopf/connection.hpp>
#include <string>
#include <vector>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

const char* const kPromtool = "/usr/bin/promtool";
const char* const kPrometheus = "/usr/bin/prometheus";

// The output of a shell command and its exit code.
std::pair<int, std::string> shell(const std::string& command) {
    std::string output;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return {-1, "cannot run: " + command};
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
        output.append(buffer, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

class Metrics : public HandlingTest {
  protected:
    // Two handlers: one that succeeds, one that fails temporarily once per object first.
    void register_handlers(Registry& registry) {
        on::create(registry, "kopfexamples", {.id = "create_fn"}, [](Context&) -> json {
            return {{"done", true}};
        });
        on::create(registry, "kopfexamples", {.id = "flaky"}, [this](Context& ctx) -> json {
            if (calls.add("flaky:" + ctx.name) == 1) throw TemporaryError("not yet", 0.1);
            return nullptr;
        });
    }
    static std::string url(int port, const std::string& path = "/metrics") {
        return "http://127.0.0.1:" + std::to_string(port) + path;
    }
    Calls calls;
};

TEST_F(Metrics, SeriesMoveAsObjectsAreHandledAndPassPromtool) {
    Registry registry;
    register_handlers(registry);
    const int port = free_port();
    auto operator_ = start_operator(registry, fast_settings(), [port](RunOptions& options) {
        options.metrics_endpoint = url(port);
    });
    for (const char* name : {"kex-m1", "kex-m2", "kex-m3"}) create(example(name, {{"x", 1}}));

    const std::string kexes = "kopfexamples.v1.kopf.dev";
    std::string text;
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(
                       text,
                       R"(kopf_handler_invocations_total{handler="flaky",outcome="success"})") ==
                       3 &&
                   metric_sample(
                       text,
                       R"(kopf_handler_invocations_total{handler="create_fn",outcome="success"})") ==
                       3;
        },
        20s))
        << text;
    // Batching is counted per resource (how many depends on timing; metric_sample() is -1 if
    // absent).
    EXPECT_GE(metric_sample(
                  text, R"(kopf_watch_events_batched_total{resource="kopfexamples.v1.kopf.dev"})"),
              0)
        << text;
    EXPECT_EQ(metric_sample(
                  text, R"(kopf_handler_invocations_total{handler="flaky",outcome="temporary"})"),
              3);
    EXPECT_EQ(
        metric_sample(text,
                      R"(kopf_handler_invocations_total{handler="create_fn",outcome="permanent"})"),
        0);
    EXPECT_EQ(metric_sample(text, R"(kopf_handler_retries_total{handler="flaky"})"), 3);
    EXPECT_EQ(metric_sample(text, R"(kopf_handler_duration_seconds_count{handler="flaky"})"), 6);
    EXPECT_GE(metric_sample(text, R"(kopf_watch_events_total{resource=")" + kexes + R"("})"), 3)
        << text;
    EXPECT_GE(metric_sample(text, R"(kopf_watch_streams_total{resource=")" + kexes + R"("})"), 1)
        << text;
    EXPECT_GE(metric_sample(text, R"(kopf_workers{resource=")" + kexes + R"("})"), 0) << text;
    EXPECT_GE(metric_sample(text, R"(kopf_queue_depth{resource=")" + kexes + R"("})"), 0) << text;
    // The objects were patched (progress, results, the diff-base) and listed.
    EXPECT_GE(metric_sample(text, R"(kopf_api_requests_total{code="200",resource=")" + kexes +
                                      R"(",verb="patch"})"),
              3)
        << text;
    EXPECT_GE(metric_sample(text, R"(kopf_api_requests_total{code="200",resource=")" + kexes +
                                      R"(",verb="list"})"),
              1)
        << text;
    EXPECT_GE(metric_sample(text, R"(kopf_api_request_duration_seconds_count{resource=")" + kexes +
                                      R"(",verb="patch"})"),
              3)
        << text;
    EXPECT_NE(text.find("# TYPE kopf_handler_duration_seconds histogram"), std::string::npos);
    EXPECT_NE(text.find("# HELP kopf_api_requests_total "), std::string::npos);

    // More objects, more invocations: the counters keep moving.
    create(example("kex-m4", {{"x", 1}}));
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(
                       text,
                       R"(kopf_handler_invocations_total{handler="create_fn",outcome="success"})") ==
                   4;
        },
        20s))
        << text;

    // The exposition is valid for Prometheus's own linter.
    const auto scraped = workdir() / "scraped.txt";
    std::ofstream(scraped) << text;
    if (::access(kPromtool, X_OK) != 0) {
        GTEST_SKIP() << kPromtool
                     << " is absent (Debian's prometheus; scripts/setup.sh installs it)";
    }
    const auto [code, output] =
        shell(std::string(kPromtool) + " check metrics < " + scraped.string());
    EXPECT_EQ(code, 0) << output;
    EXPECT_EQ(output, "") << output;
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Metrics, ThrottlingRetriesAndRelistsOfTheApiServerAreCounted) {
    Registry registry;
    // The handler makes the API server refuse the next request, the operator's own (its patch
    // of the object, an Event it posts, or a watch reconnecting), with 429 and Retry-After: 1.
    apiserver::Server* api = server.get();
    auto once = std::make_shared<std::atomic<bool>>(true);
    on::create(registry, "kopfexamples", {.id = "create_fn"}, [api, once](Context&) -> json {
        if (once->exchange(false)) api->fail_next_requests(1, 429, 1);
        return nullptr;
    });
    const int port = free_port();
    auto operator_ = start_operator(registry, fast_settings(), [port](RunOptions& options) {
        options.metrics_endpoint = url(port);
    });
    create(example("kex-throttled", {{"x", 1}}));
    std::string text;
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(text, "kopf_api_retry_after_seconds_total") == 1;
        },
        20s))
        << text;
    EXPECT_EQ(metric_sample(text, "kopf_api_throttled_total"), 1);
    EXPECT_EQ(metric_sample(text, R"(kopf_api_retries_total{code="429"})"), 1);

    // Resuming from a version the server no longer has: 410 Gone, then a relisting.
    const std::string relists = R"(kopf_watch_relists_total{resource="kopfexamples.v1.kopf.dev"})";
    EXPECT_EQ(metric_sample(text, relists), 0);
    server->stall_watches(true);  // the operator misses the next change
    create(example("kex-missed", {{"x", 1}}));
    server->compact_history();
    server->drop_watches();
    server->stall_watches(false);
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(text, relists) == 1;
        },
        20s))
        << text;
    EXPECT_GE(
        metric_sample(text, R"(kopf_watch_streams_total{resource="kopfexamples.v1.kopf.dev"})"), 2);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Metrics, ReloginsAndInactivityReconnectsAreCounted) {
    Registry registry;
    register_handlers(registry);
    on::login(registry, {.id = "login_fn"}, [](ActivityContext&) -> std::optional<ConnectionInfo> {
        return login_with_kubeconfig();
    });
    auto settings = fast_settings();
    settings.watching.inactivity_timeout = 1.0;
    const int port = free_port();
    auto operator_ = start_operator(
        registry, settings, [port](RunOptions& options) { options.metrics_endpoint = url(port); });
    create(example("kex-relogin", {{"x", 1}}));
    ASSERT_TRUE(eventually([&] { return calls.count("flaky:kex-relogin") == 2; }, 20s));

    // The next request is refused: the operator logs in again.
    server->fail_next_requests(1, 401);
    server->drop_watches();
    std::string text;
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(text, "kopf_relogins_total") == 1;
        },
        20s))
        << text;

    // Silent streams are given up after settings.watching.inactivity_timeout.
    server->stall_watches(true);
    const std::string reconnects =
        R"(kopf_watch_inactivity_reconnects_total{resource="kopfexamples.v1.kopf.dev"})";
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(text, reconnects) >= 1;
        },
        20s))
        << text;
    server->stall_watches(false);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Metrics, DaemonsTimersAndIndicesAreGaugedAtEachScrape) {
    Registry registry;
    on::daemon(registry, "kopfexamples", {.id = "monitor"}, [](Context& ctx) {
        while (!ctx.stopped) ctx.stopped.wait(0.05);
    });
    on::timer(registry, "kopfexamples", {.id = "ticker", .interval = 0.2}, [](Context&) {});
    on::index(registry, "kopfexamples", {.id = "by_field"}, [](Context& ctx) -> json {
        return {{ctx.spec.value("field", ""), ctx.name}};
    });
    const int port = free_port();
    auto operator_ = start_operator(registry, fast_settings(), [port](RunOptions& options) {
        options.metrics_endpoint = url(port);
    });
    create(example("kex-d1", {{"field", "a"}}));
    create(example("kex-d2", {{"field", "b"}}));
    create(example("kex-d3", {{"field", "b"}}));
    std::string text;
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(text, R"(kopf_daemons_running{kind="daemon"})") == 3 &&
                   metric_sample(text, R"(kopf_daemons_running{kind="timer"})") == 3 &&
                   metric_sample(text, R"(kopf_index_values{index="by_field"})") == 3 &&
                   metric_sample(
                       text,
                       R"(kopf_handler_invocations_total{handler="ticker",outcome="success"})") >=
                       3;
        },
        20s))
        << text;
    EXPECT_EQ(metric_sample(text, R"(kopf_index_keys{index="by_field"})"), 2);

    // The object goes: so do its daemon, its timer and its index entry.
    remove("kex-d1");
    ASSERT_TRUE(eventually(
        [&] {
            text = http_body(http_get(port, "/metrics"));
            return metric_sample(text, R"(kopf_daemons_running{kind="daemon"})") == 2 &&
                   metric_sample(text, R"(kopf_daemons_running{kind="timer"})") == 2 &&
                   metric_sample(text, R"(kopf_index_keys{index="by_field"})") == 1;
        },
        20s))
        << text;
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Metrics, ServedOnALivenessServerPathBesideTheProbes) {
    Registry registry;
    register_handlers(registry);
    const int port = free_port();
    auto operator_ = start_operator(registry, fast_settings(), [port](RunOptions& options) {
        options.liveness_endpoint = url(port, "/healthz");
        options.metrics_endpoint = "/metrics";
    });
    create(example("kex-live", {{"x", 1}}));
    std::string text;
    ASSERT_TRUE(eventually(
        [&] {
            text = http_get(port, "/metrics");
            return metric_sample(
                       http_body(text),
                       R"(kopf_handler_invocations_total{handler="create_fn",outcome="success"})") ==
                   1;
        },
        20s))
        << text;
    EXPECT_NE(text.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << text;
    EXPECT_NE(http_get(port, "/healthz").find("200 OK"), std::string::npos);
    EXPECT_NE(http_get(port, "/elsewhere").find("404"), std::string::npos);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Metrics, WithoutTheOptionNothingIsServedOrKept) {
    Registry registry;
    register_handlers(registry);
    const int port = free_port();
    auto operator_ = start_operator(registry, fast_settings(), [port](RunOptions& options) {
        options.liveness_endpoint = url(port, "/healthz");
    });
    create(example("kex-quiet", {{"x", 1}}));
    ASSERT_TRUE(eventually([&] { return calls.count("flaky:kex-quiet") == 2; }, 20s));
    EXPECT_NE(http_get(port, "/metrics").find("404"), std::string::npos);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Metrics, BadEndpointsAreRefusedAtTheStartNamingTheOption) {
    Registry registry;
    register_handlers(registry);
    const auto failure_with = [&](std::optional<std::string> liveness, std::string metrics) {
        return run_until_it_fails(registry, fast_settings(), [&](RunOptions& options) {
            options.liveness_endpoint = liveness;
            options.metrics_endpoint = metrics;
        });
    };
    std::string failure = failure_with(std::nullopt, "/metrics");
    EXPECT_NE(failure.find("Invalid --metrics endpoint '/metrics'"), std::string::npos) << failure;
    EXPECT_NE(failure.find("--liveness"), std::string::npos) << failure;
    failure = failure_with(std::nullopt, "https://127.0.0.1:9/metrics");
    EXPECT_NE(failure.find("Invalid --metrics endpoint 'https://127.0.0.1:9/metrics'"),
              std::string::npos)
        << failure;
    failure = failure_with(std::nullopt, "http://metrics.example:9090/metrics");
    EXPECT_NE(failure.find("the host must be an IP address"), std::string::npos) << failure;
    // An address in use: the listener's error, with the option named.
    const int port = free_port();
    failure = failure_with(url(port, "/healthz"), "http://0.0.0.0:" + std::to_string(port) + "/m");
    EXPECT_NE(failure.find("Cannot serve the --metrics endpoint"), std::string::npos) << failure;
}

// A child process (the Prometheus server), killed and reaped when the test ends. Started with
// posix_spawn: after a fork of this multi-threaded process, the child may not allocate before
// its exec (a lock of the allocator held by another thread at the fork would never be released;
// under ASan this hung the child before Prometheus ever started).
class Child {
  public:
    explicit Child(const std::vector<std::string>& argv, const std::filesystem::path& log) {
        std::vector<char*> args;
        for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
        args.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                           0644);
        ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
        if (::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
        ::posix_spawn_file_actions_destroy(&actions);
    }
    ~Child() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
            std::this_thread::sleep_for(50ms);
        if (::waitpid(pid_, &status, WNOHANG) == 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

  private:
    pid_t pid_ = -1;
};

TEST_F(Metrics, APrometheusServerScrapesTheHandlerInvocations) {
    if (::access(kPrometheus, X_OK) != 0) {
        GTEST_SKIP() << kPrometheus
                     << " is absent (Debian's prometheus; scripts/setup.sh installs it)";
    }
    Registry registry;
    register_handlers(registry);
    const int port = free_port();
    auto operator_ = start_operator(registry, fast_settings(), [port](RunOptions& options) {
        options.metrics_endpoint = url(port);
    });
    create(example("kex-scraped", {{"x", 1}}));

    const auto config = workdir() / "prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                             "scrape_configs:\n  - job_name: kopf\n    static_configs:\n"
                             "      - targets: ['127.0.0.1:"
                          << port << "']\n";
    const int web = free_port();
    const auto log = workdir() / "prometheus.log";
    Child prometheus({kPrometheus, "--config.file=" + config.string(),
                      "--storage.tsdb.path=" + (workdir() / "tsdb").string(),
                      "--web.listen-address=127.0.0.1:" + std::to_string(web)},
                     log);
    // The first scrape comes within a second or two of Prometheus's start.
    const std::string query =
        "/api/v1/query?query=kopf_handler_invocations_total%7Bhandler%3D%22create_fn%22%2C"
        "outcome%3D%22success%22%7D";
    std::string answer;
    const bool scraped = eventually(
        [&] {
            answer = http_body(http_get(web, query));
            if (answer.empty()) return false;
            const json parsed = json::parse(answer, nullptr, false);
            return !parsed.is_discarded() && parsed.value("status", "") == "success" &&
                   !parsed["data"]["result"].empty() &&
                   parsed["data"]["result"][0]["value"][1] == "1";
        },
        20s);
    std::ifstream log_file(log);
    const std::string server_log((std::istreambuf_iterator<char>(log_file)),
                                 std::istreambuf_iterator<char>());
    ASSERT_TRUE(scraped) << "the answer: " << answer << "\nPrometheus's log:\n" << server_log;
    const json result = json::parse(answer)["data"]["result"][0]["metric"];
    EXPECT_EQ(result["job"], "kopf");
    EXPECT_EQ(result["instance"], "127.0.0.1:" + std::to_string(port));
    EXPECT_EQ(operator_->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
