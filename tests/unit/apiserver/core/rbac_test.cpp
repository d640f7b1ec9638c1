// RBAC rule matching and the 403 messages, as kube-apiserver's RBAC authorizer decides them.
#include "core/rbac.hpp"

#include <gtest/gtest.h>

#include <map>

namespace kopf::apiserver::core {
namespace {

using json = nlohmann::json;

UserInfo user(std::string name, std::vector<std::string> groups = {}) {
    groups.push_back("system:authenticated");
    return UserInfo{std::move(name), std::move(groups), false};
}

RequestAttributes on_resource(std::string verb, std::string group, std::string resource,
                              std::string ns, std::string name = "", std::string sub = "") {
    RequestAttributes a;
    a.resource_request = true;
    a.verb = std::move(verb);
    a.group = std::move(group);
    a.resource = std::move(resource);
    a.ns = std::move(ns);
    a.name = std::move(name);
    a.subresource = std::move(sub);
    return a;
}

RequestAttributes on_path(std::string verb, std::string path) {
    RequestAttributes a;
    a.verb = std::move(verb);
    a.path = std::move(path);
    return a;
}

// A cluster holding roles and bindings as the API server stores them.
struct Policy {
    std::map<std::string, json> cluster_roles;
    std::map<std::string, json> roles;  // "ns/name"
    std::vector<json> cluster_bindings;
    std::vector<json> bindings;

    void cluster_role(const std::string& name, json rules) {
        cluster_roles[name] = {{"metadata", {{"name", name}}}, {"rules", std::move(rules)}};
    }
    void role(const std::string& ns, const std::string& name, json rules) {
        roles[ns + "/" + name] = {{"metadata", {{"name", name}, {"namespace", ns}}},
                                  {"rules", std::move(rules)}};
    }
    static json binding(const std::string& ns, const std::string& kind, const std::string& role,
                        json subjects) {
        json metadata = {{"name", "b-" + role}};
        if (!ns.empty()) metadata["namespace"] = ns;
        return {{"metadata", metadata},
                {"roleRef",
                 {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", kind}, {"name", role}}},
                {"subjects", std::move(subjects)}};
    }

    bool allows(const UserInfo& who, const RequestAttributes& request) const {
        RbacObjects objects;
        for (const auto& b : cluster_bindings) objects.cluster_role_bindings.push_back(&b);
        for (const auto& b : bindings)
            if (b["metadata"]["namespace"] == request.ns) objects.role_bindings.push_back(&b);
        objects.role = [this](const std::string& ns, const std::string& name) -> const json* {
            auto it = roles.find(ns + "/" + name);
            return it == roles.end() ? nullptr : &it->second;
        };
        objects.cluster_role = [this](const std::string& name) -> const json* {
            auto it = cluster_roles.find(name);
            return it == cluster_roles.end() ? nullptr : &it->second;
        };
        return rbac_allows(who, request, objects);
    }
};

json subject_user(const std::string& name) {
    return {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", name}};
}

TEST(Rbac, NothingIsAllowedWithoutABindingButSystemMastersMayDoEverything) {
    Policy policy;
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("list", "", "pods", "default")));
    EXPECT_FALSE(policy.allows(user("alice"), on_path("get", "/apis")));
    EXPECT_TRUE(policy.allows(user("root", {"system:masters"}),
                              on_resource("delete", "apps", "deployments", "x", "y")));
}

TEST(Rbac, ARoleBindingGrantsItsRulesInItsOwnNamespaceOnly) {
    Policy policy;
    policy.role("default", "reader",
                json::array({{{"apiGroups", {""}},
                              {"resources", {"configmaps"}},
                              {"verbs", {"get", "list", "watch"}}}}));
    policy.bindings.push_back(
        Policy::binding("default", "Role", "reader", json::array({subject_user("alice")})));
    EXPECT_TRUE(policy.allows(user("alice"), on_resource("list", "", "configmaps", "default")));
    EXPECT_TRUE(policy.allows(user("alice"), on_resource("get", "", "configmaps", "default", "c")));
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("patch", "", "configmaps", "default")));
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("list", "", "configmaps", "other")));
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("list", "", "configmaps", "")));
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("list", "", "secrets", "default")));
    EXPECT_FALSE(
        policy.allows(user("alice"), on_resource("list", "apps", "configmaps", "default")));
    EXPECT_FALSE(policy.allows(user("bob"), on_resource("list", "", "configmaps", "default")));
}

