#include "core/reactor/serving.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coroutine>
#include <deque>
#include <map>

#include "clients/api.hpp"
#include "clients/facade.hpp"
#include "configs/client_settings.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/daemons.hpp"
#include "core/engines/events.hpp"
#include "core/engines/indexing.hpp"
#include "core/engines/leases.hpp"
#include "core/engines/peering.hpp"
#include "core/engines/posting.hpp"
#include "core/reactor/application.hpp"
#include "core/reactor/observation.hpp"
#include "core/reactor/orchestration.hpp"
#include "core/reactor/processing.hpp"
#include "core/reactor/queueing.hpp"
#include "structs/bodies.hpp"
#include "structs/credentials.hpp"
#include "structs/dicts.hpp"
#include "structs/references.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {
namespace {

// The logger of one object in one operator's handlers: its lines are posted as that
// operator's Events (settings.posting.loggers), whichever thread logs them.
class ObjectLogger final : public kopf::Logger {
  public:
    ObjectLogger(ObjectRef ref, std::shared_ptr<PostingContext> posting)
        : ref_(std::move(ref)), posting_(std::move(posting)) {}
    void log(LogLevel level, std::string_view message) override {
        log_object(actions::spdlog_level_of(level), ref_, message, posting_->object_log_hooks());
    }
    bool enabled_for(LogLevel level) const override {
        return object_logging_enabled(actions::spdlog_level_of(level),
                                      posting_->object_log_hooks());
    }

  private:
    ObjectRef ref_;
    std::shared_ptr<PostingContext> posting_;
};

}  // namespace

struct ResourceServing::Impl : std::enable_shared_from_this<ResourceServing::Impl> {
    Impl(asio::io_context& io, kopf::Executor& executor, const Registry& registry,
         const OperatorSettings& settings, std::shared_ptr<PostingContext> posting_context,
         NamespaceScope scope, std::shared_ptr<structs::Vault> credentials,
         std::function<std::map<std::string, ConnectionInfo>()> login,
         std::shared_ptr<kopf::detail::IndicesData> indices, std::shared_ptr<Memo> memobase,
         std::shared_ptr<engines::Metrics> metrics_, std::string identity)
        : io(io),
          executor(executor),
          registry(registry),
          settings(settings),
          posting(std::move(posting_context)),
          vault(std::move(credentials)),
          login(std::move(login)),
          api(io.get_executor(), vault, this->login, configs::client_settings(settings)),
          env{registry, settings, actions::lifecycles::asap, [] { return actions::Clock::now(); },
              [posting = posting](const json& body) -> std::shared_ptr<Logger> {
                  return std::make_shared<ObjectLogger>(ObjectRef::from_body(body), posting);
              }},
          queues(executor,
                 QueueingOptions{settings.queueing.idle_timeout, settings.queueing.exit_timeout,
                                 settings.queueing.worker_limit,
                                 settings.persistence.consistency_timeout},
                 [this](const std::string& key, json&& event, ObjectQueues::Done done) {
                     process(key, std::move(event), std::move(done));
                 }),
          client_core(clients::make_client_core(io, api, configs::watch_settings(settings))),
          client(client_core),
          memo_holder(memobase ? std::move(memobase) : std::make_shared<Memo>()),
          memo(*memo_holder),
          indexing(make_indexing(executor, registry, settings, memo, client, std::move(indices))),
          orchestration(io, api, registry, settings, scope.clusterwide, queues, objects,
                        indexing.get()),
          observation(io, executor, api, registry, std::move(scope), orchestration, indexing.get()),
          applier(io, api, settings, observation.insights()) {
        start_peering(std::move(identity));
        queues.on_hold_over([this](const std::string& key) { hold_over(key); });
        env.client = &client;
        if (indexing) env.indices = indexing->indices();
        if (metrics_) meter(std::move(metrics_));
    }

