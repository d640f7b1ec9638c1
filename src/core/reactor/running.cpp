#include "core/reactor/running.hpp"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "clients/api.hpp"
#include "core/actions/lifecycles.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/activities.hpp"
#include "core/engines/admission.hpp"
#include "core/engines/indexing.hpp"
#include "core/engines/metrics.hpp"
#include "core/engines/posting.hpp"
#include "core/engines/probing.hpp"
#include "core/engines/webhook_configurations.hpp"
#include "core/reactor/namespaces.hpp"
#include "core/reactor/serving.hpp"
#include "kopf/connection.hpp"
#include "kopf/errors.hpp"
#include "kopf/memo.hpp"
#include "kopf/registry.hpp"
#include "kopf/settings.hpp"
#include "kopf/task.hpp"
#include "kopf/vault.hpp"
#include "loop/background_tasks.hpp"
#include "loop/loop_executor.hpp"
#include "structs/credentials.hpp"
#include "structs/references.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {

using engines::login;
using engines::run_activity;
using engines::try_login;

namespace {

// Lets the stop flag reach the loop only while the operator runs (the flag may outlive it).
struct StopBridge {
    std::mutex mutex;
    std::function<void()> request;
};

// Drives the loop from this thread until what runs on it sets `done`.
void run_until(asio::io_context& io, const bool& done) {
    while (!done) {
        io.restart();
        io.run_one();
    }
}

// Runs the loop while `busy()` holds (at most `limit`, none if not given); a loop with nothing
// to do is not spun: the work it waits for may be on other threads.
void run_loop_while(asio::io_context& io, const std::function<bool()>& busy,
                    std::optional<std::chrono::steady_clock::duration> limit = std::nullopt) {
    const auto deadline = limit ? std::chrono::steady_clock::now() + *limit
                                : std::chrono::steady_clock::time_point::max();
    while (busy() && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        if (io.run_for(std::chrono::milliseconds(20)) == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
}

// Kopf's "hung tasks" at the exit: background tasks (kopf::spawn) get a grace period to finish,
// then are cancelled, and are waited for while the loop and the API client still serve them.
void stop_background_tasks(asio::io_context& io, detail::BackgroundTasks& tasks) {
    constexpr auto grace = std::chrono::seconds(5);
    NamedLogger log("kopf.reactor.running");
    const auto run_until_done = [&](std::chrono::steady_clock::duration limit) {
        run_loop_while(
            io, [&tasks] { return tasks.running() > 0; }, limit);
    };
    if (tasks.running() == 0) {
        log.debug("Hung tasks stopping is skipped: no tasks given.");
        return;
    }
    run_until_done(grace);
    if (const auto left = tasks.cancel_all()) {
        log.debug("Hung tasks are cancelled after {}s: {} left.", grace.count(), left);
        run_until_done(grace);
    }
    if (const auto left = tasks.running()) {
        log.warning("Hung tasks are not stopped: {} background task(s) ignored the cancellation.",
                    left);
    } else {
        log.debug("Hung tasks are stopped.");
    }
}

// Signals and the ultimate exiting timeout, on a thread of their own: a forced exit works
// even while a handler blocks the operator's loop or keeps its worker pool busy at the end.
// The first SIGINT/SIGTERM asks for a graceful stop and arms the ultimate timeout; a second
// signal, or the timeout, exits at once with code 1. As in Kopf, a stop-flag arms no timeout.
class ExitGuard {
  public:
    ExitGuard(bool handle_signals, double timeout, std::function<void(std::string)> request_stop)
        : timeout_(timeout),
          request_stop_(std::move(request_stop)),
          work_(asio::make_work_guard(control_)),
          ultimate_(control_) {
        if (handle_signals) {
            signals_.emplace(control_, SIGINT, SIGTERM);
            wait_for_signal();
        }
        thread_ = std::thread([this] { control_.run(); });
    }
    ~ExitGuard() {
        work_.reset();
        asio::post(control_, [this] {
            ultimate_.cancel();
            if (signals_) signals_->cancel();
        });
        thread_.join();
    }
    ExitGuard(const ExitGuard&) = delete;
    ExitGuard& operator=(const ExitGuard&) = delete;

    // settings.process.ultimate_exiting_timeout as the startup handlers left it.
    void set_timeout(double seconds) { timeout_ = seconds; }

  private:
    void wait_for_signal() {
        signals_->async_wait([this](const boost::system::error_code& ec, int number) {
            if (ec) return;
            const char* name = number == SIGINT ? "SIGINT" : "SIGTERM";
            if (signalled_) {
                logger("kopf.reactor.running")
                    ->warn("Signal {} is received again. Exiting immediately.", name);
                std::_Exit(1);
            }
            signalled_ = true;
            arm_ultimate_timeout();
            request_stop_(fmt::format("Signal {} is received.", name));
            wait_for_signal();
        });
    }
    void arm_ultimate_timeout() {
        const double timeout = timeout_;
        ultimate_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(std::max(0.0, timeout))));
        ultimate_.async_wait([timeout](const boost::system::error_code& ec) {
            if (ec) return;
            logger("kopf.reactor.running")
                ->error(
                    "The operator did not stop within {}s (settings.process."
                    "ultimate_exiting_timeout). Exiting forcefully.",
                    timeout);
            std::_Exit(1);
        });
    }

    std::atomic<double> timeout_;
    std::function<void(std::string)> request_stop_;
    asio::io_context control_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::optional<asio::signal_set> signals_;
    asio::steady_timer ultimate_;
    bool signalled_ = false;  // only touched on the control thread
    std::thread thread_;
};

// The served resources for the admission handlers' selectors (short names, categories), once at
// the start; none without admission handlers, or when the discovery fails (logged).
std::vector<Resource> discover_webhook_resources(asio::io_context& io, ResourceServing& serving,
                                                 const Registry& registry) {
    std::vector<Resource> resources;
    if (registry.webhooks.empty()) return resources;
    bool done = false;
    std::exception_ptr error;
    std::vector<structs::Resource> found;
    asio::co_spawn(io, serving.api().discover(),
                   [&](std::exception_ptr e, std::vector<structs::Resource> result) {
                       error = e;
                       found = std::move(result);
                       done = true;
                   });
    run_until(io, done);
    if (error) {
        logger("kopf.reactor.running")
            ->warn("The resources of the admission handlers are not discovered: {}",
                   describe(error));
    }
    for (const auto& resource : found) resources.push_back(structs::to_public(resource));
    logger("kopf.reactor.running")
        ->debug("{} resources are discovered for the admission handlers.", resources.size());
    return resources;
}

// The served resources that the admission handlers select ("kopfexamples.v1.kopf.dev"...): the
// managed webhooks' rules.
std::set<std::string> selected_by_webhooks(const Registry& registry,
                                           const std::vector<Resource>& resources) {
    std::set<std::string> selected;
    for (const auto& handler : registry.webhooks) {
        for (const auto& resource : resources) {
            if (handler.selector.check(resource)) {
                selected.insert(resource.plural + "." + resource.version +
                                (resource.group.empty() ? "" : "." + resource.group));
            }
        }
    }
    return selected;
}

asio::awaitable<void> read_cluster_facts(clients::ApiClient& api, ClusterFacts& facts) {
    // Either may fail (a plain-HTTP server, a server that hides its version): what is found is
    // given, and the webhook server decides with what it has.
    try {
        facts.certificate_pem = co_await api.read_server_certificate();
    } catch (const std::exception& error) {
        logger("kopf.reactor.running")
            ->debug("The API server's certificate is not read: {}", error.what());
    }
    try {
        const json version = co_await api.read_version();
        facts.git_version = version.value("gitVersion", "");
    } catch (const std::exception& error) {
        logger("kopf.reactor.running")
            ->debug("The API server's version is not read: {}", error.what());
    }
}

// What the webhook server may want to know of the cluster (WebhookServerBase::on_cluster).
ClusterFacts cluster_facts(asio::io_context& io, ResourceServing& serving, std::string server) {
    ClusterFacts facts;
    facts.server = std::move(server);
    bool done = false;
    asio::co_spawn(io, read_cluster_facts(serving.api(), facts),
                   [&done](const std::exception_ptr&) { done = true; });
    run_until(io, done);
    return facts;
}

}  // namespace

