#include "core/rbac.hpp"

#include <algorithm>

namespace kopf::apiserver::core {

using json = nlohmann::json;

namespace {

constexpr const char* kRbacGroup = "rbac.authorization.k8s.io";

bool contains(const json& list, const std::string& value) {
    if (!list.is_array()) return false;
    return std::any_of(list.begin(), list.end(),
                       [&](const json& item) { return item.is_string() && item == value; });
}

bool matches_or_all(const json& list, const std::string& value) {
    return contains(list, "*") || contains(list, value);
}

std::string string_at(const json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool resource_matches(const json& rule_resources, const RequestAttributes& request) {
    if (!rule_resources.is_array()) return false;
    const std::string combined = request.subresource.empty()
                                     ? request.resource
                                     : request.resource + "/" + request.subresource;
    for (const auto& item : rule_resources) {
        if (!item.is_string()) continue;
        const auto& rule = item.get_ref<const std::string&>();
        if (rule == "*" || rule == combined) return true;
        if (!request.subresource.empty() && rule == "*/" + request.subresource) return true;
    }
    return false;
}

bool url_matches(const json& rule_urls, const std::string& path) {
    if (!rule_urls.is_array()) return false;
    for (const auto& item : rule_urls) {
        if (!item.is_string()) continue;
        const auto& rule = item.get_ref<const std::string&>();
        if (rule == "*" || rule == path) return true;
        if (!rule.empty() && rule.back() == '*' &&
            path.compare(0, rule.size() - 1, rule, 0, rule.size() - 1) == 0)
            return true;
    }
    return false;
}

bool rule_allows(const json& rule, const RequestAttributes& request) {
    if (!rule.is_object() || !matches_or_all(rule.value("verbs", json()), request.verb))
        return false;
    if (!request.resource_request)
        return url_matches(rule.value("nonResourceURLs", json()), request.path);
    if (!matches_or_all(rule.value("apiGroups", json()), request.group)) return false;
    if (!resource_matches(rule.value("resources", json()), request)) return false;
    const json names = rule.value("resourceNames", json::array());
    return !names.is_array() || names.empty() ||
           (!request.name.empty() && contains(names, request.name));
}

bool subject_matches(const json& subject, const UserInfo& user, const std::string& binding_ns) {
    if (!subject.is_object()) return false;
    const std::string kind = string_at(subject, "kind");
    const std::string name = string_at(subject, "name");
    if (kind == "User") return !user.anonymous && user.name == name;
    if (kind == "Group")
        return std::find(user.groups.begin(), user.groups.end(), name) != user.groups.end();
    if (kind == "ServiceAccount") {
        std::string ns = string_at(subject, "namespace");
        if (ns.empty()) ns = binding_ns;
        return user.name == "system:serviceaccount:" + ns + ":" + name;
    }
    return false;
}

bool binding_applies(const json& binding, const UserInfo& user) {
    const std::string ns = string_at(binding.value("metadata", json::object()), "namespace");
    const json subjects = binding.value("subjects", json::array());
    if (!subjects.is_array()) return false;
    return std::any_of(subjects.begin(), subjects.end(),
                       [&](const json& subject) { return subject_matches(subject, user, ns); });
}

// The rules of the role a binding refers to (none when it is absent or malformed).
const json* bound_rules(const json& binding, const RbacObjects& objects) {
    const json ref = binding.value("roleRef", json::object());
    if (!ref.is_object() || string_at(ref, "apiGroup") != kRbacGroup) return nullptr;
    const std::string kind = string_at(ref, "kind");
    const std::string name = string_at(ref, "name");
    const json* role = nullptr;
    if (kind == "ClusterRole") {
        role = objects.cluster_role(name);
    } else if (kind == "Role") {
        const std::string ns = string_at(binding.value("metadata", json::object()), "namespace");
        if (!ns.empty()) role = objects.role(ns, name);
    }
    if (!role) return nullptr;
    auto rules = role->find("rules");
    return rules != role->end() && rules->is_array() ? &*rules : nullptr;
}

bool any_rule_allows(const json* rules, const RequestAttributes& request) {
    if (!rules) return false;
    return std::any_of(rules->begin(), rules->end(),
                       [&](const json& rule) { return rule_allows(rule, request); });
}

json rule(json verbs, json groups, json resources) {
    return {{"verbs", std::move(verbs)},
            {"apiGroups", std::move(groups)},
            {"resources", std::move(resources)}};
}

json url_rule(json verbs, json urls) {
    return {{"verbs", std::move(verbs)}, {"nonResourceURLs", std::move(urls)}};
}

json bootstrap_metadata(const std::string& name) {
    return {{"name", name},
            {"labels", {{"kubernetes.io/bootstrapping", "rbac-defaults"}}},
            {"annotations", {{"rbac.authorization.kubernetes.io/autoupdate", "true"}}}};
}

json cluster_role(const std::string& name, json rules) {
    return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
            {"kind", "ClusterRole"},
            {"metadata", bootstrap_metadata(name)},
            {"rules", std::move(rules)}};
}

json cluster_role_binding(const std::string& name, json groups) {
    json subjects = json::array();
    for (const auto& group : groups)
        subjects.push_back({{"apiGroup", kRbacGroup}, {"kind", "Group"}, {"name", group}});
    return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
            {"kind", "ClusterRoleBinding"},
            {"metadata", bootstrap_metadata(name)},
            {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", "ClusterRole"}, {"name", name}}},
            {"subjects", std::move(subjects)}};
}

}  // namespace

bool rbac_allows(const UserInfo& user, const RequestAttributes& request,
                 const RbacObjects& objects) {
    // As kube-apiserver: system:masters passes every authorizer.
    if (std::find(user.groups.begin(), user.groups.end(), "system:masters") != user.groups.end())
        return true;
    for (const json* binding : objects.cluster_role_bindings) {
        if (binding_applies(*binding, user) &&
            any_rule_allows(bound_rules(*binding, objects), request))
            return true;
    }
    // Role bindings grant only within their own namespace, and never non-resource URLs.
    if (!request.resource_request || request.ns.empty()) return false;
    for (const json* binding : objects.role_bindings) {
        if (binding_applies(*binding, user) &&
            any_rule_allows(bound_rules(*binding, objects), request))
            return true;
    }
    return false;
}

std::string forbidden_message(const UserInfo& user, const RequestAttributes& request) {
    if (!request.resource_request)
        return "forbidden: User \"" + user.name + "\" cannot " + request.verb + " path \"" +
               request.path + "\"";
    const std::string qualified =
        request.group.empty() ? request.resource : request.resource + "." + request.group;
    std::string message = qualified;
    if (!request.name.empty()) message += " \"" + request.name + "\"";
    const std::string resource = request.subresource.empty()
                                     ? request.resource
                                     : request.resource + "/" + request.subresource;
    message += " is forbidden: User \"" + user.name + "\" cannot " + request.verb + " resource \"" +
               resource + "\" in API group \"" + request.group + "\"";
    message +=
        request.ns.empty() ? " at the cluster scope" : " in the namespace \"" + request.ns + "\"";
    return message;
}

std::vector<json> bootstrap_cluster_roles() {
    const json all = json::array({"*"});
    const json read = json::array({"get"});
    return {
        cluster_role("cluster-admin",
                     json::array({rule(all, all, all), url_rule(all, json::array({"*"}))})),
        cluster_role(
            "system:discovery",
            json::array({url_rule(read, json::array({"/api", "/api/*", "/apis", "/apis/*",
                                                     "/healthz", "/livez", "/openapi", "/openapi/*",
                                                     "/readyz", "/version", "/version/"}))})),
        cluster_role("system:public-info-viewer",
                     json::array({url_rule(read, json::array({"/healthz", "/livez", "/readyz",
                                                              "/version", "/version/"}))})),
    };
}

std::vector<json> bootstrap_cluster_role_bindings() {
    return {
        cluster_role_binding("cluster-admin", json::array({"system:masters"})),
        cluster_role_binding("system:discovery", json::array({"system:authenticated"})),
        cluster_role_binding("system:public-info-viewer",
                             json::array({"system:authenticated", "system:unauthenticated"})),
    };
}

}  // namespace kopf::apiserver::core
