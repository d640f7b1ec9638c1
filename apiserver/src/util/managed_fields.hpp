// Field sets of server-side apply (sigs.k8s.io/structured-merge-diff, as kube-apiserver uses
// it): which fields an object holds, how two versions of an object differ, how an applied
// configuration merges into a live object, and the FieldsV1 encoding of
// `metadata.managedFields[].fieldsV1`.
//
// A field is named by its path of elements, each in FieldsV1's key form:
//   f:<name>        a field of an object or a key of a map
//   k:{"name":"a"}  an item of a list keyed by its map keys (x-kubernetes-list-type: map)
//   v:"x"           an item of a list of scalars kept as a set (x-kubernetes-list-type: set)
// Lists of any other type are atomic: the list is one field, its items are not named.
//
// The shapes of lists come from a structural schema (a CRD's openAPIV3Schema, or the one
// strategic_merge.hpp's list_shapes_schema gives for a built-in kind): at each level,
// `properties` / `additionalProperties` / `items`, `x-kubernetes-list-type` and
// `x-kubernetes-list-map-keys`. Where the schema says nothing, objects are granular and lists
// atomic. The root's `metadata` always has ObjectMeta's shapes (finalizers a set,
// ownerReferences a map keyed by uid).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace kopf::apiserver {

using FieldPath = std::vector<std::string>;
using FieldSet = std::set<FieldPath>;

// The set a FieldsV1 object describes ({} leaves and "." mark members); throws
// std::invalid_argument naming the offending key when it is not FieldsV1.
FieldSet fields_from_v1(const nlohmann::json& fields_v1);
nlohmann::json fields_to_v1(const FieldSet& fields);
// Whether the set a FieldsV1 object describes has `path`, as fields_from_v1 would decide it,
// without decoding the set (a non-object node has nothing).
bool fields_v1_contains(const nlohmann::json& fields_v1, const FieldPath& path);

// Kubernetes' rendering of a path in conflict messages: .spec.containers[name="a"].image,
// .metadata.finalizers[="x"].
std::string field_path_string(const FieldPath& path);

// The fields an applied configuration sets: its scalars, nulls, atomic lists and the items
// of keyed and set lists (objects themselves are not members; an empty object sets nothing).
FieldSet applied_fields(const nlohmann::json& config, const nlohmann::json& schema);

// How `after` differs from `before` (typed.Comparison): fields and items that are new
// (objects included), leaves whose values changed, and fields that went away; with
// `ignore_managed_fields`, metadata.managedFields is left out.
struct FieldComparison {
    FieldSet added, modified, removed;
};
FieldComparison compare_fields(const nlohmann::json& before, const nlohmann::json& after,
                               const nlohmann::json& schema, bool ignore_managed_fields = false);

// The applied configuration merged into the live object: objects merge field by field,
// keyed lists item by item (by their keys), set lists as unions, everything else is
// replaced. A null in the configuration removes the field.
nlohmann::json apply_merge(const nlohmann::json& live, const nlohmann::json& config,
                           const nlohmann::json& schema);

// Remove the fields (and list items) named by `paths` from `object`.
void remove_fields(nlohmann::json& object, const FieldSet& paths);

// Set algebra.
FieldSet field_union(const FieldSet& a, const FieldSet& b);
FieldSet field_difference(const FieldSet& a, const FieldSet& b);
FieldSet field_intersection(const FieldSet& a, const FieldSet& b);
// Whether `fields` holds `path` or anything below it.
bool owns_within(const FieldSet& fields, const FieldPath& path);

}  // namespace kopf::apiserver
