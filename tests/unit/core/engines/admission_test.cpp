// The admission engine: AdmissionReview requests in, AdmissionReview answers out — which
// handlers run (resource, operation, subresource, filters, the webhook id of the URL), what
// they see (dry runs, user info, old and new objects), and how their outcomes are answered
// (allowed, the error's message and code, warnings, the JSON patch); bad requests get HTTP
// errors; and the webhooks of the managed configurations.
#include "core/engines/admission.hpp"

#include <gtest/gtest.h>

#include <kopf/kopf.hpp>

#include "clients/kubeconfig.hpp"
#include "loop/virtual_executor.hpp"
#include "support/log_lines.hpp"

namespace kopf::testing {
namespace {

json example(const std::string& field = "value", json labels = json::object()) {
    return {{"apiVersion", "kopf.dev/v1"},
            {"kind", "KopfExample"},
            {"metadata", {{"name", "kex1"}, {"namespace", "default"}, {"labels", labels}}},
            {"spec", {{"field", field}}}};
}

// A review as kube-apiserver sends it (no subResource for the main resource).
json review(const std::string& operation, const json& object, const json& old = nullptr) {
    json request = {
        {"uid", "rq-1"},
        {"kind", {{"group", "kopf.dev"}, {"version", "v1"}, {"kind", "KopfExample"}}},
        {"resource", {{"group", "kopf.dev"}, {"version", "v1"}, {"resource", "kopfexamples"}}},
        {"name", "kex1"},
        {"namespace", "default"},
        {"operation", operation},
        {"userInfo", {{"username", "alice"}, {"groups", {"admins"}}}},
        {"object", object},
        {"oldObject", old},
        {"dryRun", false}};
    return {
        {"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
}

class Admission : public ::testing::Test {
  protected:
    Registry registry;
    OperatorSettings settings;
    Memo memo;

    WebhookResponse serve(const json& body, const std::string& webhook = "") {
        engines::AdmissionEnv env{registry, settings, memo};
        WebhookRequest request;
        request.body = body.dump();
        request.webhook = webhook;
        request.headers = {{"Content-Type", "application/json"}};
        return loop::run_sync(engines::serve_admission_request(env, std::move(request)));
    }
    json respond(const json& body, const std::string& webhook = "") {
        auto response = serve(body, webhook);
        EXPECT_EQ(response.status, 200) << response.body.dump();
        return response.body;
    }
};

TEST_F(Admission, AllowsWhenTheHandlersPass) {
    int calls = 0;
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [&](AdmissionContext&) { ++calls; });
    const json answer = respond(review("CREATE", example()));
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(answer["apiVersion"], "admission.k8s.io/v1");
    EXPECT_EQ(answer["kind"], "AdmissionReview");
    EXPECT_EQ(answer["response"]["uid"], "rq-1");
    EXPECT_EQ(answer["response"]["allowed"], true);
    EXPECT_FALSE(answer["response"].contains("status"));
    EXPECT_FALSE(answer["response"].contains("patch"));
}

TEST_F(Admission, RejectsWithTheAdmissionErrorsMessageAndCode) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext& ctx) {
        if (ctx.spec["field"] == "wrong") throw AdmissionError("Meh! I don't like it.", 400);
    });
    const json answer = respond(review("CREATE", example("wrong")));
    EXPECT_EQ(answer["response"]["allowed"], false);
    EXPECT_EQ(answer["response"]["status"]["message"], "Meh! I don't like it.");
    EXPECT_EQ(answer["response"]["status"]["code"], 400);
    EXPECT_EQ(respond(review("CREATE", example("right")))["response"]["allowed"], true);
}

TEST_F(Admission, OtherExceptionsRejectWithCode500) {
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [](AdmissionContext&) { throw std::runtime_error("boom"); });
    const json answer = respond(review("CREATE", example()));
    EXPECT_EQ(answer["response"]["allowed"], false);
    EXPECT_EQ(answer["response"]["status"]["message"], "boom");
    EXPECT_EQ(answer["response"]["status"]["code"], 500);
}

TEST_F(Admission, AdmissionErrorsWinOverOtherErrorsWhateverTheOrder) {
    on::validate first(registry, "kopfexamples", {.id = "first"},
                       [](AdmissionContext&) { throw std::runtime_error("arbitrary"); });
    on::validate second(registry, "kopfexamples", {.id = "second"},
                        [](AdmissionContext&) { throw PermanentError("permanent"); });
    on::validate third(registry, "kopfexamples", {.id = "third"},
                       [](AdmissionContext&) { throw AdmissionError("specific", 403); });
    const json answer = respond(review("CREATE", example()));
    EXPECT_EQ(answer["response"]["status"]["message"], "specific");
    EXPECT_EQ(answer["response"]["status"]["code"], 403);
}

