// Structural OpenAPI v3 schemas of CustomResourceDefinitions: validation of the
// schema itself, pruning, defaulting and validation of objects against it, with
// the messages kube-apiserver gives (apiextensions-apiserver, kube-openapi).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kopf::apiserver {

// One field error as in a Status `details.causes[]` entry:
//   {"reason":"FieldValueInvalid","message":"Invalid value: \"x\": spec.n in body must be of type integer: \"string\"","field":"spec.n"}
struct FieldError {
    std::string reason;   // FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueTypeInvalid, ...
    std::string field;    // dotted path: spec.items[2].name
    std::string message;  // without the field prefix
    std::string to_string() const;  // "<field>: <message>" as in the Status message list
};

// Errors that make a CRD version's openAPIV3Schema non-structural or invalid
// (field paths relative to spec.versions[i].schema.openAPIV3Schema, prefixed by `path`).
std::vector<FieldError> validate_structural_schema(const nlohmann::json& schema,
                                                   const std::string& path);

// Drop fields not described by the schema (honours x-kubernetes-preserve-unknown-fields,
// x-kubernetes-embedded-resource, additionalProperties). apiVersion, kind and
// metadata at the root are never pruned (metadata is pruned to ObjectMeta fields).
void prune(nlohmann::json& object, const nlohmann::json& schema);

// Apply `default` values from the schema where fields are absent (after pruning).
void apply_defaults(nlohmann::json& object, const nlohmann::json& schema);

// Validate an object against the schema: type, required, enum, pattern, format,
// minimum/maximum (+exclusive), minLength/maxLength, minItems/maxItems, uniqueItems,
// minProperties/maxProperties, nullable, x-kubernetes-int-or-string, allOf/anyOf/oneOf/not.
std::vector<FieldError> validate(const nlohmann::json& object, const nlohmann::json& schema);

}  // namespace kopf::apiserver
