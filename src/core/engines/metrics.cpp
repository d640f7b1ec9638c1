#include "core/engines/metrics.hpp"

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace kopf::engines {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Seconds, from a millisecond to a minute: API calls and most handlers take milliseconds,
// handlers that wait on something take seconds.
Histogram::BucketBoundaries latency_buckets() {
    return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

const char* outcome_name(actions::HandlerOutcome outcome) {
    switch (outcome) {
        case actions::HandlerOutcome::success:
            return "success";
        case actions::HandlerOutcome::temporary:
            return "temporary";
        case actions::HandlerOutcome::permanent:
            return "permanent";
        case actions::HandlerOutcome::ignored:
            return "ignored";
    }
    return "unknown";
}

// The first segments of a path (at most kMaxSegments; API paths have at most 8), without
// allocating: this runs for every API request.
constexpr std::size_t kMaxSegments = 10;
struct Segments {
    std::string_view items[kMaxSegments];
    std::size_t size = 0;
    std::string_view operator[](std::size_t i) const { return items[i]; }
};

Segments segments_of(std::string_view path) {
    Segments segments;
    while (!path.empty() && segments.size < kMaxSegments) {
        if (path.front() == '/') {
            path.remove_prefix(1);
            continue;
        }
        const auto end = path.find('/');
        segments.items[segments.size++] = path.substr(0, end);
        if (end == std::string_view::npos) break;
        path.remove_prefix(end);
    }
    return segments;
}

// What tells one request's series from another's: the method, the path without the namespace
// and the object's name, whether it names an object or watches, and the code; written into
// `key` (reused: no allocation once it has grown).
void call_key(std::string_view method, std::string_view target, int status, std::string& key) {
    const auto query_at = target.find('?');
    const std::string_view path = target.substr(0, query_at);
    const auto segments = segments_of(path);
    key.assign(method);
    key += ' ';
    std::size_t rest = 0;
    if (segments.size >= 3 && segments[0] == "api") rest = 2;
    if (segments.size >= 4 && segments[0] == "apis") rest = 3;
    if (rest == 0) {
        key += path;
    } else {
        for (std::size_t i = 0; i < rest; ++i) key.append(segments[i]).push_back('/');
        if (segments.size >= rest + 3 && segments[rest] == "namespaces") rest += 2;
        key += segments[rest];
        if (segments.size > rest + 2) key.append("/").append(segments[rest + 2]);
        if (segments.size > rest + 1) key += " named";
        if (query_at != std::string_view::npos &&
            target.find("watch=true", query_at) != std::string_view::npos)
            key += " watch";
    }
    key += ' ';
    key += std::to_string(status);
}

}  // namespace

ApiCall api_call_of(std::string_view method, std::string_view target) {
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string_view query =
        target.find('?') == std::string_view::npos ? "" : target.substr(target.find('?'));
    const auto segments = segments_of(path);
    std::string_view group;
    std::string_view version;
    std::size_t rest = 0;
    if (segments.size >= 3 && segments[0] == "api") {
        version = segments[1];
        rest = 2;
    } else if (segments.size >= 4 && segments[0] == "apis") {
        group = segments[1];
        version = segments[2];
        rest = 3;
    }
    std::string verb(method);
    for (auto& c : verb) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (rest == 0) return {verb, std::string(path)};  // discovery, /version
    // namespaces/NS/PLURAL[/NAME[/SUB]], or PLURAL[/NAME[/SUB]] (namespaces themselves too).
    if (segments.size >= rest + 3 && segments[rest] == "namespaces") rest += 2;
    const std::string_view plural = segments[rest];
    const bool named = segments.size > rest + 1;
    std::string resource = fmt::format("{}.{}", plural, version);
    if (!group.empty()) resource += fmt::format(".{}", group);
    if (segments.size > rest + 2) resource += fmt::format("/{}", segments[rest + 2]);
    if (verb == "get") {
        verb = query.find("watch=true") != std::string_view::npos ? "watch"
               : named                                            ? "get"
                                                                  : "list";
    } else if (verb == "post") {
        verb = "create";
    } else if (verb == "put") {
        verb = "update";
    } else if (verb == "delete" && !named) {
        verb = "deletecollection";
    }
    return {verb, resource};
}

struct Metrics::Impl {
    prometheus::Registry registry;

    Family<Counter>& invocations =
        BuildCounter()
            .Name("kopf_handler_invocations_total")
            .Help(
                "Handler invocations by handler id and outcome (success, temporary, "
                "permanent, ignored).")
            .Register(registry);
    Family<Histogram>& handler_durations =
        BuildHistogram()
            .Name("kopf_handler_duration_seconds")
            .Help("How long handler invocations take, by handler id.")
            .Register(registry);
    Family<Counter>& handler_retries =
        BuildCounter()
            .Name("kopf_handler_retries_total")
            .Help("Handler invocations that retry an earlier failed attempt, by handler id.")
            .Register(registry);

    Family<Counter>& events =
        BuildCounter()
            .Name("kopf_watch_events_total")
            .Help("Watch events received, by resource (including our own patches' echoes).")
            .Register(registry);
    Family<Counter>& batched =
        BuildCounter()
            .Name("kopf_watch_events_batched_total")
            .Help(
                "Watch events replaced by a newer event of their object before processing, by "
                "resource (only the newest event of an object is processed).")
            .Register(registry);
    Family<Gauge>& queue_depth =
        BuildGauge()
            .Name("kopf_queue_depth")
            .Help("Objects with an event waiting to be processed, by resource.")
            .Register(registry);
    Family<Gauge>& workers_busy = BuildGauge()
                                      .Name("kopf_workers_busy")
                                      .Help("Object workers processing an event, by resource.")
                                      .Register(registry);
    Family<Gauge>& workers = BuildGauge()
                                 .Name("kopf_workers")
                                 .Help("Object workers (busy, waiting or idle), by resource.")
                                 .Register(registry);

    Family<Counter>& watch_streams =
        BuildCounter()
            .Name("kopf_watch_streams_total")
            .Help("Watch requests (the first one and every restart), by resource.")
            .Register(registry);
    Family<Counter>& watch_relists =
        BuildCounter()
            .Name("kopf_watch_relists_total")
            .Help("Relistings after 410 Gone (the resource version was too old), by resource.")
            .Register(registry);
    Family<Counter>& watch_bookmarks = BuildCounter()
                                           .Name("kopf_watch_bookmarks_total")
                                           .Help("Watch bookmarks received, by resource.")
                                           .Register(registry);
    Family<Counter>& watch_inactivity =
        BuildCounter()
            .Name("kopf_watch_inactivity_reconnects_total")
            .Help(
                "Watch streams restarted after settings.watching.inactivity_timeout of "
                "silence, by resource.")
            .Register(registry);

    Family<Counter>& requests =
        BuildCounter()
            .Name("kopf_api_requests_total")
            .Help(
                "Kubernetes API requests by verb, resource and HTTP code (\"error\": no "
                "answer); every attempt counts.")
            .Register(registry);
    Family<Histogram>& request_durations =
        BuildHistogram()
            .Name("kopf_api_request_duration_seconds")
            .Help("Kubernetes API request latency by verb and resource (each attempt).")
            .Register(registry);
    Family<Counter>& retries =
        BuildCounter()
            .Name("kopf_api_retries_total")
            .Help(
                "Kubernetes API requests retried, by the HTTP code that failed (\"error\": no "
                "answer); refused watch requests too, which reconnect.")
            .Register(registry);
    Counter& throttled =
        BuildCounter()
            .Name("kopf_api_throttled_total")
            .Help("Kubernetes API answers 429 Too Many Requests (watch requests too).")
            .Register(registry)
            .Add({});
    Counter& retry_after = BuildCounter()
                               .Name("kopf_api_retry_after_seconds_total")
                               .Help("Seconds of Retry-After that the API server asked to wait.")
                               .Register(registry)
                               .Add({});
    Counter& relogins = BuildCounter()
                            .Name("kopf_relogins_total")
                            .Help("Re-authentications after the credentials ran out (401).")
                            .Register(registry)
                            .Add({});

    Family<Gauge>& daemons = BuildGauge()
                                 .Name("kopf_daemons_running")
                                 .Help("Daemons and timers running, by kind (daemon, timer).")
                                 .Register(registry);
    Family<Gauge>& index_keys = BuildGauge()
                                    .Name("kopf_index_keys")
                                    .Help("Keys in an in-memory index, by index id.")
                                    .Register(registry);
    Family<Gauge>& index_values =
        BuildGauge()
            .Name("kopf_index_values")
            .Help("Values in an in-memory index (all its keys' stores), by index id.")
            .Register(registry);

    Family<Gauge>& paused =
        BuildGauge()
            .Name("kopf_paused")
            .Help(
                "1 while the operator is paused by a peer of a higher priority, a freeze or the "
                "Lease held by another replica, else 0.")
            .Register(registry);

    Family<Counter>& reviews =
        BuildCounter()
            .Name("kopf_admission_reviews_total")
            .Help("Admission reviews by webhook id and outcome (allowed, denied, error).")
            .Register(registry);
    Family<Histogram>& review_durations =
        BuildHistogram()
            .Name("kopf_admission_review_duration_seconds")
            .Help("How long admission reviews take to answer, by webhook id.")
            .Register(registry);

    // The resolved series, by their label values joined.
    struct HandlerSeries {
        Counter* outcomes[4];
        Histogram* duration;
        Counter* retries;
    };
    struct RequestSeries {
        Counter* count;
        Histogram* duration;
    };
    std::mutex mutex;
    std::unordered_map<std::string, HandlerSeries> handlers;
    std::unordered_map<std::string, RequestSeries> requests_by_call;        // by call_key()
    std::unordered_map<std::string, Histogram*> request_durations_by_call;  // by verb, resource
    std::unordered_map<std::string, Counter*> retries_by_code;
    std::unordered_map<std::string, std::pair<Counter*, Histogram*>> reviews_by_webhook;

    // The gauges of state, read at each scrape.
    std::list<Refresh> refreshers;
    std::map<std::string, Family<Gauge>*, std::less<>> gauge_families{
        {"kopf_queue_depth", &queue_depth}, {"kopf_workers_busy", &workers_busy},
        {"kopf_workers", &workers},         {"kopf_daemons_running", &daemons},
        {"kopf_index_keys", &index_keys},   {"kopf_index_values", &index_values},
        {"kopf_paused", &paused},
    };

    // Sets the gauges of state at a scrape; those set at the previous one and not at this one
    // read 0 (a resource no longer served, an index emptied).
    struct ScrapeGauges final : Metrics::Gauges {
        explicit ScrapeGauges(Impl& impl) : impl(impl) {
            for (auto* gauge : impl.scraped) gauge->Set(0);
            impl.scraped.clear();
        }
        void set(std::string_view family, std::string_view label, std::string_view value,
                 double sample) override {
            const auto found = impl.gauge_families.find(family);
            if (found == impl.gauge_families.end()) return;
            prometheus::Labels labels;
            if (!label.empty()) labels.emplace(std::string(label), std::string(value));
            auto& gauge = found->second->Add(labels);
            gauge.Set(sample);
            impl.scraped.push_back(&gauge);
        }
        Impl& impl;
    };
    std::vector<Gauge*> scraped;

    HandlerSeries& handler(const std::string& id) {
        auto found = handlers.find(id);
        if (found != handlers.end()) return found->second;
        HandlerSeries series{};
        for (auto outcome :
             {actions::HandlerOutcome::success, actions::HandlerOutcome::temporary,
              actions::HandlerOutcome::permanent, actions::HandlerOutcome::ignored}) {
            series.outcomes[static_cast<int>(outcome)] =
                &invocations.Add({{"handler", id}, {"outcome", outcome_name(outcome)}});
        }
        series.duration = &handler_durations.Add({{"handler", id}}, latency_buckets());
        series.retries = &handler_retries.Add({{"handler", id}});
        return handlers.emplace(id, series).first->second;
    }
};

Metrics::Metrics() : impl_(std::make_shared<Impl>()) {}
Metrics::~Metrics() = default;

std::string Metrics::scrape() {
    std::vector<Refresh> refreshers;
    {
        std::lock_guard lock(impl_->mutex);
        refreshers.assign(impl_->refreshers.begin(), impl_->refreshers.end());
    }
    Impl::ScrapeGauges gauges(*impl_);
    for (const auto& refresh : refreshers) refresh(gauges);
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, impl_->registry.Collect());
    return std::move(out).str();
}

