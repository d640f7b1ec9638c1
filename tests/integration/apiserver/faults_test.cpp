// Fault injection and overload as clients see them: injected 500/503/429 with Retry-After,
// delays, the in-flight limit, watch drops, compaction (410) and stalls, and the admin
// endpoint that `kopf apiserver` serves for out-of-process tests.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string config_map(const std::string& name) {
    return json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", name}}},
                {"data", {{"key", "value"}}}}
        .dump();
}

// A `curl -N` watch running in the background.
std::unique_ptr<Process> start_watch(TestServer& test, const std::string& query) {
    return std::make_unique<Process>(std::vector<std::string>{
        "curl", "-sS", "-N", "-H", "Authorization: Bearer " + test.server().admin_token(),
        test.url() + kConfigMaps + "?watch=true" + query});
}

TEST(Faults, FailNextRequestsWith500GivesInternalErrorStatusThenRecovers) {
    TestServer test;
    test.server().fail_next_requests(2, 500);
    for (int i = 0; i < 2; ++i) {
        auto failed = test.http("GET", "/api");
        EXPECT_EQ(failed.status, 500);
        auto status = json::parse(failed.body);
        EXPECT_EQ(status["kind"], "Status");
        EXPECT_EQ(status["reason"], "InternalError");
        EXPECT_EQ(status["code"], 500);
        EXPECT_EQ(failed.header("Retry-After"), "");
    }
    EXPECT_EQ(test.http("GET", "/api").status, 200);
}

TEST(Faults, FailNextRequestsOfOnePathLeaveOthersAlone) {
    TestServer test;
    test.server().fail_next_requests(1, 422, 0, "/configmaps");
    EXPECT_EQ(test.http("GET", "/api").status, 200);
    auto failed = test.http("GET", kConfigMaps);
    EXPECT_EQ(failed.status, 422);
    EXPECT_EQ(json::parse(failed.body)["reason"], "Invalid");
    EXPECT_EQ(test.server().failing_requests_left(), 0);
    EXPECT_EQ(test.http("GET", kConfigMaps).status, 200);
}

TEST(Faults, FailNextRequestsWith503GivesServiceUnavailable) {
    TestServer test;
    test.server().fail_next_requests(1, 503, 2);
    auto failed = test.http("GET", "/api");
    EXPECT_EQ(failed.status, 503);
    EXPECT_EQ(json::parse(failed.body)["reason"], "ServiceUnavailable");
    EXPECT_EQ(failed.header("Retry-After"), "2");
    EXPECT_EQ(test.http("GET", "/api").status, 200);
}

TEST(Faults, FailNextRequestsWith429CarriesRetryAfter) {
    TestServer test;
    test.server().fail_next_requests(1, 429, 3);
    auto failed = test.http("GET", kConfigMaps);
    EXPECT_EQ(failed.status, 429);
    auto status = json::parse(failed.body);
    EXPECT_EQ(status["reason"], "TooManyRequests");
    EXPECT_EQ(status["details"]["retryAfterSeconds"], 3);
    EXPECT_EQ(failed.header("Retry-After"), "3");
}

TEST(Faults, DelayedResponsesStillArriveAndTakeAtLeastTheDelay) {
    TestServer test;
    test.server().delay_responses(300ms);
    auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(test.http("GET", "/api").status, 200);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 300ms);
    test.server().delay_responses(0ms);
    EXPECT_EQ(test.http("GET", "/api").status, 200);
}

TEST(Faults, RequestsBeyondTheInflightLimitGet429WithRetryAfterOne) {
    ServerOptions options;
    options.max_requests_inflight = 1;
    TestServer test(options);
    test.server().delay_responses(1500ms);
    // Keep one slow request in flight while others knock.
    std::atomic<bool> done{false};
    auto slow = std::async(std::launch::async, [&] {
        while (!done) test.http("GET", "/api");
    });
    HttpResult rejected;
    bool got_429 = wait_for(
        [&] {
            rejected = test.http("GET", "/version");
            return rejected.status == 429;
        },
        30s);
    done = true;
    test.server().delay_responses(0ms);
    slow.get();
    ASSERT_TRUE(got_429);
    EXPECT_EQ(rejected.header("Retry-After"), "1");
    auto status = json::parse(rejected.body);
    EXPECT_EQ(status["reason"], "TooManyRequests");
    EXPECT_EQ(status["code"], 429);
}

