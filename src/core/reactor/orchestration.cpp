#include "core/reactor/orchestration.hpp"

#include <fmt/format.h>
#include <prometheus/counter.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "clients/api.hpp"
#include "clients/json_codec.hpp"
#include "clients/lines.hpp"
#include "clients/stop.hpp"
#include "configs/client_settings.hpp"
#include "core/actions/logging.hpp"
#include "core/intents/matching.hpp"
#include "core/reactor/queueing.hpp"
#include "structs/bodies.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {

using structs::metadata_field;
using structs::metadata_string;

Orchestration::Orchestration(asio::io_context& io, clients::ApiClient& api,
                             const Registry& registry, const OperatorSettings& settings,
                             bool clusterwide, ObjectQueues& queues, ObjectEntries& objects,
                             engines::IndexingEngine* indexing)
    : io(io),
      api(api),
      registry(registry),
      settings(settings),
      clusterwide(clusterwide),
      queues(queues),
      objects(objects),
      indexing(indexing) {
    queues.parse_unparsed_with(&Orchestration::parse_deferred);
}

clients::WatchSettings Orchestration::watch_settings() const {
    return configs::watch_settings(settings);
}

std::set<Orchestration::WatcherKey> Orchestration::wanted_watchers(const Insights& insights) const {
    std::set<WatcherKey> wanted;
    for (const auto& [name, resource] : insights.served) {
        if (clusterwide || !resource.namespaced) {
            wanted.emplace(name, "");
        } else {
            for (const auto& ns : insights.namespaces) wanted.emplace(name, ns);
        }
    }
    return wanted;
}

void Orchestration::update_watchers(const Insights& insights) {
    if (stopping) return;
    this->insights = &insights;
    if (on_revised) on_revised(insights);
    apply_watchers(insights);
}

void Orchestration::set_paused(bool paused) {
    if (stopping || this->paused == paused) return;
    this->paused = paused;
    // The held events of closed watchers could outlive their objects: the listing at the resume
    // brings the latest ones again.
    if (paused) {
        held.clear();
        takeover_order.clear();
    }
    if (insights) apply_watchers(*insights);
}

void Orchestration::set_standby(bool standby) {
    if (stopping || this->standby == standby) return;
    this->standby = standby;
    if (standby) {
        // What is still held from an earlier standby is listed again.
        held.clear();
        takeover_order.clear();
        for (auto& [key, signal] : watchers) stop_watcher(key, *signal);
        watchers.clear();
        if (insights) apply_watchers(*insights);
        return;
    }
    if (held.empty()) return;
    logger("kopf.reactor.queueing")
        ->debug("Queueing the latest events of {} objects seen while standing by.", held.size());
    // The objects changed while standing by first: they are the likeliest to need handling.
    takeover_order.clear();
    for (const bool listed : {false, true}) {
        for (const auto& [key, entry] : held) {
            if (entry.seen_by_listing == listed) takeover_order.push_back(key);
        }
    }
    queue_held();
}

void Orchestration::queue_held() {
    if (stopping || standby) return;
    // A batch at a time: the loop handles the first objects while the next ones are parsed.
    constexpr std::size_t batch = 256;
    for (std::size_t queued = 0; queued < batch && !takeover_order.empty();) {
        const auto found = held.find(takeover_order.front());
        takeover_order.pop_front();
        if (found == held.end()) continue;  // a newer event came meanwhile, and is queued
        HeldEvent entry = std::move(found->second);
        std::string key = found->first;
        held.erase(found);
        clients::WatchEvent event{std::move(entry.type), json::parse(entry.object),
                                  entry.seen_by_listing};
        enqueue_keyed(key, entry.kind, std::move(event));
        ++queued;
    }
    if (!takeover_order.empty()) asio::post(io, [self = anchored()] { self->queue_held(); });
}

void Orchestration::stop_watcher(const WatcherKey& key, clients::StopSignal& signal) {
    signal.stop();
    if (const auto id = indexed_watchers.find(key); id != indexed_watchers.end()) {
        indexing->watcher_stopped(id->second);
        indexed_watchers.erase(id);
    }
}

void Orchestration::apply_watchers(const Insights& insights) {
    if (stopping) return;
    const auto wanted = paused ? std::set<WatcherKey>{} : wanted_watchers(insights);
    for (auto it = watchers.begin(); it != watchers.end();) {
        if (!wanted.count(it->first)) {
            const auto& [resource, namespace_] = it->first;
            logger("kopf.reactor.queueing")
                ->debug("Stopped watching {} {}.", resource,
                        namespace_.empty() ? "cluster-wide" : "in " + namespace_);
            stop_watcher(it->first, *it->second);
            it = watchers.erase(it);
        } else {
            ++it;
        }
    }
    for (const auto& key : wanted) {
        if (watchers.count(key)) continue;
        auto stop = std::make_shared<clients::StopSignal>();
        watchers.emplace(key, stop);
        start_watcher(key, insights.served.at(key.first), stop);
    }
}

