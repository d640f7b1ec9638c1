// Create/get/update/patch/delete semantics on built-in kinds and custom resources.
#include <gtest/gtest.h>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

namespace {
const std::string kCms = "/api/v1/namespaces/default/configmaps";
const std::string kWidgets = "/apis/example.com/v1/namespaces/default/widgets";
}  // namespace

TEST(Objects, BootstrapNamespacesExist) {
    ApiCore core({});
    for (const char* ns : {"default", "kube-system", "kube-public"})
        EXPECT_EQ(get(core, std::string("/api/v1/namespaces/") + ns).status, 200) << ns;
}

TEST(Objects, CreateAssignsUidTimestampAndResourceVersion) {
    ApiCore core({});
    auto r = post(core, kCms, configmap("a"));
    ASSERT_EQ(r.status, 201) << r.raw;
    const json& m = r.body["metadata"];
    EXPECT_FALSE(m["uid"].get<std::string>().empty());
    EXPECT_FALSE(m["creationTimestamp"].get<std::string>().empty());
    EXPECT_FALSE(m["resourceVersion"].get<std::string>().empty());
    EXPECT_EQ(m["namespace"], "default");
    EXPECT_FALSE(m.contains("generation"));
    auto g = get(core, kCms + "/a");
    EXPECT_EQ(g.body["data"]["k"], "v");
    EXPECT_EQ(g.body["kind"], "ConfigMap");
}

TEST(Objects, ResourceVersionIsOneGlobalCounter) {
    ApiCore core({});
    auto a = post(core, kCms, configmap("a"));
    auto b = post(core, "/api/v1/namespaces/kube-system/configmaps", configmap("b"));
    EXPECT_EQ(std::stoull(b.body["metadata"]["resourceVersion"].get<std::string>()),
              std::stoull(a.body["metadata"]["resourceVersion"].get<std::string>()) + 1);
}

TEST(Objects, CreatingAnExistingNameIsAlreadyExists) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    auto r = post(core, kCms, configmap("a"));
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(r.body["reason"], "AlreadyExists");
    EXPECT_EQ(r.body["message"], "configmaps \"a\" already exists");
    EXPECT_EQ(r.body["details"]["kind"], "configmaps");
}

TEST(Objects, MissingObjectIsNotFoundStatus) {
    ApiCore core({});
    auto r = get(core, kCms + "/nope");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.body["kind"], "Status");
    EXPECT_EQ(r.body["reason"], "NotFound");
    EXPECT_EQ(r.body["message"], "configmaps \"nope\" not found");
    EXPECT_EQ(r.body["metadata"], json::object());
}

TEST(Objects, CreateInMissingNamespaceIsNotFound) {
    ApiCore core({});
    auto r = post(core, "/api/v1/namespaces/ghost/configmaps", configmap("a"));
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.body["message"], "namespaces \"ghost\" not found");
}

TEST(Objects, GenerateNameAppendsFiveCharacters) {
    ApiCore core({});
    json cm = configmap("");
    cm["metadata"] = {{"generateName", "ev-"}};
    auto r = post(core, kCms, cm);
    ASSERT_EQ(r.status, 201) << r.raw;
    std::string name = r.body["metadata"]["name"];
    EXPECT_EQ(name.size(), 8u);
    EXPECT_EQ(name.rfind("ev-", 0), 0u);
}

TEST(Objects, NameOrGenerateNameIsRequired) {
    ApiCore core({});
    json cm = configmap("");
    cm["metadata"] = json::object();
    auto r = post(core, kCms, cm);
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.body["details"]["causes"][0]["field"], "metadata.name");
}

TEST(Objects, InvalidNameIsRejected) {
    ApiCore core({});
    auto r = post(core, kCms, configmap("Bad_Name"));
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.body["reason"], "Invalid");
}

TEST(Objects, MalformedJsonIsBadRequest) {
    ApiCore core({});
    auto r = call(core, request("POST", kCms, "{not json"));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.body["reason"], "BadRequest");
}

TEST(Objects, YamlBodiesAreAccepted) {
    ApiCore core({});
    auto r = call(core, request("POST", kCms, "metadata:\n  name: y\ndata:\n  n: \"1\"\n",
                                "application/yaml"));
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["data"]["n"], "1");
}

TEST(Objects, UnknownContentTypeIs415) {
    ApiCore core({});
    auto r = call(core, request("POST", kCms, configmap("a").dump(), "text/plain"));
    EXPECT_EQ(r.status, 415);
}