TEST(Rbac, AClusterRoleBoundInANamespaceGrantsThereAndBoundClusterWideEverywhere) {
    Policy policy;
    policy.cluster_role(
        "kex",
        json::array(
            {{{"apiGroups", {"kopf.dev"}}, {"resources", {"kopfexamples"}}, {"verbs", {"*"}}}}));
    policy.bindings.push_back(
        Policy::binding("ns1", "ClusterRole", "kex", json::array({subject_user("alice")})));
    policy.cluster_bindings.push_back(
        Policy::binding("", "ClusterRole", "kex", json::array({subject_user("carol")})));
    auto patch = [](const std::string& ns) {
        return on_resource("patch", "kopf.dev", "kopfexamples", ns, "x");
    };
    EXPECT_TRUE(policy.allows(user("alice"), patch("ns1")));
    EXPECT_FALSE(policy.allows(user("alice"), patch("ns2")));
    EXPECT_TRUE(policy.allows(user("carol"), patch("ns2")));
    EXPECT_TRUE(policy.allows(user("carol"), on_resource("watch", "kopf.dev", "kopfexamples", "")));
}

TEST(Rbac, SubresourcesNeedTheirOwnRuleOrAStarSlashSubresource) {
    Policy policy;
    policy.cluster_role("objects", json::array({{{"apiGroups", {"kopf.dev"}},
                                                 {"resources", {"kopfexamples"}},
                                                 {"verbs", {"patch"}}}}));
    policy.cluster_role(
        "statuses",
        json::array({{{"apiGroups", {"*"}}, {"resources", {"*/status"}}, {"verbs", {"patch"}}}}));
    policy.cluster_bindings.push_back(
        Policy::binding("", "ClusterRole", "objects", json::array({subject_user("alice")})));
    auto status = on_resource("patch", "kopf.dev", "kopfexamples", "default", "x", "status");
    EXPECT_FALSE(policy.allows(user("alice"), status));
    policy.cluster_bindings.push_back(
        Policy::binding("", "ClusterRole", "statuses", json::array({subject_user("alice")})));
    EXPECT_TRUE(policy.allows(user("alice"), status));
    EXPECT_FALSE(policy.allows(
        user("alice"), on_resource("patch", "kopf.dev", "kopfexamples", "default", "x", "scale")));
}

TEST(Rbac, ResourceNamesLimitNamedRequestsAndExcludeListsAndCreates) {
    Policy policy;
    policy.cluster_role("one", json::array({{{"apiGroups", {"coordination.k8s.io"}},
                                             {"resources", {"leases"}},
                                             {"resourceNames", {"my-lease"}},
                                             {"verbs", {"get", "update", "list", "create"}}}}));
    policy.cluster_bindings.push_back(
        Policy::binding("", "ClusterRole", "one", json::array({subject_user("alice")})));
    auto lease = [](const std::string& verb, const std::string& name) {
        return on_resource(verb, "coordination.k8s.io", "leases", "default", name);
    };
    EXPECT_TRUE(policy.allows(user("alice"), lease("get", "my-lease")));
    EXPECT_TRUE(policy.allows(user("alice"), lease("update", "my-lease")));
    EXPECT_FALSE(policy.allows(user("alice"), lease("get", "other")));
    EXPECT_FALSE(policy.allows(user("alice"), lease("list", "")));
    EXPECT_FALSE(policy.allows(user("alice"), lease("create", "")));
}

