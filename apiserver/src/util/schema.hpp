// Structural OpenAPI v3 schemas of CustomResourceDefinitions: validation of the
// schema itself, pruning, defaulting and validation of objects against it, with
// the messages kube-apiserver gives (apiextensions-apiserver, kube-openapi).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kopf::apiserver {

// One field error as in a Status `details.causes[]` entry, e.g.
//   reason  FieldValueTypeInvalid
//   field   spec.n
//   message Invalid value: "string": spec.n in body must be of type integer: "string"
struct FieldError {
    std::string reason;   // FieldValueInvalid, FieldValueRequired, FieldValueTypeInvalid, ...
    std::string field;    // dotted path: spec.items[2].name
    std::string message;  // without the field prefix
    std::string to_string() const;  // "<field>: <message>" as in the Status message list
};

// Constructors with apimachinery's field.Error wording (util/validation/field/errors.go).
// Values render like Go: strings quoted, numbers/bools plain, objects/arrays as JSON.
FieldError field_invalid(std::string field, const nlohmann::json& value, std::string detail);
FieldError field_type_invalid(std::string field, const nlohmann::json& value, std::string detail);
FieldError field_required(std::string field, std::string detail = "");
FieldError field_forbidden(std::string field, std::string detail);
FieldError field_not_supported(std::string field, const nlohmann::json& value,
                               const std::vector<std::string>& supported);
FieldError field_duplicate(std::string field, const nlohmann::json& value);
FieldError field_not_found(std::string field, const nlohmann::json& value);
// "Too long: may not be more than N bytes"
FieldError field_too_long(std::string field, long long max_bytes);
FieldError field_too_many(std::string field, long long actual, long long max_items);
FieldError field_internal(std::string field, std::string detail);

// Joined like apimachinery's aggregate ("a" or "[a, b]", duplicates dropped): the text
// that follows `<Kind> "<name>" is invalid: ` in a 422 Status message.
// A field's path under its parent's ("spec" + "x" = "spec.x"; "" + "x" = "x").
std::string child_path(const std::string& base, const std::string& name);

std::string join_field_errors(const std::vector<FieldError>& errors);

// Errors that make a CRD version's openAPIV3Schema non-structural or invalid
// (field paths relative to spec.versions[i].schema.openAPIV3Schema, prefixed by `path`).
std::vector<FieldError> validate_structural_schema(const nlohmann::json& schema,
                                                   const std::string& path);

// Drop fields not described by the schema (honours x-kubernetes-preserve-unknown-fields,
// x-kubernetes-embedded-resource, additionalProperties). apiVersion, kind and
// metadata at the root are never pruned (metadata is pruned to ObjectMeta fields).
// Also drops nulls of non-nullable fields that have no default. Returns the sorted paths
// of the dropped unknown fields ("spec.foo", "spec.items[0].bar", "metadata.junk"), for the
// `unknown field "<path>"` warnings/errors of fieldValidation=Warn/Strict.
std::vector<std::string> prune(nlohmann::json& object, const nlohmann::json& schema);

// Apply `default` values from the schema where fields are absent or null-but-not-nullable
// (after pruning). Defaults are applied recursively, so nested defaults materialise inside
// a parent that was itself defaulted (e.g. `default: {}`).
void apply_defaults(nlohmann::json& object, const nlohmann::json& schema);

// Validate an object against the schema: type, required, enum, pattern, format,
// minimum/maximum (+exclusive), minLength/maxLength, minItems/maxItems, uniqueItems,
// minProperties/maxProperties, nullable, x-kubernetes-int-or-string, allOf/anyOf/oneOf/not,
// x-kubernetes-list-type set/map uniqueness, and the shape of nested
// x-kubernetes-embedded-resource objects (apiVersion, kind, metadata). Field paths are
// relative to the object root ("spec.size"); errors about the whole object (and the
// allOf/anyOf/oneOf/not summaries) use the field "<nil>", as upstream does.
std::vector<FieldError> validate(const nlohmann::json& object, const nlohmann::json& schema);

// x-kubernetes-validations (CEL rules, cel.hpp's subset): the errors of rules in a CRD
// version's schema that cannot be compiled, each naming the rule and the construct, at
// `<path>...x-kubernetes-validations[i].rule` (path as for validate_structural_schema).
std::vector<FieldError> check_validation_rules(const nlohmann::json& schema,
                                               const std::string& path);

// The rules' verdicts on `object`: `old` is the stored object on update (null on create);
// rules using oldSelf (transition rules) run only where an old value corresponds (object
// fields, keyed list items), and values that did not change are not judged again
// (ratcheting). A rule that fails gives
//   <path>: Invalid value: "<schema type>": <message | messageExpression | failed rule: ...>
// with the rule's reason and fieldPath; a rule that cannot be evaluated says why.
std::vector<FieldError> validate_rules(const nlohmann::json& object, const nlohmann::json* old,
                                       const nlohmann::json& schema);

}  // namespace kopf::apiserver