TEST(Objects, PutWithStaleResourceVersionConflicts) {
    ApiCore core({});
    auto a = post(core, kCms, configmap("a"));
    json obj = a.body;
    obj["data"]["k"] = "2";
    ASSERT_EQ(put(core, kCms + "/a", obj).status, 200);
    obj["data"]["k"] = "3";
    auto r = put(core, kCms + "/a", obj);
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(r.body["reason"], "Conflict");
    EXPECT_NE(r.body["message"].get<std::string>().find("the object has been modified"),
              std::string::npos);
}

TEST(Objects, NoOpUpdateKeepsResourceVersion) {
    ApiCore core({});
    auto a = post(core, kCms, configmap("a"));
    auto r = patch(core, kCms + "/a", {{"data", {{"k", "v"}}}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body["metadata"]["resourceVersion"], a.body["metadata"]["resourceVersion"]);
}

TEST(Objects, MergePatchDeletesKeysWithNull) {
    ApiCore core({});
    post(core, kCms, configmap("a", {{"x", "1"}, {"y", "2"}}));
    auto r = patch(core, kCms + "/a", {{"data", {{"x", nullptr}}}});
    EXPECT_EQ(r.body["data"], json({{"y", "2"}}));
}

TEST(Objects, JsonPatchFailedTestIs422) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    json ops =
        json::array({{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "999"}},
                     {{"op", "add"}, {"path", "/metadata/finalizers"}, {"value", {"x/y"}}}});
    auto r = patch(core, kCms + "/a", ops, "application/json-patch+json");
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.body["reason"], "Invalid");
}

TEST(Objects, JsonPatchAddingIntoAStringIs422NotACrash) {
    // Found by the patches fuzzer: nlohmann's patch asserts (aborting a build without NDEBUG)
    // when an add, copy or move targets a path under a string, number or boolean.
    ApiCore core({});
    post(core, kCms, configmap("a", {{"x", "1"}}));
    for (const auto& op : {json{{"op", "add"}, {"path", "/kind/moved"}, {"value", 1}},
                           json{{"op", "copy"}, {"from", "/data"}, {"path", "/data/x/y"}},
                           json{{"op", "move"}, {"from", "/data"}, {"path", "/metadata/name/z"}}}) {
        auto r = patch(core, kCms + "/a", json::array({op}), "application/json-patch+json");
        EXPECT_EQ(r.status, 422) << op.dump() << ": " << r.raw;
        EXPECT_NE(r.raw.find("doc is missing path"), std::string::npos) << r.raw;
    }
    auto a = get(core, kCms + "/a");
    EXPECT_EQ(a.body["data"], json({{"x", "1"}}));
}

TEST(Objects, JsonPatchWithMatchingTestApplies) {
    ApiCore core({});
    auto a = post(core, kCms, configmap("a"));
    json ops =
        json::array({{{"op", "test"},
                      {"path", "/metadata/resourceVersion"},
                      {"value", a.body["metadata"]["resourceVersion"]}},
                     {{"op", "add"}, {"path", "/metadata/finalizers"}, {"value", {"x.io/y"}}}});
    auto r = patch(core, kCms + "/a", ops, "application/json-patch+json");
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["metadata"]["finalizers"], json::array({"x.io/y"}));
}

TEST(Objects, PatchResourceVersionActsAsPrecondition) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    auto r = patch(core, kCms + "/a", {{"metadata", {{"resourceVersion", "1"}}}});
    EXPECT_EQ(r.status, 409);
}

TEST(Objects, PatchOfMissingObjectIs404) {
    ApiCore core({});
    EXPECT_EQ(patch(core, kCms + "/nope", {{"data", {{"a", "b"}}}}).status, 404);
}

TEST(Objects, UnsupportedPatchTypeIs415) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    EXPECT_EQ(patch(core, kCms + "/a", json::object(), "application/json").status, 415);
}

TEST(Objects, DryRunDoesNotStore) {
    ApiCore core({});
    auto r = post(core, kCms, configmap("a"), {{"dryRun", "All"}});
    EXPECT_EQ(r.status, 201);
    EXPECT_EQ(get(core, kCms + "/a").status, 404);
}

TEST(Objects, DeleteWithoutFinalizersRemovesImmediately) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    auto r = del(core, kCms + "/a");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body["status"], "Success");
    EXPECT_EQ(get(core, kCms + "/a").status, 404);
}

TEST(Objects, DeleteWithFinalizersMarksThenRemovalOfLastFinalizerDeletes) {
    ApiCore core({});
    json cm = configmap("a");
    cm["metadata"]["finalizers"] = {"example.com/f"};
    post(core, kCms, cm);
    auto d = del(core, kCms + "/a", {{"propagationPolicy", "Background"}});
    ASSERT_EQ(d.status, 200);
    EXPECT_TRUE(d.body["metadata"].contains("deletionTimestamp"));
    EXPECT_EQ(get(core, kCms + "/a").status, 200);
    auto p = patch(core, kCms + "/a", {{"metadata", {{"finalizers", nullptr}}}});
    EXPECT_EQ(p.status, 200);
    EXPECT_EQ(get(core, kCms + "/a").status, 404);
}

