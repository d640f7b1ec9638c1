// Orchestration (Kopf's reactor/orchestration.py): one watcher per served resource and
// namespace (one cluster-wide for cluster resources or with -A), started and stopped as
// observation revises the insights; it also runs the observers' watch loops. A watcher keys
// its events by object and queues them for the objects' workers (core/reactor/queueing), for
// indexed resources through the indices first.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <kopf/registry.hpp>
#include <kopf/resource.hpp>
#include <kopf/settings.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clients/api.hpp"
#include "clients/settings.hpp"
#include "clients/stop.hpp"
#include "core/actions/logging.hpp"
#include "core/actions/throttlers.hpp"
#include "core/engines/indexing.hpp"
#include "core/engines/metrics.hpp"
#include "core/reactor/observation.hpp"
#include "core/reactor/processing.hpp"
#include "structs/references.hpp"

namespace kopf::runtime {

namespace asio = boost::asio;

class ObjectQueues;

// One served resource kind: its API and public descriptions.
struct ServedKind {
    structs::Resource api;
    kopf::Resource public_;
    std::string name;      // api.to_string()
    bool indexed = false;  // index handlers select it
    bool handled = true;   // other handlers select it: its objects are queued for them
    // No index handlers select it and intents::decided_by_essence_and_metadata() holds: an
    // event of a settled object that changes nothing its handlers decide on is given to the
    // daemons' views, not processed (DaemonsEngine::adopt_line).
    bool adoptable = false;
    engines::ResourceMeters meters{};  // none when metrics are off
};

// One object of a served kind: its memory lives here, found with the same lookup as the rest
// (a separate map of memories by uid showed in profiles).
struct ObjectEntry {
    std::shared_ptr<ServedKind> kind;
    unsigned long events = 0;  // a touch-dummy is sent only if no event came meanwhile
    std::optional<reactor::ResourceMemory> memory;  // from its first processing on
    actions::Throttler throttler;  // after unexpected errors (settings.queueing.error_delays)
    // The newest resourceVersion processed, as a number (0: none, or not a number): a stalled
    // watch stream may deliver older versions late (structs::version_number). Versions older
    // than our own last patch still pass while its echo is awaited: they are changes the server
    // merged under the patch, which the queue must know of (ObjectQueues).
    std::uint64_t newest_version = 0;
};

// By object key (resource/uid); forgotten when the object is gone.
using ObjectEntries = std::unordered_map<std::string, ObjectEntry>;

class Orchestration {
  public:
    // `queues` and `objects` are the serving's: the watchers fill them, the processing empties
    // them. `indexing` is null without index handlers.
    Orchestration(asio::io_context& io, clients::ApiClient& api, const Registry& registry,
                  const OperatorSettings& settings, bool clusterwide, ObjectQueues& queues,
                  ObjectEntries& objects, engines::IndexingEngine* indexing);

    // The operator's metrics (none when off), before the first watcher starts.
    void meter(engines::Metrics* metrics) { this->metrics = metrics; }
    // The daemons' engine (none without daemons and timers), before the first watcher starts.
    void serve_daemons(engines::DaemonsEngine* engine) { daemons = engine; }

    // The owner whose lifetime the watch loops extend (the serving this is a part of).
    void anchor(std::weak_ptr<void> owner) { this->owner = std::move(owner); }

    // Starts the watchers that the insights call for and stops those they no longer do; tells
    // `on_revised` first (the peering follows the namespaces and the peering CRDs).
    void update_watchers(const Insights& insights);
    std::function<void(const Insights&)> on_revised;

    // Kopf's operator pause (peering): the resource watchers stop while paused and start again
    // (with a fresh listing) when resumed. The observers keep running.
    void set_paused(bool paused);

    // The Lease's standby (a warm pause): the watchers stay open and the indices follow the
    // objects, but no event is queued for the handlers; each object's latest event is held
    // instead, and all of them are queued when the standby ends (the takeover), once each: those
    // changed while standing by first, a batch per turn of the loop.
    // Becoming a standby restarts the watchers (once): a leader keeps no copy of the bodies it
    // has handled (the events of its own patches are dropped unparsed), and the fresh listing
    // gives the standby every object's latest body, including the objects whose handling the
    // lost leadership cut short. A replica that starts as a standby lists once, at its start.
    void set_standby(bool standby);
    bool standing_by() const { return standby; }