// The whole lifecycle; returns normally after a graceful stop.
void run_operator(const RunOptions& options, bool handle_signals) {
    Registry& registry = options.registry ? *options.registry : Registry::default_registry();
    OperatorSettings settings = options.settings ? *options.settings : OperatorSettings{};
    NamespaceScope scope;
    try {
        scope = NamespaceScope::from_options(options.clusterwide, options.namespaces);
    } catch (const std::invalid_argument& error) {
        throw StartupError(error.what());
    }
    // As Kopf maps its run() arguments before the startup handlers (which may change them):
    // the peering's scope is the operator's, and a named peering is mandatory.
    settings.peering.clusterwide = scope.clusterwide;
    settings.peering.standalone = settings.peering.standalone || options.standalone;
    if (options.peering_name) {
        settings.peering.name = *options.peering_name;
        settings.peering.mandatory = true;
    }
    if (options.priority) settings.peering.priority = *options.priority;
    if (options.lease) settings.leasing.name = *options.lease;
    if (options.lease_namespace) settings.leasing.namespace_ = *options.lease_namespace;

    // One thread runs the loop (the worker pool only posts into it): Asio then queues the
    // loop's own completions without taking its lock (5 lock pairs per handled object).
    asio::io_context io{1};
    // This operator's own Events (settings.posting): for the handlers on this thread (the
    // loop) and in the worker pool, and for threads of no operator while it runs. Declared
    // before the worker pool, whose synchronous handlers may post until its join at the end.
    auto posting = std::make_shared<PostingContext>();
    posting->configure(settings.posting);
    PostingScope posting_scope(posting);
    PostingFallback posting_fallback(posting);
    auto log = logger("kopf.reactor.running");
    std::atomic<bool> stopping{false};
    auto request_stop = [&](const std::string& reason) {
        if (stopping.exchange(true)) return;
        log->info("{} Operator is stopping.", reason);
    };
    // Declared before the worker pool: it must outlive the pool's join at the very end, which
    // waits for synchronous handlers that may still be running.
    ExitGuard exit_guard(handle_signals, settings.process.ultimate_exiting_timeout,
                         [&io, &request_stop](std::string reason) {
                             asio::post(io, [&request_stop, reason] { request_stop(reason); });
                         });
    const auto pool_size = [](const OperatorSettings& s) -> std::size_t {
        return s.execution.max_workers && *s.execution.max_workers > 0
                   ? static_cast<std::size_t>(*s.execution.max_workers)
                   : std::max(4u, std::thread::hardware_concurrency() + 4);
    };
    const std::size_t workers = pool_size(settings);
    // The synchronous handlers in the pool post their Events into this operator's posting.
    loop::LoopExecutor executor(io, workers, [posting](const std::function<void()>& work) {
        PostingScope posting_scope(posting);
        work();
    });
    // Where kopf::spawn puts background tasks; their failures are logged, not fatal.
    auto background_tasks = std::make_shared<detail::BackgroundTasks>(
        executor, [](const std::string& name, std::exception_ptr error) {
            try {
                std::rethrow_exception(error);
            } catch (const std::exception& e) {
                logger("kopf.reactor.running")
                    ->error("Background task {} failed: {}", name, e.what());
            } catch (...) {
                logger("kopf.reactor.running")->error("Background task {} failed.", name);
            }
        });
    executor.set_background_tasks(background_tasks.get());
    struct BackgroundTasksCloser {
        loop::LoopExecutor& executor;
        detail::BackgroundTasks& tasks;
        ~BackgroundTasksCloser() {
            tasks.close();
            executor.set_background_tasks(nullptr);
        }
    } background_tasks_closer{executor, *background_tasks};
    // The operator's memo: what startup handlers put into it reaches every object's memo.
    const std::shared_ptr<Memo> operator_memo =
        options.memo ? options.memo : std::make_shared<Memo>();
    Memo& memo = *operator_memo;

    auto bridge = std::make_shared<StopBridge>();
    bridge->request = [&] { asio::post(io, [&] { request_stop("Stop-flag is set."); }); };
    struct BridgeCloser {
        std::shared_ptr<StopBridge> bridge;
        ~BridgeCloser() {
            std::lock_guard lock(bridge->mutex);
            bridge->request = nullptr;
        }
    } bridge_closer{bridge};
    if (options.stop_flag) {
        options.stop_flag->on_set([bridge] {
            std::lock_guard lock(bridge->mutex);
            if (bridge->request) bridge->request();
        });
    }

    // The indices exist from the start (empty until the resources are listed): startup,
    // cleanup and probe handlers may read them.
    auto indices_data = engines::make_indices_data(registry.indexing);
    const Indices indices(indices_data);
    std::optional<LivenessServer> liveness;
    // The metrics, kept only when they are served: on a path of the liveness server, or on an
    // address of their own (the liveness server's when it is the same).
    std::shared_ptr<engines::Metrics> metrics;
    std::optional<LivenessServer> metrics_server;
    try {
        if (options.liveness_endpoint) {
            liveness.emplace(io, *options.liveness_endpoint,
                             std::make_shared<Probes>(executor, registry, settings, memo, indices));
        }
        if (options.metrics_endpoint) {
            metrics = std::make_shared<engines::Metrics>();
            const std::string& endpoint = *options.metrics_endpoint;
            if (endpoint.starts_with("/")) {
                if (!liveness) {
                    throw std::invalid_argument(fmt::format(
                        "Invalid --metrics endpoint '{}': a path alone is served by the --liveness "
                        "server, and there is none; give --liveness too, or a full URL such as "
                        "http://0.0.0.0:9090/metrics.",
                        endpoint));
                }
                liveness->serve_metrics(endpoint, metrics);
            } else {
                const auto address = parse_endpoint(endpoint, "--metrics");
                const auto shared = options.liveness_endpoint
                                        ? parse_endpoint(*options.liveness_endpoint, "--liveness")
                                        : EndpointAddress{};
                if (liveness && address.port != 0 && address.port == shared.port &&
                    address.host == shared.host) {
                    liveness->serve_metrics(address.path.empty() ? "/" : address.path, metrics);
                } else {
                    metrics_server.emplace(io, endpoint, metrics);
                }
            }
        }
    } catch (const std::exception& error) {
        throw StartupError(error.what());
    }

    // Once the startup activity has begun, the cleanup handlers run at every exit but a stop
    // during the startup: after a graceful stop, and also after a failed startup or a crash of
    // the operator's tasks (what the startup acquired is released all the same). A cleanup
    // failing after a failure is logged: the first failure is the one reported.
    const auto clean_up_after_failure = [&](const Client* client) {
        try {
            run_activity(io, executor, registry, "cleanup", settings, memo, indices, client);
        } catch (const std::exception& error) {
            log->error("{}", error.what());
        }
    };
    // The credentials: the application's vault if it gave one (shared with it), else our own.
    const std::shared_ptr<structs::Vault> vault = options.vault
                                                      ? kopf::detail::vault_store(*options.vault)
                                                      : std::make_shared<structs::Vault>();
    bool stopped_while_logging_in = false;
    try {
        if (!run_activity(io, executor, registry, "startup", settings, memo, indices, nullptr,
                          &stopping)) {
            log->info("Operator has stopped during its startup.");
            return;
        }
        executor.set_max_workers(pool_size(settings));  // as the startup handlers left it
        exit_guard.set_timeout(settings.process.ultimate_exiting_timeout);
        if (!(settings.networking.qps >= 0)) {
            throw StartupError(fmt::format(
                "settings.networking.qps must be positive, or 0 for no rate limit; it is {}.",
                settings.networking.qps));
        }
        if (const double window = settings.queueing.coalescing_window;
            !(window >= 0 && window <= 1)) {
            throw StartupError(fmt::format(
                "settings.queueing.coalescing_window must be 0 (off) or up to 1 second; it is {}.",
                window));
        }
        if (const auto& leasing = settings.leasing;
            leasing.name &&
            (leasing.name->empty() || leasing.namespace_.empty() || !(leasing.retry_period > 0) ||
             !(leasing.renew_deadline > leasing.retry_period) ||
             !(leasing.lease_duration > leasing.renew_deadline))) {
            throw StartupError(fmt::format(
                "settings.leasing needs a lease name and a namespace, and lease_duration ({}s) > "
                "renew_deadline ({}s) > retry_period ({}s) > 0.",
                leasing.lease_duration, leasing.renew_deadline, leasing.retry_period));
        }
        posting->configure(settings.posting);  // as the startup handlers left it
        // As Kopf: a vault with usable credentials is used as it is; the login handlers run
        // only when nothing usable is left (here, or later after a 401 or an expiration).
        if (vault->empty()) {
            auto credentials = login(registry, options, settings, memo, io, executor, stopping);
            if (credentials) {
                vault->populate(std::move(*credentials));
            } else {
                stopped_while_logging_in = true;
            }
        } else {
            log->debug("The given vault holds credentials: no initial authentication.");
        }
    } catch (...) {
        clean_up_after_failure(nullptr);
        throw;
    }
    if (stopped_while_logging_in) {
        log->info("Operator has stopped during its startup.");
        return;
    }

    // The API server of the credentials used first (the highest priority).
    const auto first_credentials = vault->select();
    const std::string api_server = first_credentials ? first_credentials->info->server : "";
    std::exception_ptr failure;
    ResourceServing serving(
        io, executor, registry, settings, posting, scope, vault,
        [&registry, &options, &settings, &memo, &stopping, &executor] {
            return try_login(registry, options, settings, memo,
                             engines::pause_thread_unless(stopping),
                             engines::run_on_loop_and_wait(executor));
        },
        indices_data, operator_memo, metrics, options.identity.value_or(""));
    serving.use_lifecycle(
        actions::lifecycle_of(options.lifecycle.value_or(get_default_lifecycle())));
    if (options.client) *options.client = serving.client();
    // The admission webhooks: served on the loop from the server's own thread; stopped first
    // at the exit (Kopf stops its webhook server with the other root tasks).
    auto admission_env = std::make_shared<engines::AdmissionEnv>(
        engines::AdmissionEnv{registry, settings, memo, indices, &serving.client(),
                              discover_webhook_resources(io, serving, registry), metrics});
    // With settings.admission.managed, the webhook configurations follow the server's address.
    std::optional<engines::WebhookConfigurations> configurations;
    if (settings.admission.managed) {
        configurations.emplace(io, serving.api(), registry, *settings.admission.managed,
                               settings.networking.error_backoffs);
    }
    // CRDs created (or deleted) while the operator runs: the admission handlers serve their
    // resources by short names too, and the managed rules include them, as the watchers do.
    if (!registry.webhooks.empty()) {
        serving.on_discovered([admission_env, &configurations, &registry,
                               selected = selected_by_webhooks(registry, admission_env->resources)](
                                  const std::vector<Resource>& found) mutable {
            admission_env->resources = found;
            auto now = selected_by_webhooks(registry, found);
            if (now == selected) return;
            selected = std::move(now);
            logger("kopf.engines.admission")
                ->info("The resources of the admission handlers have changed: {}.",
                       selected.empty() ? std::string("none")
                                        : fmt::format("{}", fmt::join(selected, ", ")));
            if (configurations) configurations->reconfigure();
        });
    }
    auto reconfigure = [&configurations](const WebhookClientConfig& config) {
        if (configurations) configurations->configure(config);
    };
    std::shared_ptr<WebhookServerBase> webhook_server;
    try {
        if (settings.admission.server && !registry.webhooks.empty())
            settings.admission.server->on_cluster(cluster_facts(io, serving, api_server));
        webhook_server = engines::start_admission_server(executor, admission_env, reconfigure);
    } catch (const std::exception& error) {
        clean_up_after_failure(&serving.client());
        throw StartupError(error.what());
    }
    struct WebhookServerStopper {
        std::shared_ptr<WebhookServerBase>& server;
        ~WebhookServerStopper() {
            if (server) server->stop();
        }
    } webhook_server_stopper{webhook_server};
    serving.start(
        [&] {
            log->debug("The operator is ready.");
            if (options.ready_flag) options.ready_flag->set();
        },
        [&](std::exception_ptr error) {
            failure = error;
            stopping = true;
        });
    loop::run_until_stopped(io, stopping, settings.queueing.coalescing_window);
    if (webhook_server) {
        webhook_server->stop();
        webhook_server = nullptr;
    }
    serving.on_discovered(nullptr);  // no more reconfigurations
    if (configurations) {
        // Only the persistent handlers' webhooks stay (while the API client still works).
        bool cleaned = false;
        configurations->clean_up([&cleaned] { cleaned = true; });
        run_until(io, cleaned);
    }
    bool served_out = false;
    serving.stop([&] { served_out = true; });
    run_until(io, served_out);
    if (failure)
        clean_up_after_failure(&serving.client());
    else
        run_activity(io, executor, registry, "cleanup", settings, memo, indices, &serving.client());
    stop_background_tasks(io, *background_tasks);
    if (liveness) liveness->stop();
    if (metrics_server) metrics_server->stop();
    executor.cancel_timers();
    // Let the stopped watchers and cancelled timers finish before anything is destroyed.
    io.restart();
    io.run_for(std::chrono::seconds(5));
    if (const auto running = executor.blocking()) {
        log->warn("Waiting for {} synchronous handler(s) still running.{}", running,
                  handle_signals ? " A second signal or settings.process.ultimate_exiting_timeout "
                                   "forces the exit."
                                 : "");
    }
    // The loop keeps answering the API calls of the synchronous handlers that still run.
    run_loop_while(io, [&executor] { return executor.blocking() > 0; });
    serving.close_client();
    io.restart();
    io.poll();
    executor.join();
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& error) {
            throw StartupError(error.what());
        }
    }
    log->info("Operator has stopped.");
}

}  // namespace kopf::runtime

namespace kopf {

void operator_(const RunOptions& options) {
    runtime::run_operator(options, false);
}

int run(const RunOptions& options) {
    try {
        runtime::run_operator(options, true);
        return 0;
    } catch (const std::exception& error) {
        runtime::logger("kopf.reactor.running")->critical("{}", error.what());
        return 1;
    }
}

}  // namespace kopf