TEST_F(Admission, AnAdmissionErrorWithoutACodeIs500) {
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [](AdmissionContext&) { throw AdmissionError("no code"); });
    EXPECT_EQ(respond(review("CREATE", example()))["response"]["status"]["code"], 500);
}

TEST_F(Admission, WarningsOfAllHandlersReachTheAnswer) {
    on::validate one(registry, "kopfexamples", {.id = "one"},
                     [](AdmissionContext& ctx) { ctx.warnings.push_back("first warning"); });
    on::validate two(registry, "kopfexamples", {.id = "two"}, [](AdmissionContext& ctx) {
        ctx.warnings.push_back("second warning");
        throw AdmissionError("rejected", 400);
    });
    const json answer = respond(review("CREATE", example()));
    EXPECT_EQ(answer["response"]["warnings"], json({"first warning", "second warning"}));
    EXPECT_EQ(answer["response"]["allowed"], false);
}

TEST_F(Admission, MutatingHandlersPatchAsABase64JsonPatch) {
    on::mutate defaults(registry, "kopfexamples", {.id = "defaults"}, [](AdmissionContext& ctx) {
        ctx.patch.spec()["replicas"] = 3;
        ctx.patch["metadata"]["labels"]["mutated"] = "yes";
    });
    const json answer = respond(review("CREATE", example()));
    ASSERT_EQ(answer["response"]["patchType"], "JSONPatch");
    const json ops = json::parse(clients::base64_decode(answer["response"]["patch"]));
    const json patched = example().patch(ops);
    EXPECT_EQ(patched["spec"]["replicas"], 3);
    EXPECT_EQ(patched["spec"]["field"], "value");
    EXPECT_EQ(patched["metadata"]["labels"]["mutated"], "yes");
    for (const auto& op : ops) EXPECT_NE(op["op"], "test") << ops.dump();
}

TEST_F(Admission, MutatingTransformationsAndRemovalsArePatchedToo) {
    on::mutate defaults(registry, "kopfexamples", {.id = "defaults"}, [](AdmissionContext& ctx) {
        ctx.patch.spec()["field"] = nullptr;
        ctx.patch.transform([](json& body) { body["spec"]["items"] = {"a", "b"}; });
    });
    const json answer = respond(review("CREATE", example()));
    const json ops = json::parse(clients::base64_decode(answer["response"]["patch"]));
    const json patched = example().patch(ops);
    EXPECT_FALSE(patched["spec"].contains("field"));
    EXPECT_EQ(patched["spec"]["items"], json({"a", "b"}));
}

TEST_F(Admission, NoPatchWhenNothingChangesOrWhenValidatingHandlersPatch) {
    on::mutate same(registry, "kopfexamples", {.id = "same"},
                    [](AdmissionContext& ctx) { ctx.patch.spec()["field"] = "value"; });
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [](AdmissionContext& ctx) { ctx.patch.spec()["other"] = 1; });
    EXPECT_FALSE(respond(review("CREATE", example()))["response"].contains("patch"));
    EXPECT_FALSE(respond(review("CREATE", example()), "check")["response"].contains("patch"));
}

TEST_F(Admission, TheWebhookIdOfTheUrlSelectsOneHandler) {
    std::vector<std::string> calls;
    on::validate one(registry, "kopfexamples", {.id = "one"},
                     [&](AdmissionContext&) { calls.push_back("one"); });
    on::validate two(registry, "kopfexamples", {.id = "two"},
                     [&](AdmissionContext&) { calls.push_back("two"); });
    respond(review("CREATE", example()), "two");
    EXPECT_EQ(calls, std::vector<std::string>{"two"});
    respond(review("CREATE", example()));
    EXPECT_EQ(calls, (std::vector<std::string>{"two", "one", "two"}));
}