    // Runs one watch loop of `resource` on the loop until `stop`; its end is logged, never fatal.
    // With `on_forbidden`, a 403 ends it instead of being retried (WatchRequest::on_forbidden).
    void watch_until_stopped(const structs::Resource& resource, const std::string& namespace_,
                             std::shared_ptr<clients::StopSignal> stop,
                             std::function<void(clients::WatchEvent&&)> on_event,
                             const char* logger_name, std::string failure,
                             clients::TakeUnparsed take_unparsed = {},
                             std::function<void()> on_listed = {},
                             std::function<void(bool)> on_forbidden = {}) {
        auto self = anchored();
        asio::co_spawn(
            io,
            [self, resource, namespace_, stop, on_event = std::move(on_event),
             take_unparsed = std::move(take_unparsed), on_listed = std::move(on_listed),
             on_forbidden = std::move(on_forbidden)]() -> asio::awaitable<void> {
                // Named first: g++ 12 destroys argument temporaries of a co_await twice.
                clients::WatchRequest request{.resource = resource,
                                              .namespace_ = namespace_,
                                              .settings = self->watch_settings(),
                                              .on_event = on_event,
                                              .stop = stop.get(),
                                              .on_listed = on_listed,
                                              .take_unparsed = take_unparsed,
                                              .on_forbidden = on_forbidden};
                auto watching = self->api.watch_objs(std::move(request));
                co_await std::move(watching);
            },
            [logger_name, failure = std::move(failure)](std::exception_ptr error) {
                if (error) logger(logger_name)->error("{}: {}", failure, describe(error));
            });
    }

    // Stops the watchers; their late events are ignored.
    void stop();

  private:
    using WatcherKey = std::pair<std::string, std::string>;  // resource name, namespace

    // This, keeping its owner alive (what shared_from_this() is to a class of its own).
    std::shared_ptr<Orchestration> anchored() { return {owner.lock(), this}; }
    clients::WatchSettings watch_settings() const;

    std::set<WatcherKey> wanted_watchers(const Insights& insights) const;
    void apply_watchers(const Insights& insights);
    std::shared_ptr<ServedKind> kind_of(const structs::Resource& resource);
    bool handles(const kopf::Resource& resource) const;
    void start_watcher(const WatcherKey& key, const structs::Resource& resource,
                       std::shared_ptr<clients::StopSignal> stop);
    bool take_unparsed(const std::shared_ptr<ServedKind>& kind, std::string_view key_prefix,
                       const std::string& version, std::string_view line);
    // The key of an object of `kind` in `objects` and the queues: "RESOURCE/UID" (or, without
    // a uid, "RESOURCE/NAMESPACE/NAME").
    static std::string object_key(const ServedKind& kind, std::string_view id);
    static std::optional<json> parse_deferred(const std::string& key, std::string_view line);
    void on_watch_event(const std::shared_ptr<ServedKind>& kind,
                        engines::IndexingEngine::WatcherId indexed, clients::WatchEvent&& event);
    void enqueue(const std::shared_ptr<ServedKind>& kind, clients::WatchEvent&& event);
    void enqueue_keyed(const std::string& key, const std::shared_ptr<ServedKind>& kind,
                       clients::WatchEvent&& event);
    void stop_watcher(const WatcherKey& key, clients::StopSignal& signal);
    void queue_held();

    asio::io_context& io;
    clients::ApiClient& api;
    const Registry& registry;
    const OperatorSettings& settings;
    const bool clusterwide;
    ObjectQueues& queues;
    ObjectEntries& objects;
    engines::IndexingEngine* const indexing;
    engines::DaemonsEngine* daemons = nullptr;
    engines::Metrics* metrics = nullptr;
    std::weak_ptr<void> owner;
    bool stopping = false;
    bool paused = false;
    bool standby = false;
    // While standing by: the latest event of each object, by object key, to queue at the takeover.
    // The body is kept as JSON text: a parsed body takes 2-3 times its text's memory, and a
    // standby holds every object (parsed again once, at the takeover).
    struct HeldEvent {
        std::shared_ptr<ServedKind> kind;
        std::string type;
        std::string object;  // JSON text
        bool seen_by_listing = false;
    };
    std::unordered_map<std::string, HeldEvent> held;
    // At the takeover: the keys of `held` still to queue, in order (queue_held).
    std::deque<std::string> takeover_order;
    const Insights* insights = nullptr;  // the observation's, as last revised
    std::map<WatcherKey, std::shared_ptr<clients::StopSignal>> watchers;
    std::map<std::string, std::shared_ptr<ServedKind>> kinds;  // by resource name
    // The ids of the indexed watchers.
    std::map<WatcherKey, engines::IndexingEngine::WatcherId> indexed_watchers;
};

}  // namespace kopf::runtime
