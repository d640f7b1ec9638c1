#include "core/reactor/serving.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <coroutine>
#include <map>
#include <set>
#include <unordered_map>

#include "clients/api.hpp"
#include "clients/facade.hpp"
#include "configs/client_settings.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/daemons.hpp"
#include "core/engines/events.hpp"
#include "core/engines/indexing.hpp"
#include "core/engines/posting.hpp"
#include "core/reactor/processing.hpp"
#include "core/reactor/queueing.hpp"
#include "loop/asio_bridge.hpp"
#include "structs/credentials.hpp"
#include "structs/references.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {
namespace {

// The message of a failed coroutine's exception, for the log line about it.
std::string describe(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

// The string at metadata.<field>, or null when there is none.
const std::string* metadata_string(const json& body, const char* field) {
    if (!body.is_object()) return nullptr;
    auto meta = body.find("metadata");
    if (meta == body.end() || !meta->is_object()) return nullptr;
    auto value = meta->find(field);
    return value != meta->end() && value->is_string() ? value->get_ptr<const std::string*>()
                                                      : nullptr;
}

std::string metadata_field(const json& body, const char* field) {
    const std::string* value = metadata_string(body, field);
    return value ? *value : std::string();
}

// The logger of one object in one operator's handlers: its lines are posted as that
// operator's Events (settings.posting.loggers), whichever thread logs them.
class ObjectLogger final : public kopf::Logger {
  public:
    ObjectLogger(ObjectRef ref, std::shared_ptr<PostingContext> posting)
        : ref_(std::move(ref)), posting_(std::move(posting)) {}
    void log(LogLevel level, std::string_view message) override {
        log_object(reactor::spdlog_level_of(level), ref_, message, posting_->object_log_hooks());
    }
    bool enabled_for(LogLevel level) const override {
        return object_logging_enabled(reactor::spdlog_level_of(level),
                                      posting_->object_log_hooks());
    }

  private:
    ObjectRef ref_;
    std::shared_ptr<PostingContext> posting_;
};

// One served resource kind: its API and public descriptions.
struct ServedKind {
    structs::Resource api;
    kopf::Resource public_;
    std::string name;      // api.to_string()
    bool indexed = false;  // index handlers select it
    bool handled = true;   // other handlers select it: its objects are queued for them
};

// One object of a served kind: its memory lives here, found with the same lookup as the rest
// (a separate map of memories by uid showed in profiles).
struct ObjectEntry {
    std::shared_ptr<ServedKind> kind;
    unsigned long events = 0;  // a touch-dummy is sent only if no event came meanwhile
    std::optional<reactor::ResourceMemory> memory;  // from its first processing on
};

}  // namespace

struct ResourceServing::Impl : std::enable_shared_from_this<ResourceServing::Impl>,
                               reactor::PatchApplier {
    Impl(asio::io_context& io, kopf::Executor& executor, const Registry& registry,
         const OperatorSettings& settings, std::shared_ptr<PostingContext> posting_context,
         NamespaceScope scope, ConnectionInfo credentials,
         std::function<std::optional<ConnectionInfo>()> login,
         std::shared_ptr<kopf::detail::IndicesData> indices, std::shared_ptr<Memo> memobase)
        : io(io),
          executor(executor),
          registry(registry),
          settings(settings),
          posting(std::move(posting_context)),
          scope(std::move(scope)),
          vault(std::make_shared<structs::Vault>()),
          api(io.get_executor(), vault, make_relogin(std::move(login)),
              configs::client_settings(settings)),
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
          client_core(clients::make_client_core(io, api, watch_settings())),
          client(client_core),
          memo_holder(memobase ? std::move(memobase) : std::make_shared<Memo>()),
          memo(*memo_holder) {
        vault->put("initial", std::move(credentials));
        env.client = &client;
        if (!registry.indexing.empty()) {
            if (!indices) indices = engines::make_indices_data(registry.indexing);
            indexing = std::make_unique<engines::IndexingEngine>(
                engines::IndexingEngine::Env{executor, settings, memo, &client}, registry.indexing,
                std::move(indices));
            env.indices = indexing->indices();
        }
    }

    // On the loop, before the first event (the engine keeps a weak reference to this).
    void start_daemons() {
        if (registry.spawning.empty() || daemons) return;
        engines::DaemonsEnv daemons_env{executor,
                                        std::make_shared<const OperatorSettings>(settings), client,
                                        make_daemon_patch_writer()};
        daemons_env.indices = env.indices;
        daemons =
            std::make_unique<engines::DaemonsEngine>(std::move(daemons_env), registry.spawning);
        env.daemons = daemons.get();
    }

    // Daemons and timers patch their objects as the handlers do (status subresource,
    // transformations); a daemon abandoned at the exit may try after the operator is gone.
    engines::PatchWriter make_daemon_patch_writer() {
        return [weak = weak_from_this()](const kopf::Resource& resource, json body, Patch patch,
                                         Logger& logger) -> Task<void> {
            return write_daemon_patch(weak, resource, std::move(body), std::move(patch), logger);
        };
    }

    static Task<void> write_daemon_patch(std::weak_ptr<Impl> weak, const kopf::Resource& resource,
                                         json body, Patch patch, Logger& logger) {
        auto self = weak.lock();
        if (!self || self->daemons_finished)
            throw std::runtime_error("the operator has stopped serving the resources");
        reactor::ProcessingOutcome outcome;
        outcome.body = std::move(body);
        outcome.patch = std::move(patch);
        reactor::ResourceMemory scratch;
        scratch.logger = std::shared_ptr<Logger>(std::shared_ptr<Logger>(), &logger);
        auto applying = reactor::apply_outcome(*self, self->env, resource, scratch, outcome);
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

    static clients::ReloginFn make_relogin(std::function<std::optional<ConnectionInfo>()> login) {
        return [login = std::move(login)]() {
            std::map<std::string, ConnectionInfo> result;
            if (auto info = login()) result.emplace("relogin", *info);
            return result;
        };
    }

    clients::WatchSettings watch_settings() const { return configs::watch_settings(settings); }

    // ---- resources -------------------------------------------------------------------------

    // The served resources for the handlers' selectors; warns about unresolved ones.
    std::map<std::string, structs::Resource> resolve(const std::vector<structs::Resource>& found) {
        std::map<std::string, structs::Resource> served;
        for (const auto& selector : registry.selectors()) {
            // Preferred versions unless a version is named, no events for EVERYTHING, and core
            // v1 before other groups for specific names: structs::Selector::select, as in Kopf.
            const auto matching = structs::from_public(selector).select(found);
            std::set<std::string> groups;
            for (const auto& resource : matching) groups.insert(resource.group);
            const bool specific = !selector.everything && !selector.category;
            if (specific && groups.size() > 1) {
                std::vector<std::string> names;
                for (const auto& r : matching) names.push_back(r.to_string());
                throw std::runtime_error(
                    fmt::format("Ambiguous resource specification '{}': it matches {}. Specify the "
                                "group, e.g. '{}.{}'.",
                                selector.repr(), fmt::join(names, ", "), matching.front().plural,
                                matching.front().group));
            }
            if (matching.empty()) {
                if (!unresolved_warned.count(selector.repr())) {
                    unresolved_warned.insert(selector.repr());
                    logger("kopf.reactor.observation")
                        ->warn(
                            "Unresolved resources cannot be served (try creating their CRDs): "
                            "{}",
                            selector.repr());
                }
                continue;
            }
            for (const auto& r : matching) served.emplace(r.to_string(), r);
        }
        return served;
    }

    asio::awaitable<void> rescan() {
        auto found = co_await api.discover();
        for (const auto& r : found) {
            if (r.group == "apiextensions.k8s.io" && r.plural == "customresourcedefinitions" &&
                r.preferred) {
                crds = r;
            }
            if (r.group.empty() && r.plural == "namespaces") namespaces_resource = r;
        }
        auto now_served = resolve(found);
        for (const auto& [name, resource] : now_served) {
            if (!served.count(name)) {
                logger("kopf.reactor.observation")->info("Serving resource {}.", name);
            }
        }
        for (const auto& [name, resource] : served) {
            if (!now_served.count(name)) {
                logger("kopf.reactor.observation")
                    ->info("Resource {} is gone (its CRD was deleted): no longer served.", name);
            }
        }
        served = std::move(now_served);
        update_watchers();
    }

    // ---- watchers --------------------------------------------------------------------------

    std::set<std::pair<std::string, std::string>> wanted_watchers() const {
        std::set<std::pair<std::string, std::string>> wanted;
        for (const auto& [name, resource] : served) {
            if (scope.clusterwide || !resource.namespaced) {
                wanted.emplace(name, "");
            } else {
                for (const auto& ns : namespaces) wanted.emplace(name, ns);
            }
        }
        return wanted;
    }

    void update_watchers() {
        if (stopping) return;
        const auto wanted = wanted_watchers();
        for (auto it = watchers.begin(); it != watchers.end();) {
            if (!wanted.count(it->first)) {
                it->second->stop();
                if (const auto id = indexed_watchers.find(it->first);
                    id != indexed_watchers.end()) {
                    indexing->watcher_stopped(id->second);
                    indexed_watchers.erase(id);
                }
                it = watchers.erase(it);
            } else {
                ++it;
            }
        }
        for (const auto& key : wanted) {
            if (watchers.count(key)) continue;
            auto stop = std::make_shared<clients::StopSignal>();
            watchers.emplace(key, stop);
            start_watcher(key, served.at(key.first), stop);
        }
    }

    // The served kind of `resource`, created on first use; kept while the operator runs (its
    // objects and their memories outlive a CRD's brief absence).
    std::shared_ptr<ServedKind> kind_of(const structs::Resource& resource) {
        auto& kind = kinds[resource.to_string()];
        if (!kind) {
            kind = std::make_shared<ServedKind>(
                ServedKind{resource, structs::to_public(resource), resource.to_string()});
            kind->indexed = indexing && indexing->indexes(kind->public_);
            kind->handled = handles(kind->public_);
        }
        return kind;
    }

    // Whether handlers other than index handlers select the resource.
    bool handles(const kopf::Resource& resource) const {
        const auto selects = [&resource](const auto& h) { return h.selector.check(resource); };
        return std::any_of(registry.changing.begin(), registry.changing.end(),
                           [&resource](const ChangingHandler& h) {
                               return h.has_selector && h.selector.check(resource);
                           }) ||
               std::any_of(registry.watching.begin(), registry.watching.end(), selects) ||
               std::any_of(registry.spawning.begin(), registry.spawning.end(), selects);
    }

    void start_watcher(const std::pair<std::string, std::string>& key,
                       const structs::Resource& resource,
                       std::shared_ptr<clients::StopSignal> stop) {
        auto self = shared_from_this();
        auto kind = kind_of(resource);
        const std::string& namespace_ = key.second;
        const std::string where = namespace_.empty() ? "cluster-wide" : "in " + namespace_;
        logger("kopf.reactor.queueing")->debug("Watching {} {}.", resource.to_string(), where);
        engines::IndexingEngine::WatcherId indexed = 0;
        std::function<void()> on_listed;
        std::function<bool(const std::string&)> drop_unparsed;
        if (kind->indexed) {
            indexed = indexing->watcher_started(kind->public_);
            indexed_watchers[key] = indexed;
            on_listed = [self, indexed] { self->indexing->listed(indexed); };
        } else {
            // Every event of an indexed kind is indexed: none is dropped unparsed.
            drop_unparsed = [self, prefix = kind->name + "/"](const std::string& version) {
                return self->drop_echo(version, prefix);
            };
        }
        watch_until_stopped(
            resource, namespace_, stop,
            [self, kind, indexed](clients::WatchEvent&& event) {
                self->on_watch_event(kind, indexed, std::move(event));
            },
            "kopf.reactor.queueing",
            fmt::format("Watching {} {} has failed", resource.to_string(), where),
            std::move(drop_unparsed), std::move(on_listed));
    }

    // The event of our own patch that would change nothing is recognised by its version
    // before its line is parsed (parsing it was a fifth of the operator's work per object).
    bool drop_echo(const std::string& version, const std::string& key_prefix) {
        if (stopping) return false;
        const auto key = queues.drop_echo(version, key_prefix);
        if (!key) return false;
        if (const auto entry = objects.find(*key); entry != objects.end()) ++entry->second.events;
        return true;
    }

    // Runs one watch loop of `resource` on the loop until `stop`; its end is logged, never fatal.
    void watch_until_stopped(const structs::Resource& resource, const std::string& namespace_,
                             std::shared_ptr<clients::StopSignal> stop,
                             std::function<void(clients::WatchEvent&&)> on_event,
                             const char* logger_name, std::string failure,
                             std::function<bool(const std::string&)> drop_unparsed = {},
                             std::function<void()> on_listed = {}) {
        auto self = shared_from_this();
        asio::co_spawn(
            io,
            [self, resource, namespace_, stop, on_event = std::move(on_event),
             drop_unparsed = std::move(drop_unparsed),
             on_listed = std::move(on_listed)]() -> asio::awaitable<void> {
                // Named first: g++ 12 destroys argument temporaries of a co_await twice.
                auto watching =
                    self->api.watch_objs(resource, namespace_, self->watch_settings(), {}, on_event,
                                         stop.get(), on_listed, drop_unparsed);
                co_await std::move(watching);
            },
            [logger_name, failure = std::move(failure)](std::exception_ptr error) {
                if (error) logger(logger_name)->error("{}: {}", failure, describe(error));
            });
    }

    void on_watch_event(const std::shared_ptr<ServedKind>& kind,
                        engines::IndexingEngine::WatcherId indexed, clients::WatchEvent&& event) {
        if (stopping) return;
        if (!kind->indexed) {
            enqueue(kind, std::move(event));
            return;
        }
        if (!kind->handled) {
            indexing->on_event(indexed, event.type, event.object, event.seen_by_listing, [] {});
            return;
        }
        // Queued for the other handlers once indexed (at once, unless a coroutine index
        // handler suspends).
        auto held = std::make_shared<clients::WatchEvent>(std::move(event));
        indexing->on_event(indexed, held->type, held->object, held->seen_by_listing,
                           [self = shared_from_this(), kind, held] {
                               if (!self->stopping) self->enqueue(kind, std::move(*held));
                           });
    }

    void enqueue(const std::shared_ptr<ServedKind>& kind, clients::WatchEvent&& event) {
        std::string key;
        key.reserve(kind->name.size() + 64);  // room for a uid: one allocation
        key.append(kind->name).push_back('/');
        if (const std::string* uid = metadata_string(event.object, "uid"); uid && !uid->empty()) {
            key += *uid;
        } else {
            key += metadata_field(event.object, "namespace") + "/" +
                   metadata_field(event.object, "name");
        }
        auto& entry = objects[key];
        if (!entry.kind) entry.kind = kind;
        ++entry.events;
        // Built key by key: nested initializer lists cost a third of this function.
        json raw(json::value_t::object);
        raw["type"] = event.type.empty() ? json() : json(std::move(event.type));
        raw["object"] = std::move(event.object);
        queues.push(key, std::move(raw));
    }

    // Namespaces matching the scope's patterns, followed as they come and go.
    void start_namespace_observer() {
        auto self = shared_from_this();
        auto stop = std::make_shared<clients::StopSignal>();
        observers.push_back(stop);
        watch_until_stopped(
            *namespaces_resource, "", stop,
            [self](clients::WatchEvent&& event) {
                const std::string name = metadata_field(event.object, "name");
                if (!self->scope.matches(name)) return;
                const bool gone = event.type == "DELETED";
                if (gone ? self->namespaces.erase(name) > 0
                         : self->namespaces.insert(name).second) {
                    self->update_watchers();
                }
            },
            "kopf.reactor.observation", "Namespace observation failed", {},
            [self] {
                // The watchers of the namespaces found so far are started: the indices wait
                // for their listings.
                if (self->indexing) self->indexing->discovered();
            });
    }

    // CRDs created or deleted: rescan the API and start or stop the watchers.
    void start_crd_observer() {
        auto self = shared_from_this();
        auto stop = std::make_shared<clients::StopSignal>();
        observers.push_back(stop);
        watch_until_stopped(
            *crds, "", stop,
            [self](clients::WatchEvent&& event) {
                if (event.seen_by_listing) return;
                self->schedule_rescan();
            },
            "kopf.reactor.observation", "CRD observation failed");
    }

    void schedule_rescan() {
        if (rescan_pending || stopping) return;
        rescan_pending = true;
        auto self = shared_from_this();
        // A CRD becomes servable a moment after it is created: give discovery a breath.
        executor.post_after(0.5, [self] {
            self->rescan_pending = false;
            asio::co_spawn(self->io, self->rescan(), [](std::exception_ptr error) {
                if (error) {
                    logger("kopf.reactor.observation")
                        ->error("Resource rescanning failed: {}", describe(error));
                }
            });
        });
    }

    // ---- processing ------------------------------------------------------------------------

    void process(const std::string& key, json&& event, ObjectQueues::Done done) {
        if (indexing && !indexing->ready()) {
            // No handler runs before the indices are complete (as Kopf).
            auto self = shared_from_this();
            indexing->when_ready([self, key, event = std::move(event), done]() mutable {
                if (self->stopping) {
                    done(std::nullopt, false);
                    return;
                }
                self->process(key, std::move(event), std::move(done));
            });
            return;
        }
        auto self = shared_from_this();
        kopf::start_detached<Processed>(
            executor, process_task(key, std::move(event)),
            [self, key, done = std::move(done)](std::exception_ptr error,
                                                std::optional<Processed> processed) {
                if (error) {
                    logger("kopf.reactor.processing")
                        ->error("Processing of {} has failed: {}", key, describe(error));
                }
                done(processed ? processed->resource_version : std::nullopt,
                     processed && processed->echo_is_noop);
            });
    }

    // What the queue needs to know after one processing of an object.
    struct Processed {
        std::optional<std::string> resource_version;  // of our last patch
        bool echo_is_noop = false;                    // that patch's watch event needs nothing
    };

    Task<Processed> process_task(std::string key, json event) {
        // The entry stays while its object is processed: only this cycle erases it.
        ObjectEntry& entry = objects.at(key);
        const std::shared_ptr<ServedKind> kind = entry.kind;  // alive for the cycle
        const kopf::Resource& public_resource = kind->public_;
        if (!entry.memory) {
            entry.memory = reactor::ResourceMemory::first(event, memo);
            if (daemons) entry.memory->poke = make_poke(key);
        }
        reactor::ResourceMemory& memory = *entry.memory;
        // Named first: g++ 12 destroys argument temporaries of a co_await twice.
        auto processing =
            reactor::process_resource_event(env, public_resource, memory, std::move(event));
        auto outcome = co_await std::move(processing);
        if (outcome.gone) {
            objects.erase(key);
            co_return Processed{};
        }
        auto applied =
            co_await reactor::apply_outcome(*this, env, public_resource, memory, outcome);
        if (applied.wakeup_after)
            schedule_touch(key, kind->api, outcome.body, *applied.wakeup_after);
        co_return Processed{applied.resource_version, applied.own_echo_is_noop};
    }

    // Kopf's touch-dummy: after a delay with no new events, patch to provoke one.
    void schedule_touch(const std::string& key, const structs::Resource& resource, const json& body,
                        double delay) {
        auto self = shared_from_this();
        const auto count = objects[key].events;
        executor.post_after(delay, [self, key, resource, body, count] {
            const auto counted = self->objects.find(key);
            if (self->stopping || counted == self->objects.end() || counted->second.events != count)
                return;
            json patch = reactor::touch_patch(self->settings, body, actions::Clock::now());
            // With a status subresource, the server drops status fields from a patch of the
            // object: a dummy kept in the status (StatusProgressStorage) goes to /status.
            if (resource.subresources.count("status") && patch.contains("status")) {
                json status_patch = {{"status", std::move(patch["status"])}};
                patch.erase("status");
                self->send_touch(resource, body, std::move(status_patch), "status");
            }
            if (!patch.empty()) self->send_touch(resource, body, std::move(patch), "");
        });
    }

    void send_touch(const structs::Resource& resource, const json& body, json patch,
                    std::string subresource) {
        asio::co_spawn(
            io,
            api.patch(resource, metadata_field(body, "namespace"), metadata_field(body, "name"),
                      clients::PatchType::Merge, std::move(patch), std::move(subresource)),
            [](std::exception_ptr error, json) {
                if (!error) return;
                try {
                    std::rethrow_exception(error);
                } catch (const clients::NotFoundError&) {
                } catch (const std::exception& e) {
                    logger("kopf.reactor.processing")->warn("Touching failed: {}", e.what());
                }
            });
    }

    const structs::Resource* served_resource(const kopf::Resource& resource) const {
        for (const auto& [name, r] : served) {
            if (r.group == resource.group && r.version == resource.version &&
                r.plural == resource.plural) {
                return &r;
            }
        }
        return nullptr;
    }

    Task<reactor::PatchResult> write(const kopf::Resource& resource, const json& body,
                                     clients::PatchType type, const json& patch, bool status) {
        reactor::PatchResult result;
        try {
            // The served description is read only while the request is built, before any
            // suspension (it has a set of verbs: copying it was 18 allocations per patch).
            const structs::Resource* served_as = served_resource(resource);
            const structs::Resource unserved =
                served_as ? structs::Resource() : structs::from_public(resource);
            const std::string namespace_ = metadata_field(body, "namespace");
            const std::string name = metadata_field(body, "name");
            const std::string subresource = status ? "status" : "";
            auto patching = api.patch_version(served_as ? *served_as : unserved, namespace_, name,
                                              type, patch, subresource);
            auto awaiter = loop::on_loop(io, std::move(patching));
            result.resource_version = co_await awaiter;
        } catch (const clients::NotFoundError&) {
            result.found = false;
        } catch (const clients::UnprocessableEntityError&) {
            if (type != clients::PatchType::Json) throw;
            result.conflict = true;
        } catch (const clients::ConflictError&) {
            if (type != clients::PatchType::Json) throw;
            result.conflict = true;
        }
        co_return result;
    }

    Task<reactor::PatchResult> merge_patch(const kopf::Resource& resource, const json& body,
                                           const json& patch, bool status) override {
        return write(resource, body, clients::PatchType::Merge, patch, status);
    }
    Task<reactor::PatchResult> json_patch(const kopf::Resource& resource, const json& body,
                                          const json& ops, bool status) override {
        return write(resource, body, clients::PatchType::Json, ops, status);
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
        probe = std::make_unique<clients::ApiClient>(io.get_executor(), vault, clients::ReloginFn{},
                                                     probe_settings);
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
        co_await rescan();
        if (!scope.clusterwide) {
            if (scope.all_specific() || !namespaces_resource) {
                for (const auto& ns : scope.specific_namespaces()) namespaces.insert(ns);
                update_watchers();
                if (indexing) indexing->discovered();
            } else {
                start_namespace_observer();
            }
        } else if (indexing) {
            indexing->discovered();
        }
        if (!settings.scanning.disabled && crds) start_crd_observer();
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
        if (retry_timer) retry_timer->cancel();
        if (indexing) indexing->release_waiters();
        on_stopped = std::move(finished);
        for (auto& [key, signal] : watchers) signal->stop();
        for (auto& signal : observers) signal->stop();
        watchers.clear();
        observers.clear();
        auto self = shared_from_this();
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
        if (!stopping || !queues_finished || !daemons_finished || posts_in_flight > 0 ||
            !on_stopped)
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
    NamespaceScope scope;
    std::shared_ptr<structs::Vault> vault;
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

    std::optional<structs::Resource> crds;
    std::optional<structs::Resource> namespaces_resource;
    std::map<std::string, structs::Resource> served;
    std::set<std::string> namespaces;
    std::set<std::string> unresolved_warned;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<clients::StopSignal>> watchers;
    std::vector<std::shared_ptr<clients::StopSignal>> observers;
    std::map<std::string, std::shared_ptr<ServedKind>> kinds;  // by resource name
    // By object key (resource/uid); forgotten when the object is gone.
    std::unordered_map<std::string, ObjectEntry> objects;
    bool rescan_pending = false;
    bool stopping = false;
    bool queues_finished = false;
    bool daemons_finished = false;
    int posts_in_flight = 0;
    // Daemons and timers, if the operator has any. Last: destroyed first, it closes the way
    // back to the loop for daemons abandoned on their threads.
    std::unique_ptr<engines::DaemonsEngine> daemons;
    std::function<void()> on_stopped;
    // In-memory indices, if the operator has index handlers; the ids of indexed watchers.
    std::unique_ptr<engines::IndexingEngine> indexing;
    std::map<std::pair<std::string, std::string>, engines::IndexingEngine::WatcherId>
        indexed_watchers;
};

ResourceServing::ResourceServing(asio::io_context& io, kopf::Executor& executor,
                                 const Registry& registry, const OperatorSettings& settings,
                                 std::shared_ptr<PostingContext> posting, NamespaceScope scope,
                                 ConnectionInfo credentials,
                                 std::function<std::optional<ConnectionInfo>()> login,
                                 std::shared_ptr<kopf::detail::IndicesData> indices,
                                 std::shared_ptr<Memo> memo)
    : impl_(std::make_shared<Impl>(io, executor, registry, settings, std::move(posting),
                                   std::move(scope), std::move(credentials), std::move(login),
                                   std::move(indices), std::move(memo))) {}

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

const kopf::Client& ResourceServing::client() const {
    return impl_->client;
}

void ResourceServing::close_client() {
    clients::close_client_core(*impl_->client_core);
}

}  // namespace kopf::runtime
