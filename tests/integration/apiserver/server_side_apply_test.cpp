// Server-side apply's field managers with the real kubectl (`apply --server-side`,
// `--field-manager`, `--force-conflicts`) and over plain HTTP: managedFields as Kubernetes
// shapes them, 409 with the conflicting fields, forced ownership changes, Update managers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

#define ASSERT_SUCCESS(result) \
    ASSERT_EQ((result).exit_code, 0) << "stdout: " << (result).out << "\nstderr: " << (result).err

const char* kDeployment = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: REPLICAS
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
)";

std::string deployment(int replicas) {
    std::string text = kDeployment;
    text.replace(text.find("REPLICAS"), 8, std::to_string(replicas));
    return text;
}

json managed_fields(TestServer& test, const std::string& what) {
    auto result = test.kubectl({"get", what, "-o", "json", "--show-managed-fields"});
    if (result.exit_code != 0) return json();
    return json::parse(result.out, nullptr, false)["metadata"]["managedFields"];
}

const json* entry_of(const json& managed, const std::string& manager) {
    for (const auto& e : managed)
        if (e.value("manager", "") == manager) return &e;
    return nullptr;
}

TEST(ServerSideApply, KubectlConflictBetweenManagersThenForceConflictsMovesOwnership) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"apply", "--server-side", "--field-manager=team-a", "-f", "-"},
                                deployment(2)));
    auto managed = managed_fields(test, "deployment/web");
    const json* a = entry_of(managed, "team-a");
    ASSERT_NE(a, nullptr) << managed.dump();
    EXPECT_EQ((*a)["operation"], "Apply");
    EXPECT_EQ((*a)["apiVersion"], "apps/v1");
    EXPECT_EQ((*a)["fieldsType"], "FieldsV1");
    EXPECT_TRUE((*a)["fieldsV1"]["f:spec"].contains("f:replicas")) << a->dump();
    EXPECT_TRUE((*a)["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"].contains(
        R"(k:{"name":"nginx"})"))
        << a->dump();

    // Another manager changing the replicas: kubectl reports the conflict and changes nothing.
    auto conflict = test.kubectl({"apply", "--server-side", "--field-manager=team-b", "-f", "-"},
                                 deployment(5));
    EXPECT_NE(conflict.exit_code, 0) << conflict.out;
    EXPECT_NE(conflict.err.find("Apply failed with 1 conflict: conflict with \"team-a\": "
                                ".spec.replicas"),
              std::string::npos)
        << conflict.err;
    auto replicas = test.kubectl({"get", "deployment/web", "-o", "jsonpath={.spec.replicas}"});
    EXPECT_EQ(replicas.out, "2");

    // The same values from another manager are no conflict: both own them.
    ASSERT_SUCCESS(test.kubectl({"apply", "--server-side", "--field-manager=team-c", "-f", "-"},
                                deployment(2)));

    // Forced: team-b takes .spec.replicas from team-a (and team-c).
    auto forced = test.kubectl(
        {"apply", "--server-side", "--field-manager=team-b", "--force-conflicts", "-f", "-"},
        deployment(5));
    ASSERT_SUCCESS(forced);
    EXPECT_NE(forced.out.find("serverside-applied"), std::string::npos) << forced.out;
    replicas = test.kubectl({"get", "deployment/web", "-o", "jsonpath={.spec.replicas}"});
    EXPECT_EQ(replicas.out, "5");
    managed = managed_fields(test, "deployment/web");
    ASSERT_NE(entry_of(managed, "team-a"), nullptr) << managed.dump();
    ASSERT_NE(entry_of(managed, "team-b"), nullptr) << managed.dump();
    EXPECT_FALSE((*entry_of(managed, "team-a"))["fieldsV1"]["f:spec"].contains("f:replicas"));
    EXPECT_TRUE((*entry_of(managed, "team-b"))["fieldsV1"]["f:spec"].contains("f:replicas"));
    // Shared fields stay shared.
    EXPECT_TRUE((*entry_of(managed, "team-a"))["fieldsV1"]["f:spec"].contains("f:selector"));
}

TEST(ServerSideApply, KubectlEditsByUpdateManagersConflictWithAppliers) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "configmap", "settings", "--from-literal=mode=fast"}));
    auto managed = managed_fields(test, "configmap/settings");
    const json* created = entry_of(managed, "kubectl-create");
    ASSERT_NE(created, nullptr) << managed.dump();
    EXPECT_EQ((*created)["operation"], "Update");
    EXPECT_EQ((*created)["apiVersion"], "v1");
    EXPECT_EQ((*created)["fieldsV1"], json::parse(R"({"f:data":{".":{},"f:mode":{}}})"));

    const char* applied =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
        "data:\n  mode: slow\n";
    auto conflict = test.kubectl({"apply", "--server-side", "-f", "-"}, applied);
    EXPECT_NE(conflict.exit_code, 0);
    EXPECT_NE(conflict.err.find("conflict with \"kubectl-create\" using v1: .data.mode"),
              std::string::npos)
        << conflict.err;

    // kubectl patch records its manager, which takes the field from kubectl-create.
    ASSERT_SUCCESS(test.kubectl(
        {"patch", "configmap", "settings", "-p", R"({"data":{"mode":"medium","level":"2"}})"}));
    managed = managed_fields(test, "configmap/settings");
    ASSERT_NE(entry_of(managed, "kubectl-patch"), nullptr) << managed.dump();
    ASSERT_NE(entry_of(managed, "kubectl-create"), nullptr) << managed.dump();
    EXPECT_EQ((*entry_of(managed, "kubectl-create"))["fieldsV1"], json::parse(R"({"f:data":{}})"))
        << "kubectl-create keeps .data itself, its .data.mode is kubectl-patch's now";

    ASSERT_SUCCESS(
        test.kubectl({"apply", "--server-side", "--force-conflicts", "-f", "-"}, applied));
    managed = managed_fields(test, "configmap/settings");
    ASSERT_NE(entry_of(managed, "kubectl"), nullptr) << managed.dump();
    EXPECT_EQ((*entry_of(managed, "kubectl"))["operation"], "Apply");
    EXPECT_EQ((*entry_of(managed, "kubectl-patch"))["fieldsV1"],
              json::parse(R"({"f:data":{"f:level":{}}})"));
}

