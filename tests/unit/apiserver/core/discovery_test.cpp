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

// kubectl asks for v2 as protobuf when it validates objects of kinds the server does not know
// yet (a CRD and its objects in one file); the document has no definitions.
TEST(OpenApi, V2IsServedAsProtobufOrJsonWithoutDefinitions) {
    ApiCore core({});
    HttpRequest pb = request("GET", "/openapi/v2");
    pb.accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    auto reply = core.handle(pb);
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.content_type, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    EXPECT_EQ(reply.body, std::string("\x0a\x03"
                                      "2.0"
                                      "\x12\x15\x0a\x0aKubernetes\x12\x07v1.32.0"
                                      "\x42\x00",
                                      30));
    auto js = core.handle(request("GET", "/openapi/v2"));
    EXPECT_EQ(js.status, 200);
    EXPECT_EQ(nlohmann::json::parse(js.body)["swagger"], "2.0");
    EXPECT_EQ(core.handle(request("POST", "/openapi/v2")).status, 404);
}

TEST(Discovery, NonJsonAcceptIsNotAcceptable) {
    ApiCore core({});
    HttpRequest r = request("GET", "/api/v1/namespaces");
    r.accept = "application/vnd.kubernetes.protobuf";
    auto reply = call(core, r);
    EXPECT_EQ(reply.status, 406);
    EXPECT_EQ(reply.body["reason"], "NotAcceptable");
}

namespace {

const char* kAggregatedAccept =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

Reply get_aggregated(ApiCore& core, const std::string& path, const std::string& etag = "") {
    auto r = request("GET", path);
    r.accept = kAggregatedAccept;
    r.if_none_match = etag;
    return call(core, r);
}

std::string header(const HttpResponse& response, const std::string& name) {
    for (const auto& [key, value] : response.headers)
        if (key == name) return value;
    return "";
}

// The resource entry named `resource` in group `group` of an APIGroupDiscoveryList.
json aggregated_entry(const json& list, const std::string& group, const std::string& resource) {
    for (const auto& item : list["items"])
        if (item["metadata"].value("name", "") == group)
            for (const auto& r : item["versions"][0]["resources"])
                if (r["resource"] == resource) return r;
    return nullptr;
}

}  // namespace

TEST(AggregatedDiscovery, ApiAnswersTheCoreGroupWithItsContentType) {
    ApiCore core({});
    auto r = get_aggregated(core, "/api");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.response.content_type,
              "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    EXPECT_EQ(r.body["kind"], "APIGroupDiscoveryList");
    EXPECT_EQ(r.body["apiVersion"], "apidiscovery.k8s.io/v2");
    ASSERT_EQ(r.body["items"].size(), 1u);
    EXPECT_EQ(r.body["items"][0]["metadata"]["name"], "");
    EXPECT_EQ(r.body["items"][0]["versions"][0]["version"], "v1");
    EXPECT_EQ(r.body["items"][0]["versions"][0]["freshness"], "Current");
}

TEST(AggregatedDiscovery, ResourcesCarryScopeKindVerbsShortNamesAndSubresources) {
    ApiCore core({});
    auto pods = aggregated_entry(get_aggregated(core, "/api").body, "", "pods");
    ASSERT_TRUE(pods.is_object());
    EXPECT_EQ(pods["scope"], "Namespaced");
    EXPECT_EQ(pods["singularResource"], "pod");
    EXPECT_EQ(pods["responseKind"]["kind"], "Pod");
    EXPECT_EQ(pods["shortNames"], json::array({"po"}));
    EXPECT_EQ(pods["categories"], json::array({"all"}));
    EXPECT_EQ(pods["subresources"][0]["subresource"], "status");
    auto namespaces = aggregated_entry(get_aggregated(core, "/api").body, "", "namespaces");
    EXPECT_EQ(namespaces["scope"], "Cluster");
    auto deployments = aggregated_entry(get_aggregated(core, "/apis").body, "apps", "deployments");
    ASSERT_TRUE(deployments.is_object());
    EXPECT_EQ(deployments["verbs"].size(), 8u);
}

TEST(AggregatedDiscovery, CrdsAppearWithFullResponseKindsAndGoWhenDeleted) {
    ApiCore core({});
    install_widgets(core);
    auto widgets = aggregated_entry(get_aggregated(core, "/apis").body, "example.com", "widgets");
    ASSERT_TRUE(widgets.is_object());
    EXPECT_EQ(widgets["responseKind"],
              json({{"group", "example.com"}, {"version", "v1"}, {"kind", "Widget"}}));
    EXPECT_EQ(widgets["shortNames"], json::array({"wg"}));
    EXPECT_EQ(widgets["subresources"][0]["subresource"], "status");
    del(core, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com");
    EXPECT_TRUE(
        aggregated_entry(get_aggregated(core, "/apis").body, "example.com", "widgets").is_null());
}

TEST(AggregatedDiscovery, EtagChangesWithTheCatalogAndMatchingIfNoneMatchIs304) {
    ApiCore core({});
    auto first = get_aggregated(core, "/apis");
    std::string etag = header(first.response, "ETag");
    ASSERT_FALSE(etag.empty());
    EXPECT_EQ(header(first.response, "Vary"), "Accept");
    auto again = get_aggregated(core, "/apis", etag);
    EXPECT_EQ(again.status, 304);
    EXPECT_TRUE(again.raw.empty());
    install_widgets(core);
    auto changed = get_aggregated(core, "/apis", etag);
    EXPECT_EQ(changed.status, 200);
    EXPECT_NE(header(changed.response, "ETag"), etag);
}

TEST(AggregatedDiscovery, PlainJsonAcceptKeepsTheLegacyDocuments) {
    ApiCore core({});
    auto r = request("GET", "/apis");
    r.accept = "application/json, */*";
    auto reply = call(core, r);
    EXPECT_EQ(reply.body["kind"], "APIGroupList");
    EXPECT_EQ(reply.response.content_type, "application/json");
}

TEST(AggregatedDiscovery, V2beta1IsServedWhenOnlyItIsAccepted) {
    ApiCore core({});
    auto r = request("GET", "/apis");
    r.accept = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    auto reply = call(core, r);
    EXPECT_EQ(reply.body["apiVersion"], "apidiscovery.k8s.io/v2beta1");
}
