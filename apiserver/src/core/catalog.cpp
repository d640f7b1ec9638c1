// The catalog: built-in kinds with their real scope, verbs, short names and
// categories, and resources published from CustomResourceDefinitions.
#include <algorithm>
#include <regex>

#include "core/engine.hpp"
#include "util/schema.hpp"
#include "util/validation.hpp"

namespace kopf::apiserver::core {

const ResourceVersion* Resource::version(const std::string& v) const {
    for (const auto& rv : versions)
        if (rv.name == v) return &rv;
    return nullptr;
}

const ResourceVersion& Resource::storage_version() const {
    for (const auto& rv : versions)
        if (rv.storage) return rv;
    return versions.front();
}

bool Resource::has_status(const std::string& v) const {
    const ResourceVersion* rv = version(v);
    return rv ? rv->status_subresource : false;
}

namespace {

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};

ResourcePtr builtin(std::string group, std::string version, std::string plural, std::string kind,
                    bool namespaced, std::vector<std::string> short_names = {},
                    std::vector<std::string> categories = {}, bool status = false) {
    auto r = std::make_shared<Resource>();
    r->group = std::move(group);
    r->plural = std::move(plural);
    r->kind = std::move(kind);
    r->singular = r->kind;
    std::transform(r->singular.begin(), r->singular.end(), r->singular.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    r->list_kind = r->kind + "List";
    r->namespaced = namespaced;
    r->short_names = std::move(short_names);
    r->categories = std::move(categories);
    r->verbs = kAllVerbs;
    ResourceVersion v;
    v.name = std::move(version);
    v.storage = true;
    v.status_subresource = status;
    r->versions.push_back(std::move(v));
    r->storage_key = r->group + "/" + r->plural;
    return r;
}

}  // namespace

std::vector<ResourcePtr> builtin_resources() {
    std::vector<ResourcePtr> out;
    auto ns = builtin("", "v1", "namespaces", "Namespace", false, {"ns"}, {}, true);
    ns->verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    ns->name_rule = "label";
    ns->return_deleted_object = true;
    ns->extra_subresources = {{"finalize", {"update"}}};
    out.push_back(ns);

    auto pods = builtin("", "v1", "pods", "Pod", true, {"po"}, {"all"}, true);
    pods->return_deleted_object = true;
    out.push_back(pods);
    out.push_back(builtin("", "v1", "configmaps", "ConfigMap", true, {"cm"}));
    out.push_back(builtin("", "v1", "secrets", "Secret", true));
    auto svc = builtin("", "v1", "services", "Service", true, {"svc"}, {"all"}, true);
    svc->name_rule = "label";
    svc->return_deleted_object = true;
    out.push_back(svc);
    out.push_back(builtin("", "v1", "serviceaccounts", "ServiceAccount", true, {"sa"}));
    out.push_back(builtin("", "v1", "resourcequotas", "ResourceQuota", true, {"quota"}, {}, true));

    auto core_events = builtin("", "v1", "events", "Event", true, {"ev"});
    core_events->storage_key = "/events";
    core_events->name_rule = "";  // legacy core events skip name validation
    out.push_back(core_events);
    auto events = builtin("events.k8s.io", "v1", "events", "Event", true, {"ev"});
    events->storage_key = "/events";
    out.push_back(events);

    out.push_back(builtin("coordination.k8s.io", "v1", "leases", "Lease", true));

    for (auto [plural, kind, shortname] : {std::tuple{"deployments", "Deployment", "deploy"},
                                           std::tuple{"replicasets", "ReplicaSet", "rs"}}) {
        auto r = builtin("apps", "v1", plural, kind, true, {shortname}, {"all"}, true);
        r->has_generation = true;
        r->versions[0].scale = {{"specReplicasPath", ".spec.replicas"},
                                {"statusReplicasPath", ".status.replicas"},
                                {"labelSelectorPath", ".status.selector"}};
        out.push_back(r);
    }

    // Stored as they are (no controllers run them), so that `kubectl create job|cronjob|ingress|
    // poddisruptionbudget|priorityclass` and operators watching these kinds have them.
    for (auto [group, plural, kind, shortname] :
         {std::tuple{"batch", "jobs", "Job", ""}, std::tuple{"batch", "cronjobs", "CronJob", "cj"},
          std::tuple{"networking.k8s.io", "ingresses", "Ingress", "ing"},
          std::tuple{"policy", "poddisruptionbudgets", "PodDisruptionBudget", "pdb"}}) {
        std::vector<std::string> short_names;
        if (*shortname) short_names.emplace_back(shortname);
        std::vector<std::string> categories;
        if (std::string_view(group) == "batch") categories.emplace_back("all");
        auto r = builtin(group, "v1", plural, kind, true, short_names, categories, true);
        r->has_generation = true;
        out.push_back(r);
    }
    out.push_back(
        builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, {"pc"}));

