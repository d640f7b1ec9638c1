// `kopf freeze` and `kopf resume` (Kopf's CLI commands of the same names): an entry of a
// higher priority in a peering pauses its operators for a while, and its removal resumes them.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopf::runtime {

struct PeeringCommandOptions {
    bool freeze = true;  // false: resume
    std::vector<std::string> namespaces;
    bool all_namespaces = false;
    std::string id;  // empty: Kopf's manual identity, user@host
    std::string peering;
    int priority = 100;
    bool dev = false;             // priority 666
    std::optional<int> lifetime;  // seconds, required by freeze
    std::string message;
    bool verbose = false;
    bool debug = false;
    bool quiet = false;
};

// Patches this identity's entry into the peering of each namespace (or the cluster-wide one):
// 0 when done, 1 with a message naming the peering that cannot be found or patched, 2 for
// bad options.
int peering_command(const PeeringCommandOptions& options);

}  // namespace kopf::runtime