    // Counts the traffic, the handlers and the state into the operator's metrics.
    void meter(std::shared_ptr<engines::Metrics> with) {
        metrics = std::move(with);
        api.set_meter(metrics.get());
        env.meter = metrics.get();
        orchestration.meter(metrics.get());
        scraping = metrics->on_scrape([this](engines::Metrics::Gauges& gauges) {
            for (const auto& [resource, census] : queues.census()) {
                gauges.set("kopf_workers", "resource", resource, double(census.workers));
                gauges.set("kopf_workers_busy", "resource", resource, double(census.busy));
                gauges.set("kopf_queue_depth", "resource", resource, double(census.pending));
            }
            if (daemons) {
                const auto timers = daemons->running_timers();
                gauges.set("kopf_daemons_running", "kind", "daemon",
                           double(daemons->running() - timers));
                gauges.set("kopf_daemons_running", "kind", "timer", double(timers));
            }
            if (indexing) indexing->measure(gauges);
            gauges.set("kopf_paused", "", "", pause.paused() ? 1.0 : 0.0);
        });
    }

    // After the construction: the watch loops and observers keep the serving alive.
    void anchor() {
        orchestration.anchor(weak_from_this());
        observation.anchor(weak_from_this());
        if (peering) peering->anchor(weak_from_this());
        if (elector) elector->anchor(weak_from_this());
    }

    // Kopf's peering, unless standalone: the engine follows the peering CRDs and the served
    // namespaces; with settings.leasing.name, the Lease elector too. Their pause stops the
    // resource watchers and the daemons until it resumes.
    void start_peering(std::string identity) {
        if (settings.peering.standalone && !settings.leasing.name) return;
        if (identity.empty()) identity = engines::detect_own_id(false);
        // A cold pause (peering) closes the watch streams; a warm one (the Lease's standby) keeps
        // them open and only holds the events back from the handlers.
        pause.on_change([this](bool paused) {
            const bool cold = pause.cold();
            const auto log = logger("kopf.reactor.orchestration");
            if (cold && !orchestration_cold) {
                log->debug("Pausing the watch-streams (blockers: {}).",
                           fmt::join(pause.blockers(), ", "));
            } else if (!cold && orchestration_cold) {
                log->debug("Resuming the watch-streams.");
            }
            orchestration_cold = cold;
            if (pause.warm() != orchestration.standing_by()) {
                log->debug(pause.warm() ? "Standing by: watching, not handling."
                                        : "Leading: handling the objects.");
            }
            if (daemons) daemons->pause(paused);
            orchestration.set_paused(cold);
            orchestration.set_standby(pause.warm());
        });
        if (settings.leasing.name) {
            elector = std::make_unique<engines::LeaseElector>(io, api, settings, identity, pause);
        }
        if (settings.peering.standalone) return;
        peering =
            std::make_unique<engines::PeeringEngine>(io, api, settings, std::move(identity), pause);
        orchestration.on_revised = [this](const Insights& insights) {
            peering->adjust(engines::peering_resources(settings.peering, insights.peerings),
                            insights.namespaces);
        };
    }

    // Created before the watchers that feed it.
    static std::unique_ptr<engines::IndexingEngine> make_indexing(
        kopf::Executor& executor, const Registry& registry, const OperatorSettings& settings,
        Memo& memo, const kopf::Client& client,
        std::shared_ptr<kopf::detail::IndicesData> indices) {
        if (registry.indexing.empty()) return nullptr;
        if (!indices) indices = engines::make_indices_data(registry.indexing);
        return std::make_unique<engines::IndexingEngine>(
            engines::IndexingEngine::Env{executor, settings, memo, &client}, registry.indexing,
            std::move(indices));
    }

    // On the loop, before the first event (the engine keeps a weak reference to this).
    void start_daemons() {
        if (registry.spawning.empty() || daemons) return;
        engines::DaemonsEnv daemons_env{executor,
                                        std::make_shared<const OperatorSettings>(settings), client,
                                        make_daemon_patch_writer()};
        daemons_env.indices = env.indices;
        daemons_env.meter = metrics;
        daemons =
            std::make_unique<engines::DaemonsEngine>(std::move(daemons_env), registry.spawning);
        env.daemons = daemons.get();
        orchestration.serve_daemons(daemons.get());
        if (pause.paused()) daemons->pause(true);
    }

    // Daemons and timers patch their objects as the handlers do (status subresource,
    // transformations); a daemon abandoned at the exit may try after the operator is gone.
    engines::PatchWriter make_daemon_patch_writer() {
        return [weak = weak_from_this()](const kopf::Resource& resource, const json& body,
                                         Patch patch, Logger& logger) -> Task<void> {
            return write_daemon_patch(weak, resource, body, std::move(patch), logger);
        };
    }

