// `kopf rbac`: the least-privilege RBAC manifests an operator needs, derived from its
// registered handlers and the options it will run with (scope, peering, lease).
#pragma once

#include <kopf/registry.hpp>
#include <string>
#include <vector>

#include "structs/references.hpp"

namespace kopf::runtime {

struct RbacOptions {
    std::string name = "kopf-operator";     // of the ServiceAccount, roles and bindings
    std::string service_account_namespace;  // "": the first -n namespace, else "default"
    std::vector<std::string> namespaces;    // -n patterns
    bool all_namespaces = false;            // -A
    bool standalone = false;                // no peering resources
    std::string peering = "default";        // the peering's name, for resourceNames
    std::string lease;                      // --lease: the Lease competed for
    std::string lease_namespace = "default";
    std::vector<std::string> crd_files;    // the operator's CRDs, to resolve its selectors
    std::vector<std::string> extra_rules;  // "GROUP/RESOURCE=VERB,VERB" ("" group: core)
};

// The resources the API server of any cluster serves (core, apps, batch, ...), as discovery
// would list them, for resolving the handlers' selectors without a cluster.
std::vector<structs::Resource> builtin_resources();

// The resources of the CustomResourceDefinitions in a YAML file (other documents skipped).
// Throws std::runtime_error naming the file on unreadable or malformed YAML.
std::vector<structs::Resource> resources_of_crd_file(const std::string& path);

// The manifests (YAML, several documents) for `registry` run with `options`. Throws
// std::invalid_argument naming a selector that resolves to nothing among `known` (with the
// advice to pass its CRD), an invalid namespace pattern, or a malformed extra rule.
std::string generate_rbac(const Registry& registry, const RbacOptions& options,
                          const std::vector<structs::Resource>& known);

// `kopf rbac FILE.cpp|LIB.so ...`: loads the operator files, prints the manifests; returns
// the exit code (errors as one paragraph on stderr).
int rbac_command(const std::vector<std::string>& paths, const RbacOptions& options);

}  // namespace kopf::runtime