TEST(Faults, WatchesDoNotCountAgainstTheInflightLimit) {
    ServerOptions options;
    options.max_requests_inflight = 1;
    TestServer test(options);
    auto watch1 = start_watch(test, "");
    auto watch2 = start_watch(test, "");
    EXPECT_TRUE(wait_for([&] { return test.http("GET", "/api").status == 200; }));
    ASSERT_EQ(test.http("POST", kConfigMaps, config_map("cm1"), "application/json").status, 201);
    EXPECT_TRUE(wait_for([&] { return watch1->out().find("cm1") != std::string::npos; }));
    EXPECT_TRUE(wait_for([&] { return watch2->out().find("cm1") != std::string::npos; }));
}

TEST(Faults, WatchEventsStreamAsChunkedJsonLines) {
    TestServer test;
    auto watch = start_watch(test, "");
    // The watch is established once a create shows up in it.
    int n = 0;
    ASSERT_TRUE(wait_for([&] {
        test.http("POST", kConfigMaps, config_map("cm" + std::to_string(n++)), "application/json");
        return watch->out().find("\"ADDED\"") != std::string::npos;
    }));
    auto first_line = watch->out().substr(0, watch->out().find('\n'));
    auto event = json::parse(first_line);
    EXPECT_EQ(event["type"], "ADDED");
    EXPECT_EQ(event["object"]["kind"], "ConfigMap");
}

TEST(Faults, ClientsLeavingAWatchLeaveTheServerServingOthers) {
    TestServer test;
    auto staying = start_watch(test, "");
    for (int round = 0; round < 3; ++round) {
        auto leaving = start_watch(test, "");
        std::string name = "leave" + std::to_string(round);
        ASSERT_TRUE(wait_for([&] {
            test.http("POST", kConfigMaps, config_map(name), "application/json");
            return leaving->out().find(name) != std::string::npos;
        }));
        leaving.reset();  // kills curl mid-stream
    }
    ASSERT_EQ(test.http("POST", kConfigMaps, config_map("after"), "application/json").status, 201);
    EXPECT_TRUE(wait_for([&] { return staying->out().find("\"after\"") != std::string::npos; }));
}

TEST(Faults, DropWatchesEndsOpenWatchStreams) {
    TestServer test;
    auto watch = start_watch(test, "");
    int n = 0;
    ASSERT_TRUE(wait_for([&] {
        test.http("POST", kConfigMaps, config_map("cm" + std::to_string(n++)), "application/json");
        return watch->out().find("ADDED") != std::string::npos;
    }));
    test.server().drop_watches();
    auto result = watch->wait(20s);
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.exit_code, 0) << result.err;  // a clean end of the chunked body
}

TEST(Faults, CompactedHistoryAnswersOldResourceVersionsWith410Expired) {
    TestServer test;
    auto created = test.http("POST", kConfigMaps, config_map("old"), "application/json");
    ASSERT_EQ(created.status, 201) << created.body;
    std::string rv = json::parse(created.body)["metadata"]["resourceVersion"];
    test.http("POST", kConfigMaps, config_map("newer"), "application/json");
    test.server().compact_history();
    auto watch = start_watch(test, "&resourceVersion=" + rv);
    auto result = watch->wait(20s);
    auto expired =
        result.out.empty() ? json() : json::parse(result.out.substr(0, result.out.find('\n')));
    if (expired.is_object() && expired.contains("type")) {
        EXPECT_EQ(expired["type"], "ERROR");
        EXPECT_EQ(expired["object"]["code"], 410);
        EXPECT_EQ(expired["object"]["reason"], "Expired");
    } else {
        EXPECT_EQ(expired["code"], 410) << result.out;
    }
}