TEST(Objects, NoNewFinalizersWhileDeleting) {
    ApiCore core({});
    json cm = configmap("a");
    cm["metadata"]["finalizers"] = {"example.com/f"};
    post(core, kCms, cm);
    del(core, kCms + "/a");
    auto r = patch(core, kCms + "/a",
                   {{"metadata", {{"finalizers", {"example.com/f", "example.com/g"}}}}});
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.body["details"]["causes"][0]["field"], "metadata.finalizers");
}

TEST(Objects, DeletePreconditionMismatchConflicts) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    auto r = del(core, kCms + "/a", {{"preconditions", {{"resourceVersion", "1"}}}});
    EXPECT_EQ(r.status, 409);
}

TEST(Objects, DefaultNamespaceCannotBeDeleted) {
    ApiCore core({});
    EXPECT_EQ(del(core, "/api/v1/namespaces/default").status, 403);
}

TEST(Objects, SecretStringDataIsEncodedIntoData) {
    ApiCore core({});
    json s = {{"metadata", {{"name", "s"}}}, {"stringData", {{"pw", "abc"}}}};
    auto r = post(core, "/api/v1/namespaces/default/secrets", s);
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["data"]["pw"], "YWJj");
    EXPECT_EQ(r.body["type"], "Opaque");
    EXPECT_FALSE(r.body.contains("stringData"));
}

TEST(Objects, CoreAndEventsGroupShareEventStorage) {
    ApiCore core({});
    json ev = {{"metadata", {{"name", "e1"}}},
               {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "default"}}},
               {"message", "hello"},
               {"reason", "Test"}};
    ASSERT_EQ(post(core, "/api/v1/namespaces/default/events", ev).status, 201);
    auto r = get(core, "/apis/events.k8s.io/v1/namespaces/default/events/e1");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body["note"], "hello");
    EXPECT_EQ(r.body["regarding"]["name"], "p");
    EXPECT_EQ(r.body["apiVersion"], "events.k8s.io/v1");
}

TEST(Objects, StrategicMergeAddsFinalizersOnBuiltins) {
    ApiCore core({});
    json cm = configmap("a");
    cm["metadata"]["finalizers"] = {"a.io/x"};
    post(core, kCms, cm);
    auto r = patch(core, kCms + "/a", {{"metadata", {{"finalizers", {"a.io/y"}}}}},
                   "application/strategic-merge-patch+json");
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["metadata"]["finalizers"].size(), 2u);
}

TEST(Objects, StrategicMergeOnCustomResourceIs415) {
    ApiCore core({});
    install_widgets(core);
    post(core, kWidgets, widget("w1"));
    auto r = patch(core, kWidgets + "/w1", {{"spec", {{"size", 2}}}},
                   "application/strategic-merge-patch+json");
    EXPECT_EQ(r.status, 415);
    EXPECT_EQ(r.body["reason"], "UnsupportedMediaType");
}

TEST(Objects, CustomResourcePutWithoutResourceVersionIsInvalid) {
    ApiCore core({});
    install_widgets(core);
    post(core, kWidgets, widget("w1"));
    auto r = put(core, kWidgets + "/w1", widget("w1", 3));
    EXPECT_EQ(r.status, 422);
}

TEST(Objects, GenerationBumpsOnSpecChangeOnly) {
    ApiCore core({});
    install_widgets(core);
    auto c = post(core, kWidgets, widget("w1"));
    EXPECT_EQ(c.body["metadata"]["generation"], 1);
    auto a = patch(core, kWidgets + "/w1", {{"metadata", {{"labels", {{"a", "b"}}}}}});
    EXPECT_EQ(a.body["metadata"]["generation"], 1);
    auto s = patch(core, kWidgets + "/w1", {{"spec", {{"size", 5}}}});
    EXPECT_EQ(s.body["metadata"]["generation"], 2);
    auto st = patch(core, kWidgets + "/w1/status", {{"status", {{"phase", "ok"}}}});
    EXPECT_EQ(st.body["metadata"]["generation"], 2);
    EXPECT_EQ(st.body["status"]["phase"], "ok");
}

TEST(Objects, StatusIsIgnoredOnMainResourceWithStatusSubresource) {
    ApiCore core({});
    install_widgets(core);
    post(core, kWidgets, widget("w1"));
    patch(core, kWidgets + "/w1/status", {{"status", {{"phase", "ok"}}}});
    auto r = patch(core, kWidgets + "/w1", {{"status", {{"phase", "changed"}}}});
    EXPECT_EQ(r.body["status"]["phase"], "ok");
    auto s =
        patch(core, kWidgets + "/w1/status", {{"spec", {{"size", 9}}}, {"status", {{"x", 1}}}});
    EXPECT_EQ(s.body["spec"]["size"], 1);
}