TEST_F(Admission, HandlersSeeTheRequest) {
    json seen;
    on::validate check(registry, "kopfexamples", {.id = "check", .param = "p"},
                       [&](AdmissionContext& ctx) {
                           seen = {{"dryrun", ctx.dryrun},
                                   {"user", ctx.userinfo["username"]},
                                   {"operation", ctx.operation},
                                   {"subresource", ctx.subresource},
                                   {"old", ctx.old["spec"]["field"]},
                                   {"new", ctx.new_["spec"]["field"]},
                                   {"body", ctx.spec["field"]},
                                   {"name", ctx.name},
                                   {"namespace", ctx.namespace_},
                                   {"reason", ctx.reason},
                                   {"diff", ctx.diff.size()},
                                   {"param", ctx.param},
                                   {"header", ctx.headers["Content-Type"]},
                                   {"resource", ctx.resource.plural}};
                       });
    json rq = review("UPDATE", example("new"), example("old"));
    rq["request"]["dryRun"] = true;
    respond(rq);
    EXPECT_EQ(seen, json({{"dryrun", true},
                          {"user", "alice"},
                          {"operation", "UPDATE"},
                          {"subresource", ""},
                          {"old", "old"},
                          {"new", "new"},
                          {"body", "new"},
                          {"name", "kex1"},
                          {"namespace", "default"},
                          {"reason", "validating"},
                          {"diff", 1},
                          {"param", "p"},
                          {"header", "application/json"},
                          {"resource", "kopfexamples"}}));
}

TEST_F(Admission, DeletionsShowTheOldObject) {
    json seen;
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [&](AdmissionContext& ctx) { seen = ctx.body["spec"]["field"]; });
    respond(review("DELETE", nullptr, example("gone")));
    EXPECT_EQ(seen, "gone");
}

TEST_F(Admission, HandlersRunOnlyForTheirOperations) {
    int calls = 0;
    on::validate check(registry, "kopfexamples", {.id = "check", .operations = {"UPDATE"}},
                       [&](AdmissionContext&) { ++calls; });
    respond(review("CREATE", example()));
    EXPECT_EQ(calls, 0);
    respond(review("UPDATE", example(), example()));
    EXPECT_EQ(calls, 1);
}

TEST_F(Admission, MutatingHandlersSkipDeletionsUnlessOnlyForDeletions) {
    int any = 0, deletions = 0;
    on::mutate all(registry, "kopfexamples", {.id = "all"}, [&](AdmissionContext&) { ++any; });
    on::mutate del(registry, "kopfexamples", {.id = "del", .operations = {"DELETE"}},
                   [&](AdmissionContext&) { ++deletions; });
    respond(review("DELETE", nullptr, example()));
    EXPECT_EQ(any, 0);
    EXPECT_EQ(deletions, 1);
}

TEST_F(Admission, SubresourcesMatchOnlyWhenAsked) {
    std::vector<std::string> calls;
    on::validate main(registry, "kopfexamples", {.id = "main"},
                      [&](AdmissionContext&) { calls.push_back("main"); });
    on::validate status(registry, "kopfexamples", {.id = "status", .subresource = "status"},
                        [&](AdmissionContext&) { calls.push_back("status"); });
    on::validate any(registry, "kopfexamples", {.id = "any", .subresource = "*"},
                     [&](AdmissionContext&) { calls.push_back("any"); });
    json rq = review("UPDATE", example(), example());
    rq["request"]["subResource"] = "status";
    respond(rq);
    EXPECT_EQ(calls, (std::vector<std::string>{"status", "any"}));
    calls.clear();
    // An empty subResource (as some servers send) is the main resource.
    rq["request"]["subResource"] = "";
    respond(rq);
    EXPECT_EQ(calls, (std::vector<std::string>{"main", "any"}));
}

TEST_F(Admission, LabelsFieldsAndWhenFilterTheHandlers) {
    std::vector<std::string> calls;
    on::validate labelled(registry, "kopfexamples", {.id = "labelled", .labels = {{"app", "x"}}},
                          [&](AdmissionContext&) { calls.push_back("labelled"); });
    on::validate valued(registry, "kopfexamples",
                        {.id = "valued", .field = "spec.field", .value = "special"},
                        [&](AdmissionContext&) { calls.push_back("valued"); });
    on::validate when(registry, "kopfexamples",
                      {.id = "when", .when = [](const Context& ctx) { return ctx.name == "kex1"; }},
                      [&](AdmissionContext&) { calls.push_back("when"); });
    respond(review("CREATE", example()));
    EXPECT_EQ(calls, std::vector<std::string>{"when"});
    calls.clear();
    respond(review("CREATE", example("special", {{"app", "x"}})));
    EXPECT_EQ(calls, (std::vector<std::string>{"labelled", "valued", "when"}));
}