    // The patch's writes only: nothing is delayed, and no echo is expected by the object's
    // queue (the daemons' patches are not the processing's).
    static Task<void> write_daemon_patch(std::weak_ptr<Impl> weak, const kopf::Resource& resource,
                                         const json& body, Patch patch, Logger& logger) {
        auto self = weak.lock();
        if (!self || self->daemons_finished)
            throw std::runtime_error("the operator has stopped serving the resources");
        dicts::remove_empty_stanzas(patch.merge);
        if (patch.empty()) co_return;
        std::vector<Patch::Fn> conflicted;  // a daemon's transformations are not retried
        auto applying = reactor::apply_patch(self->applier, self->env, resource, logger, body,
                                             patch, conflicted);
        co_await std::move(applying);
    }

    // A daemon of the object has exited while stopping: process the object again now (its
    // finalizer may go, or the daemon be respawned) rather than at the next poll.
    std::function<void()> make_poke(const std::string& key) {
        return [weak = weak_from_this(), key] {
            auto self = weak.lock();
            if (!self || self->stopping) return;
            const auto found = self->objects.find(key);
            if (found == self->objects.end() || !found->second.memory ||
                !found->second.memory->daemons)
                return;
            self->schedule_touch(key, found->second.kind->api,
                                 found->second.memory->daemons->live(), 0);
        };
    }

    // ---- processing ------------------------------------------------------------------------

    // The events of objects beyond settings.queueing.processing_limit, in order of arrival.
    struct Deferred {
        std::string key;
        json event;
        ObjectQueues::Done done;
    };
    std::deque<Deferred> deferred;
    std::size_t processing = 0;  // processings under way

    // Starts the deferred processings that the limit allows now; when stopping, none: their
    // workers are told they are done, as the busy ones' are when they end.
    void start_deferred() {
        const std::size_t limit = settings.queueing.processing_limit;
        while (!deferred.empty() && (stopping || limit == 0 || processing < limit)) {
            Deferred next = std::move(deferred.front());
            deferred.pop_front();
            if (stopping) {
                next.done({});
            } else {
                process(next.key, std::move(next.event), std::move(next.done));
            }
        }
    }

    void process(const std::string& key, json&& event, ObjectQueues::Done done) {
        // A leader that has lost its lease stops handling at once: what was queued is in the
        // standby's held events again (its watchers relist), and is handled at the takeover.
        if (orchestration.standing_by()) {
            done({});
            return;
        }
        if (indexing && !indexing->ready()) {
            // No handler runs before the indices are complete (as Kopf).
            auto self = shared_from_this();
            indexing->when_ready([self, key, event = std::move(event), done]() mutable {
                if (self->stopping) {
                    done({});
                    return;
                }
                self->process(key, std::move(event), std::move(done));
            });
            return;
        }
        // Beyond settings.queueing.processing_limit, the event waits for a processing to end.
        const std::size_t limit = settings.queueing.processing_limit;
        if (limit > 0 && processing >= limit) {
            deferred.push_back({key, std::move(event), std::move(done)});
            return;
        }
        ++processing;
        auto self = shared_from_this();
        kopf::start_detached<ObjectQueues::Processed>(
            executor, process_task(key, std::move(event)),
            [self, key, done = std::move(done)](std::exception_ptr error,
                                                std::optional<ObjectQueues::Processed> processed) {
                --self->processing;
                self->start_deferred();
                if (!processed) processed.emplace();
                if (error) {
                    processed->hold = self->throttle(key, error);
                } else if (const auto entry = self->objects.find(key);
                           entry != self->objects.end() && entry->second.throttler.active()) {
                    entry->second.throttler.reset();
                }
                done(std::move(*processed));
            });
    }

