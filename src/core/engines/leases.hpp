// Active/standby replicas on a coordination.k8s.io/v1 Lease (Kopf++ beyond Kopf; settings.leasing),
// with the semantics of client-go's leader election: every retry period a replica tries to
// acquire the Lease (free, expired, or its own) or to renew it as its holder; the holder is the
// leader and handles objects, the others stand by. Standing by is a warm pause (OperatorPause):
// the watch streams stay open and the indices follow the objects, but no handler, daemon or timer
// runs; the reactor keeps each object's latest event and queues them all at the takeover. A
// leader that cannot renew within the renew deadline stops handling at once, before its lease
// (longer) can expire and be taken; at its exit, it releases the Lease so that a standby takes
// over at once rather than after the lease duration.
//
//     spec: {holderIdentity: "<identity>", leaseDurationSeconds: 15, leaseTransitions: 3,
//            acquireTime: "2026-11-26T06:00:00.123456Z", renewTime: "2026-11-26T06:00:04.2Z"}
#pragma once

#include <functional>
#include <kopf/json.hpp>
#include <kopf/settings.hpp>
#include <memory>
#include <optional>
#include <string>

#include "core/engines/peering.hpp"

namespace boost::asio {
class io_context;
}
namespace kopf::clients {
class ApiClient;
}

namespace kopf::engines {

/// "2026-11-26T06:00:00.123456Z": the Lease's MicroTime.
std::string format_micro_time(PeeringClock::time_point t);

/// Whether a Lease's spec leaves it to be taken by `identity` at `now`: free, expired (its
/// renewTime plus leaseDurationSeconds has passed), or already held by `identity`.
bool lease_is_available(const json& spec, const std::string& identity,
                        PeeringClock::time_point now);

/// Seconds until a standby's next attempt after finding the Lease held by another: the retry
/// period, or, when the holder's lease expires sooner, just after that expiry (a standby takes
/// a dead leader's lease when it expires, not up to a retry period later).
double standby_retry_delay(const json& spec, PeeringClock::time_point now, double retry_period);

class LeaseElector {
  public:
    /// `api`, `settings` and `pause` must outlive the elector's work (the serving's); see
    /// anchor(). Starts as a standby (its toggle of `pause` on) until it holds the Lease.
    LeaseElector(boost::asio::io_context& io, clients::ApiClient& api,
                 const OperatorSettings& settings, std::string identity, OperatorPause& pause);
    ~LeaseElector();
    LeaseElector(const LeaseElector&) = delete;
    LeaseElector& operator=(const LeaseElector&) = delete;

    void anchor(std::weak_ptr<void> owner);
    /// Begins competing for the Lease.
    void start();
    /// Stops competing; a leader releases the Lease; then `finished`.
    void stop(std::function<void()> finished);
    bool leading() const;

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::engines
