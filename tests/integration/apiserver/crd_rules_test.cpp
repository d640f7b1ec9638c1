// CRDs with the real kubectl: a file holding a CRD and objects of it (kubectl's fallback to
// /openapi/v2 as protobuf), and x-kubernetes-validations (CEL rules) enforced on objects,
// with CRDs whose rules are outside the supported subset refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

#define ASSERT_SUCCESS(result) \
    ASSERT_EQ((result).exit_code, 0) << "stdout: " << (result).out << "\nstderr: " << (result).err

const std::string kCrd = R"Y(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: "replicas must not be below minReplicas"
            - rule: "self.mode == oldSelf.mode"
              message: "mode is immutable"
            properties:
              replicas: {type: integer}
              minReplicas: {type: integer}
              mode: {type: string}
              hosts:
                type: array
                items:
                  type: string
                  x-kubernetes-validations:
                  - rule: "self.endsWith('.example.com')"
                    messageExpression: "'host ' + self + ' is outside example.com'"
)Y";

std::string widget(int replicas, int min_replicas, const std::string& mode,
                   const std::string& host = "a.example.com") {
    return "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  replicas: " +
           std::to_string(replicas) + "\n  minReplicas: " + std::to_string(min_replicas) +
           "\n  mode: " + mode + "\n  hosts: [" + host + "]\n";
}

void install(TestServer& test, const std::string& crd) {
    ASSERT_SUCCESS(test.kubectl({"apply", "-f", "-"}, crd));
    ASSERT_SUCCESS(test.kubectl(
        {"wait", "--for=condition=Established", "--timeout=10s", "crd/widgets.example.com"}));
}

TEST(CrdFiles, ACrdAndItsObjectsInOneFileApplyTheCrdAndReportTheUnknownKindLikeACluster) {
    TestServer test;
    const std::string both = kCrd + "---\n" + widget(2, 1, "fast");
    auto first = test.kubectl({"apply", "-f", "-"}, both);
    EXPECT_NE(first.exit_code, 0);
    EXPECT_NE(first.out.find("customresourcedefinition.apiextensions.k8s.io/widgets.example.com "
                             "created"),
              std::string::npos)
        << first.out;
    EXPECT_NE(first.err.find("no matches for kind \"Widget\" in version \"example.com/v1\""),
              std::string::npos)
        << first.err;
    EXPECT_NE(first.err.find("ensure CRDs are installed first"), std::string::npos) << first.err;
    EXPECT_EQ(first.err.find("openapi"), std::string::npos) << first.err;
    // Once the CRD is established, the same file applies whole.
    ASSERT_SUCCESS(test.kubectl(
        {"wait", "--for=condition=Established", "--timeout=10s", "crd/widgets.example.com"}));
    auto second = test.kubectl({"apply", "-f", "-"}, both);
    ASSERT_SUCCESS(second);
    EXPECT_NE(second.out.find("widget.example.com/w1 created"), std::string::npos) << second.out;
}

TEST(CrdFiles, OpenApiV2IsServedAsProtobufAndJsonAndRefusesOtherMediaTypes) {
    TestServer test;
    auto pb =
        test.http("GET", "/openapi/v2", "", "",
                  {"-H", "Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf"});
    ASSERT_EQ(pb.status, 200);
    EXPECT_EQ(pb.header("content-type"),
              "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    // Document{swagger: "2.0", info: {title: "Kubernetes", ...}, paths: {}}
    EXPECT_EQ(pb.body.substr(0, 5), std::string("\x0a\x03"
                                                "2.0",
                                                5));
    EXPECT_NE(pb.body.find("Kubernetes"), std::string::npos);
    auto js = test.http("GET", "/openapi/v2");
    ASSERT_EQ(js.status, 200);
    EXPECT_EQ(json::parse(js.body)["swagger"], "2.0");
    auto other = test.http("GET", "/openapi/v2", "", "", {"-H", "Accept: text/html"});
    EXPECT_EQ(other.status, 406);
}

TEST(CrdRules, ObjectsBreakingTheRulesAreInvalidWithKubernetesMessages) {
    TestServer test;
    install(test, kCrd);
    auto below = test.kubectl({"apply", "-f", "-"}, widget(1, 3, "fast"));
    EXPECT_NE(below.exit_code, 0);
    EXPECT_NE(below.err.find("The Widget \"w1\" is invalid: spec: Invalid value: \"object\": "
                             "replicas must not be below minReplicas"),
              std::string::npos)
        << below.err;
    auto host = test.kubectl({"apply", "-f", "-"}, widget(3, 1, "fast", "b.org"));
    EXPECT_NE(host.exit_code, 0);
    EXPECT_NE(host.err.find("spec.hosts[0]: Invalid value: \"string\": host b.org is outside "
                            "example.com"),
              std::string::npos)
        << host.err;
    ASSERT_SUCCESS(test.kubectl({"apply", "-f", "-"}, widget(3, 1, "fast")));
    // A transition rule: the mode may not change once set.
    auto changed = test.kubectl({"apply", "-f", "-"}, widget(3, 1, "slow"));
    EXPECT_NE(changed.exit_code, 0);
    EXPECT_NE(changed.err.find("spec: Invalid value: \"object\": mode is immutable"),
              std::string::npos)
        << changed.err;
    ASSERT_SUCCESS(test.kubectl({"apply", "-f", "-"}, widget(4, 1, "fast")));

    // Over HTTP: the 422 Status with its causes.
    auto r = test.http("PATCH", "/apis/example.com/v1/namespaces/default/widgets/w1",
                       R"({"spec":{"minReplicas":9}})", "application/merge-patch+json");
    ASSERT_EQ(r.status, 422) << r.body;
    json status = json::parse(r.body);
    EXPECT_EQ(status["reason"], "Invalid");
    EXPECT_EQ(status["details"]["kind"], "Widget");
    EXPECT_EQ(status["details"]["causes"][0],
              json::parse(R"({"reason":"FieldValueInvalid","field":"spec",
                "message":"Invalid value: \"object\": replicas must not be below minReplicas"})"));
}

TEST(CrdRules, CrdsWithRulesOutsideTheSubsetAreRefusedNamingTheRuleAndConstruct) {
    TestServer test;
    std::string crd = kCrd;
    crd.replace(crd.find("self.minReplicas <= self.replicas"), 33,
                "quantity(self.memory).isLessThan(quantity('1Gi'))");
    auto r = test.kubectl({"apply", "-f", "-"}, crd);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("spec.versions[0].schema.openAPIV3Schema.properties[spec]"
                         ".x-kubernetes-validations[0].rule: Invalid value: "
                         "\"quantity(self.memory).isLessThan(quantity('1Gi'))\": compilation "
                         "failed: the function quantity() is outside the supported CEL subset "
                         "at column 1"),
              std::string::npos)
        << r.err;
    auto get = test.kubectl({"get", "crd", "widgets.example.com"});
    EXPECT_NE(get.exit_code, 0) << "the CRD must not exist";
}

}  // namespace
}  // namespace kopf::apiserver::testing
