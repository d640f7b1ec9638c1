#include "structs/redaction.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kopf::structs {

namespace {

bool is_secret_field(std::string_view name) {
    return name == "data" || name == "stringData";
}

// Annotations whose values are serialised copies of the object (and so of its data).
bool holds_a_copy(std::string_view annotation) {
    constexpr std::string_view last_handled = "/last-handled-configuration";
    return annotation == "kubectl.kubernetes.io/last-applied-configuration" ||
           (annotation.size() >= last_handled.size() &&
            annotation.substr(annotation.size() - last_handled.size()) == last_handled);
}

void redact_values(json& map) {
    if (!map.is_object()) {
        if (!map.is_null()) map = redacted_value;
        return;
    }
    for (auto& [key, value] : map.items()) value = redacted_value;
}

void redact_annotations(json& annotations) {
    if (!annotations.is_object()) return;
    for (auto& [key, value] : annotations.items()) {
        if (holds_a_copy(key)) value = redacted_value;
    }
}

void redact_metadata(json& metadata) {
    if (!metadata.is_object()) return;
    auto annotations = metadata.find("annotations");
    if (annotations != metadata.end()) redact_annotations(*annotations);
}

void redact_in_place(json& body) {
    if (!body.is_object()) return;
    for (const char* field : {"data", "stringData"}) {
        auto found = body.find(field);
        if (found != body.end()) redact_values(*found);
    }
    auto metadata = body.find("metadata");
    if (metadata != body.end()) redact_metadata(*metadata);
}

// A value found at `field` of a Secret's body (a diff's old or new value).
json redacted_at(const json& value, const std::vector<std::string>& field) {
    json copy = value;
    if (field.empty()) {
        redact_in_place(copy);
    } else if (is_secret_field(field[0])) {
        if (field.size() == 1)
            redact_values(copy);
        else if (!copy.is_null())
            copy = redacted_value;
    } else if (field[0] == "metadata") {
        if (field.size() == 1)
            redact_metadata(copy);
        else if (field[1] == "annotations" && field.size() == 2)
            redact_annotations(copy);
        else if (field[1] == "annotations" && holds_a_copy(field[2]) && !copy.is_null())
            copy = redacted_value;
    }
    return copy;
}

}  // namespace

bool is_secret(const kopf::Resource& resource) {
    return resource.group.empty() && resource.plural == "secrets";
}

json redact_secret_values(const json& body) {
    json copy = body;
    redact_in_place(copy);
    return copy;
}

Diff redact_secret_values(const Diff& diff) {
    std::vector<DiffItem> items;
    items.reserve(diff.size());
    for (const auto& item : diff) {
        items.push_back(DiffItem{item.operation, item.field, redacted_at(item.old, item.field),
                                 redacted_at(item.new_, item.field)});
    }
    return Diff(std::move(items));
}

json redact_secret_json_patch(const json& operations) {
    json copy = operations;
    if (!copy.is_array()) return copy;
    for (auto& operation : copy) {
        if (!operation.is_object() || !operation.contains("value")) continue;
        std::vector<std::string> field;
        try {
            json::json_pointer pointer(operation.value("path", std::string()));
            for (; !pointer.empty(); pointer.pop_back())
                field.insert(field.begin(), pointer.back());
        } catch (const json::exception&) {
            operation["value"] = redacted_value;  // nothing says where it goes
            continue;
        }
        operation["value"] = redacted_at(operation["value"], field);
    }
    return copy;
}

}  // namespace kopf::structs
