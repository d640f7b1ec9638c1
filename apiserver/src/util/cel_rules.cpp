// x-kubernetes-validations: compiling a CRD's rules when it is written, and judging objects by
// them (apiextensions-apiserver pkg/apiserver/schema/cel, with cel.hpp's subset of CEL).
#include <optional>

#include "util/cel.hpp"
#include "util/schema.hpp"

namespace kopf::apiserver {

using json = nlohmann::json;

namespace {

const json* member(const json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

std::string text_of(const json& rule, const char* key) {
    const json* v = member(rule, key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
}

void check_rules_at(const json& schema, const std::string& path, std::vector<FieldError>& out,
                    int depth) {
    if (!schema.is_object() || depth > 64) return;
    if (const json* rules = member(schema, "x-kubernetes-validations");
        rules && rules->is_array()) {
        for (std::size_t i = 0; i < rules->size(); ++i) {
            const json& rule = (*rules)[i];
            const std::string at = path + ".x-kubernetes-validations[" + std::to_string(i) + "]";
            const json* expression = member(rule, "rule");
            if (!expression || !expression->is_string() || expression->get<std::string>().empty()) {
                out.push_back(field_required(at + ".rule", ""));
                continue;
            }
            try {
                cel::Program program(expression->get<std::string>());
            } catch (const cel::CompileError& e) {
                out.push_back(field_invalid(at + ".rule", *expression,
                                            std::string("compilation failed: ") + e.what()));
            }
            const std::string message_expression = text_of(rule, "messageExpression");
            if (!message_expression.empty()) {
                try {
                    cel::Program program(message_expression);
                } catch (const cel::CompileError& e) {
                    out.push_back(field_invalid(at + ".messageExpression", message_expression,
                                                std::string("compilation failed: ") + e.what()));
                }
            }
            const std::string reason = text_of(rule, "reason");
            if (!reason.empty() && reason != "FieldValueInvalid" &&
                reason != "FieldValueForbidden" && reason != "FieldValueRequired" &&
                reason != "FieldValueDuplicate")
                out.push_back(field_not_supported(at + ".reason", reason,
                                                  {"FieldValueDuplicate", "FieldValueForbidden",
                                                   "FieldValueInvalid", "FieldValueRequired"}));
        }
    }
    if (const json* properties = member(schema, "properties");
        properties && properties->is_object())
        for (const auto& [name, sub] : properties->items())
            check_rules_at(sub, path + ".properties[" + name + "]", out, depth + 1);
    if (const json* items = member(schema, "items"))
        check_rules_at(*items, path + ".items", out, depth + 1);
    if (const json* additional = member(schema, "additionalProperties"))
        check_rules_at(*additional, path + ".additionalProperties", out, depth + 1);
}

// The error of a failed rule, with the rule's reason, at its fieldPath.
FieldError rule_error(const json& rule, const std::string& path, const json& schema,
                      const std::string& message) {
    std::string field = path;
    std::string relative = text_of(rule, "fieldPath");
    if (!relative.empty()) {
        if (relative[0] == '.') relative.erase(0, 1);
        field = child_path(path, relative);
    }
    if (field.empty()) field = "<nil>";
    const std::string reason = text_of(rule, "reason");
    if (reason == "FieldValueForbidden") return field_forbidden(field, message);
    if (reason == "FieldValueRequired") return field_required(field, message);
    if (reason == "FieldValueDuplicate") {
        FieldError e = field_duplicate(field, json(schema.value("type", "object")));
        e.message += ": " + message;
        return e;
    }
    return field_invalid(field, json(schema.value("type", "object")), message);
}

void judge(const json& value, const json* old, const json& schema, const std::string& path,
           std::vector<FieldError>& out, int depth) {
    if (!schema.is_object() || depth > 64) return;
    // Ratcheting: a value that did not change is not judged again.
    if (old && *old == value) return;
    if (const json* rules = member(schema, "x-kubernetes-validations");
        rules && rules->is_array()) {
        for (const auto& rule : *rules) {
            const std::string expression = text_of(rule, "rule");
            std::optional<cel::Program> program;
            try {
                program.emplace(expression);
            } catch (const cel::CompileError&) {
                continue;  // refused when the CRD was written; a stored CRD predates the check
            }
            if (program->uses_old_self() && !old) continue;
            std::string failure;
            try {
                const json verdict = program->evaluate(value, old);
                if (!verdict.is_boolean()) {
                    failure = "rule evaluated to " + verdict.dump() +
                              ", not a bool, evaluating rule: " + expression;
                    out.push_back(field_invalid(path.empty() ? "<nil>" : path,
                                                json(schema.value("type", "object")), failure));
                    continue;
                }
                if (verdict.get<bool>()) continue;
            } catch (const cel::EvalError& e) {
                out.push_back(field_invalid(
                    path.empty() ? "<nil>" : path, json(schema.value("type", "object")),
                    std::string(e.what()) + " evaluating rule: " + expression));
                continue;
            }
            std::string message = text_of(rule, "message");
            if (message.empty()) message = "failed rule: " + expression;
            const std::string message_expression = text_of(rule, "messageExpression");
            if (!message_expression.empty()) {
                try {
                    const json m = cel::Program(message_expression).evaluate(value, old);
                    if (m.is_string() && !m.get<std::string>().empty())
                        message = m.get<std::string>();
                } catch (const std::exception&) {
                    // Kubernetes falls back to `message` (or the default) as well.
                }
            }
            out.push_back(rule_error(rule, path, schema, message));
        }
    }
    if (value.is_object()) {
        const json* properties = member(schema, "properties");
        const json* additional = member(schema, "additionalProperties");
        for (const auto& [key, sub] : value.items()) {
            const json* sub_schema = properties ? member(*properties, key.c_str()) : nullptr;
            std::string sub_path = child_path(path, key);
            if (!sub_schema && additional && additional->is_object()) {
                sub_schema = additional;
                sub_path = path + "[" + key + "]";
            }
            if (!sub_schema) continue;
            const json* old_sub =
                old && old->is_object() && old->contains(key) ? &(*old)[key] : nullptr;
            judge(sub, old_sub, *sub_schema, sub_path, out, depth + 1);
        }
    } else if (value.is_array()) {
        const json* items = member(schema, "items");
        if (!items) return;
        // Old items correspond to new ones only in keyed lists (by their keys).
        std::vector<std::string> keys;
        if (schema.value("x-kubernetes-list-type", "") == "map")
            if (const json* k = member(schema, "x-kubernetes-list-map-keys"); k && k->is_array())
                for (const auto& name : *k)
                    if (name.is_string()) keys.push_back(name.get<std::string>());
        for (std::size_t i = 0; i < value.size(); ++i) {
            const json* old_item = nullptr;
            if (!keys.empty() && old && old->is_array() && value[i].is_object())
                for (const auto& candidate : *old) {
                    bool same = candidate.is_object();
                    for (const auto& k : keys)
                        same = same && candidate.value(k, json()) == value[i].value(k, json());
                    if (same) old_item = &candidate;
                }
            judge(value[i], old_item, *items, path + "[" + std::to_string(i) + "]", out, depth + 1);
        }
    }
}

}  // namespace

std::vector<FieldError> check_validation_rules(const json& schema, const std::string& path) {
    std::vector<FieldError> out;
    check_rules_at(schema, path, out, 0);
    return out;
}

std::vector<FieldError> validate_rules(const json& object, const json* old, const json& schema) {
    std::vector<FieldError> out;
    judge(object, old, schema, "", out, 0);
    return out;
}

}  // namespace kopf::apiserver