    // Kopf's throttling: an unexpected error in an object's processing (not a handler's own)
    // holds the object's next events back for the next of settings.queueing.error_delays.
    std::optional<double> throttle(const std::string& key, std::exception_ptr error) {
        const auto entry = objects.find(key);
        std::optional<double> hold;
        if (entry != objects.end())
            hold = entry->second.throttler.delay_after_error(settings.queueing.error_delays);
        if (!hold) {
            object_log(key, LogLevel::ERROR,
                       fmt::format("Processing has failed: {}", describe(error)));
        } else {
            object_log(key, LogLevel::ERROR,
                       fmt::format("Throttling for {} seconds due to an unexpected error: {}",
                                   *hold, describe(error)));
        }
        return hold;
    }

    void hold_over(const std::string& key) {
        object_log(key, LogLevel::INFO, "Throttling is over. Switching back to normal operations.");
    }

    // With the object's logger once it has one (its first processing made it), else by key.
    void object_log(const std::string& key, LogLevel level, std::string_view message) {
        const auto entry = objects.find(key);
        if (entry != objects.end() && entry->second.memory && entry->second.memory->logger) {
            entry->second.memory->logger->log(level, message);
        } else {
            NamedLogger("kopf.reactor.processing")
                .log(level, fmt::format("Object {}: {}", key, message));
        }
    }

    Task<ObjectQueues::Processed> process_task(std::string key, json event) {
        // The entry stays while its object is processed: only this cycle erases it.
        ObjectEntry& entry = objects.at(key);
        const std::shared_ptr<ServedKind> kind = entry.kind;  // alive for the cycle
        const kopf::Resource& public_resource = kind->public_;
        if (!entry.memory) {
            entry.memory = reactor::ResourceMemory::first(event, memo);
            if (daemons) entry.memory->poke = make_poke(key);
        }
        reactor::ResourceMemory& memory = *entry.memory;
        if (const auto object = event.find("object"); object != event.end())
            if (const auto version = structs::body_version_number(*object))
                entry.newest_version = std::max(entry.newest_version, *version);
        // Named first: g++ 12 destroys argument temporaries of a co_await twice.
        auto processing =
            reactor::process_resource_event(env, public_resource, memory, std::move(event));
        auto outcome = co_await std::move(processing);
        if (outcome.gone) {
            objects.erase(key);
            co_return ObjectQueues::Processed{};
        }
        // Named first: g++ 12 destroys argument temporaries of a co_await twice.
        auto applying = reactor::apply_outcome(applier, env, public_resource, memory, outcome,
                                               [this, &key](const std::string& version) {
                                                   queues.expect_superseded_echo(key, version);
                                               });
        auto applied = co_await std::move(applying);
        if (applied.wakeup_after)
            schedule_touch(key, kind->api, outcome.body, *applied.wakeup_after);
        reactor::release_body(outcome.body);
        co_return ObjectQueues::Processed{.patched_version = std::move(applied.resource_version),
                                          .patched_object = std::move(applied.patched_object),
                                          .earlier_versions = std::move(applied.earlier_versions),
                                          .echo_is_noop = applied.own_echo_is_noop,
                                          .hold = std::nullopt};
    }

    // Kopf's touch-dummy: after a delay with no new events, patch to provoke one.
    void schedule_touch(const std::string& key, const structs::Resource& resource, const json& body,
                        double delay) {
        auto self = shared_from_this();
        const auto count = objects[key].events;
        executor.post_after(delay, [self, key, resource, body, count] {
            const auto counted = self->objects.find(key);
            if (self->stopping || counted == self->objects.end() ||
                counted->second.events != count || self->orchestration.standing_by())
                return;
            self->applier.touch(resource, body);
        });
    }

    // ---- events ----------------------------------------------------------------------------

    // Posts this operator's Events, and those queued outside any operator (whichever running
    // operator takes them first).
    void drain_events() {
        auto posts = posting->queue().take_all();
        for (auto& post : process_posting_context()->queue().take_all()) {
            posts.push_back(std::move(post));
        }
        for (auto& post : posts) {
            auto self = shared_from_this();
            ++posts_in_flight;
            asio::co_spawn(
                io,
                api.request(
                    "POST",
                    "/api/v1/namespaces/" + structs::url_encode(post.namespace_) + "/events",
                    post.body),
                [self](std::exception_ptr error, json) {
                    --self->posts_in_flight;
                    if (error) {
                        logger("kopf.objects")
                            ->warn("Failed to post an event. Ignoring and continuing. Error: {}",
                                   describe(error));
                    }
                    self->check_stopped();
                });
        }
    }