    for (auto [plural, kind, namespaced] :
         {std::tuple{"roles", "Role", true}, std::tuple{"rolebindings", "RoleBinding", true},
          std::tuple{"clusterroles", "ClusterRole", false},
          std::tuple{"clusterrolebindings", "ClusterRoleBinding", false}})
        out.push_back(builtin("rbac.authorization.k8s.io", "v1", plural, kind, namespaced));

    auto crds =
        builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", false, {"crd", "crds"}, {"api-extensions"}, true);
    crds->has_generation = true;
    out.push_back(crds);
    for (auto [plural, kind] :
         {std::pair{"mutatingwebhookconfigurations", "MutatingWebhookConfiguration"},
          std::pair{"validatingwebhookconfigurations", "ValidatingWebhookConfiguration"}}) {
        auto r = builtin("admissionregistration.k8s.io", "v1", plural, kind, false, {},
                         {"api-extensions"});
        r->has_generation = true;
        out.push_back(r);
    }
    return out;
}

int kube_version_priority_compare(const std::string& a, const std::string& b) {
    static const std::regex re(R"(^v(\d+)(?:(alpha|beta)(\d+))?$)");
    auto rank = [](const std::string& v, std::smatch& m) -> std::tuple<int, long, long> {
        if (!std::regex_match(v, m, re)) return {0, 0, 0};
        int stability = !m[2].matched ? 3 : m[2] == "beta" ? 2 : 1;
        long major = std::stol(m[1]);
        long minor = m[3].matched ? std::stol(m[3]) : 0;
        return {stability, major, minor};
    };
    std::smatch ma, mb;
    auto ra = rank(a, ma), rb = rank(b, mb);
    if (ra != rb) return ra > rb ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
}

namespace {

bool is_dns1035_label(const std::string& s) {
    static const std::regex re("^[a-z]([-a-z0-9]*[a-z0-9])?$");
    return s.size() <= 63 && std::regex_match(s, re);
}

}  // namespace

void default_crd(json& crd) {
    json& spec = crd["spec"];
    if (!spec.is_object()) return;
    json& names = spec["names"];
    if (names.is_object() && names.contains("kind") && names["kind"].is_string()) {
        if (!names.contains("singular") || names["singular"] == "")
            names["singular"] = lower(names["kind"].get<std::string>());
        if (!names.contains("listKind") || names["listKind"] == "")
            names["listKind"] = names["kind"].get<std::string>() + "List";
    }
    if (!spec.contains("conversion")) spec["conversion"] = {{"strategy", "None"}};
}

