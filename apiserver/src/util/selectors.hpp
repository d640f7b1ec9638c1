// Label and field selectors with the grammar of kube-apiserver
// (apimachinery pkg/labels/selector.go, pkg/fields/selector.go).
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kopf::apiserver {

// Thrown for unparsable selectors; what() is the message a real server puts in the
// 400 BadRequest Status (e.g. `unable to parse requirement: ...`).
struct SelectorError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class LabelSelector {
  public:
    LabelSelector() = default;                          // matches everything
    static LabelSelector parse(std::string_view text);  // throws SelectorError
    // From a metav1.LabelSelector object {matchLabels, matchExpressions} (webhooks, GC).
    // null and {} match everything; throws SelectorError for an unknown operator or
    // invalid keys/values.
    static LabelSelector from_json(const nlohmann::json& selector);
    bool matches(const nlohmann::json& labels) const;  // labels: object or null
    bool empty() const { return requirements_.empty(); }

    struct Requirement {
        std::string key;
        std::string op;  // "=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"
        std::vector<std::string> values;
    };
    const std::vector<Requirement>& requirements() const { return requirements_; }

  private:
    std::vector<Requirement> requirements_;
};

class FieldSelector {
  public:
    FieldSelector() = default;
    // `group` ("" for core) and `kind` decide which field labels are supported
    // (metadata.name and metadata.namespace everywhere; Event involvedObject.*,
    // reason, type, source, reportingComponent; Pod spec.nodeName, status.phase, ...;
    // Secret type). Throws SelectorError `field label not supported: X`.
    static FieldSelector parse(std::string_view text, const std::string& group,
                               const std::string& kind);
    // For custom resources: also accept the version's CRD `selectableFields`, given as
    // their JSONPaths (".spec.color"); the field label is the path without the dot.
    static FieldSelector parse(std::string_view text, const std::string& group,
                               const std::string& kind,
                               const std::vector<std::string>& selectable_fields);
    // Cluster-scoped custom resources do not support metadata.namespace.
    static FieldSelector parse(std::string_view text, const std::string& group,
                               const std::string& kind,
                               const std::vector<std::string>& selectable_fields,
                               bool cluster_scoped);
    // Escapes `\`, `,` and `=` in a value, for building selectors such as
    // "metadata.name=" + escape_value(name) (apimachinery fields.EscapeValue).
    static std::string escape_value(std::string_view value);
    // The value a field label has on an object ("" when absent), as the server compares it.
    std::string field_value(const nlohmann::json& object, const std::string& field) const;
    bool matches(const nlohmann::json& object) const;
    bool empty() const { return terms_.empty(); }

    struct Term {
        std::string field;
        bool equals = true;  // "=" / "==" vs "!="
        std::string value;
    };
    const std::vector<Term>& terms() const { return terms_; }

  private:
    std::vector<Term> terms_;
    std::string group_;
    std::string kind_;
};

}  // namespace kopf::apiserver