    // ---- lifecycle -------------------------------------------------------------------------

    asio::awaitable<void> run_start(std::function<void()> on_ready) {
        // An operator may start before its API server is reachable (a pod starting with its
        // cluster): each failed attempt is explained, then retried after the next of
        // settings.networking.error_backoffs (the last one repeating), until a stop.
        clients::ClientSettings probe_settings = configs::client_settings(settings);
        probe_settings.error_backoffs.clear();
        // Kept for the operator's lifetime: its pooled connections may outlive this request.
        // It logs in again on a 401, as the operator's client does: credentials that turn
        // invalid during the start (a rotated token) are renewed, not retried forever.
        probe =
            std::make_unique<clients::ApiClient>(io.get_executor(), vault, login, probe_settings);
        probe->set_meter(metrics.get());
        const auto& backoffs = settings.networking.error_backoffs;
        for (std::size_t attempt = 0;; ++attempt) {
            std::string failure;
            try {
                co_await probe->read_version();
                break;
            } catch (const std::exception& e) {
                failure = e.what();
            }
            const std::string explained = fmt::format(
                "The API server is unreachable: {}. Check that it runs and that the kubeconfig "
                "(or --context) points at it.",
                failure);
            if (backoffs.empty()) throw std::runtime_error(explained);
            if (stopping) co_return;
            const double delay = backoffs[std::min(attempt, backoffs.size() - 1)];
            logger("kopf.reactor.running")->error("{} Retrying in {} seconds.", explained, delay);
            retry_timer.emplace(io, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(delay)));
            boost::system::error_code ignored;
            co_await retry_timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
            if (stopping) co_return;
        }
        start_daemons();
        if (elector) elector->start();
        co_await observation.rescan();
        observation.observe_namespaces(!settings.scanning.disabled);
        if (!settings.scanning.disabled) observation.start_crd_observer();
        auto wakeup = [weak = weak_from_this()] {
            if (auto self = weak.lock()) asio::post(self->io, [self] { self->drain_events(); });
        };
        posting->queue().set_wakeup(wakeup);
        process_wakeup = process_posting_context()->queue().add_wakeup(wakeup);
        drain_events();
        on_ready();
    }

    void stop(std::function<void()> finished) {
        stopping = true;
        start_deferred();
        if (retry_timer) retry_timer->cancel();
        if (indexing) indexing->release_waiters();
        on_stopped = std::move(finished);
        orchestration.stop();
        observation.stop();
        auto self = shared_from_this();
        // The keep-alives end with this operator's entry removed from the peerings.
        if (peering) {
            peering->stop([self] {
                self->peering_finished = true;
                self->check_stopped();
            });
        } else {
            peering_finished = true;
        }
        // Daemons stop beside the object workers: their last patches need the client open.
        if (daemons) {
            daemons->stop_all([self] {
                self->daemons_finished = true;
                self->check_stopped();
            });
        } else {
            daemons_finished = true;
        }
        queues.shutdown([self] {
            self->queues_finished = true;
            self->drain_events();
            self->check_stopped();
        });
    }

    void check_stopped() {
        // The leader releases its Lease once its handlers and daemons are done: a standby takes
        // over then, not while they still run.
        if (stopping && queues_finished && daemons_finished && elector && !lease_released) {
            if (!lease_releasing) {
                lease_releasing = true;
                elector->stop([self = shared_from_this()] {
                    self->lease_released = true;
                    self->check_stopped();
                });
            }
            return;
        }
        if (!stopping || !queues_finished || !daemons_finished || !peering_finished ||
            posts_in_flight > 0 || !on_stopped)
            return;
        posting->queue().set_wakeup(nullptr);
        if (process_wakeup) process_posting_context()->queue().remove_wakeup(*process_wakeup);
        process_wakeup.reset();
        auto finished = std::move(on_stopped);
        on_stopped = nullptr;
        finished();
    }

    asio::io_context& io;
    kopf::Executor& executor;
    const Registry& registry;
    const OperatorSettings& settings;
    std::shared_ptr<PostingContext> posting;
    std::optional<std::size_t> process_wakeup;  // on the queue of Events outside any operator
    std::shared_ptr<structs::Vault> vault;
    // The login handlers, run again when no valid credentials are left (a 401).
    std::function<std::map<std::string, ConnectionInfo>()> login;
    clients::ApiClient api;
    std::unique_ptr<clients::ApiClient> probe;
    std::optional<asio::steady_timer> retry_timer;  // between attempts to reach the API server
    reactor::ProcessingEnv env;
    ObjectQueues queues;
    // The handlers' API client: `api` with a public face.
    std::shared_ptr<kopf::detail::ClientCore> client_core;
    kopf::Client client;
    // The operator's memo (startup handlers fill it): each object's memo is a copy of it.
    std::shared_ptr<Memo> memo_holder;
    Memo& memo;

    ObjectEntries objects;  // the watchers add them, their processing forgets them
    bool stopping = false;
    bool queues_finished = false;
    bool daemons_finished = false;
    bool peering_finished = false;
    bool orchestration_cold = false;  // the watch streams are closed for a cold pause
    bool lease_releasing = false;
    bool lease_released = false;
    int posts_in_flight = 0;
    // Daemons and timers, if the operator has any. Last: destroyed first, it closes the way
    // back to the loop for daemons abandoned on their threads.
    std::unique_ptr<engines::DaemonsEngine> daemons;
    std::function<void()> on_stopped;
    // In-memory indices, if the operator has index handlers.
    std::unique_ptr<engines::IndexingEngine> indexing;
    Orchestration orchestration;
    Observation observation;
    ApiPatchApplier applier;
    // Kopf's operator pause and the peering that turns it (none in the standalone mode).
    engines::OperatorPause pause;
    std::unique_ptr<engines::PeeringEngine> peering;
    std::unique_ptr<engines::LeaseElector> elector;  // with settings.leasing.name
    // The operator's metrics, if kept; the scrapes read the members above until `scraping` goes
    // (first: it is the last member).
    std::shared_ptr<engines::Metrics> metrics;
    std::shared_ptr<void> scraping;
};