TEST(Rbac, ServiceAccountAndGroupSubjectsMatchTheirUsers) {
    Policy policy;
    policy.role(
        "ops", "r",
        json::array({{{"apiGroups", {""}}, {"resources", {"events"}}, {"verbs", {"create"}}}}));
    // A ServiceAccount subject without a namespace is the binding's namespace's.
    policy.bindings.push_back(
        Policy::binding("ops", "Role", "r",
                        json::array({{{"kind", "ServiceAccount"}, {"name", "operator"}},
                                     {{"kind", "Group"},
                                      {"apiGroup", "rbac.authorization.k8s.io"},
                                      {"name", "auditors"}}})));
    auto create = on_resource("create", "", "events", "ops");
    EXPECT_TRUE(policy.allows(user("system:serviceaccount:ops:operator"), create));
    EXPECT_FALSE(policy.allows(user("system:serviceaccount:other:operator"), create));
    EXPECT_FALSE(policy.allows(user("operator"), create));
    EXPECT_TRUE(policy.allows(user("dave", {"auditors"}), create));
}

TEST(Rbac, ABindingToAMissingOrForeignRoleGrantsNothing) {
    Policy policy;
    policy.role("a", "r",
                json::array({{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}}}));
    // A RoleBinding's Role is looked up in the binding's own namespace, never another.
    policy.bindings.push_back(
        Policy::binding("b", "Role", "r", json::array({subject_user("alice")})));
    policy.cluster_bindings.push_back(
        Policy::binding("", "ClusterRole", "absent", json::array({subject_user("alice")})));
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("get", "", "pods", "b", "p")));
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("get", "", "pods", "a", "p")));
}

TEST(Rbac, NonResourceUrlsMatchExactlyOrByATrailingStar) {
    Policy policy;
    for (const auto& role : bootstrap_cluster_roles())
        policy.cluster_role(role["metadata"]["name"], role["rules"]);
    for (const auto& binding : bootstrap_cluster_role_bindings())
        policy.cluster_bindings.push_back(binding);
    const UserInfo anonymous;  // system:anonymous in system:unauthenticated
    EXPECT_TRUE(policy.allows(user("alice"), on_path("get", "/apis/kopf.dev/v1")));
    EXPECT_TRUE(policy.allows(user("alice"), on_path("get", "/api")));
    EXPECT_FALSE(policy.allows(user("alice"), on_path("post", "/api")));
    EXPECT_FALSE(policy.allows(user("alice"), on_path("get", "/metrics")));
    EXPECT_FALSE(policy.allows(anonymous, on_path("get", "/apis")));
    EXPECT_TRUE(policy.allows(anonymous, on_path("get", "/healthz")));
    EXPECT_TRUE(policy.allows(anonymous, on_path("get", "/version")));
    // Resource rules never grant paths, nor path rules resources.
    EXPECT_FALSE(policy.allows(user("alice"), on_resource("get", "", "api", "", "")));
}

TEST(Rbac, ForbiddenMessagesAreKubeApiserversWords) {
    EXPECT_EQ(forbidden_message(user("bob"), on_resource("list", "", "configmaps", "other")),
              "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API "
              "group \"\" in the namespace \"other\"");
    EXPECT_EQ(forbidden_message(user("bob"), on_resource("patch", "kopf.dev", "kopfexamples",
                                                         "default", "kopf-example-1", "status")),
              "kopfexamples.kopf.dev \"kopf-example-1\" is forbidden: User \"bob\" cannot patch "
              "resource \"kopfexamples/status\" in API group \"kopf.dev\" in the namespace "
              "\"default\"");
    EXPECT_EQ(forbidden_message(user("bob"), on_resource("watch", "", "namespaces", "")),
              "namespaces is forbidden: User \"bob\" cannot watch resource \"namespaces\" in API "
              "group \"\" at the cluster scope");
    EXPECT_EQ(forbidden_message(user("bob"), on_path("get", "/metrics")),
              "forbidden: User \"bob\" cannot get path \"/metrics\"");
}

}  // namespace
}  // namespace kopf::apiserver::core
