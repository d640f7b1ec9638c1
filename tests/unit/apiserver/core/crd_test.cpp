// CustomResourceDefinitions: validation, conditions, schema effects, printer
// columns, scopes, and deletion removing the objects.
#include <gtest/gtest.h>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

namespace {
const std::string kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const std::string kWidgets = "/apis/example.com/v1/namespaces/default/widgets";
}  // namespace

TEST(Crd, CreatedCrdBecomesEstablished) {
    ApiCore core({});
    auto c = post(core, kCrds, widget_crd());
    ASSERT_EQ(c.status, 201) << c.raw;
    auto r = get(core, kCrds + "/widgets.example.com");
    std::map<std::string, std::string> conds;
    for (const auto& cnd : r.body["status"]["conditions"]) conds[cnd["type"]] = cnd["status"];
    EXPECT_EQ(conds["NamesAccepted"], "True");
    EXPECT_EQ(conds["Established"], "True");
    EXPECT_EQ(r.body["status"]["acceptedNames"]["kind"], "Widget");
    EXPECT_EQ(r.body["status"]["storedVersions"], json::array({"v1"}));
    EXPECT_EQ(r.body["spec"]["names"]["listKind"], "WidgetList");
}

TEST(Crd, NameMustBePluralDotGroup) {
    ApiCore core({});
    json crd = widget_crd();
    crd["metadata"]["name"] = "wrong.example.com";
    auto r = post(core, kCrds, crd);
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.body["details"]["causes"][0]["field"], "metadata.name");
}

TEST(Crd, GroupNeedsADot) {
    ApiCore core({});
    json crd = widget_crd();
    crd["spec"]["group"] = "example";
    crd["metadata"]["name"] = "widgets.example";
    auto r = post(core, kCrds, crd);
    EXPECT_EQ(r.status, 422);
}

TEST(Crd, ExactlyOneStorageVersion) {
    ApiCore core({});
    json crd = widget_crd();
    crd["spec"]["versions"][0]["storage"] = false;
    EXPECT_EQ(post(core, kCrds, crd).status, 422);
}

TEST(Crd, ObjectsArePrunedAndDefaulted) {
    ApiCore core({});
    install_widgets(core);
    json w = widget("w1");
    w["spec"].erase("size");
    w["spec"]["unknown"] = "dropped";
    auto r = post(core, kWidgets, w);
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["spec"]["size"], 1);
    EXPECT_FALSE(r.body["spec"].contains("unknown"));
}

TEST(Crd, SchemaViolationIsInvalidWithFieldCause) {
    ApiCore core({});
    install_widgets(core);
    auto r = post(core, kWidgets, widget("w1", -5));
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.body["details"]["kind"], "Widget");
    EXPECT_EQ(r.body["details"]["causes"][0]["field"], "spec.size");
}

TEST(Crd, PreserveUnknownFieldsKeepsStatus) {
    ApiCore core({});
    install_widgets(core);
    post(core, kWidgets, widget("w1"));
    auto r =
        patch(core, kWidgets + "/w1/status", {{"status", {{"kopf", {{"progress", {{"a", 1}}}}}}}});
    EXPECT_EQ(r.body["status"]["kopf"]["progress"]["a"], 1);
}

TEST(Crd, ClusterScopedCrdServesClusterPaths) {
    ApiCore core({});
    install_widgets(core, "Cluster");
    auto r = post(core, "/apis/example.com/v1/widgets", widget("w1"));
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_FALSE(r.body["metadata"].contains("namespace"));
    EXPECT_EQ(core.handle(request("GET", kWidgets)).status, 404);
}

TEST(Crd, PrinterColumnsAppearInTables) {
    ApiCore core({});
    install_widgets(core);
    post(core, kWidgets, widget("w1", 7));
    HttpRequest r = request("GET", kWidgets);
    r.accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
    auto reply = call(core, r);
    EXPECT_EQ(reply.body["columnDefinitions"][1]["name"], "Size");
    EXPECT_EQ(reply.body["rows"][0]["cells"][1], 7);
}

TEST(Crd, DeletingCrdRemovesItsObjectsAndEndpoints) {
    ApiCore core({});
    install_widgets(core);
    post(core, kWidgets, widget("w1"));
    auto d = del(core, kCrds + "/widgets.example.com");
    EXPECT_EQ(d.status, 200);
    EXPECT_EQ(get(core, kCrds + "/widgets.example.com").status, 404);
    EXPECT_EQ(core.handle(request("GET", kWidgets)).status, 404);
}