void Orchestration::stop() {
    stopping = true;
    held.clear();
    takeover_order.clear();
    for (auto& [key, signal] : watchers) signal->stop();
    watchers.clear();
}

// The served kind of `resource`, created on first use; kept while the operator runs (its
// objects and their memories outlive a CRD's brief absence).
std::shared_ptr<ServedKind> Orchestration::kind_of(const structs::Resource& resource) {
    auto& kind = kinds[resource.to_string()];
    if (!kind) {
        kind = std::make_shared<ServedKind>(
            ServedKind{resource, structs::to_public(resource), resource.to_string()});
        kind->indexed = indexing && indexing->indexes(kind->public_);
        kind->handled = handles(kind->public_);
        kind->adoptable = !kind->indexed &&
                          intents::decided_by_essence_and_metadata(
                              registry, settings.persistence.diffbase_storage.get(), kind->public_);
        if (metrics) kind->meters = metrics->resource(kind->name);
    }
    return kind;
}

// Whether handlers other than index handlers select the resource.
bool Orchestration::handles(const kopf::Resource& resource) const {
    const auto selects = [&resource](const auto& h) { return h.selector.check(resource); };
    return std::any_of(registry.changing.begin(), registry.changing.end(),
                       [&resource](const ChangingHandler& h) {
                           return h.has_selector && h.selector.check(resource);
                       }) ||
           std::any_of(registry.watching.begin(), registry.watching.end(), selects) ||
           std::any_of(registry.spawning.begin(), registry.spawning.end(), selects);
}

void Orchestration::start_watcher(const WatcherKey& key, const structs::Resource& resource,
                                  std::shared_ptr<clients::StopSignal> stop) {
    auto self = anchored();
    auto kind = kind_of(resource);
    const std::string& namespace_ = key.second;
    const std::string where = namespace_.empty() ? "cluster-wide" : "in " + namespace_;
    logger("kopf.reactor.queueing")->debug("Watching {} {}.", resource.to_string(), where);
    engines::IndexingEngine::WatcherId indexed = 0;
    std::function<void()> on_listed;
    clients::TakeUnparsed take_unparsed;
    if (kind->indexed) {
        indexed = indexing->watcher_started(kind->public_);
        indexed_watchers[key] = indexed;
        on_listed = [self, indexed] { self->indexing->listed(indexed); };
    } else {
        // Every event of an indexed kind is indexed: none is taken unparsed.
        take_unparsed = [self, kind, prefix = kind->name + "/"](const std::string& version,
                                                                std::string_view line) {
            return self->take_unparsed(kind, prefix, version, line);
        };
    }
    watch_until_stopped(
        resource, namespace_, stop,
        [self, kind, indexed](clients::WatchEvent&& event) {
            self->on_watch_event(kind, indexed, std::move(event));
        },
        "kopf.reactor.queueing",
        fmt::format("Watching {} {} has failed", resource.to_string(), where),
        std::move(take_unparsed), std::move(on_listed));
}

