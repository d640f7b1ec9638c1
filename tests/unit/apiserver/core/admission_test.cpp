// Admission webhooks through a fake AdmissionTransport (the network is not part
// of this layer): matching, mutation by JSON patch, denial, failure policy,
// warnings and dry-run side effects.
#include <gtest/gtest.h>

#include <functional>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

namespace {
const std::string kCms = "/api/v1/namespaces/default/configmaps";
const std::string kMutating = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const std::string kValidating =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

// Answers every AdmissionReview with `respond(request)`; records the requests.
class FakeTransport : public AdmissionTransport {
  public:
    std::function<json(const json&)> respond;
    std::vector<json> requests;
    std::vector<std::string> urls;
    bool unreachable = false;
    WebhookReply post(const WebhookCall& call) override {
        WebhookReply reply;
        urls.push_back(call.url);
        if (unreachable) {
            reply.error = "connection refused";
            return reply;
        }
        json review = json::parse(call.body);
        requests.push_back(review);
        json resp = respond(review["request"]);
        if (!resp.contains("uid")) resp["uid"] = review["request"]["uid"];
        reply.reached = true;
        reply.status = 200;
        reply.body = json{
            {"apiVersion", "admission.k8s.io/v1"},
            {"kind", "AdmissionReview"},
            {"response",
             resp}}.dump();
        return reply;
    }
};

json config(const std::string& name, const std::string& failure = "Fail",
            const std::string& side_effects = "None") {
    return {{"metadata", {{"name", name}}},
            {"webhooks",
             {{{"name", name + ".example.com"},
               {"clientConfig", {{"url", "https://127.0.0.1:9443/hook"}}},
               {"rules",
                {{{"operations", {"CREATE", "UPDATE"}},
                  {"apiGroups", {""}},
                  {"apiVersions", {"v1"}},
                  {"resources", {"configmaps"}}}}},
               {"failurePolicy", failure},
               {"sideEffects", side_effects},
               {"admissionReviewVersions", {"v1"}}}}}};
}

std::string b64(const std::string& s) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    int val = 0, bits = -6;
    for (unsigned char c : s) {
        val = (val << 8) + c;
        bits += 8;
        while (bits >= 0) {
            out.push_back(t[(val >> bits) & 0x3F]);
            bits -= 6;
        }
    }
    if (bits > -6) out.push_back(t[((val << 8) >> (bits + 8)) & 0x3F]);
    while (out.size() % 4) out.push_back('=');
    return out;
}
}  // namespace

TEST(Admission, MutatingWebhookPatchIsApplied) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) {
        json ops = json::array({{{"op", "add"}, {"path", "/data/added"}, {"value", "yes"}}});
        return json{{"allowed", true},
                    {"patchType", "JSONPatch"},
                    {"patch", b64(ops.dump())},
                    {"warnings", {"mutated"}}};
    };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    ASSERT_EQ(post(core, kMutating, config("m")).status, 201);
    auto r = post(core, kCms, configmap("a"));
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["data"]["added"], "yes");
    ASSERT_EQ(transport->requests.size(), 1u);
    EXPECT_EQ(transport->requests[0]["request"]["operation"], "CREATE");
    EXPECT_EQ(transport->requests[0]["request"]["kind"]["kind"], "ConfigMap");
    bool warned = false;
    for (const auto& [k, v] : r.response.headers)
        warned |= k == "Warning" && v.find("mutated") != std::string::npos;
    EXPECT_TRUE(warned);
}

TEST(Admission, ValidatingWebhookDenialIsReturned) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) {
        return json{{"allowed", false}, {"status", {{"code", 403}, {"message", "no way"}}}};
    };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    post(core, kValidating, config("v"));
    auto r = post(core, kCms, configmap("a"));
    EXPECT_EQ(r.status, 403);
    EXPECT_EQ(r.body["message"], "admission webhook \"v.example.com\" denied the request: no way");
    EXPECT_EQ(get(core, kCms + "/a").status, 404);
}

TEST(Admission, UnreachableWebhookFailsClosedByDefault) {
    auto transport = std::make_shared<FakeTransport>();
    transport->unreachable = true;
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    post(core, kValidating, config("v"));
    auto r = post(core, kCms, configmap("a"));
    EXPECT_EQ(r.status, 500);
    EXPECT_NE(r.body["message"].get<std::string>().find("failed calling webhook \"v.example.com\""),
              std::string::npos);
}

