// Strategic merge patch for the built-in kinds (apimachinery
// pkg/util/strategicpatch): patchMergeKey/patchStrategy per field, $patch
// directives (replace, delete, merge), $deleteFromPrimitiveList, $retainKeys,
// $setElementOrder (accepted, order applied when possible).
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace kopf::apiserver {

struct PatchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// `group`/`kind` select the merge keys (e.g. Pod spec.containers by "name",
// ports by "containerPort", env by "name", volumes by "name", ownerReferences by
// "uid", conditions by "type"). Unknown fields merge like JSON merge patch.
nlohmann::json strategic_merge_patch(const nlohmann::json& original, const nlohmann::json& patch,
                                     const std::string& group, const std::string& kind);

}  // namespace kopf::apiserver
