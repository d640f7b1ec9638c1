// The metrics engine on its own: what each report adds to which series, the API paths named as
// Kubernetes verbs and resources, and the gauges of state read at a scrape.
#include "core/engines/metrics.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kopf::engines {
namespace {

using actions::HandlerOutcome;

// The line of `series` (exactly as exposed) in the scrape, "" when absent.
std::string line_of(const std::string& text, const std::string& series) {
    std::size_t at = 0;
    while ((at = text.find(series + " ", at)) != std::string::npos) {
        if (at == 0 || text[at - 1] == '\n') return text.substr(at, text.find('\n', at) - at);
        at += series.size();
    }
    return "";
}

TEST(ApiCallOf, NamesKubernetesVerbsAndResources) {
    const auto call = [](std::string_view method, std::string_view target) {
        const auto found = api_call_of(method, target);
        return found.verb + " " + found.resource;
    };
    EXPECT_EQ(call("GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples?limit=500"),
              "list kopfexamples.v1.kopf.dev");
    EXPECT_EQ(call("GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex"),
              "get kopfexamples.v1.kopf.dev");
    EXPECT_EQ(call("GET", "/api/v1/pods?watch=true&resourceVersion=5"), "watch pods.v1");
    EXPECT_EQ(call("PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex/status"),
              "patch kopfexamples.v1.kopf.dev/status");
    EXPECT_EQ(call("POST", "/api/v1/namespaces/default/events"), "create events.v1");
    EXPECT_EQ(call("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"),
              "update leases.v1.coordination.k8s.io");
    EXPECT_EQ(call("DELETE", "/api/v1/namespaces/ns/configmaps/cm"), "delete configmaps.v1");
    EXPECT_EQ(call("DELETE", "/api/v1/namespaces/ns/configmaps"), "deletecollection configmaps.v1");
    // Namespaces themselves, cluster-wide resources, discovery.
    EXPECT_EQ(call("GET", "/api/v1/namespaces"), "list namespaces.v1");
    EXPECT_EQ(call("GET", "/api/v1/namespaces/default"), "get namespaces.v1");
    EXPECT_EQ(call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
              "list customresourcedefinitions.v1.apiextensions.k8s.io");
    EXPECT_EQ(call("GET", "/apis/kopf.dev/v1"), "get /apis/kopf.dev/v1");
    EXPECT_EQ(call("GET", "/version"), "get /version");
}

TEST(Metrics, HandlerInvocationsAreCountedByOutcomeWithDurationsAndRetries) {
    Metrics metrics;
    metrics.invoked("create_fn", HandlerOutcome::temporary, 0.002, false);
    metrics.invoked("create_fn", HandlerOutcome::success, 0.003, true);
    metrics.invoked("other", HandlerOutcome::ignored, 0.5, false);
    const std::string text = metrics.scrape();
    EXPECT_EQ(
        line_of(text, R"(kopf_handler_invocations_total{handler="create_fn",outcome="success"})"),
        R"(kopf_handler_invocations_total{handler="create_fn",outcome="success"} 1)");
    EXPECT_NE(
        line_of(text, R"(kopf_handler_invocations_total{handler="create_fn",outcome="temporary"})"),
        "");
    EXPECT_EQ(
        line_of(text, R"(kopf_handler_invocations_total{handler="create_fn",outcome="permanent"})"),
        R"(kopf_handler_invocations_total{handler="create_fn",outcome="permanent"} 0)");
    EXPECT_EQ(line_of(text, R"(kopf_handler_invocations_total{handler="other",outcome="ignored"})"),
              R"(kopf_handler_invocations_total{handler="other",outcome="ignored"} 1)");
    EXPECT_EQ(line_of(text, R"(kopf_handler_retries_total{handler="create_fn"})"),
              R"(kopf_handler_retries_total{handler="create_fn"} 1)");
    EXPECT_EQ(line_of(text, R"(kopf_handler_duration_seconds_count{handler="create_fn"})"),
              R"(kopf_handler_duration_seconds_count{handler="create_fn"} 2)");
    EXPECT_EQ(
        line_of(text, R"(kopf_handler_duration_seconds_bucket{handler="create_fn",le="0.0025"})"),
        R"(kopf_handler_duration_seconds_bucket{handler="create_fn",le="0.0025"} 1)");
    EXPECT_NE(text.find("# TYPE kopf_handler_duration_seconds histogram"), std::string::npos);
}

TEST(Metrics, ApiRequestsRetriesThrottlingAndReloginsAreCounted) {
    Metrics metrics;
    metrics.request("PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a", 200, 0.001);
    metrics.request("PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/b", 200, 0.001);
    metrics.request("PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/b", 429, 0.001);
    metrics.request("GET", "/api/v1/pods", 0, 5.0);  // no answer
    metrics.retried(429, 3, 3.0);
    metrics.retried(0, 1, std::nullopt);
    metrics.relogged_in();
    metrics.watch_refused(429, 2.0);  // a watch request: throttled, retried, waited for
    const std::string text = metrics.scrape();
    EXPECT_EQ(
        line_of(
            text,
            R"(kopf_api_requests_total{code="200",resource="kopfexamples.v1.kopf.dev",verb="patch"})"),
        R"(kopf_api_requests_total{code="200",resource="kopfexamples.v1.kopf.dev",verb="patch"} 2)");
    EXPECT_EQ(
        line_of(text, R"(kopf_api_requests_total{code="error",resource="pods.v1",verb="list"})"),
        R"(kopf_api_requests_total{code="error",resource="pods.v1",verb="list"} 1)");
    EXPECT_EQ(
        line_of(
            text,
            R"(kopf_api_request_duration_seconds_count{resource="kopfexamples.v1.kopf.dev",verb="patch"})"),
        R"(kopf_api_request_duration_seconds_count{resource="kopfexamples.v1.kopf.dev",verb="patch"} 3)");
    EXPECT_EQ(line_of(text, "kopf_api_throttled_total"), "kopf_api_throttled_total 2");
    EXPECT_EQ(line_of(text, R"(kopf_api_retries_total{code="429"})"),
              R"(kopf_api_retries_total{code="429"} 2)");
    EXPECT_EQ(line_of(text, R"(kopf_api_retries_total{code="error"})"),
              R"(kopf_api_retries_total{code="error"} 1)");
    EXPECT_EQ(line_of(text, "kopf_api_retry_after_seconds_total"),
              "kopf_api_retry_after_seconds_total 5");
    EXPECT_EQ(line_of(text, "kopf_relogins_total"), "kopf_relogins_total 1");
}

TEST(Metrics, WatchResourceAndAdmissionCountersAreResolvedOnce) {
    Metrics metrics;
    structs::Resource pods;
    pods.version = "v1";
    pods.plural = "pods";
    const auto watch = metrics.watch(pods);
    const auto again = metrics.watch(pods);
    EXPECT_EQ(watch.streams, again.streams);  // the same series, not a second one
    const auto resource = metrics.resource("pods.v1");
    ASSERT_NE(resource.events, nullptr);
    metrics.reviewed("validate_fn", "denied", 0.01);
    metrics.reviewed("validate_fn", "allowed", 0.02);
    const std::string text = metrics.scrape();
    EXPECT_EQ(line_of(text, R"(kopf_watch_streams_total{resource="pods.v1"})"),
              R"(kopf_watch_streams_total{resource="pods.v1"} 0)");
    EXPECT_EQ(line_of(text, R"(kopf_watch_events_total{resource="pods.v1"})"),
              R"(kopf_watch_events_total{resource="pods.v1"} 0)");
    EXPECT_EQ(
        line_of(text, R"(kopf_admission_reviews_total{outcome="denied",webhook="validate_fn"})"),
        R"(kopf_admission_reviews_total{outcome="denied",webhook="validate_fn"} 1)");
    EXPECT_EQ(
        line_of(text, R"(kopf_admission_review_duration_seconds_count{webhook="validate_fn"})"),
        R"(kopf_admission_review_duration_seconds_count{webhook="validate_fn"} 2)");
}

TEST(Metrics, GaugesOfStateAreReadAtEachScrapeAndZeroedWhenTheirSourceGoes) {
    Metrics metrics;
    double depth = 3;
    auto subscription = metrics.on_scrape([&depth](Metrics::Gauges& gauges) {
        gauges.set("kopf_queue_depth", "resource", "pods.v1", depth);
        gauges.set("kopf_no_such_family", "resource", "pods.v1", 1);  // ignored
    });
    EXPECT_EQ(line_of(metrics.scrape(), R"(kopf_queue_depth{resource="pods.v1"})"),
              R"(kopf_queue_depth{resource="pods.v1"} 3)");
    depth = 1;
    EXPECT_EQ(line_of(metrics.scrape(), R"(kopf_queue_depth{resource="pods.v1"})"),
              R"(kopf_queue_depth{resource="pods.v1"} 1)");
    subscription.reset();
    const std::string text = metrics.scrape();
    EXPECT_EQ(line_of(text, R"(kopf_queue_depth{resource="pods.v1"})"),
              R"(kopf_queue_depth{resource="pods.v1"} 0)");
    EXPECT_EQ(text.find("kopf_no_such_family"), std::string::npos);
}

}  // namespace
}  // namespace kopf::engines
