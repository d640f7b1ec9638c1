// The operator's settings tree: every group and default of Kopf's OperatorSettings.
//
//     KOPF_ON_STARTUP(configure, {});
//     void configure(kopf::ActivityContext& ctx) {
//         ctx.settings.posting.level = kopf::LogLevel::WARNING;
//         ctx.settings.persistence.finalizer = "my-operator.example.com/kopf-finalizer";
//         ctx.settings.execution.max_workers = 20;
//     }
#pragma once

#include <cstddef>
#include <kopf/logger.hpp>
#include <kopf/storage.hpp>
#include <kopf/webhooks.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopf {

struct ProcessSettings {
    /// Seconds to wait for a graceful exit after a signal before exiting forcefully.
    double ultimate_exiting_timeout = 600;
};

struct PostingSettings {
    /// Post Kubernetes Events at all: kopf::event()/info()/warn()/exception() and log lines.
    bool enabled = true;
    /// Also post the object loggers' lines (and the framework's own, e.g. "Handler 'x'
    /// succeeded.") as Events with reason "Logging". Off by default as in Kopf 1.44+.
    bool loggers = false;
    /// The least level posted: log lines below it are not posted, nor info() below INFO,
    /// warn() below WARNING, exception() below ERROR.
    LogLevel level = LogLevel::INFO;
    std::string reporting_component = "kopf";
    std::string reporting_instance = "dev";
    std::string event_name_prefix = "kopf-event-";
};

/// Kopf's peering (docs/peering.md): operators of one peering object see each other and pause
/// while one of a higher (or the same) priority is alive.
struct PeeringSettings {
    std::string name = "default";  ///< the KopfPeering/ClusterKopfPeering object to use
    bool stealth = false;          ///< do not log the regular keep-alives
    int priority = 0;              ///< lower priorities pause; equal ones all pause, warned
    int lifetime = 60;  ///< seconds this operator's entry counts as alive without keep-alives
    /// Pause while the peering CRD or object is absent (set by `--peering NAME`); otherwise a
    /// missing peering means the standalone mode, with a warning.
    bool mandatory = false;
    bool standalone = false;   ///< no peering at all: no requests, no watches (`--standalone`)
    bool clusterwide = false;  ///< ClusterKopfPeering, else KopfPeering in the served namespaces
    bool namespaced() const { return !clusterwide; }
};

/// Kopf++'s active/standby replicas (docs/peering.md#leases), beyond Kopf: with a lease name,
/// the replicas compete for one coordination.k8s.io/v1 Lease, as client-go's leader election
/// does; only its holder handles objects, the others stand by (paused) and take over when the
/// holder leaves (at once) or dies (when its lease expires).
struct LeasingSettings {
    std::optional<std::string> name;     ///< the Lease; none: no leases (`--lease NAME`)
    std::string namespace_ = "default";  ///< where the Lease lives (`--lease-namespace`)
    double lease_duration = 15;  ///< seconds a standby waits for an unrenewed lease to expire
    double renew_deadline = 10;  ///< a leader that cannot renew for this long stops handling
    double retry_period = 2;     ///< seconds between attempts to acquire or renew
};

struct WatchingSettings {
    std::optional<double> server_timeout;  ///< `timeoutSeconds` of watch requests
    std::optional<double> client_timeout;  ///< total timeout of a watch request
    std::optional<double> connect_timeout;
    double reconnect_backoff = 0.1;
    double inactivity_timeout = 70.0;  ///< reconnect when nothing arrives for this long
};

