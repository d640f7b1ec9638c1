// Version, health, discovery and OpenAPI documents as clients read them.
#include <gtest/gtest.h>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

TEST(Discovery, VersionHasEveryFieldThePythonClientRequires) {
    ApiCore core({});
    auto r = get(core, "/version");
    ASSERT_EQ(r.status, 200);
    for (const char* f : {"buildDate", "compiler", "gitCommit", "gitTreeState", "gitVersion",
                          "goVersion", "major", "minor", "platform"})
        EXPECT_TRUE(r.body.contains(f)) << f;
}

TEST(Discovery, HealthEndpointsAnswerOk) {
    ApiCore core({});
    for (const char* p : {"/healthz", "/livez", "/readyz"}) {
        auto r = core.handle(request("GET", p));
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.body, "ok");
    }
}

TEST(Discovery, UnknownPathIsPlainText404) {
    ApiCore core({});
    auto r = core.handle(request("GET", "/nope"));
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.body, "404 page not found\n");
    EXPECT_EQ(core.handle(request("GET", "/apis/example.com/v1/widgets")).status, 404);
}

TEST(Discovery, ApiVersionsListsServerAddresses) {
    ApiCore core({});
    auto r = get(core, "/api");
    EXPECT_EQ(r.body["kind"], "APIVersions");
    EXPECT_EQ(r.body["versions"], json::array({"v1"}));
    EXPECT_TRUE(r.body["serverAddressByClientCIDRs"].is_array());
}

TEST(Discovery, CoreResourceListHasRealScopesVerbsAndShortNames) {
    ApiCore core({});
    auto r = get(core, "/api/v1");
    ASSERT_EQ(r.status, 200);
    std::map<std::string, json> by_name;
    for (const auto& res : r.body["resources"]) by_name[res["name"]] = res;
    EXPECT_FALSE(by_name["namespaces"]["namespaced"]);
    EXPECT_EQ(by_name["namespaces"]["shortNames"], json::array({"ns"}));
    EXPECT_TRUE(by_name["configmaps"]["namespaced"]);
    EXPECT_EQ(by_name["pods"]["categories"], json::array({"all"}));
    EXPECT_EQ(by_name["pods/status"]["verbs"], json::array({"get", "patch", "update"}));
    EXPECT_EQ(by_name["pods/status"]["singularName"], "");
    EXPECT_EQ(by_name["configmaps"]["verbs"].size(), 8u);
    EXPECT_EQ(by_name["namespaces"]["verbs"].size(), 7u);
    EXPECT_TRUE(by_name.count("events"));
    EXPECT_FALSE(r.body.contains("apiVersion"));
}

TEST(Discovery, GroupListContainsBuiltInGroups) {
    ApiCore core({});
    auto r = get(core, "/apis");
    EXPECT_EQ(r.body["kind"], "APIGroupList");
    std::set<std::string> names;
    for (const auto& g : r.body["groups"]) names.insert(g["name"]);
    for (const char* g : {"apps", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io",
                          "admissionregistration.k8s.io"})
        EXPECT_TRUE(names.count(g)) << g;
    auto g = get(core, "/apis/apps");
    EXPECT_EQ(g.body["kind"], "APIGroup");
    EXPECT_EQ(g.body["preferredVersion"]["groupVersion"], "apps/v1");
    auto rl = get(core, "/apis/apps/v1");
    EXPECT_EQ(rl.body["apiVersion"], "v1");
    EXPECT_EQ(rl.body["groupVersion"], "apps/v1");
}

TEST(Discovery, EstablishedCrdIsPublishedWithStatusSubresource) {
    ApiCore core({});
    install_widgets(core);
    auto r = get(core, "/apis/example.com/v1");
    ASSERT_EQ(r.status, 200);
    std::set<std::string> names;
    for (const auto& res : r.body["resources"]) names.insert(res["name"]);
    EXPECT_TRUE(names.count("widgets"));
    EXPECT_TRUE(names.count("widgets/status"));
    bool listed = false;
    auto apis = get(core, "/apis");
    for (const auto& g : apis.body["groups"]) listed |= g["name"] == "example.com";
    EXPECT_TRUE(listed);
}

TEST(OpenApi, IndexListsEveryGroupVersion) {
    ApiCore core({});
    auto r = get(core, "/openapi/v3");
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(r.body["paths"].contains("api/v1"));
    EXPECT_TRUE(r.body["paths"].contains("apis/apps/v1"));
    std::string url = r.body["paths"]["api/v1"]["serverRelativeURL"];
    EXPECT_EQ(url.rfind("/openapi/v3/api/v1?hash=", 0), 0u);
}

TEST(OpenApi, PatchOperationsCarryGvkAndFieldValidation) {
    ApiCore core({});
    auto r = get(core, "/openapi/v3/api/v1");
    ASSERT_EQ(r.status, 200);
    const json& op = r.body["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    EXPECT_EQ(op["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
    bool has_param = false;
    for (const auto& p : op["parameters"]) has_param |= p["name"] == "fieldValidation";
    EXPECT_TRUE(has_param);
}

TEST(OpenApi, CrdSchemaIsPublished) {
    ApiCore core({});
    install_widgets(core);
    auto r = get(core, "/openapi/v3/apis/example.com/v1");
    ASSERT_EQ(r.status, 200);
    const json& schema = r.body["components"]["schemas"]["com.example.v1.Widget"];
    EXPECT_EQ(schema["properties"]["spec"]["properties"]["size"]["type"], "integer");
    EXPECT_EQ(schema["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
}

TEST(OpenApi, V2IsNotServed) {
    ApiCore core({});
    EXPECT_EQ(core.handle(request("GET", "/openapi/v2")).status, 404);
}

TEST(Discovery, NonJsonAcceptIsNotAcceptable) {
    ApiCore core({});
    HttpRequest r = request("GET", "/api/v1/namespaces");
    r.accept = "application/vnd.kubernetes.protobuf";
    auto reply = call(core, r);
    EXPECT_EQ(reply.status, 406);
    EXPECT_EQ(reply.body["reason"], "NotAcceptable");
}