json validate_crd(const json& crd) {
    json causes = json::array();
    auto invalid = [&](const std::string& field, const json& value, const std::string& why) {
        causes.push_back(
            cause("FieldValueInvalid", field, "Invalid value: " + value.dump() + ": " + why));
    };
    auto required = [&](const std::string& field, const std::string& why = "") {
        causes.push_back(
            cause("FieldValueRequired", field, "Required value" + (why.empty() ? "" : ": " + why)));
    };
    const json& spec =
        crd.contains("spec") && crd["spec"].is_object() ? crd["spec"] : json::object();
    std::string group = spec.value("group", "");
    const json names =
        spec.contains("names") && spec["names"].is_object() ? spec["names"] : json::object();
    std::string plural = names.contains("plural") && names["plural"].is_string()
                             ? names["plural"].get<std::string>()
                             : "";
    std::string name = crd["metadata"].value("name", "");
    if (name != plural + "." + group)
        invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group");
    if (group.empty()) {
        required("spec.group");
    } else if (group.find('.') == std::string::npos) {
        invalid("spec.group", group, "should be a domain with at least one dot");
    } else if (!validate_dns1123_subdomain(group).empty()) {
        invalid("spec.group", group, validate_dns1123_subdomain(group).front());
    }
    std::string scope = spec.value("scope", "");
    if (scope.empty())
        required("spec.scope");
    else if (scope != "Namespaced" && scope != "Cluster")
        causes.push_back(cause(
            "FieldValueNotSupported", "spec.scope",
            "Unsupported value: \"" + scope + "\": supported values: \"Cluster\", \"Namespaced\""));
    if (plural.empty())
        required("spec.names.plural");
    else if (!is_dns1035_label(plural))
        invalid("spec.names.plural", plural,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character");
    std::string singular = names.value("singular", "");
    if (!singular.empty() && !is_dns1035_label(singular))
        invalid("spec.names.singular", singular,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character");
    std::string kind = names.value("kind", "");
    if (kind.empty())
        required("spec.names.kind");
    else if (!is_dns1035_label(lower(kind)))
        invalid("spec.names.kind", kind,
                "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?");
    std::string list_kind = names.value("listKind", "");
    if (!list_kind.empty() && !is_dns1035_label(lower(list_kind)))
        invalid("spec.names.listKind", list_kind,
                "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?");
    if (names.contains("shortNames") && names["shortNames"].is_array()) {
        for (std::size_t i = 0; i < names["shortNames"].size(); ++i) {
            const json& sn = names["shortNames"][i];
            if (!sn.is_string() || !is_dns1035_label(sn.get<std::string>()))
                invalid("spec.names.shortNames[" + std::to_string(i) + "]", sn,
                        "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                        "characters or '-', and must start and end with an alphanumeric "
                        "character");
        }
    }
    const json versions =
        spec.contains("versions") && spec["versions"].is_array() ? spec["versions"] : json::array();
    if (versions.empty()) {
        required("spec.versions", "must have exactly one version marked as storage version");
    } else {
        int storage = 0;
        std::set<std::string> seen;
        for (std::size_t i = 0; i < versions.size(); ++i) {
            const json& v = versions[i];
            std::string p = "spec.versions[" + std::to_string(i) + "]";
            std::string vname = v.is_object() ? v.value("name", "") : "";
            if (vname.empty())
                required(p + ".name");
            else if (!is_dns1035_label(vname))
                invalid(p + ".name", vname,
                        "a DNS-1035 label must consist of lower case alphanumeric characters or "
                        "'-', start with an alphabetic character, and end with an alphanumeric "
                        "character");
            else if (!seen.insert(vname).second)
                causes.push_back(cause("FieldValueDuplicate", p + ".name",
                                       "Duplicate value: \"" + vname + "\""));
            if (v.is_object() && v.value("storage", false)) ++storage;
            const json* schema = nullptr;
            if (v.is_object() && v.contains("schema") && v["schema"].is_object() &&
                v["schema"].contains("openAPIV3Schema"))
                schema = &v["schema"]["openAPIV3Schema"];
            if (!schema || !schema->is_object()) {
                required(p + ".schema.openAPIV3Schema", "schemas are required");
                continue;
            }
            if (schema->value("type", "") != "object")
                causes.push_back(
                    cause("FieldValueInvalid", p + ".schema.openAPIV3Schema.type",
                          "Unsupported value: " + schema->value("type", json("")).dump() +
                              ": supported values: \"object\""));
            for (const auto& e : validate_structural_schema(*schema, p + ".schema.openAPIV3Schema"))
                causes.push_back(
                    cause(e.reason.empty() ? "FieldValueInvalid" : e.reason, e.field, e.message));
            for (const auto& e : check_validation_rules(*schema, p + ".schema.openAPIV3Schema"))
                causes.push_back(
                    cause(e.reason.empty() ? "FieldValueInvalid" : e.reason, e.field, e.message));
        }
        if (storage != 1)
            invalid("spec.versions",
                    versions.size() > 3            ? json("...")
                    : versions.dump().size() > 200 ? json("...")
                                                   : versions,
                    "must have exactly one version marked as storage version");
    }
    return causes;
}

ResourcePtr resource_from_crd(const json& crd) {
    auto r = std::make_shared<Resource>();
    const json& spec = crd["spec"];
    const json& names = crd.contains("status") && crd["status"].contains("acceptedNames") &&
                                crd["status"]["acceptedNames"].contains("plural")
                            ? crd["status"]["acceptedNames"]
                            : spec["names"];
    r->group = spec.value("group", "");
    r->plural = names.value("plural", "");
    r->kind = names.value("kind", "");
    r->singular = names.value("singular", lower(r->kind));
    r->list_kind = names.value("listKind", r->kind + "List");
    if (names.contains("shortNames"))
        r->short_names = names["shortNames"].get<std::vector<std::string>>();
    if (names.contains("categories"))
        r->categories = names["categories"].get<std::vector<std::string>>();
    r->namespaced = spec.value("scope", "Namespaced") == "Namespaced";
    r->verbs = {"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"};
    r->builtin = false;
    r->has_generation = true;
    r->unconditional_update = false;
    r->crd_name = crd["metadata"].value("name", "");
    r->storage_key = r->group + "/" + r->plural;
    r->terminating = crd["metadata"].contains("deletionTimestamp");
    if (r->terminating) r->verbs = {"delete", "deletecollection", "get", "list", "watch"};
    for (const auto& v : spec["versions"]) {
        if (!v.value("served", true) && !v.value("storage", false)) continue;
        ResourceVersion rv;
        rv.name = v.value("name", "");
        rv.storage = v.value("storage", false);
        if (v.contains("schema") && v["schema"].contains("openAPIV3Schema"))
            rv.schema = v["schema"]["openAPIV3Schema"];
        rv.printer_columns = v.value("additionalPrinterColumns", json::array());
        if (v.contains("subresources") && v["subresources"].is_object()) {
            rv.status_subresource = v["subresources"].contains("status");
            if (v["subresources"].contains("scale")) rv.scale = v["subresources"]["scale"];
        }
        rv.selectable_fields = v.value("selectableFields", json::array());
        rv.served = v.value("served", true);
        r->versions.push_back(std::move(rv));
    }
    return r;
}

void Engine::register_resource(const ResourcePtr& res) {
    for (const auto& v : res->versions)
        if (v.served) endpoints_[res->group + "/" + v.name + "/" + res->plural] = res;
}

void Engine::unregister_crd(const std::string& crd_name) {
    auto it = crd_resources_.find(crd_name);
    if (it == crd_resources_.end()) return;
    for (auto e = endpoints_.begin(); e != endpoints_.end();)
        e = e->second == it->second ? endpoints_.erase(e) : std::next(e);
    crd_resources_.erase(it);
}

void Engine::sync_crd(const json& crd) {
    std::string name = crd["metadata"].value("name", "");
    unregister_crd(name);
    if (!crd.contains("status")) return;
    bool accepted = false;
    for (const auto& c : crd["status"].value("conditions", json::array()))
        if ((c.value("type", "") == "Established" || c.value("type", "") == "NamesAccepted") &&
            c.value("status", "") == "True")
            accepted = true;
    if (!accepted) return;
    auto res = resource_from_crd(crd);
    crd_resources_[name] = res;
    register_resource(res);
}

ResourcePtr Engine::find_endpoint(const std::string& group, const std::string& version,
                                  const std::string& plural) const {
    auto it = endpoints_.find(group + "/" + version + "/" + plural);
    return it == endpoints_.end() ? nullptr : it->second;
}

ResourcePtr Engine::find_by_kind(const std::string& group_version, const std::string& kind) const {
    std::string group, version = group_version;
    if (auto p = group_version.find('/'); p != std::string::npos) {
        group = group_version.substr(0, p);
        version = group_version.substr(p + 1);
    }
    for (const auto& [key, res] : endpoints_)
        if (res->group == group && res->kind == kind && res->version(version)) return res;
    return nullptr;
}

std::vector<ResourcePtr> Engine::all_resources() const {
    std::vector<ResourcePtr> out = builtins_;
    for (const auto& [name, res] : crd_resources_) out.push_back(res);
    return out;
}

}  // namespace kopf::apiserver::core
