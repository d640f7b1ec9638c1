#include "cli/rbac.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>

#include "cli/plugins.hpp"
#include "core/reactor/namespaces.hpp"

namespace kopf::runtime {

namespace {

using json = nlohmann::json;

structs::Resource builtin(std::string group, std::string version, std::string plural,
                          std::string kind, bool namespaced,
                          std::set<std::string> subresources = {},
                          std::set<std::string> shortcuts = {}) {
    structs::Resource r;
    r.group = std::move(group);
    r.version = std::move(version);
    r.plural = std::move(plural);
    r.kind = std::move(kind);
    r.singular = r.kind;
    for (char& c : r.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.namespaced = namespaced;
    r.subresources = std::move(subresources);
    r.shortcuts = std::move(shortcuts);
    r.verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
    return r;
}

json yaml_to_json(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map: {
            json object = json::object();
            for (const auto& item : node)
                object[item.first.as<std::string>()] = yaml_to_json(item.second);
            return object;
        }
        case YAML::NodeType::Sequence: {
            json array = json::array();
            for (const auto& item : node) array.push_back(yaml_to_json(item));
            return array;
        }
        case YAML::NodeType::Scalar: {
            const std::string& text = node.Scalar();
            if (node.Tag() != "!") {  // unquoted: the booleans CRDs use
                if (text == "true") return true;
                if (text == "false") return false;
            }
            return text;
        }
        default:
            return nullptr;
    }
}

// One rule per resource, with why the operator needs it (printed as a comment).
struct Grant {
    std::set<std::string> verbs;
    std::set<std::string> resource_names;
    std::set<std::string> reasons;
};
// (group, resource, limited to resource names) -> grant: a rule limited by names stays apart
// from the same resource's unlimited one (a Lease's create cannot be limited by its name).
using Grants = std::map<std::tuple<std::string, std::string, bool>, Grant>;

void grant(Grants& grants, const std::string& group, const std::string& resource,
           std::set<std::string> verbs, const std::string& reason,
           std::set<std::string> resource_names = {}) {
    auto& g = grants[{group, resource, !resource_names.empty()}];
    g.verbs.insert(verbs.begin(), verbs.end());
    g.resource_names.insert(resource_names.begin(), resource_names.end());
    g.reasons.insert(reason);
}

std::string quoted(const std::string& text) {
    return json(text).dump();
}

std::string flow_list(const std::set<std::string>& items) {
    std::string out = "[";
    for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + quoted(item);
    return out + "]";
}

std::string rules_yaml(const Grants& grants) {
    std::string out = "rules:\n";
    for (const auto& [key, g] : grants) {
        std::string reasons;
        for (const auto& r : g.reasons) reasons += (reasons.empty() ? "" : "; ") + r;
        out += "# " + reasons + "\n";
        out += "- apiGroups: " + flow_list({std::get<0>(key)}) + "\n";
        out += "  resources: " + flow_list({std::get<1>(key)}) + "\n";
        if (!g.resource_names.empty())
            out += "  resourceNames: " + flow_list(g.resource_names) + "\n";
        out += "  verbs: " + flow_list(g.verbs) + "\n";
    }
    return out;
}

std::string subjects_yaml(const std::string& name, const std::string& ns) {
    return "subjects:\n- kind: ServiceAccount\n  name: " + quoted(name) +
           "\n  namespace: " + quoted(ns) + "\n";
}

std::string handler_kinds(bool changing, bool spawning, bool watching, bool indexing) {
    std::vector<std::string> kinds;
    if (changing) kinds.emplace_back("resource-changing handlers");
    if (spawning) kinds.emplace_back("daemons/timers");
    if (watching) kinds.emplace_back("event handlers");
    if (indexing) kinds.emplace_back("indices");
    return fmt::format("{}", fmt::join(kinds, ", "));
}

}  // namespace

std::vector<structs::Resource> builtin_resources() {
    const std::set<std::string> status{"status"};
    const std::set<std::string> status_scale{"status", "scale"};
    return {
        builtin("", "v1", "pods", "Pod", true, status, {"po"}),
        builtin("", "v1", "services", "Service", true, status, {"svc"}),
        builtin("", "v1", "configmaps", "ConfigMap", true, {}, {"cm"}),
        builtin("", "v1", "secrets", "Secret", true),
        builtin("", "v1", "serviceaccounts", "ServiceAccount", true, {}, {"sa"}),
        builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, status, {"pvc"}),
        builtin("", "v1", "persistentvolumes", "PersistentVolume", false, status, {"pv"}),
        builtin("", "v1", "endpoints", "Endpoints", true, {}, {"ep"}),
        builtin("", "v1", "events", "Event", true, {}, {"ev"}),
        builtin("", "v1", "namespaces", "Namespace", false, status, {"ns"}),
        builtin("", "v1", "nodes", "Node", false, status, {"no"}),
        builtin("apps", "v1", "deployments", "Deployment", true, status_scale, {"deploy"}),
        builtin("apps", "v1", "statefulsets", "StatefulSet", true, status_scale, {"sts"}),
        builtin("apps", "v1", "daemonsets", "DaemonSet", true, status, {"ds"}),
        builtin("apps", "v1", "replicasets", "ReplicaSet", true, status_scale, {"rs"}),
        builtin("batch", "v1", "jobs", "Job", true, status),
        builtin("batch", "v1", "cronjobs", "CronJob", true, status, {"cj"}),
        builtin("networking.k8s.io", "v1", "ingresses", "Ingress", true, status, {"ing"}),
        builtin("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, status,
                {"pdb"}),
        builtin("coordination.k8s.io", "v1", "leases", "Lease", true),
        builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", false, status, {"crd", "crds"}),
        builtin("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                "ValidatingWebhookConfiguration", false),
        builtin("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration", false),
        builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
        builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
        builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
        builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
                false),
    };
}