TEST(Objects, ServerSideApplyCreatesThenMerges) {
    ApiCore core({});
    auto r = call(
        core, request("PATCH", kCms + "/ssa",
                      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: b\n",
                      "application/apply-patch+yaml", {{"fieldManager", "kubectl"}}));
    ASSERT_EQ(r.status, 201) << r.raw;
    auto r2 = call(core, request("PATCH", kCms + "/ssa",
                                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                                 "\"name\":\"ssa\"},\"data\":{\"c\":\"d\"}}",
                                 "application/apply-patch+yaml", {{"fieldManager", "kubectl"}}));
    ASSERT_EQ(r2.status, 200) << r2.raw;
    EXPECT_EQ(r2.body["data"]["c"], "d");
}

// Found by fuzzing: an applied metadata that is not a mapping was read as one (a 500).
TEST(Objects, ApplyOfMetadataThatIsNotAMappingIsInvalid) {
    ApiCore core({});
    post(core, kCms, configmap("ssa"));
    auto r = call(
        core, request("PATCH", kCms + "/ssa", "apiVersion: v1\nkind: ConfigMap\nmetadata: ssa\n",
                      "application/apply-patch+yaml", {{"fieldManager", "kubectl"}}));
    EXPECT_EQ(r.status, 422) << r.raw;
    auto scalar =
        call(core, request("PATCH", kCms + "/ssa", "just text", "application/apply-patch+yaml",
                           {{"fieldManager", "kubectl"}}));
    EXPECT_EQ(scalar.status, 400) << scalar.raw;
    auto named = patch(core, kCms + "/ssa", {{"metadata", {{"name", 5}}}});
    EXPECT_EQ(named.status, 400) << named.raw;
}

// Found by fuzzing: a number beyond a double's range was a 500 (nlohmann's out_of_range).
TEST(Objects, ANumberOutOfRangeInABodyIsABadRequest) {
    ApiCore core({});
    auto r = call(core, request("POST", kCms, R"({"data":{"a":8e880}})"));
    EXPECT_EQ(r.status, 400) << r.raw;
    EXPECT_NE(r.raw.find("number overflow"), std::string::npos) << r.raw;
}

TEST(Objects, ApplyWithoutFieldManagerIsInvalid) {
    ApiCore core({});
    auto r = call(core, request("PATCH", kCms + "/ssa", "{}", "application/apply-patch+yaml"));
    EXPECT_EQ(r.status, 422);
}

TEST(Objects, DeleteCollectionHonoursLabelSelector) {
    ApiCore core({});
    json a = configmap("a");
    a["metadata"]["labels"] = {{"tier", "x"}};
    post(core, kCms, a);
    post(core, kCms, configmap("b"));
    auto r = del(core, kCms, nullptr, {{"labelSelector", "tier=x"}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(get(core, kCms + "/a").status, 404);
    EXPECT_EQ(get(core, kCms + "/b").status, 200);
}

TEST(Objects, NameMismatchBetweenBodyAndUrlIsBadRequest) {
    ApiCore core({});
    auto a = post(core, kCms, configmap("a"));
    json obj = a.body;
    obj["metadata"]["name"] = "other";
    EXPECT_EQ(put(core, kCms + "/a", obj).status, 400);
}

TEST(Objects, UnknownSubresourceIsNotFound) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    EXPECT_EQ(get(core, kCms + "/a/bogus").status, 404);
}

TEST(Objects, ImmutableConfigMapRejectsDataChanges) {
    ApiCore core({});
    json cm = configmap("a");
    cm["immutable"] = true;
    post(core, kCms, cm);
    EXPECT_EQ(patch(core, kCms + "/a", {{"data", {{"k", "changed"}}}}).status, 422);
}

TEST(Objects, EventFieldSelectorOnInvolvedObject) {
    ApiCore core({});
    for (const char* n : {"p1", "p2"}) {
        json ev = {{"metadata", {{"generateName", "e-"}}},
                   {"involvedObject", {{"kind", "Pod"}, {"name", n}, {"namespace", "default"}}},
                   {"reason", "R"}};
        post(core, "/api/v1/namespaces/default/events", ev);
    }
    auto r = get(core, "/api/v1/namespaces/default/events",
                 {{"fieldSelector", "involvedObject.name=p2,involvedObject.kind=Pod"}});
    ASSERT_EQ(r.status, 200) << r.raw;
    ASSERT_EQ(r.body["items"].size(), 1u);
    EXPECT_EQ(r.body["items"][0]["involvedObject"]["name"], "p2");
}