TEST_F(Admission, CoroutineHandlersRunToo) {
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [](AdmissionContext& ctx) -> Task<void> {
                           ctx.warnings.push_back("from a coroutine");
                           co_return;
                       });
    EXPECT_EQ(respond(review("CREATE", example()))["response"]["warnings"][0], "from a coroutine");
}

TEST_F(Admission, MalformedBodiesAreBadRequests) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    engines::AdmissionEnv env{registry, settings, memo};
    WebhookRequest request;
    request.body = "{not json";
    auto response = loop::run_sync(engines::serve_admission_request(env, request));
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(response.body["kind"], "Status");
    EXPECT_NE(response.body["message"].get<std::string>().find("not a JSON object"),
              std::string::npos);
}

TEST_F(Admission, UnknownApiVersionsAreBadRequests) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    json rq = review("CREATE", example());
    rq["apiVersion"] = "admission.k8s.io/v2";
    auto response = serve(rq);
    EXPECT_EQ(response.status, 400);
    EXPECT_NE(response.body["message"].get<std::string>().find("admission.k8s.io/v2"),
              std::string::npos);
}

// Each bad request gets a Status naming what is wrong, and an ERROR line saying the same.
TEST_F(Admission, BadRequestsAreAnsweredAndLoggedNamingTheProblem) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    LogLines log({"kopf.engines.admission"});
    json v2 = review("CREATE", example());
    v2["apiVersion"] = "admission.k8s.io/v2";
    json not_a_review = review("CREATE", example());
    not_a_review["kind"] = "ConfigMap";
    // Found by the fuzzer: a dryRun that is not a boolean made the engine throw.
    json odd_dry_run = review("CREATE", example());
    odd_dry_run["request"]["dryRun"] = {{"nested", true}};
    const std::vector<std::pair<std::string, std::string>> cases = {
        {odd_dry_run.dump(), R"(dryRun is not a boolean: {"nested":true})"},
        {"{not json", "not a JSON object"},
        {"[1, 2]", "not a JSON object"},
        {not_a_review.dump(), "kind is 'ConfigMap'"},
        {v2.dump(), "Unsupported AdmissionReview apiVersion 'admission.k8s.io/v2'"},
        {R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})", "has no request"},
    };
    for (const auto& [body, problem] : cases) {
        engines::AdmissionEnv env{registry, settings, memo};
        WebhookRequest request;
        request.body = body;
        request.webhook = "check";
        auto response = loop::run_sync(engines::serve_admission_request(env, request));
        EXPECT_EQ(response.status, 400) << body;
        EXPECT_EQ(response.body["kind"], "Status");
        EXPECT_NE(response.body["message"].get<std::string>().find(problem), std::string::npos)
            << response.body.dump();
        EXPECT_TRUE(log.contains("Bad admission request for 'check': ")) << log.text();
        EXPECT_TRUE(log.contains(problem)) << log.text();
    }
}

TEST_F(Admission, ReviewsWithoutObjectsOrUsersAreBadRequests) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    json no_object = review("CREATE", nullptr);
    EXPECT_EQ(serve(no_object).status, 400);
    json no_user = review("CREATE", example());
    no_user["request"].erase("userInfo");
    EXPECT_EQ(serve(no_user).status, 400);
    json no_resource = review("CREATE", example());
    no_resource["request"].erase("resource");
    EXPECT_EQ(serve(no_resource).status, 400);
}

TEST_F(Admission, UnknownResourcesAndWebhookIdsAreNotFound) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    json pods = review("CREATE", example());
    pods["request"]["resource"] = {{"group", ""}, {"version", "v1"}, {"resource", "pods"}};
    EXPECT_EQ(serve(pods).status, 404);
    EXPECT_EQ(serve(review("CREATE", example()), "nonexistent").status, 404);
}