std::vector<structs::Resource> resources_of_crd_file(const std::string& path) {
    std::vector<YAML::Node> documents;
    try {
        documents = YAML::LoadAllFromFile(path);
    } catch (const YAML::Exception& e) {
        throw std::runtime_error(fmt::format("Cannot read the CRDs in '{}': {}", path, e.what()));
    }
    std::vector<structs::Resource> out;
    for (const auto& document : documents) {
        const json crd = yaml_to_json(document);
        if (!crd.is_object() || crd.value("kind", "") != "CustomResourceDefinition") continue;
        const json spec = crd.value("spec", json::object());
        const json names = spec.value("names", json::object());
        if (!spec.is_object() || !names.is_object() || !spec.contains("group") ||
            !names.contains("plural") || !spec.contains("versions") ||
            !spec["versions"].is_array()) {
            throw std::runtime_error(fmt::format(
                "'{}' has a CustomResourceDefinition without spec.group, spec.names.plural or "
                "spec.versions",
                path));
        }
        for (const auto& version : spec["versions"]) {
            if (!version.is_object() || !version.value("served", true)) continue;
            structs::Resource r;
            r.group = spec.value("group", "");
            r.version = version.value("name", "");
            r.plural = names.value("plural", "");
            r.kind = names.value("kind", "");
            r.singular = names.value("singular", "");
            for (const auto& s : names.value("shortNames", json::array())) r.shortcuts.insert(s);
            for (const auto& c : names.value("categories", json::array())) r.categories.insert(c);
            const json sub = version.value("subresources", json::object());
            if (sub.is_object() && sub.contains("status")) r.subresources.insert("status");
            if (sub.is_object() && sub.contains("scale")) r.subresources.insert("scale");
            r.namespaced = spec.value("scope", "Namespaced") == "Namespaced";
            r.preferred = version.value("storage", false);
            r.verbs = {"create", "delete", "deletecollection", "get",
                       "list",   "patch",  "update",           "watch"};
            out.push_back(std::move(r));
        }
    }
    return out;
}