ResourceServing::ResourceServing(asio::io_context& io, kopf::Executor& executor,
                                 const Registry& registry, const OperatorSettings& settings,
                                 std::shared_ptr<PostingContext> posting, NamespaceScope scope,
                                 std::shared_ptr<structs::Vault> vault,
                                 std::function<std::map<std::string, ConnectionInfo>()> login,
                                 std::shared_ptr<kopf::detail::IndicesData> indices,
                                 std::shared_ptr<Memo> memo,
                                 std::shared_ptr<engines::Metrics> metrics, std::string identity)
    : impl_(std::make_shared<Impl>(io, executor, registry, settings, std::move(posting),
                                   std::move(scope), std::move(vault), std::move(login),
                                   std::move(indices), std::move(memo), std::move(metrics),
                                   std::move(identity))) {
    impl_->anchor();
}

ResourceServing::~ResourceServing() = default;

void ResourceServing::start(std::function<void()> on_ready,
                            std::function<void(std::exception_ptr)> on_failure) {
    asio::co_spawn(impl_->io, impl_->run_start(std::move(on_ready)),
                   [on_failure = std::move(on_failure)](std::exception_ptr error) {
                       if (error) on_failure(error);
                   });
}

void ResourceServing::stop(std::function<void()> finished) {
    impl_->stop(std::move(finished));
}

void ResourceServing::use_lifecycle(actions::Lifecycle lifecycle) {
    impl_->env.lifecycle = std::move(lifecycle);
}

const kopf::Client& ResourceServing::client() const {
    return impl_->client;
}

void ResourceServing::on_discovered(std::function<void(const std::vector<Resource>&)> fn) {
    if (!fn) {
        impl_->observation.on_discovered = nullptr;
        return;
    }
    impl_->observation.on_discovered =
        [fn = std::move(fn)](const std::vector<structs::Resource>& found) {
            std::vector<Resource> resources;
            resources.reserve(found.size());
            for (const auto& resource : found) resources.push_back(structs::to_public(resource));
            fn(resources);
        };
}

clients::ApiClient& ResourceServing::api() {
    return impl_->api;
}

void ResourceServing::close_client() {
    clients::close_client_core(*impl_->client_core);
}

}  // namespace kopf::runtime
