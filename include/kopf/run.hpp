// Running an operator from code (Kopf's "Embedding"): `kopf::run()` blocks the calling thread
// with SIGINT/SIGTERM handling, as `kopf run` does; `kopf::operator_()` blocks without touching
// signals, for an operator in a thread of a bigger application, stopped by its stop flag.
//
//     kopf::OperatorFlag stop, ready;
//     std::thread thread([&] {
//         kopf::operator_({.namespaces = {"default"}, .stop_flag = &stop, .ready_flag = &ready});
//     });
//     ready.wait();   // the operator now watches its resources
//     ...
//     stop.set();     // graceful shutdown: stop watching, finish handlers, run cleanup
//     thread.join();
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <kopf/memo.hpp>
#include <kopf/settings.hpp>
#include <kopf/vault.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kopf {

/// A thread-safe one-shot flag: set once, observed from any thread.
class OperatorFlag {
  public:
    void set() {
        std::vector<std::function<void()>> callbacks;
        {
            std::lock_guard lock(mutex_);
            if (set_) return;
            set_ = true;
            callbacks.swap(callbacks_);
        }
        changed_.notify_all();
        for (auto& callback : callbacks) callback();
    }
    bool is_set() const {
        std::lock_guard lock(mutex_);
        return set_;
    }
    void wait() const {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return set_; });
    }
    /// True if set within the timeout.
    bool wait_for(std::chrono::milliseconds timeout) const {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return set_; });
    }
    /// Calls `callback` once when the flag is set (immediately if it already is).
    void on_set(std::function<void()> callback) {
        {
            std::lock_guard lock(mutex_);
            if (!set_) {
                callbacks_.push_back(std::move(callback));
                return;
            }
        }
        callback();
    }

  private:
    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    bool set_ = false;
    std::vector<std::function<void()>> callbacks_;
};

class Registry;
class Client;

/// Which of an object's due changing handlers run in one processing cycle, between the patches
/// of the object (Kopf's lifecycles: kopf.lifecycles.asap and the others).
enum class Lifecycle {
    ASAP,         ///< one handler per cycle, the one retried the least (the default)
    ONE_BY_ONE,   ///< one handler per cycle, in the order of declaration
    ALL_AT_ONCE,  ///< all of them in one cycle, in the order of declaration
    RANDOMIZED,   ///< one random handler per cycle
    SHUFFLED,     ///< all of them in one cycle, in a random order
};

/// Kopf's `kopf.set_default_lifecycle()`: the lifecycle of operators started from now on
/// without RunOptions::lifecycle (also by `kopf run` and the testing kit).
void set_default_lifecycle(Lifecycle lifecycle);
/// Kopf's `kopf.get_default_lifecycle()`.
Lifecycle get_default_lifecycle();

/// What `kopf run` options mean for an operator started from code.
struct RunOptions {
    /// Namespace patterns (globs, `!exclusions`, comma-separated; see "Scopes"), or
    /// `clusterwide`; with neither, the whole cluster with a warning (as Kopf).
    std::vector<std::string> namespaces;
    bool clusterwide = false;
    /// Peering (docs/peering.md): no peering at all, a peering name other than "default"
    /// (which makes the peering mandatory, as `--peering`), a priority (`--priority`, `--dev`).
    bool standalone = false;
    std::optional<std::string> peering_name;
    std::optional<int> priority;
    /// The operator's identity in the peerings; Kopf's `user@host/time/xyz` (or $POD_ID) if unset.
    std::optional<std::string> identity;
    /// Active/standby replicas on this coordination.k8s.io/v1 Lease (settings.leasing), in
    /// `lease_namespace` ("default" if unset): `--lease NAME`, `--lease-namespace NS`.
    std::optional<std::string> lease;
    std::optional<std::string> lease_namespace;
    /// Serve health probes at this URL, e.g. "http://0.0.0.0:8080/healthz".
    std::optional<std::string> liveness_endpoint;
    /// Serve Prometheus metrics (docs/metrics.md) at this URL, e.g.
    /// "http://0.0.0.0:9090/metrics", or at a path of the liveness endpoint's server, e.g.
    /// "/metrics" (then `liveness_endpoint` is needed). No metrics are kept without it.
    std::optional<std::string> metrics_endpoint;
    /// A kubeconfig context other than the current one (for the built-in login).
    std::optional<std::string> context;
    /// The handlers to serve: the default registry when null.
    Registry* registry = nullptr;
    /// Settings to start from (startup handlers may change them); defaults when null.
    const OperatorSettings* settings = nullptr;
    /// Set by the caller to stop the operator gracefully; set by the operator when it is ready.
    OperatorFlag* stop_flag = nullptr;
    OperatorFlag* ready_flag = nullptr;
    /// Receives the operator's API client (kopf/api.hpp) once it has logged in, before the
    /// ready flag is set; its calls fail once the operator has exited.
    Client* client = nullptr;
    /// The operator's memo (kopf/memo.hpp): a custom memo type, or values prepared before the
    /// start; an empty kopf::Memo when null. Startup handlers fill it; every object's memo is
    /// its copy (Memo::copy), made when the object is first seen.
    std::shared_ptr<Memo> memo;
    /// Which due handlers run per processing cycle; get_default_lifecycle() when unset.
    std::optional<Lifecycle> lifecycle{};
    /// The credentials vault (kopf/vault.hpp), shared with the application: the operator's API
    /// calls use its credentials, and the login handlers fill it. Filled before the start, it
    /// is used as it is, with no login at the start (as Kopf); empty, the operator logs in and
    /// fills it. A vault of its own when null.
    std::shared_ptr<Vault> vault;
};

/// How the operator logs (Kopf's `kopf.configure()` arguments; `kopf run`'s `--verbose`,
/// `--debug`, `--quiet`, `--log-format`, `--log-prefix`, `--log-refkey`).
struct LogOptions {
    bool debug = false;    ///< also the API traffic and other low-level messages
    bool verbose = false;  ///< debug messages
    bool quiet = false;    ///< warnings and errors only
    /// "full" (the default: time, level, logger, message), "plain" (level and message) or
    /// "json" (one JSON object per line).
    std::string format = "full";
    /// Prefix messages about objects with "[namespace/name] "; unset: yes, except for "json".
    std::optional<bool> prefix{};
    /// The JSON key of the object reference in "json" lines.
    std::string refkey = "object";
};

/// Kopf's `kopf.configure()`: sets up the log format and level as `kopf run` does, for
/// operators started from code with kopf::run() or kopf::operator_() (which leave logging as
/// they find it). Call it before the operator starts. Throws std::invalid_argument naming an
/// unknown format.
///
///     kopf::configure({.verbose = true});
void configure(const LogOptions& options = {});

/// Runs the operator in the calling thread until SIGINT/SIGTERM (or the stop flag); a second
/// signal or settings.process.ultimate_exiting_timeout forces the exit. Returns the process exit
/// code: 0 after a graceful shutdown, non-zero when the operator could not start (the reason is
/// logged).
int run(const RunOptions& options = {});

/// The same without signal handling: for operators embedded in other applications' threads.
/// Throws std::runtime_error with the reason when the operator cannot start.
void operator_(const RunOptions& options = {});

}  // namespace kopf
