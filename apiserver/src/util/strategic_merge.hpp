// Strategic merge patch for the built-in kinds (apimachinery pkg/util/strategicpatch, as the
// apiserver applies it): patchMergeKey/patchStrategy per field, the $patch directives
// (replace, delete; merge is rejected as upstream does), $deleteFromPrimitiveList,
// $retainKeys and $setElementOrder, with upstream's resulting element order (without
// $setElementOrder, items new to a list come first). Errors carry upstream's texts.
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

// The same with explicit patch metadata (e.g. from a kind's OpenAPI
// x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key), described as
//   {"fields": {"<field>": {"strategy": "merge" | "replace" | "merge,retainKeys",
//                           "mergeKey": "name", "fields": {...item or struct fields...}}}}
// Fields without metadata merge like JSON merge patch (maps) or are replaced (lists).
nlohmann::json strategic_merge_patch_with_meta(const nlohmann::json& original,
                                               const nlohmann::json& patch,
                                               const nlohmann::json& meta);

// The list shapes of a built-in kind as a structural schema (x-kubernetes-list-type map with
// its merge key, or set), for server-side apply's field sets (managed_fields.hpp).
nlohmann::json list_shapes_schema(const std::string& group, const std::string& kind);

}  // namespace kopf::apiserver
