// Peering (Kopf's engines/peering.py): operators of one peering object (KopfPeering in the served
// namespaces, or ClusterKopfPeering; deploy/peering.yaml) announce themselves in its status and
// pause while a live peer of a higher priority, or of the same priority, is there.
//
// The wire format is Kopf's, so Kopf and Kopf++ operators share a peering:
//
//     status:
//       <identity>: {priority: 0, lifetime: 60, lastseen: "2026-11-26T05:21:03.123456+00:00"}
//
// written with merge-patches of the object itself (the CRDs have no status subresource):
// keep-alives every lifetime - 5..10 seconds (at least 1), `null` for this operator at its exit
// and for the peers whose lastseen + lifetime has passed. A peer without a lifetime has 60 s.
//
// The pause is Kopf's "operator_paused": a set of toggles (one per peering object, one for a
// mandatory peering whose CRD is missing), paused while any is on. The reactor stops the
// resource watchers and the daemons while paused, and starts them again when resumed; the Lease's
// standby (core/engines/leases) is a warm toggle, which keeps the watchers open.
// In the standalone mode (settings.peering.standalone) no engine exists: no requests, no watches.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <kopf/json.hpp>
#include <kopf/settings.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "structs/references.hpp"

namespace boost::asio {
class io_context;
}
namespace kopf::clients {
class ApiClient;
}

namespace kopf::engines {

using PeeringClock = std::chrono::system_clock;

/// Kopf's operator identity: $POD_ID if set; else "user@host/YYYYmmddHHMMSS/xyz" (UTC, 3
/// random characters), or "user@host" for the manual commands (`kopf freeze`, `kopf resume`).
std::string detect_own_id(bool manual);

/// One operator's entry in a peering's status.
struct Peer {
    std::string identity;
    long priority = 0;
    long lifetime = 60;  ///< seconds
    PeeringClock::time_point lastseen;

    PeeringClock::time_point deadline() const { return lastseen + std::chrono::seconds(lifetime); }
    bool is_dead(PeeringClock::time_point now) const { return deadline() <= now; }
    /// The status entry: {"priority": ..., "lifetime": ..., "lastseen": "...+00:00"}.
    json as_dict() const;
    /// For the logs, as Kopf shows peers: <Peer id: priority=0, lifetime=60, lastseen='...'>.
    std::string repr() const;
};

/// The peers in a peering object's status; entries that are not objects are skipped, absent
/// fields get Kopf's defaults (priority 0, lifetime 60, lastseen now).
std::vector<Peer> parse_peers(const json& body, PeeringClock::time_point now);
/// "[<Peer a: ...>, <Peer b: ...>]".
std::string repr(const std::vector<Peer>& peers);

/// What one state of a peering means for an operator of `identity` and `priority`.
struct PeeringVerdict {
    std::vector<Peer> peers;   ///< all of them, this operator included
    std::vector<Peer> dead;    ///< to be removed from the status
    std::vector<Peer> higher;  ///< live others of a higher priority: pause in their favour
    std::vector<Peer> same;    ///< live others of the same priority: everyone pauses
    /// The earliest deadline of `higher` and `same`: judge again then (they may have expired).
    std::optional<PeeringClock::time_point> recheck;
    bool pauses() const { return !higher.empty() || !same.empty(); }
};
PeeringVerdict judge_peers(const json& body, const std::string& identity, long priority,
                           PeeringClock::time_point now);

/// The keep-alive merge-patch: this operator's entry, or null (its removal) when `lifetime` is
/// not positive (Kopf's touch with lifetime=0 at the exit and for `kopf resume`).
json touch_patch(const std::string& identity, long priority, long lifetime,
                 PeeringClock::time_point now);
/// The merge-patch removing the peers' entries.
json clean_patch(const std::vector<Peer>& peers);

/// The peering resources among the discovered ones for the settings: ClusterKopfPeering or
/// KopfPeering (settings.clusterwide), of kopf.dev/v1 and of the legacy zalando.org/v1.
std::vector<structs::Resource> peering_resources(const PeeringSettings& settings,
                                                 const std::vector<structs::Resource>& found);

/// One merge-patch of the own entry in the peering `name` (`kopf freeze`/`resume`, keep-alives):
/// true if patched, false if the object does not exist. Other API errors are thrown.
boost::asio::awaitable<bool> touch_peering(clients::ApiClient& api, structs::Resource resource,
                                           std::string namespace_, std::string name,
                                           std::string identity, long priority, long lifetime);

/// Kopf's operator_paused: named toggles, paused while any is on. On the loop.
/// A warm toggle (the Lease's standby) pauses the handling but not the watching: while only warm
/// toggles are on, the watch streams stay open (see cold()).
class OperatorPause {
  public:
    using Id = int;
    Id make(bool on, std::string name, bool warm = false);
    void turn(Id id, bool on);
    void drop(Id id);
    bool is_on(Id id) const;
    bool paused() const;
    /// Paused by a toggle that is not warm (Kopf's peering): the watch streams close too.
    bool cold() const;
    /// A warm toggle is on (the Lease's standby): no handling, whatever the others say.
    bool warm() const;
    /// The names of the toggles that are on (Kopf's "blockers" in the logs).
    std::vector<std::string> blockers() const;
    /// Called whenever paused(), cold() or warm() changes.
    void on_change(std::function<void(bool paused)> listener) { listener_ = std::move(listener); }

  private:
    struct Toggle {
        std::string name;
        bool on = false;
        bool warm = false;
    };
    struct State {
        bool cold = false;
        bool warm = false;
        bool operator!=(const State& other) const {
            return cold != other.cold || warm != other.warm;
        }
    };
    State state() const { return {cold(), warm()}; }
    void changed(State before);

    std::map<Id, Toggle> toggles_;
    Id next_ = 1;
    std::function<void(bool)> listener_;
};

/// Watches and keeps alive the operator's peering objects; turns the pause on and off.
class PeeringEngine {
  public:
    /// `api`, `settings` and `pause` must outlive the engine's work (the serving's); see
    /// anchor(). settings.peering says which peering, settings.watching how to watch it.
    PeeringEngine(boost::asio::io_context& io, clients::ApiClient& api,
                  const OperatorSettings& settings, std::string identity, OperatorPause& pause);
    ~PeeringEngine();
    PeeringEngine(const PeeringEngine&) = delete;
    PeeringEngine& operator=(const PeeringEngine&) = delete;

    /// The discovered peering resources (peering_resources) and the served namespaces (empty
    /// for a cluster-wide operator): starts and stops the peerings' watchers and keep-alives.
    void adjust(const std::vector<structs::Resource>& resources,
                const std::set<std::string>& namespaces);
    /// Stops watching and keeping alive, removes this operator's entries, then `finished`.
    void stop(std::function<void()> finished);

    const std::string& identity() const;
    /// The owner whose lifetime the engine's watches and keep-alives extend (the serving).
    void anchor(std::weak_ptr<void> owner);

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::engines