// Parsing watch events was the operator's largest cost per object, and most MODIFIED events
// need none: the event of our own patch that would change nothing is recognised by its version
// and dropped; an event of an object whose worker is busy is kept as text, and parsed only if it
// is still the newest when the worker is free (the echoes of the handling cycle's own patches,
// which at moderate rates arrive before the patches' answers, never are); and an event of an
// idle, settled object of a kind with daemons or timers goes straight into their views when it
// changes nothing any handler decides on (the echo of a timer's status patch:
// ServedKind::adoptable, DaemonsEngine::adopt_line).
bool Orchestration::take_unparsed(const std::shared_ptr<ServedKind>& kind,
                                  std::string_view key_prefix, const std::string& version,
                                  std::string_view line) {
    // A standby keeps every body it sees (the echo of a patch made before the lease was lost
    // included): it is the one to handle at the takeover.
    if (stopping || standby) return false;
    if (const auto dropped = queues.drop_echo(version, key_prefix)) {
        if (const auto entry = objects.find(*dropped); entry != objects.end())
            ++entry->second.events;
    } else {
        // Keyed as enqueue() keys it: an object without a sole uid in its line is parsed.
        const auto uid = clients::sole_uid(line);
        if (!uid || uid->empty() || !held.empty()) return false;
        const std::string key = object_key(*kind, *uid);
        const auto entry = objects.find(key);
        if (entry == objects.end()) return false;
        // Older than a version processed already: dropped, as enqueue_keyed() would.
        const auto number = structs::version_number(version);
        const bool stale =
            number && entry->second.newest_version && *number < entry->second.newest_version;
        // Events of idle, settled objects with daemons (e.g. the echo of a timer's status patch).
        const ObjectEntry& known = entry->second;
        // (Settled implies no transformations left over: those come from a patch, and an event
        // whose processing made one is not settled.)
        if (!stale && kind->adoptable && daemons && known.memory && known.memory->settled &&
            known.memory->daemons && known.memory->logger &&
            !known.memory->logger->enabled_for(LogLevel::DEBUG) && queues.is_idle(key) &&
            daemons->adopt_line(*known.memory->daemons, line)) {
            if (number && *number > entry->second.newest_version)
                entry->second.newest_version = *number;
            ++entry->second.events;
            if (kind->meters.events) kind->meters.events->Increment();
            return true;
        }
        if (!stale) {
            bool batched = false;
            if (!queues.push_unparsed(key, version, line, batched)) return false;
            if (batched && kind->meters.batched) kind->meters.batched->Increment();
            ++entry->second.events;
        }
    }
    if (kind->meters.events) kind->meters.events->Increment();
    return true;
}

std::optional<json> Orchestration::parse_deferred(const std::string& key, std::string_view line) {
    try {
        clients::WatchLine event = clients::decode_watch_line(line, key);
        json raw(json::value_t::object);
        raw["type"] = std::move(event.type);
        raw["object"] = std::move(event.object);
        return raw;
    } catch (const std::exception& error) {
        logger("kopf.reactor.queueing")
            ->error("An event of {} could not be read, and is skipped: {}", key, error.what());
        return std::nullopt;
    }
}

std::string Orchestration::object_key(const ServedKind& kind, std::string_view id) {
    std::string key;
    key.reserve(kind.name.size() + 1 + id.size());  // one allocation
    key.append(kind.name).push_back('/');
    key.append(id);
    return key;
}

void Orchestration::on_watch_event(const std::shared_ptr<ServedKind>& kind,
                                   engines::IndexingEngine::WatcherId indexed,
                                   clients::WatchEvent&& event) {
    if (kind->meters.events) kind->meters.events->Increment();
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
                       [self = anchored(), kind, held] {
                           if (!self->stopping) self->enqueue(kind, std::move(*held));
                       });
}

void Orchestration::enqueue(const std::shared_ptr<ServedKind>& kind, clients::WatchEvent&& event) {
    const std::string* uid = metadata_string(event.object, "uid");
    std::string key = uid && !uid->empty()
                          ? object_key(*kind, *uid)
                          : object_key(*kind, metadata_field(event.object, "namespace") + "/" +
                                                  metadata_field(event.object, "name"));
    if (standby) {
        // The deletion of an object this replica never handled leaves nothing to handle.
        if (event.type == "DELETED" && !objects.count(key)) {
            held.erase(key);
        } else {
            HeldEvent latest{kind, std::move(event.type), event.object.dump(),
                             event.seen_by_listing};
            const bool added = held.insert_or_assign(std::move(key), std::move(latest)).second;
            if (!added && kind->meters.batched) kind->meters.batched->Increment();
        }
        return;
    }
    // A newer event than the one held, if the takeover has not queued that yet.
    if (!held.empty()) held.erase(key);
    enqueue_keyed(key, kind, std::move(event));
}

void Orchestration::enqueue_keyed(const std::string& key, const std::shared_ptr<ServedKind>& kind,
                                  clients::WatchEvent&& event) {
    auto& entry = objects[key];
    if (!entry.kind) entry.kind = kind;
    // A version older than one we have processed, delivered late by a stalled stream, lacks
    // the handlers' successes recorded since: processing it would run them again. (The same
    // version again, e.g. from a relisting, is the same state: it passes, as in Kopf.)
    // (A deletion passes: it is the object's last word.)
    if (entry.newest_version && event.type != "DELETED") {
        const auto version = structs::body_version_number(event.object);
        if (version && *version < entry.newest_version) return;
    }
    ++entry.events;
    // Built key by key: nested initializer lists cost a third of this function.
    json raw(json::value_t::object);
    raw["type"] = event.type.empty() ? json() : json(std::move(event.type));
    raw["object"] = std::move(event.object);
    if (queues.push(key, std::move(raw), event.seen_by_listing) && kind->meters.batched)
        kind->meters.batched->Increment();
}

}  // namespace kopf::runtime
