// Kubernetes RBAC authorization (kube-apiserver's --authorization-mode=RBAC): Roles,
// ClusterRoles and their bindings decide whether a user may make a request. The rule
// matching follows Kubernetes' own: verbs, API groups, resources with `*/subresource`,
// resource names, non-resource URLs with a trailing `*`. Aggregated ClusterRoles are not
// evaluated.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/http_types.hpp"

namespace kopf::apiserver::core {

// What a request asks to do, as Kubernetes' authorizers see it.
struct RequestAttributes {
    bool resource_request = false;
    std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection;
                       // for non-resource requests the lower-case HTTP method
    std::string group, resource, subresource, ns, name;  // resource requests
    std::string path;                                    // non-resource requests
};

// The RBAC objects the decision reads, in their stored form. `role` finds a Role by
// namespace and name, `cluster_role` a ClusterRole by name (nullptr when absent).
struct RbacObjects {
    std::vector<const nlohmann::json*> cluster_role_bindings;
    std::vector<const nlohmann::json*> role_bindings;  // of the request's namespace only
    std::function<const nlohmann::json*(const std::string& ns, const std::string& name)> role;
    std::function<const nlohmann::json*(const std::string& name)> cluster_role;
};

bool rbac_allows(const UserInfo& user, const RequestAttributes& request,
                 const RbacObjects& objects);

// The message of kube-apiserver's 403 Status for a denied request, e.g.
// `pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the
// namespace "default"`.
std::string forbidden_message(const UserInfo& user, const RequestAttributes& request);

// The ClusterRoles and ClusterRoleBindings kube-apiserver bootstraps for RBAC that every
// client needs: cluster-admin for system:masters, discovery for authenticated users,
// health and version for everyone.
std::vector<nlohmann::json> bootstrap_cluster_roles();
std::vector<nlohmann::json> bootstrap_cluster_role_bindings();

}  // namespace kopf::apiserver::core