std::string generate_rbac(const Registry& registry, const RbacOptions& options,
                          const std::vector<structs::Resource>& known) {
    const NamespaceScope scope =
        NamespaceScope::from_options(options.all_namespaces, options.namespaces);
    // Namespaced grants go to a Role in each namespace when all are plain names; with -A or
    // patterns, the namespaces are not known in advance, so they go to the ClusterRole.
    const bool per_namespace = !scope.clusterwide && scope.all_specific();
    const std::vector<std::string> namespaces =
        per_namespace ? scope.specific_namespaces() : std::vector<std::string>{};
    const std::string account_ns = !options.service_account_namespace.empty()
                                       ? options.service_account_namespace
                                   : !namespaces.empty() ? namespaces.front()
                                                         : "default";
    Grants cluster, namespaced;
    std::map<std::string, Grants> extra_roles;  // namespace -> grants beyond the scope's
    auto scoped = [&](bool is_namespaced) -> Grants& {
        return is_namespaced && per_namespace ? namespaced : cluster;
    };

    // The handlers' resources, resolved as the operator resolves them.
    struct Use {
        bool changing = false, spawning = false, watching = false, indexing = false;
    };
    std::map<structs::Resource, Use> uses;
    auto resolve = [&](const Selector& selector, bool Use::*kind) {
        const auto matching = structs::from_public(selector).select(known);
        if (matching.empty()) {
            throw std::invalid_argument(fmt::format(
                "The resource {} of a handler is not a built-in resource: give its "
                "CustomResourceDefinition with --crd FILE.yaml so that kopf rbac knows its group "
                "and scope.",
                selector.repr()));
        }
        for (const auto& r : matching) uses[r].*kind = true;
    };
    for (const auto& h : registry.changing)
        if (h.has_selector) resolve(h.selector, &Use::changing);
    for (const auto& h : registry.spawning) resolve(h.selector, &Use::spawning);
    for (const auto& h : registry.watching) resolve(h.selector, &Use::watching);
    for (const auto& h : registry.indexing) resolve(h.selector, &Use::indexing);

    for (const auto& [r, use] : uses) {
        const bool writes = use.changing || use.spawning;
        const std::string why =
            r.plural + (r.group.empty() ? "" : "." + r.group) + ": " +
            handler_kinds(use.changing, use.spawning, use.watching, use.indexing);
        std::set<std::string> verbs{"list", "watch"};
        if (writes) verbs.insert("patch");  // progress, finalizers, the diff base
        grant(scoped(r.namespaced), r.group, r.plural, verbs, why);
        if (writes && r.subresources.count("status"))
            grant(scoped(r.namespaced), r.group, r.plural + "/status", {"patch"},
                  why + " (handler results and status progress go to the status subresource)");
    }

    // The framework's own needs.
    grant(scoped(true), "", "events", {"create"},
          "events: kopf::event/info/warn/exception in handlers, and log lines with "
          "settings.posting.loggers");
    grant(cluster, "apiextensions.k8s.io", "customresourcedefinitions", {"list", "watch"},
          "customresourcedefinitions: resources appearing and going while the operator runs");
    if (!scope.clusterwide && !scope.all_specific())
        grant(cluster, "", "namespaces", {"list", "watch"},
              "namespaces: the namespaces matching the -n patterns");
    if (!options.standalone) {
        if (scope.clusterwide) {
            grant(cluster, "kopf.dev", "clusterkopfpeerings", {"list", "watch", "patch"},
                  "clusterkopfpeerings: peering with other operators (kopf run --standalone "
                  "needs none)");
        } else {
            grant(scoped(true), "kopf.dev", "kopfpeerings", {"list", "watch", "patch"},
                  "kopfpeerings: peering with other operators (kopf run --standalone needs none)");
        }
    }
    if (!options.lease.empty()) {
        auto& role = extra_roles[options.lease_namespace];
        const std::string why = "leases: the active/standby Lease '" + options.lease + "'";
        grant(role, "coordination.k8s.io", "leases", {"get", "update"}, why, {options.lease});
        grant(role, "coordination.k8s.io", "leases", {"create"}, why);
    }
    if (!registry.webhooks.empty()) {
        for (const char* plural :
             {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"})
            grant(cluster, "admissionregistration.k8s.io", plural, {"create", "patch"},
                  std::string(plural) +
                      ": admission handlers' managed configuration (settings.admission.managed; "
                      "not needed without it)");
    }
    for (const auto& text : options.extra_rules) {
        const auto slash = text.find('/');
        const auto equals = text.find('=');
        if (slash == std::string::npos || equals == std::string::npos || equals < slash ||
            equals + 1 == text.size() || equals == slash + 1) {
            throw std::invalid_argument(
                fmt::format("Invalid --rule '{}': expected GROUP/RESOURCE=VERB[,VERB...], e.g. "
                            "apps/deployments=get,list or /configmaps=create (core group).",
                            text));
        }
        const std::string group = text.substr(0, slash);
        const std::string resource = text.substr(slash + 1, equals - slash - 1);
        std::set<std::string> verbs;
        for (std::size_t start = equals + 1; start <= text.size();) {
            auto comma = text.find(',', start);
            if (comma == std::string::npos) comma = text.size();
            if (comma > start) verbs.insert(text.substr(start, comma - start));
            start = comma + 1;
        }
        bool is_namespaced = true;
        const std::string base = resource.substr(0, resource.find('/'));
        for (const auto& r : known)
            if (r.group == group && r.plural == base) is_namespaced = r.namespaced;
        grant(scoped(is_namespaced), group, resource, verbs, resource + ": --rule " + text);
    }

    std::string out;
    const std::string header =
        "# Generated by kopf rbac: what the operator's handlers and options need, and no more.\n"
        "# Calls that handlers make through kopf::Api are not known here: add them with "
        "--rule.\n";
    out += header;
    out += "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + quoted(options.name) +
           "\n  namespace: " + quoted(account_ns) + "\n";
    if (!cluster.empty()) {
        out +=
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n"
            "  name: " +
            quoted(options.name) + "\n" + rules_yaml(cluster);
        out +=
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
            "metadata:\n  name: " +
            quoted(options.name) +
            "\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
            "  name: " +
            quoted(options.name) + "\n" + subjects_yaml(options.name, account_ns);
    }
    std::map<std::string, Grants> roles = std::move(extra_roles);
    for (const auto& ns : namespaces)
        for (const auto& [key, g] : namespaced) {
            auto& target = roles[ns][key];
            target.verbs.insert(g.verbs.begin(), g.verbs.end());
            target.resource_names.insert(g.resource_names.begin(), g.resource_names.end());
            target.reasons.insert(g.reasons.begin(), g.reasons.end());
        }
    for (const auto& [ns, grants] : roles) {
        const std::string rules = rules_yaml(grants);
        out += "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: " +
               quoted(options.name) + "\n  namespace: " + quoted(ns) + "\n" + rules;
        out +=
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n"
            "  name: " +
            quoted(options.name) + "\n  namespace: " + quoted(ns) +
            "\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: " +
            quoted(options.name) + "\n" + subjects_yaml(options.name, account_ns);
    }
    return out;
}

int rbac_command(const std::vector<std::string>& paths, const RbacOptions& options) {
    auto fail = [](const std::string& message) {
        std::fprintf(stderr, "kopf rbac: %s\n", message.c_str());
        return 1;
    };
    if (paths.empty()) return fail("Pass the operator's code: kopf rbac operator.cpp -n NS.");
    try {
        std::vector<structs::Resource> known = builtin_resources();
        for (const auto& file : options.crd_files) {
            auto crds = resources_of_crd_file(file);
            known.insert(known.end(), crds.begin(), crds.end());
        }
        PluginCompiler compiler;
        compiler.quiet = true;
        load_operator_files(paths, compiler);
        const std::string manifests = generate_rbac(Registry::default_registry(), options, known);
        std::fputs(manifests.c_str(), stdout);
        return 0;
    } catch (const std::exception& error) {
        return fail(error.what());
    }
}

}  // namespace kopf::runtime