std::shared_ptr<void> Metrics::on_scrape(Refresh refresh) {
    std::lock_guard lock(impl_->mutex);
    impl_->refreshers.push_back(std::move(refresh));
    const auto position = std::prev(impl_->refreshers.end());
    std::weak_ptr<Impl> weak = impl_;
    return std::shared_ptr<void>(nullptr, [weak, position](void*) {
        if (const auto impl = weak.lock()) {
            std::lock_guard lock(impl->mutex);
            impl->refreshers.erase(position);
        }
    });
}

void Metrics::request(std::string_view method, std::string_view target, int status,
                      double seconds) {
    // A known call costs a walk over its path and one lookup; the labels are made only for a
    // call not seen before.
    thread_local std::string key;
    call_key(method, target, status, key);
    Impl::RequestSeries series{};
    {
        std::lock_guard lock(impl_->mutex);
        auto found = impl_->requests_by_call.find(key);
        if (found == impl_->requests_by_call.end()) {
            const auto call = api_call_of(method, target);
            const std::string code = status > 0 ? std::to_string(status) : "error";
            auto& duration = impl_->request_durations_by_call[call.verb + ' ' + call.resource];
            if (!duration) {
                duration = &impl_->request_durations.Add(
                    {{"verb", call.verb}, {"resource", call.resource}}, latency_buckets());
            }
            Counter* count = &impl_->requests.Add(
                {{"verb", call.verb}, {"resource", call.resource}, {"code", code}});
            found =
                impl_->requests_by_call.emplace(key, Impl::RequestSeries{count, duration}).first;
        }
        series = found->second;
    }
    series.count->Increment();
    series.duration->Observe(seconds);
    if (status == 429) impl_->throttled.Increment();
}

