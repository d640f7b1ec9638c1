// In-memory indexing (Kopf's engines/indexing.py): the index handlers run on every event of an
// indexed resource as it arrives, before the object's event is queued for its other handlers;
// no handler of any resource runs until every indexed resource's first listing is indexed.
//
// Unlike Kopf, indexing takes no per-object worker slot (the events are indexed by the watcher
// on the loop), so a worker limit smaller than the number of indexed objects cannot block the
// start, and readiness is one counter, not a toggle per object.
//
// Everything here runs on the loop; the indices are read from any thread (kopf/index.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <kopf/index.hpp>
#include <kopf/json.hpp>
#include <kopf/registry.hpp>
#include <kopf/task.hpp>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engines/metrics.hpp"

namespace kopf {
struct OperatorSettings;
class Memo;
}  // namespace kopf

namespace kopf::detail {

// One index: keys to stores; a store holds each contributing object's value (the object's
// record in the engine knows its slot, so removal is O(1) without a map per store). Values are
// shared so that a reader's snapshot of a store costs one pointer copy per value.
struct IndexData {
    using Owner = void*;  // the object's record in the engine
    struct Slot {
        Owner owner;
        std::shared_ptr<const json> value;
    };
    struct StoreData {
        std::vector<Slot> values;
    };
    using Items = std::unordered_map<json, StoreData>;

    explicit IndexData(std::string name) : name(std::move(name)) {}
    std::string name;
    mutable std::shared_mutex mutex;
    Items items;
};

struct IndicesData {
    std::vector<std::shared_ptr<IndexData>> indices;  // in the order of the handlers
};

}  // namespace kopf::detail

namespace kopf::engines {

/// The indices of one operator, one per index handler, empty until the engine fills them.
std::shared_ptr<detail::IndicesData> make_indices_data(
    const std::vector<IndexingHandler>& handlers);

class IndexingEngine {
  public:
    using WatcherId = std::uint32_t;

    struct Env {
        Executor& loop;
        const OperatorSettings& settings;
        Memo& memo;                      // the operator's memo, as the handlers' ctx.memo
        const Client* client = nullptr;  // for ctx.api()
        /// The wall clock of the handlers' retries and timeouts; tests substitute it.
        std::function<std::chrono::system_clock::time_point()> now = [] {
            return std::chrono::system_clock::now();
        };
    };

    /// `data`: the indices to fill, made by make_indices_data() for the same handlers (the
    /// operator shares them with its probes and activities before the engine starts).
    IndexingEngine(Env env, const std::vector<IndexingHandler>& handlers,
                   std::shared_ptr<detail::IndicesData> data);
    ~IndexingEngine();
    IndexingEngine(const IndexingEngine&) = delete;
    IndexingEngine& operator=(const IndexingEngine&) = delete;

    /// The indices, for the handlers' contexts.
    const Indices& indices() const;
    /// Whether any index handler selects this resource.
    bool indexes(const Resource& resource) const;

    /// Handling waits until discovery has started the first watchers (call once after it).
    void discovered();
    /// A watcher of an indexed resource starts: handling waits for its first listing.
    WatcherId watcher_started(const Resource& resource);
    /// Its first listing (or a relisting after 410 Gone) has been delivered: objects of an
    /// earlier listing that this one did not show are removed from the indices.
    void listed(WatcherId watcher);
    /// The watcher is stopped for good (its namespace or CRD is gone): its objects leave.
    void watcher_stopped(WatcherId watcher);

    /// One event of the watcher's object; `then` runs once the object is indexed (at once
    /// unless an index handler is a coroutine that suspends), in the order of the events.
    void on_event(WatcherId watcher, const std::string& type, const json& body, bool listed,
                  std::function<void()> then);

    /// Whether every indexed resource has been listed and indexed; `when_ready` runs `fn` at
    /// once if so, else when it becomes so.
    bool ready() const;
    void when_ready(std::function<void()> fn);
    /// Runs the waiting functions now, ready or not (the operator stops).
    void release_waiters();

    std::size_t objects() const;  // indexed objects (for tests and benchmarks)
    // Each index's keys and values (kopf_index_keys, kopf_index_values), at a scrape.
    void measure(Metrics::Gauges& gauges) const;

    struct Core;

  private:
    std::shared_ptr<Core> core_;
};

}  // namespace kopf::engines