TEST(Faults, StalledWatchesReceiveNothingUntilResumed) {
    TestServer test;
    auto watch = start_watch(test, "");
    int n = 0;
    ASSERT_TRUE(wait_for([&] {
        test.http("POST", kConfigMaps, config_map("warm" + std::to_string(n++)),
                  "application/json");
        return watch->out().find("ADDED") != std::string::npos;
    }));
    test.server().stall_watches(true);
    auto before = watch->out();
    ASSERT_EQ(test.http("POST", kConfigMaps, config_map("stalled"), "application/json").status,
              201);
    // The stalled stream stays open and silent while another request completes.
    EXPECT_EQ(test.http("GET", kConfigMaps + "/stalled").status, 200);
    EXPECT_TRUE(watch->running());
    EXPECT_EQ(watch->out().find("\"stalled\""), std::string::npos);
    test.server().stall_watches(false);
    auto after = test.http("POST", kConfigMaps, config_map("resumed"), "application/json");
    EXPECT_TRUE(wait_for([&] { return watch->out().find("\"resumed\"") != std::string::npos; }));
    // What happened during the stall arrives late, before what followed, not lost.
    const auto out = watch->out();
    EXPECT_NE(out.find("\"stalled\""), std::string::npos) << out;
    EXPECT_LT(out.find("\"stalled\""), out.find("\"resumed\"")) << out;
}

TEST(Faults, AdminEndpointInjectsFaultsForLoopbackClients) {
    ServerOptions options;
    options.admin_endpoint = true;
    TestServer test(options);
    auto set = test.http("POST", "/_kopf/faults",
                         R"({"failNext":{"count":1,"status":503,"retryAfterSeconds":4}})",
                         "application/json", {}, /*with_token=*/false);
    ASSERT_EQ(set.status, 200) << set.body;
    auto failed = test.http("GET", "/api");
    EXPECT_EQ(failed.status, 503);
    EXPECT_EQ(failed.header("Retry-After"), "4");
    EXPECT_EQ(test.http("GET", "/api").status, 200);
}

TEST(Faults, AdminEndpointRejectsMalformedBodies) {
    ServerOptions options;
    options.admin_endpoint = true;
    TestServer test(options);
    auto result = test.http("POST", "/_kopf/faults", "{not json", "application/json");
    EXPECT_EQ(result.status, 400);
    EXPECT_EQ(json::parse(result.body)["reason"], "BadRequest");
    result =
        test.http("POST", "/_kopf/faults", R"({"delayMilliseconds":"soon"})", "application/json");
    EXPECT_EQ(result.status, 400);
}

TEST(Faults, AdminEndpointOverTlsNeedsTheAdminToken) {
    TempDir dir;
    write_file(dir / "tokens.csv", "user-token,someone,1\n");
    auto options = tls_options();
    options.admin_endpoint = true;
    options.token_auth_file = dir / "tokens.csv";
    TestServer test(options);
    auto body = R"({"delayMilliseconds":0})";
    EXPECT_EQ(test.http("POST", "/_kopf/faults", body, "application/json", {}, false).status, 401);
    EXPECT_EQ(test.http("POST", "/_kopf/faults", body, "application/json",
                        {"-H", "Authorization: Bearer user-token"}, false)
                  .status,
              403);
    EXPECT_EQ(test.http("POST", "/_kopf/faults", body, "application/json").status, 200);
}

TEST(Faults, WithoutTheAdminEndpointItsPathIsAnOrdinaryUnknownPath) {
    TestServer test;
    auto result =
        test.http("POST", "/_kopf/faults", R"({"failNext":{"count":5}})", "application/json");
    EXPECT_EQ(result.status, 404);
    EXPECT_EQ(test.http("GET", "/api").status, 200);
}

}  // namespace
}  // namespace kopf::apiserver::testing