TEST(Admission, IgnorePolicyLetsRequestsThrough) {
    auto transport = std::make_shared<FakeTransport>();
    transport->unreachable = true;
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    post(core, kValidating, config("v", "Ignore"));
    EXPECT_EQ(post(core, kCms, configmap("a")).status, 201);
}

TEST(Admission, NonMatchingResourcesSkipWebhooks) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) { return json{{"allowed", false}}; };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    post(core, kValidating, config("v"));
    json secret = {{"metadata", {{"name", "s"}}}};
    EXPECT_EQ(post(core, "/api/v1/namespaces/default/secrets", secret).status, 201);
    EXPECT_TRUE(transport->requests.empty());
}

// v1 knows only None and NoneOnDryRun: a webhook with side effects cannot be configured, and
// a dry run reaches the webhooks that declare none on dry runs, marked as such.
TEST(Admission, DryRunsReachWebhooksWithoutSideEffectsOnly) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) { return json{{"allowed", true}}; };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    const auto refused = post(core, kValidating, config("v", "Fail", "Some"));
    EXPECT_EQ(refused.status, 422) << refused.raw;
    EXPECT_NE(refused.raw.find("webhooks[0].sideEffects: Unsupported value: \\\"Some\\\""),
              std::string::npos)
        << refused.raw;
    ASSERT_EQ(post(core, kValidating, config("v", "Fail", "NoneOnDryRun")).status, 201);
    EXPECT_EQ(post(core, kCms, configmap("a"), {{"dryRun", "All"}}).status, 201);
    ASSERT_EQ(transport->requests.size(), 1u);
    EXPECT_EQ(transport->requests[0]["request"]["dryRun"], true);
    EXPECT_EQ(get(core, kCms + "/a").status, 404);
}

// A malformed configuration is refused by field when it is written, as by kube-apiserver;
// before, it was stored and then failed every request it matched with a 500.
TEST(Admission, MalformedConfigurationsAreRefusedByField) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) { return json{{"allowed", true}}; };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    struct Case {
        std::function<void(json&)> spoil;
        std::string field;
        std::string reason;
    };
    const std::vector<Case> cases = {
        {[](json& w) {
             w["objectSelector"] = {
                 {"matchExpressions", {{{"key", "app"}, {"operator", "Bogus"}}}}};
         },
         "webhooks[0].objectSelector", "FieldValueInvalid"},
        {[](json& w) {
             w["namespaceSelector"] = {{"matchLabels", {{"team", 5}}}};
         },
         "webhooks[0].namespaceSelector", "FieldValueInvalid"},
        {[](json& w) { w["rules"] = "everything"; }, "webhooks[0].rules", "FieldValueTypeInvalid"},
        {[](json& w) {
             w["rules"][0]["operations"] = {"CREATE", "PATCH"};
         },
         "webhooks[0].rules[0].operations[1]", "FieldValueNotSupported"},
        {[](json& w) { w["rules"][0].erase("resources"); }, "webhooks[0].rules[0].resources",
         "FieldValueRequired"},
        {[](json& w) { w["rules"][0]["scope"] = "Everywhere"; }, "webhooks[0].rules[0].scope",
         "FieldValueNotSupported"},
        {[](json& w) { w["failurePolicy"] = "Maybe"; }, "webhooks[0].failurePolicy",
         "FieldValueNotSupported"},
        {[](json& w) { w.erase("sideEffects"); }, "webhooks[0].sideEffects", "FieldValueRequired"},
        {[](json& w) { w["timeoutSeconds"] = 31; }, "webhooks[0].timeoutSeconds",
         "FieldValueInvalid"},
        {[](json& w) { w["timeoutSeconds"] = "10s"; }, "webhooks[0].timeoutSeconds",
         "FieldValueTypeInvalid"},
        {[](json& w) { w["admissionReviewVersions"] = {"v2"}; },
         "webhooks[0].admissionReviewVersions", "FieldValueInvalid"},
        {[](json& w) { w["name"] = "v"; }, "webhooks[0].name", "FieldValueInvalid"},
        {[](json& w) { w["clientConfig"] = json::object(); }, "webhooks[0].clientConfig",
         "FieldValueRequired"},
        {[](json& w) {
             w["clientConfig"] = {{"service", {{"name", "hooks"}, {"port", 0}}}};
         },
         "webhooks[0].clientConfig.service.namespace", "FieldValueRequired"},
    };
    for (const auto& c : cases) {
        json cfg = config("v");
        c.spoil(cfg["webhooks"][0]);
        const auto r = post(core, kValidating, cfg);
        ASSERT_EQ(r.status, 422) << c.field << ": " << r.raw;
        bool named = false;
        for (const auto& cause : r.body["details"]["causes"])
            named |= cause["field"] == c.field && cause["reason"] == c.reason;
        EXPECT_TRUE(named) << c.field << " " << c.reason << ": " << r.raw;
        EXPECT_EQ(get(core, kValidating + "/v").status, 404) << c.field;
    }
    json twice = config("v");
    twice["webhooks"].push_back(twice["webhooks"][0]);
    const auto duplicate = post(core, kValidating, twice);
    EXPECT_EQ(duplicate.status, 422);
    EXPECT_NE(duplicate.raw.find("webhooks[1].name: Duplicate value"), std::string::npos)
        << duplicate.raw;
    // None of them was stored: objects are written without any webhook being called.
    EXPECT_EQ(post(core, kCms, configmap("a")).status, 201);
    EXPECT_TRUE(transport->requests.empty());
}