TEST(ServerSideApply, HttpConflictStatusNamesEveryFieldAndManager) {
    TestServer test;
    const std::string path = "/api/v1/namespaces/default/configmaps/settings";
    auto apply = [&](const std::string& manager, const std::string& body,
                     const std::string& extra_query = "") {
        return test.http("PATCH", path + "?fieldManager=" + manager + extra_query, body,
                         "application/apply-patch+yaml");
    };
    const std::string first =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","labels":{"app":"a"}},"data":{"x":"1","y":"2"}})";
    ASSERT_EQ(apply("one", first).status, 201);
    const std::string second =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","labels":{"app":"b"}},"data":{"x":"9","y":"8"}})";
    auto r = apply("two", second);
    ASSERT_EQ(r.status, 409) << r.body;
    json status = json::parse(r.body);
    EXPECT_EQ(status["kind"], "Status");
    EXPECT_EQ(status["reason"], "Conflict");
    EXPECT_EQ(status["code"], 409);
    EXPECT_EQ(status["message"],
              "Apply failed with 3 conflicts: conflicts with \"one\":\n- .data.x\n- .data.y\n- "
              ".metadata.labels.app");
    ASSERT_EQ(status["details"]["causes"].size(), 3u) << r.body;
    EXPECT_EQ(status["details"]["causes"][0],
              json::parse(R"({"reason":"FieldManagerConflict","message":"conflict with \"one\"",
                              "field":".data.x"})"));

    // force=true: ownership moves, "one" keeps nothing and disappears.
    r = apply("two", second, "&force=true");
    ASSERT_EQ(r.status, 200) << r.body;
    json object = json::parse(r.body);
    ASSERT_EQ(object["metadata"]["managedFields"].size(), 1u) << r.body;
    EXPECT_EQ(object["metadata"]["managedFields"][0]["manager"], "two");

    // Applying again without a field: it is removed, as nobody else owns it.
    r = apply(
        "two",
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"x":"9"}})");
    ASSERT_EQ(r.status, 200) << r.body;
    object = json::parse(r.body);
    EXPECT_EQ(object["data"], json::parse(R"({"x":"9"})"));
    EXPECT_FALSE(object["metadata"].contains("labels")) << r.body;

    // A PUT by another manager (the User-Agent's product when there is no fieldManager).
    object["data"]["x"] = "10";
    object["metadata"].erase("managedFields");
    r = test.http("PUT", path, object.dump(), "application/json", {"-A", "my-tool/1.0"});
    ASSERT_EQ(r.status, 200) << r.body;
    object = json::parse(r.body);
    const auto& managed = object["metadata"]["managedFields"];
    ASSERT_EQ(managed.size(), 1u) << r.body;
    EXPECT_EQ(managed[0]["manager"], "my-tool");
    EXPECT_EQ(managed[0]["operation"], "Update");
    EXPECT_EQ(managed[0]["fieldsV1"], json::parse(R"({"f:data":{"f:x":{}}})"));
    r = apply(
        "two",
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"x":"11"}})");
    ASSERT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(json::parse(r.body)["message"],
              "Apply failed with 1 conflict: conflict with \"my-tool\" using v1: .data.x");
}

TEST(ServerSideApply, HttpBadManagedFieldsAndForceOutsideApplyAreRefused) {
    TestServer test;
    const std::string path = "/api/v1/namespaces/default/configmaps";
    auto r = test.http(
        "POST", path,
        R"({"metadata":{"name":"c","managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"bad":{}}}]}})",
        "application/json");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("metadata.managedFields[0].fieldsV1: invalid FieldsV1 key \\\"bad\\\""),
              std::string::npos)
        << r.body;
    r = test.http(
        "POST", path,
        R"({"metadata":{"name":"c","managedFields":[{"manager":"m","operation":"Replace","fieldsV1":{"f:data":{}}}]}})",
        "application/json");
    EXPECT_EQ(r.status, 422) << r.body;
    EXPECT_NE(r.body.find("metadata.managedFields[0].operation"), std::string::npos) << r.body;
    ASSERT_EQ(test.http("POST", path, R"({"metadata":{"name":"c"}})", "application/json").status,
              201);
    r = test.http("PATCH", path + "/c?force=true", R"({"data":{"a":"b"}})",
                  "application/merge-patch+json");
    EXPECT_EQ(r.status, 422) << r.body;
}

}  // namespace
}  // namespace kopf::apiserver::testing
