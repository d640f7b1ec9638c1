// `kopf rbac`: the rules derived from handlers and options, and its errors.
#include "cli/rbac.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

namespace kopf::runtime {
namespace {

// The manifests parsed: kind/namespace/name -> document.
std::map<std::string, YAML::Node> parse(const std::string& text) {
    std::map<std::string, YAML::Node> out;
    for (const auto& doc : YAML::LoadAll(text)) {
        const auto meta = doc["metadata"];
        std::string key = doc["kind"].as<std::string>() + "/" +
                          (meta["namespace"] ? meta["namespace"].as<std::string>() + "/" : "") +
                          meta["name"].as<std::string>();
        out[key] = doc;
    }
    return out;
}

// "group|resource|names" -> verbs of a role's rules.
std::map<std::string, std::set<std::string>> rules(const YAML::Node& role) {
    std::map<std::string, std::set<std::string>> out;
    for (const auto& rule : role["rules"]) {
        std::string names;
        if (rule["resourceNames"])
            for (const auto& n : rule["resourceNames"]) names += n.as<std::string>();
        for (const auto& group : rule["apiGroups"])
            for (const auto& resource : rule["resources"])
                for (const auto& verb : rule["verbs"])
                    out[group.as<std::string>() + "|" + resource.as<std::string>() + "|" + names]
                        .insert(verb.as<std::string>());
    }
    return out;
}

std::string crd_file() {
    const auto path = std::filesystem::temp_directory_path() / "kopf-rbac-test-crd.yaml";
    std::ofstream(path) << R"(---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: kopfexamples.kopf.dev}
spec:
  scope: Namespaced
  group: kopf.dev
  names: {kind: KopfExample, plural: kopfexamples, singular: kopfexample, shortNames: [kex]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
)";
    return path.string();
}

std::vector<structs::Resource> known() {
    auto resources = builtin_resources();
    auto crds = resources_of_crd_file(crd_file());
    resources.insert(resources.end(), crds.begin(), crds.end());
    return resources;
}

Registry operator_registry() {
    Registry registry;
    ChangingHandler create;
    create.id = "create_fn";
    create.selector = Selector("kex");  // a short name, resolved through the CRD
    registry.append(create);
    IndexingHandler index;
    index.id = "by_namespace";
    index.selector = Selector("configmaps");
    registry.append(index);
    return registry;
}

TEST(RbacGeneration, NamespacedOperatorsGetARolePerNamespaceAndClusterRulesForDiscovery) {
    RbacOptions options;
    options.namespaces = {"default", "team-a"};
    const auto docs = parse(generate_rbac(operator_registry(), options, known()));
    ASSERT_TRUE(docs.count("ServiceAccount/default/kopf-operator"));
    ASSERT_TRUE(docs.count("Role/team-a/kopf-operator"));
    ASSERT_TRUE(docs.count("RoleBinding/team-a/kopf-operator"));
    const auto role = rules(docs.at("Role/default/kopf-operator"));
    const std::map<std::string, std::set<std::string>> expected_role = {
        {"kopf.dev|kopfexamples|", {"list", "watch", "patch"}},
        {"kopf.dev|kopfexamples/status|", {"patch"}},
        {"|configmaps|", {"list", "watch"}},  // an index only reads
        {"|events|", {"create"}},
        {"kopf.dev|kopfpeerings|", {"list", "watch", "patch"}},
    };
    EXPECT_EQ(role, expected_role);
    const auto cluster = rules(docs.at("ClusterRole/kopf-operator"));
    const std::map<std::string, std::set<std::string>> expected_cluster = {
        {"apiextensions.k8s.io|customresourcedefinitions|", {"list", "watch"}},
    };
    EXPECT_EQ(cluster, expected_cluster);
    const auto binding = docs.at("RoleBinding/team-a/kopf-operator");
    EXPECT_EQ(binding["roleRef"]["kind"].as<std::string>(), "Role");
    EXPECT_EQ(binding["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
    EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), "default");
}

TEST(RbacGeneration, ClusterWideAndPatternScopesGrantClusterWide) {
    RbacOptions all;
    all.all_namespaces = true;
    all.standalone = true;
    auto docs = parse(generate_rbac(operator_registry(), all, known()));
    auto cluster = rules(docs.at("ClusterRole/kopf-operator"));
    EXPECT_EQ(cluster["kopf.dev|kopfexamples|"], (std::set<std::string>{"list", "watch", "patch"}));
    EXPECT_FALSE(cluster.count("kopf.dev|kopfpeerings|"));  // standalone
    EXPECT_FALSE(cluster.count("kopf.dev|clusterkopfpeerings|"));
    EXPECT_FALSE(cluster.count("|namespaces|"));  // -A watches cluster-wide endpoints

    RbacOptions patterns;
    patterns.namespaces = {"team-*"};
    docs = parse(generate_rbac(operator_registry(), patterns, known()));
    cluster = rules(docs.at("ClusterRole/kopf-operator"));
    EXPECT_EQ(cluster["|namespaces|"], (std::set<std::string>{"list", "watch"}));
    EXPECT_EQ(cluster["kopf.dev|kopfexamples|"], (std::set<std::string>{"list", "watch", "patch"}));
    for (const auto& [key, doc] : docs) EXPECT_NE(key.rfind("Role/", 0), 0U) << key;
}

TEST(RbacGeneration, LeaseWebhooksAndExtraRulesAddExactlyTheirRules) {
    Registry registry = operator_registry();
    WebhookHandler webhook;
    webhook.id = "validate";
    webhook.selector = Selector("kopfexamples");
    registry.append(webhook);
    RbacOptions options;
    options.namespaces = {"default"};
    options.lease = "my-operator";
    options.lease_namespace = "ops";
    options.extra_rules = {"apps/deployments=get,list", "/nodes=get"};
    const auto docs = parse(generate_rbac(registry, options, known()));
    const auto lease_role = rules(docs.at("Role/ops/kopf-operator"));
    const std::map<std::string, std::set<std::string>> expected_lease = {
        {"coordination.k8s.io|leases|my-operator", {"get", "update"}},
        {"coordination.k8s.io|leases|", {"create"}},
    };
    EXPECT_EQ(lease_role, expected_lease);
    const auto cluster = rules(docs.at("ClusterRole/kopf-operator"));
    EXPECT_EQ(cluster.at("admissionregistration.k8s.io|validatingwebhookconfigurations|"),
              (std::set<std::string>{"create", "patch"}));
    EXPECT_EQ(cluster.at("|nodes|"), (std::set<std::string>{"get"}));  // cluster-scoped
    const auto role = rules(docs.at("Role/default/kopf-operator"));
    EXPECT_EQ(role.at("apps|deployments|"), (std::set<std::string>{"get", "list"}));
}

TEST(RbacGeneration, UnknownResourcesAndBadRulesAreNamedAndNoScopeMeansClusterWide) {
    Registry registry;
    ChangingHandler create;
    create.selector = Selector("widgets");
    registry.append(create);
    RbacOptions options;
    options.namespaces = {"default"};
    try {
        generate_rbac(registry, options, builtin_resources());
        FAIL() << "an unknown resource was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("widgets"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("--crd"), std::string::npos) << e.what();
    }
    options.extra_rules = {"deployments=get"};
    try {
        generate_rbac(operator_registry(), options, known());
        FAIL() << "a malformed --rule was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("--rule 'deployments=get'"), std::string::npos)
            << e.what();
    }
    // Neither -n nor -A: cluster-wide, as kopf run goes on (with Kopf's warning).
    const auto docs = parse(generate_rbac(operator_registry(), RbacOptions{}, known()));
    EXPECT_TRUE(rules(docs.at("ClusterRole/kopf-operator")).count("kopf.dev|kopfexamples|"));
}

TEST(RbacGeneration, MalformedCrdFilesAreNamed) {
    const auto path = std::filesystem::temp_directory_path() / "kopf-rbac-test-bad.yaml";
    std::ofstream(path) << "kind: CustomResourceDefinition\nspec: [unclosed\n";
    try {
        resources_of_crd_file(path.string());
        FAIL() << "malformed YAML was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace kopf::runtime
