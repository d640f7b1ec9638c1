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
        resp["uid"] = review["request"]["uid"];
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

TEST(Admission, DryRunWithSideEffectsIsRefused) {
    auto transport = std::make_shared<FakeTransport>();
    transport->respond = [](const json&) { return json{{"allowed", true}}; };
    CoreOptions opts;
    opts.admission = transport;
    ApiCore core(opts);
    post(core, kValidating, config("v", "Fail", "Some"));
    EXPECT_EQ(post(core, kCms, configmap("a"), {{"dryRun", "All"}}).status, 400);
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