void Metrics::retried(int status, double /*pause*/, std::optional<double> retry_after) {
    const std::string code = status > 0 ? std::to_string(status) : "error";
    Counter* counter = nullptr;
    {
        std::lock_guard lock(impl_->mutex);
        auto& found = impl_->retries_by_code[code];
        if (!found) found = &impl_->retries.Add({{"code", code}});
        counter = found;
    }
    counter->Increment();
    if (retry_after && *retry_after > 0) impl_->retry_after.Increment(*retry_after);
}

void Metrics::watch_refused(int status, std::optional<double> retry_after) {
    if (status == 429) impl_->throttled.Increment();
    retried(status, 0, retry_after);  // the watch reconnects after a pause
}

void Metrics::relogged_in() {
    impl_->relogins.Increment();
}

clients::WatchMeters Metrics::watch(const structs::Resource& resource) {
    const prometheus::Labels labels{{"resource", resource.to_string()}};
    std::lock_guard lock(impl_->mutex);
    return clients::WatchMeters{
        &impl_->watch_streams.Add(labels), &impl_->watch_relists.Add(labels),
        &impl_->watch_bookmarks.Add(labels), &impl_->watch_inactivity.Add(labels)};
}

void Metrics::invoked(const std::string& id, actions::HandlerOutcome outcome, double seconds,
                      bool retry) {
    Impl::HandlerSeries* series = nullptr;
    {
        std::lock_guard lock(impl_->mutex);
        series = &impl_->handler(id);
    }
    series->outcomes[static_cast<int>(outcome)]->Increment();
    series->duration->Observe(seconds);
    if (retry) series->retries->Increment();
}

ResourceMeters Metrics::resource(const std::string& name) {
    std::lock_guard lock(impl_->mutex);
    return ResourceMeters{&impl_->events.Add({{"resource", name}}),
                          &impl_->batched.Add({{"resource", name}})};
}

void Metrics::reviewed(const std::string& id, std::string_view outcome, double seconds) {
    const std::string webhook = id.empty() ? "" : id;
    Counter* counter = nullptr;
    Histogram* duration = nullptr;
    {
        std::lock_guard lock(impl_->mutex);
        counter = &impl_->reviews.Add({{"webhook", webhook}, {"outcome", std::string(outcome)}});
        auto& found = impl_->reviews_by_webhook[webhook];
        if (!found.second) {
            found.second = &impl_->review_durations.Add({{"webhook", webhook}}, latency_buckets());
        }
        duration = found.second;
    }
    counter->Increment();
    duration->Observe(seconds);
}

}  // namespace kopf::engines
