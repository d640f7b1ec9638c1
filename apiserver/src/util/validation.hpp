// Name, label and annotation validation with kube-apiserver's messages
// (apimachinery pkg/util/validation, pkg/api/validation/objectmeta.go).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/schema.hpp"

namespace kopf::apiserver {

// Each returns an empty vector when valid; otherwise the error messages.
std::vector<std::string> validate_dns1123_subdomain(const std::string& value);  // most names
std::vector<std::string> validate_dns1123_label(const std::string& value);  // namespaces, services
std::vector<std::string> validate_qualified_name(
    const std::string& value);  // label/annotation keys
std::vector<std::string> validate_label_value(const std::string& value);
std::vector<std::string> validate_dns1035_label(const std::string& value);  // CRD names, versions
// Names used in URL paths: not "." or "..", no "/" or "%" (prefix: only the latter).
std::vector<std::string> validate_path_segment_name(const std::string& value, bool prefix = false);
// A name by rule: "subdomain" (default), "label", "dns1035", "path-segment" or "none".
std::vector<std::string> validate_object_name(const std::string& name,
                                              const std::string& name_rule);

// Validate metadata of an object being written: name (per `name_rule`: "subdomain",
// "label", "dns1035", "path-segment" or "none"), generateName, namespace, generation, labels,
// annotations (total size 256 KiB), finalizers (qualified names), ownerReferences. Field paths
// start with "metadata.".
std::vector<FieldError> validate_object_meta(const nlohmann::json& metadata,
                                             const std::string& name_rule, bool namespaced);

}  // namespace kopf::apiserver