struct QueueingSettings {
    std::optional<int> worker_limit;  ///< max concurrent per-object workers; none = unlimited
    /// Objects processed at once (handlers running, patches under way; not Kopf's): the events
    /// of other objects wait, in order of arrival, for one of them to finish. Unlike
    /// worker_limit, an idle worker holds no slot. It bounds the memory of a burst (thousands
    /// of objects at start-up or created at once), which the operator would otherwise keep
    /// as it peaked. 0 = unlimited (as Kopf).
    std::size_t processing_limit = 1000;
    double idle_timeout = 5.0;  ///< seconds before an idle object worker exits (≤ 1% later)
    double exit_timeout = 2.0;  ///< seconds given to workers at shutdown
    std::vector<double> error_delays = {1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610};
    double batch_window = 0.1;  ///< deprecated, no effect
    /// Kopf++'s, not Kopf's: seconds that the operator's loop lets events, API answers and
    /// handlers' results gather before it runs them, while that pays off (many objects at
    /// moderate rates: ~20% less CPU per object at 1,000 objects/s); each step of a busy
    /// object's cycle may wait up to this much more. A quiet operator, or a handler's requests
    /// made one at a time, are not held back. 0: run each as it arrives. At most 1 s.
    double coalescing_window = 0.002;
};

struct ScanningSettings {
    bool disabled = false;  ///< do not watch CRDs and namespaces for changes
};

struct AdmissionSettings {
    /// The webhook server or tunnel that serves the admission handlers (kopf/webhooks.hpp):
    /// `std::make_shared<kopf::WebhookServer>(kopf::WebhookServerOptions{.port = 9443})`.
    /// Required when there are validating or mutating handlers.
    std::shared_ptr<WebhookServerBase> server;
    /// The name of the [Validating|Mutating]WebhookConfiguration that the operator creates and
    /// keeps up to date with its handlers; none: configured by other means.
    std::optional<std::string> managed;
};

struct ExecutionSettings {
    double default_backoff = 60;     ///< seconds before retrying an arbitrary exception
    std::optional<int> max_workers;  ///< worker pool size for sync handlers; none = default
};

struct BackgroundSettings {
    double cancellation_polling = 60;
    std::optional<double> instant_exit_timeout;
    int instant_exit_zero_time_cycles = 10;
};

struct NetworkingSettings {
    double request_timeout = 5 * 60;
    std::optional<double> connect_timeout;
    std::vector<double> error_backoffs = {1, 1, 2, 3, 5, 8, 13, 21};
    bool enforce_retry_after = false;
    bool trust_env = false;
    /// The client-side rate limit of the operator's API requests (watches, patches, and the
    /// handlers' own calls through ctx.api()): at most `qps` requests per second on average,
    /// in bursts of up to `burst` (max(1, qps) when 0). Off when 0, as in Kopf, which has none.
    double qps = 0;
    std::size_t burst = 0;
    /// Requests in flight at once over keep-alive connections (watch streams not counted);
    /// more wait for a free connection. A burst (thousands of daemons' or timers' patches at
    /// once) then reuses a few connections instead of opening one per request and keeping
    /// them all afterwards. 0: unlimited, as Kopf's aiohttp pool.
    std::size_t connection_limit = 100;
};

struct PersistenceSettings {
    std::string finalizer = "kopf.zalando.org/KopfFinalizerMarker";
    std::shared_ptr<ProgressStorage> progress_storage = std::make_shared<SmartProgressStorage>();
    std::shared_ptr<DiffBaseStorage> diffbase_storage =
        std::make_shared<AnnotationsDiffBaseStorage>();
    double consistency_timeout = 5.0;
};

/// All settings of one operator. Modify them in startup handlers.
struct OperatorSettings {
    ProcessSettings process;
    PostingSettings posting;
    PeeringSettings peering;
    LeasingSettings leasing;
    WatchingSettings watching;
    QueueingSettings queueing;
    ScanningSettings scanning;
    AdmissionSettings admission;
    ExecutionSettings execution;
    BackgroundSettings background;
    NetworkingSettings networking;
    PersistenceSettings persistence;
    /// Deprecated alias of `queueing` in Kopf; kept as a reference for ported code.
    QueueingSettings& batching = queueing;

    OperatorSettings() = default;
    OperatorSettings(const OperatorSettings& o);
    OperatorSettings& operator=(const OperatorSettings& o);
};

}  // namespace kopf
