// The operator's Prometheus metrics (docs/metrics.md lists every series): one Metrics per
// running operator, made by run_operator when `RunOptions::metrics_endpoint` is given, scraped
// in the text format by the endpoint server (core/engines/probing).
//
// Cost: the layers below see it through plain interfaces (clients::ApiMeter,
// actions::HandlerMeter) or pre-resolved prometheus-cpp counters, all null when metrics are
// off. The label sets are resolved once and cached (a handler's series by its id, a resource's
// by its name); gauges of state (queues, workers, daemons, indices) are read only at a scrape.
// Counters are atomic: any thread may count; the caches take a mutex.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "clients/metering.hpp"
#include "core/actions/metering.hpp"

namespace prometheus {
class Counter;
class Gauge;
}  // namespace prometheus

namespace kopf::engines {

// The counters of one served resource's objects (resolved once per resource).
struct ResourceMeters {
    prometheus::Counter* events = nullptr;   // watch events received (also those dropped unparsed)
    prometheus::Counter* batched = nullptr;  // events replaced by a newer one before processing
};

class Metrics final : public clients::ApiMeter, public actions::HandlerMeter {
  public:
    Metrics();
    ~Metrics() override;
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    // Every series in Prometheus's text exposition format (version 0.0.4).
    std::string scrape();

    // clients::ApiMeter
    void request(std::string_view method, std::string_view target, int status,
                 double seconds) override;
    void retried(int status, double pause, std::optional<double> retry_after) override;
    void watch_refused(int status, std::optional<double> retry_after) override;
    void relogged_in() override;
    clients::WatchMeters watch(const structs::Resource& resource) override;

    // actions::HandlerMeter
    void invoked(const std::string& id, actions::HandlerOutcome outcome, double seconds,
                 bool retry) override;

    // Per served resource, by its name ("kopfexamples.v1.kopf.dev").
    ResourceMeters resource(const std::string& name);

    // One admission review of the webhook `id` (all handlers of the resource when empty):
    // "allowed", "denied" or "error" (an HTTP error instead of a review), `seconds` to answer.
    void reviewed(const std::string& id, std::string_view outcome, double seconds);

    // State read at each scrape. `refresh` sets gauges (through `Gauges`) from the owner's state;
    // it runs on the thread that scrapes (the operator's loop). Dropping the returned handle
    // unregisters it (before the owner goes).
    class Gauges {
      public:
        virtual ~Gauges() = default;
        // Sets a gauge of a family named in docs/metrics.md (kopf_queue_depth, ...) with one
        // label (`label`="`value`"), or none when `label` is empty.
        virtual void set(std::string_view family, std::string_view label, std::string_view value,
                         double sample) = 0;
    };
    using Refresh = std::function<void(Gauges&)>;
    [[nodiscard]] std::shared_ptr<void> on_scrape(Refresh refresh);

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

// "kopfexamples.v1.kopf.dev" for "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x/status" (with
// "/status" appended for a subresource), and the Kubernetes verb of `method` on that path (get
// or list, watch, create, update, patch, delete, deletecollection); paths of no resource
// (discovery, /version) are named as they are.
struct ApiCall {
    std::string verb;
    std::string resource;
};
ApiCall api_call_of(std::string_view method, std::string_view target);

}  // namespace kopf::engines