TEST(AdmissionWebhooks, OneWebhookPerHandlerOfTheType) {
    Registry registry;
    on::validate check(
        registry, "kopfexamples",
        {.id = "check_it", .operations = {"CREATE", "UPDATE"}, .ignore_failures = true},
        [](AdmissionContext&) {});
    on::validate status(registry, "kopfexamples",
                        {.id = "st",
                         .subresource = "status",
                         .side_effects = true,
                         .labels = {{"app", "x"}, {"tier", PRESENT}}},
                        [](AdmissionContext&) {});
    on::mutate fill(registry, "kopfexamples", {.id = "fill"}, [](AdmissionContext&) {});
    Resource kex{
        .group = "kopf.dev", .version = "v1", .plural = "kopfexamples", .kind = "KopfExample"};
    Resource pods{.group = "", .version = "v1", .plural = "pods", .kind = "Pod"};
    WebhookClientConfig config{.url = "https://localhost:9443/hooks/", .ca_bundle = "PEM"};
    const json webhooks = engines::build_webhooks(registry.webhooks, WebhookType::VALIDATING,
                                                  {kex, pods}, "auto.kopf.dev", config);
    ASSERT_EQ(webhooks.size(), 2u);
    EXPECT_EQ(webhooks[0]["name"], "check-it.auto.kopf.dev");
    EXPECT_EQ(webhooks[0]["failurePolicy"], "Ignore");
    EXPECT_EQ(webhooks[0]["sideEffects"], "None");
    EXPECT_EQ(webhooks[0]["matchPolicy"], "Equivalent");
    EXPECT_EQ(webhooks[0]["timeoutSeconds"], 30);
    EXPECT_EQ(webhooks[0]["admissionReviewVersions"], json({"v1", "v1beta1"}));
    EXPECT_EQ(webhooks[0]["rules"],
              json::parse(R"([{"apiGroups": ["kopf.dev"], "apiVersions": ["v1"],
                               "resources": ["kopfexamples"], "operations": ["CREATE", "UPDATE"],
                               "scope": "*"}])"));
    EXPECT_EQ(webhooks[0]["clientConfig"]["url"], "https://localhost:9443/hooks/check_it");
    EXPECT_EQ(webhooks[0]["clientConfig"]["caBundle"], "UEVN");  // base64("PEM")
    EXPECT_FALSE(webhooks[0].contains("objectSelector"));
    EXPECT_EQ(webhooks[1]["failurePolicy"], "Fail");
    EXPECT_EQ(webhooks[1]["sideEffects"], "NoneOnDryRun");
    EXPECT_EQ(webhooks[1]["rules"][0]["resources"], json({"kopfexamples/status"}));
    EXPECT_EQ(webhooks[1]["rules"][0]["operations"], json({"*"}));
    EXPECT_EQ(webhooks[1]["objectSelector"], json::parse(R"({"matchExpressions": [
                  {"key": "app", "operator": "In", "values": ["x"]},
                  {"key": "tier", "operator": "Exists"}]})"));
    const json mutating = engines::build_webhooks(registry.webhooks, WebhookType::MUTATING, {kex},
                                                  "auto.kopf.dev", config);
    ASSERT_EQ(mutating.size(), 1u);
    EXPECT_EQ(mutating[0]["name"], "fill.auto.kopf.dev");
}

TEST(AdmissionWebhooks, PersistentOnlyAndServiceConfigs) {
    Registry registry;
    on::validate kept(registry, "kopfexamples", {.id = "kept", .persistent = true},
                      [](AdmissionContext&) {});
    on::validate gone(registry, "kopfexamples", {.id = "gone"}, [](AdmissionContext&) {});
    Resource kex{.group = "kopf.dev", .version = "v1", .plural = "kopfexamples"};
    WebhookClientConfig config{
        .service = json{{"namespace", "ns"}, {"name", "svc"}, {"port", 443}, {"path", "/root"}}};
    const json webhooks = engines::build_webhooks(registry.webhooks, WebhookType::VALIDATING, {kex},
                                                  "x", config, true);
    ASSERT_EQ(webhooks.size(), 1u);
    EXPECT_EQ(webhooks[0]["name"], "kept.x");
    EXPECT_EQ(webhooks[0]["clientConfig"]["service"]["path"], "/root/kept");
    EXPECT_FALSE(webhooks[0]["clientConfig"].contains("caBundle"));
}

TEST(AdmissionRegistration, RefusesUnknownOperationsAndDuplicateIds) {
    Registry registry;
    EXPECT_THROW(on::validate(registry, "kopfexamples", {.id = "x", .operations = {"PATCH"}},
                              [](AdmissionContext&) {}),
                 std::invalid_argument);
    on::validate once(registry, "kopfexamples", {.id = "x"}, [](AdmissionContext&) {});
    EXPECT_THROW(on::mutate(registry, "kopfexamples", {.id = "x"}, [](AdmissionContext&) {}),
                 std::invalid_argument);
}

}  // namespace
}  // namespace kopf::testing