TEST(Crd, CrdDeletionWaitsForObjectFinalizers) {
    ApiCore core({});
    install_widgets(core);
    json w = widget("w1");
    w["metadata"]["finalizers"] = {"kopf.zalando.org/KopfFinalizerMarker"};
    post(core, kWidgets, w);
    del(core, kCrds + "/widgets.example.com");
    EXPECT_EQ(get(core, kCrds + "/widgets.example.com").status, 200);
    auto obj = get(core, kWidgets + "/w1");
    EXPECT_TRUE(obj.body["metadata"].contains("deletionTimestamp"));
    EXPECT_EQ(post(core, kWidgets, widget("w2")).status, 403);
    patch(core, kWidgets + "/w1", {{"metadata", {{"finalizers", nullptr}}}});
    EXPECT_EQ(get(core, kCrds + "/widgets.example.com").status, 404);
}

TEST(Crd, ScaleSubresourceMapsReplicas) {
    ApiCore core({});
    json crd = widget_crd();
    crd["spec"]["versions"][0]["subresources"]["scale"] = {{"specReplicasPath", ".spec.size"},
                                                           {"statusReplicasPath", ".status.size"}};
    post(core, kCrds, crd);
    post(core, kWidgets, widget("w1", 2));
    auto s = get(core, kWidgets + "/w1/scale");
    ASSERT_EQ(s.status, 200) << s.raw;
    EXPECT_EQ(s.body["kind"], "Scale");
    EXPECT_EQ(s.body["spec"]["replicas"], 2);
    auto p = patch(core, kWidgets + "/w1/scale", {{"spec", {{"replicas", 4}}}});
    ASSERT_EQ(p.status, 200) << p.raw;
    EXPECT_EQ(get(core, kWidgets + "/w1").body["spec"]["size"], 4);
}

TEST(Crd, UnknownFieldsWarnByDefault) {
    ApiCore core({});
    install_widgets(core);
    json w = widget("w1");
    w["spec"]["bogus"] = 1;
    auto r = post(core, kWidgets, w);
    ASSERT_EQ(r.status, 201);
    bool warned = false;
    for (const auto& [k, v] : r.response.headers)
        warned |= k == "Warning" && v.find("unknown field \\\"spec.bogus\\\"") != std::string::npos;
    EXPECT_TRUE(warned);
}

TEST(Crd, UnknownFieldsAreRejectedWithStrictValidation) {
    ApiCore core({});
    install_widgets(core);
    json w = widget("w1");
    w["spec"]["bogus"] = 1;
    auto r = post(core, kWidgets, w, {{"fieldValidation", "Strict"}});
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body["message"].get<std::string>().find(
                  "strict decoding error: unknown field \"spec.bogus\""),
              std::string::npos);
    post(core, kWidgets, widget("w2"));
    auto p = patch(core, kWidgets + "/w2", {{"spec", {{"bogus", 1}}}},
                   "application/merge-patch+json", {{"fieldValidation", "Strict"}});
    EXPECT_EQ(p.status, 422);
}

// A null in a known field that is not nullable is dropped, as in Kubernetes, but it is no
// unknown field: no warning, and strict validation accepts it.
TEST(Crd, NullsDroppedFromKnownFieldsAreNoUnknownFields) {
    ApiCore core({});
    install_widgets(core);
    json w = widget("w1");
    w["spec"]["color"] = nullptr;
    auto r = post(core, kWidgets, w, {{"fieldValidation", "Strict"}});
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_FALSE(r.body["spec"].contains("color")) << r.raw;
    for (const auto& [k, v] : r.response.headers)
        EXPECT_EQ(v.find("unknown field"), std::string::npos) << k << ": " << v;
}

// The Update managers of an object's managedFields, without their times: manager → fields.
json managers_of(const json& entries) {
    json out = json::object();
    for (const auto& entry : entries) out[entry["manager"].get<std::string>()] = entry["fieldsV1"];
    return out;
}