// What a webhook answers is input too: a response with fields of the wrong types fails the
// request by its policy, naming what was wrong, instead of an internal JSON error.
TEST(Admission, MalformedWebhookResponsesFailTheRequestByPolicy) {
    const std::vector<std::pair<json, std::string>> answers = {
        {json{{"allowed", true}, {"uid", 42}}, "expected response.uid="},
        {json{{"allowed", "yes"}}, "response.allowed must be a boolean, got \"yes\""},
        {json{{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", 5}},
         "response.patch must be a base64 string, got 5"},
    };
    for (const auto& [answer, message] : answers) {
        for (const std::string policy : {"Fail", "Ignore"}) {
            auto transport = std::make_shared<FakeTransport>();
            transport->respond = [answer = answer](const json&) { return answer; };
            CoreOptions opts;
            opts.admission = transport;
            ApiCore core(opts);
            ASSERT_EQ(post(core, kMutating, config("m", policy)).status, 201);
            const auto r = post(core, kCms, configmap("a"));
            if (policy == "Ignore") {
                EXPECT_EQ(r.status, 201) << answer.dump() << ": " << r.raw;
                continue;
            }
            EXPECT_EQ(r.status, 500) << answer.dump() << ": " << r.raw;
            EXPECT_NE(r.body.value("message", "").find(message), std::string::npos) << r.raw;
            EXPECT_EQ(get(core, kCms + "/a").status, 404);
        }
    }
    // A denial whose status has a code of the wrong type is still a denial, with 400.
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) {
        return json{{"allowed", false}, {"status", {{"code", "forbidden"}, {"message", 7}}}};
    };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    ASSERT_EQ(post(core, kValidating, config("v")).status, 201);
    const auto denied = post(core, kCms, configmap("a"));
    EXPECT_EQ(denied.status, 400) << denied.raw;
    EXPECT_EQ(denied.body["message"],
              "admission webhook \"v.example.com\" denied the request without explanation");
}

TEST(Admission, ObjectSelectorLimitsMatching) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) { return json{{"allowed", false}}; };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    json cfg = config("v");
    cfg["webhooks"][0]["objectSelector"] = {{"matchLabels", {{"checked", "yes"}}}};
    post(core, kValidating, cfg);
    EXPECT_EQ(post(core, kCms, configmap("free")).status, 201);
    json checked = configmap("checked");
    checked["metadata"]["labels"] = {{"checked", "yes"}};
    EXPECT_EQ(post(core, kCms, checked).status, 400);
}

// What kube-apiserver sends: no subResource/requestSubResource for the main resource (Kopf
// matches its handlers on the missing field), the name and namespace, the options' kind.
TEST(Admission, ReviewsOfTheMainResourceCarryNoSubResource) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) { return json{{"allowed", true}}; };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    post(core, kValidating, config("v"));
    ASSERT_EQ(post(core, kCms, configmap("a")).status, 201);
    ASSERT_EQ(transport->requests.size(), 1u);
    const json& request = transport->requests[0]["request"];
    EXPECT_FALSE(request.contains("subResource")) << request.dump();
    EXPECT_FALSE(request.contains("requestSubResource")) << request.dump();
    EXPECT_EQ(request["name"], "a");
    EXPECT_EQ(request["namespace"], "default");
    EXPECT_EQ(request["resource"],
              json({{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}}));
    EXPECT_EQ(request["options"]["kind"], "CreateOptions");
    EXPECT_TRUE(request["oldObject"].is_null());
}
