// Name, label and annotation checks worded like apimachinery (pkg/util/validation,
// pkg/api/validate/content, pkg/api/validation/objectmeta.go).
#include "util/validation.hpp"

#include <algorithm>
#include <set>

namespace kopf::apiserver {

namespace {

constexpr const char* kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr const char* kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr const char* kDns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr const char* kLabelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr const char* kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr const char* kLabelKeyErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";

constexpr std::size_t kTotalAnnotationSizeLimit = 256 * 1024;

bool is_lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_alnum(char c) {
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool matches_dns1123_label(std::string_view value) {
    if (value.empty() || !is_lower_alnum(value.front()) || !is_lower_alnum(value.back())) {
        return false;
    }
    for (char c : value) {
        if (!is_lower_alnum(c) && c != '-') return false;
    }
    return true;
}

bool matches_dns1123_subdomain(std::string_view value) {
    std::size_t start = 0;
    while (true) {
        const auto dot = value.find('.', start);
        if (!matches_dns1123_label(value.substr(start, dot - start))) return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

bool matches_dns1035_label(std::string_view value) {
    return matches_dns1123_label(value) && value.front() >= 'a' && value.front() <= 'z';
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool matches_label_key_name(std::string_view value) {
    if (value.empty() || !is_alnum(value.front()) || !is_alnum(value.back())) return false;
    for (char c : value) {
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
    }
    return true;
}

std::string regex_error(const std::string& message, const std::string& regex,
                        std::initializer_list<const char*> examples) {
    std::string out = message;
    if (examples.size() == 0) return out + " (regex used for validation is '" + regex + "')";
    out += " (e.g. ";
    bool first = true;
    for (const char* example : examples) {
        if (!first) out += " or ";
        first = false;
        out += "'" + std::string(example) + "', ";
    }
    return out + "regex used for validation is '" + regex + "')";
}

// util/validation says "characters"; the newer content package (label keys/values) "bytes".
std::string max_len_characters(std::size_t length) {
    return "must be no more than " + std::to_string(length) + " characters";
}
std::string max_len_bytes(std::size_t length) {
    return "must be no more than " + std::to_string(length) + " bytes";
}

std::vector<std::string> dns1123_subdomain(const std::string& value, bool bytes_wording) {
    std::vector<std::string> errors;
    if (value.size() > 253) {
        errors.push_back(bytes_wording ? max_len_bytes(253) : max_len_characters(253));
    }
    if (!matches_dns1123_subdomain(value)) {
        errors.push_back(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
            kDns1123SubdomainFmt, {"example.com"}));
    }
    return errors;
}

// generateName prefixes may end with '-'; upstream masks the tail (dropping two
// characters, a quirk kept for identical results) before validating.
std::string mask_trailing_dash(const std::string& name) {
    if (name.size() > 1 && name.back() == '-') return name.substr(0, name.size() - 2) + "a";
    return name;
}

std::vector<std::string> path_segment_name(const std::string& name, bool prefix) {
    if (!prefix) {
        if (name == ".") return {"may not be '.'"};
        if (name == "..") return {"may not be '..'"};
    }
    std::vector<std::string> errors;
    if (name.find('/') != std::string::npos) errors.emplace_back("may not contain '/'");
    if (name.find('%') != std::string::npos) errors.emplace_back("may not contain '%'");
    return errors;
}

std::vector<std::string> validate_name(const std::string& name, const std::string& rule,
                                       bool prefix) {
    if (rule == "label") {
        return validate_dns1123_label(prefix ? mask_trailing_dash(name) : name);
    }
    if (rule == "dns1035") {
        return validate_dns1035_label(prefix ? mask_trailing_dash(name) : name);
    }
    if (rule == "path-segment") return path_segment_name(name, prefix);
    if (rule == "none") return {};
    return validate_dns1123_subdomain(prefix ? mask_trailing_dash(name) : name);
}

std::string to_lower(std::string text) {
    for (char& c : text) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return text;
}

std::string json_type_name(const nlohmann::json& value) {
    switch (value.type()) {
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::string:
            return "string";
        case nlohmann::json::value_t::boolean:
            return "boolean";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
            return "integer";
        case nlohmann::json::value_t::number_float:
            return "number";
        case nlohmann::json::value_t::array:
            return "array";
        default:
            return "object";
    }
}

FieldError wrong_type(const std::string& field, const nlohmann::json& value,
                      const std::string& expected) {
    const std::string actual = json_type_name(value);
    return field_type_invalid(
        field, actual, field + " in body must be of type " + expected + ": \"" + actual + "\"");
}

// Returns the member if present with the expected JSON type; records an error otherwise.
const nlohmann::json* member(const nlohmann::json& object, const char* key,
                             nlohmann::json::value_t type, const char* type_name,
                             const std::string& field, std::vector<FieldError>& errors) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    const bool ok = it->type() == type ||
                    (type == nlohmann::json::value_t::number_integer && it->is_number_integer());
    if (!ok) {
        errors.push_back(wrong_type(field, *it, type_name));
        return nullptr;
    }
    return &*it;
}

void validate_labels(const nlohmann::json& labels, std::vector<FieldError>& errors) {
    const std::string field = "metadata.labels";
    for (const auto& [key, value] : labels.items()) {
        for (auto& message : validate_qualified_name(key)) {
            errors.push_back(field_invalid(field, key, message));
        }
        if (!value.is_string()) {
            errors.push_back(wrong_type(field + "." + key, value, "string"));
            continue;
        }
        for (auto& message : validate_label_value(value.get<std::string>())) {
            errors.push_back(field_invalid(field, value, message));
        }
    }
}

void validate_annotations(const nlohmann::json& annotations, std::vector<FieldError>& errors) {
    const std::string field = "metadata.annotations";
    std::size_t total = 0;
    for (const auto& [key, value] : annotations.items()) {
        for (auto& message : validate_qualified_name(to_lower(key))) {
            errors.push_back(field_invalid(field, key, message));
        }
        total += key.size();
        if (value.is_string()) {
            total += value.get_ref<const std::string&>().size();
        } else {
            errors.push_back(wrong_type(field + "." + key, value, "string"));
        }
    }
    if (total > kTotalAnnotationSizeLimit) {
        errors.push_back(field_too_long(field, static_cast<long long>(kTotalAnnotationSizeLimit)));
    }
}

std::string string_member(const nlohmann::json& object, const char* key) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_string()) return "";
    return it->get<std::string>();
}

void validate_owner_references(const nlohmann::json& references, std::vector<FieldError>& errors) {
    const std::string field = "metadata.ownerReferences";
    std::string first_controller;
    for (std::size_t i = 0; i < references.size(); ++i) {
        const auto& reference = references[i];
        const std::string item = field + "[" + std::to_string(i) + "]";
        if (!reference.is_object()) {
            errors.push_back(wrong_type(item, reference, "object"));
            continue;
        }
        const std::string api_version = string_member(reference, "apiVersion");
        const std::string kind = string_member(reference, "kind");
        std::string group;
        std::string version = api_version;
        bool version_ok = true;
        if (const auto slash = api_version.find('/'); slash != std::string::npos) {
            group = api_version.substr(0, slash);
            version = api_version.substr(slash + 1);
            version_ok = !version.empty() && version.find('/') == std::string::npos;
        }
        if (api_version.empty()) {
            errors.push_back(field_required(item + ".apiVersion", "must not be empty"));
        } else if (!version_ok || version.empty()) {
            errors.push_back(field_invalid(item + ".apiVersion", api_version,
                                           "must be <group>/<version> or <version>"));
        }
        if (kind.empty()) errors.push_back(field_required(item + ".kind", "must not be empty"));
        if (string_member(reference, "name").empty()) {
            errors.push_back(field_required(item + ".name", "must not be empty"));
        }
        if (string_member(reference, "uid").empty()) {
            errors.push_back(field_required(item + ".uid", "must not be empty"));
        }
        if (group.empty() && version == "v1" && kind == "Event") {
            errors.push_back(field_invalid(item, reference,
                                           "/v1, Kind=Event is disallowed from being an owner"));
        }
        auto controller = reference.find("controller");
        if (controller != reference.end() && controller->is_boolean() && controller->get<bool>()) {
            const std::string name = kind + "/" + string_member(reference, "name");
            if (!first_controller.empty()) {
                errors.push_back(field_invalid(
                    field, references,
                    "Only one reference can have Controller set to true. Found \"true\" in "
                    "references for " +
                        first_controller + " and " + name));
            } else {
                first_controller = name;
            }
        }
    }
}

void validate_finalizers(const nlohmann::json& finalizers, std::vector<FieldError>& errors) {
    const std::string field = "metadata.finalizers";
    bool orphan = false;
    bool foreground = false;
    for (std::size_t i = 0; i < finalizers.size(); ++i) {
        const auto& finalizer = finalizers[i];
        if (!finalizer.is_string()) {
            errors.push_back(
                wrong_type(field + "[" + std::to_string(i) + "]", finalizer, "string"));
            continue;
        }
        const auto& name = finalizer.get_ref<const std::string&>();
        for (auto& message : validate_qualified_name(name)) {
            errors.push_back(field_invalid(field, name, message));
        }
        orphan = orphan || name == "orphan";
        foreground = foreground || name == "foregroundDeletion";
    }
    if (orphan && foreground) {
        errors.push_back(field_invalid(
            field, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"));
    }
}

}  // namespace

std::vector<std::string> validate_dns1123_subdomain(const std::string& value) {
    return dns1123_subdomain(value, false);
}

std::vector<std::string> validate_dns1123_label(const std::string& value) {
    std::vector<std::string> errors;
    if (value.size() > 63) errors.push_back(max_len_characters(63));
    if (!matches_dns1123_label(value)) {
        if (matches_dns1123_subdomain(value)) {
            errors.emplace_back("must not contain dots");
        } else {
            errors.push_back(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                "'-', and must start and end with an alphanumeric character",
                kDns1123LabelFmt, {"my-name", "123-abc"}));
        }
    }
    return errors;
}

std::vector<std::string> validate_dns1035_label(const std::string& value) {
    std::vector<std::string> errors;
    if (value.size() > 63) errors.push_back(max_len_characters(63));
    if (!matches_dns1035_label(value)) {
        errors.push_back(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character",
            kDns1035LabelFmt, {"my-name", "abc-123"}));
    }
    return errors;
}

std::vector<std::string> validate_qualified_name(const std::string& value) {
    std::vector<std::string> errors;
    std::string name = value;
    const auto slashes = std::count(value.begin(), value.end(), '/');
    if (slashes == 1) {
        const auto slash = value.find('/');
        const std::string prefix = value.substr(0, slash);
        name = value.substr(slash + 1);
        if (prefix.empty()) {
            errors.emplace_back("prefix part must be non-empty");
        } else {
            for (auto& message : dns1123_subdomain(prefix, true)) {
                errors.push_back("prefix part " + message);
            }
        }
    } else if (slashes > 1) {
        errors.push_back(
            "a valid label key " +
            regex_error(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}) +
            " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
        return errors;
    }
    if (name.empty()) {
        errors.emplace_back("name part must be non-empty");
    } else if (name.size() > 63) {
        errors.push_back("name part " + max_len_bytes(63));
    }
    if (!matches_label_key_name(name)) {
        errors.push_back("name part " + regex_error(kLabelKeyErrMsg, kLabelKeyFmt,
                                                    {"MyName", "my.name", "123-abc"}));
    }
    return errors;
}

std::vector<std::string> validate_label_value(const std::string& value) {
    std::vector<std::string> errors;
    if (value.size() > 63) errors.push_back(max_len_bytes(63));
    if (!value.empty() && !matches_label_key_name(value)) {
        errors.push_back(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character",
            kLabelValueFmt, {"MyValue", "my_value", "12345"}));
    }
    return errors;
}