// A writer that changes only fields it owns leaves every manager's record as it was but its own
// time; one that changes another's field takes it; one that removes a field takes it from its
// owner, whose entry goes when it owns nothing; the entries stay in Kubernetes' order.
TEST(Crd, UpdateManagersTakeTheFieldsTheyChangeAndNothingElse) {
    ApiCore core({});
    install_widgets(core);
    auto write = [&](const json& merge, const std::string& manager) {
        Reply r = patch(core, kWidgets + "/w1", merge, "application/merge-patch+json",
                        {{"fieldManager", manager}});
        EXPECT_EQ(r.status, 200) << r.raw;
        return r.body["metadata"]["managedFields"];
    };
    json w = widget("w1", 2);
    w["spec"]["color"] = "red";
    ASSERT_EQ(post(core, kWidgets, w, {{"fieldManager", "creator"}}).status, 201);

    json entries = write({{"spec", {{"size", 3}}}}, "creator");  // its own field
    EXPECT_EQ(managers_of(entries),
              json::parse(R"({"creator":{"f:spec":{".":{},"f:color":{},"f:size":{}}}})"));

    entries = write({{"spec", {{"color", "blue"}}}}, "painter");  // someone else's field
    EXPECT_EQ(managers_of(entries), json::parse(R"({"creator":{"f:spec":{".":{},"f:size":{}}},
                                                   "painter":{"f:spec":{"f:color":{}}}})"));
    const json painted = entries;

    entries = write({{"spec", {{"color", "green"}}}}, "painter");  // its own field again
    EXPECT_EQ(managers_of(entries), managers_of(painted));
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0], painted[0]);  // the creator's, untouched, first (the older time)
    EXPECT_EQ(entries[1]["manager"], "painter");
    EXPECT_GE(entries[1]["time"].get<std::string>(), painted[1]["time"].get<std::string>());

    entries = write({{"spec", {{"color", nullptr}}}}, "creator");  // the painter's only field
    EXPECT_EQ(managers_of(entries), json::parse(R"({"creator":{"f:spec":{".":{},"f:size":{}}}})"));
}

TEST(Crd, ServerSideApplyRemovesFieldsTheManagerNoLongerApplies) {
    ApiCore core({});
    install_widgets(core);
    auto apply = [&](const json& obj) {
        return call(core, request("PATCH", kWidgets + "/w1", obj.dump(),
                                  "application/apply-patch+yaml", {{"fieldManager", "tester"}}));
    };
    json first = widget("w1", 2);
    first["spec"]["color"] = "red";
    ASSERT_EQ(apply(first).status, 201);
    auto r = apply(widget("w1", 3));
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["spec"]["size"], 3);
    EXPECT_FALSE(r.body["spec"].contains("color"));
    EXPECT_EQ(r.body["metadata"]["managedFields"][0]["manager"], "tester");
}

TEST(Crd, ServedVersionsShareStorageAndPreferTheHighest) {
    ApiCore core({});
    json crd = widget_crd();
    json beta = crd["spec"]["versions"][0];
    beta["name"] = "v1beta1";
    beta["storage"] = false;
    crd["spec"]["versions"].push_back(beta);
    ASSERT_EQ(post(core, kCrds, crd).status, 201);
    auto group = get(core, "/apis/example.com");
    EXPECT_EQ(group.body["preferredVersion"]["version"], "v1");
    EXPECT_EQ(group.body["versions"].size(), 2u);
    json w = widget("w1");
    w["apiVersion"] = "example.com/v1beta1";
    ASSERT_EQ(post(core, "/apis/example.com/v1beta1/namespaces/default/widgets", w).status, 201);
    auto r = get(core, kWidgets + "/w1");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body["apiVersion"], "example.com/v1");
}

TEST(Crd, UnservedVersionIsNotRouted) {
    ApiCore core({});
    json crd = widget_crd();
    json old = crd["spec"]["versions"][0];
    old["name"] = "v1alpha1";
    old["storage"] = false;
    old["served"] = false;
    crd["spec"]["versions"].push_back(old);
    post(core, kCrds, crd);
    EXPECT_EQ(
        core.handle(request("GET", "/apis/example.com/v1alpha1/namespaces/default/widgets")).status,
        404);
}

TEST(Crd, CrdStatusChangesReachWatchers) {
    ApiCore core({});
    std::string rv = get(core, kCrds).body["metadata"]["resourceVersion"];
    auto sink = watch(core, kCrds, {{"resourceVersion", rv}});
    install_widgets(core);
    ASSERT_TRUE(sink->wait_for_count(2));
    auto evs = sink->events();
    EXPECT_EQ(evs[0]["type"], "ADDED");
    EXPECT_EQ(evs[1]["type"], "MODIFIED");
}