std::vector<std::string> validate_path_segment_name(const std::string& value, bool prefix) {
    return path_segment_name(value, prefix);
}

std::vector<std::string> validate_object_name(const std::string& name,
                                              const std::string& name_rule) {
    return validate_name(name, name_rule, false);
}

std::vector<FieldError> validate_object_meta(const nlohmann::json& metadata,
                                             const std::string& name_rule, bool namespaced) {
    std::vector<FieldError> errors;
    if (!metadata.is_object()) {
        if (metadata.is_null()) {
            errors.push_back(field_required("metadata.name", "name or generateName is required"));
        } else {
            errors.push_back(wrong_type("metadata", metadata, "object"));
        }
        return errors;
    }
    using value_t = nlohmann::json::value_t;
    std::string generate_name;
    if (auto p = member(metadata, "generateName", value_t::string, "string",
                        "metadata.generateName", errors)) {
        generate_name = p->get<std::string>();
    }
    if (!generate_name.empty()) {
        for (auto& message : validate_name(generate_name, name_rule, true)) {
            errors.push_back(field_invalid("metadata.generateName", generate_name, message));
        }
    }
    std::string name;
    if (auto p = member(metadata, "name", value_t::string, "string", "metadata.name", errors)) {
        name = p->get<std::string>();
    }
    if (name.empty()) {
        errors.push_back(field_required("metadata.name", "name or generateName is required"));
    } else {
        for (auto& message : validate_name(name, name_rule, false)) {
            errors.push_back(field_invalid("metadata.name", name, message));
        }
    }
    std::string ns;
    if (auto p = member(metadata, "namespace", value_t::string, "string", "metadata.namespace",
                        errors)) {
        ns = p->get<std::string>();
    }
    if (namespaced) {
        if (ns.empty()) {
            errors.push_back(field_required("metadata.namespace"));
        } else {
            for (auto& message : validate_dns1123_label(ns)) {
                errors.push_back(field_invalid("metadata.namespace", ns, message));
            }
        }
    } else if (!ns.empty()) {
        errors.push_back(field_forbidden("metadata.namespace", "not allowed on this type"));
    }
    if (auto p = member(metadata, "generation", value_t::number_integer, "integer",
                        "metadata.generation", errors)) {
        if (p->is_number_integer() && !p->is_number_unsigned() && p->get<std::int64_t>() < 0) {
            errors.push_back(
                field_invalid("metadata.generation", *p, "must be greater than or equal to 0"));
        }
    }
    if (auto p = member(metadata, "labels", value_t::object, "object", "metadata.labels", errors)) {
        validate_labels(*p, errors);
    }
    if (auto p = member(metadata, "annotations", value_t::object, "object", "metadata.annotations",
                        errors)) {
        validate_annotations(*p, errors);
    }
    if (auto p = member(metadata, "ownerReferences", value_t::array, "array",
                        "metadata.ownerReferences", errors)) {
        validate_owner_references(*p, errors);
    }
    if (auto p = member(metadata, "finalizers", value_t::array, "array", "metadata.finalizers",
                        errors)) {
        validate_finalizers(*p, errors);
    }
    return errors;
}

}  // namespace kopf::apiserver
