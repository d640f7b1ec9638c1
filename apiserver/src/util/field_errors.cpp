// FieldError constructors worded like apimachinery's field.Error.ErrorBody().
#include <set>

#include "util/go_format.hpp"
#include "util/schema.hpp"

namespace kopf::apiserver {

namespace {

FieldError make(std::string reason, std::string field, std::string body,
                const std::string& detail) {
    if (!detail.empty()) body += ": " + detail;
    return FieldError{std::move(reason), std::move(field), std::move(body)};
}

}  // namespace

std::string FieldError::to_string() const {
    return field + ": " + message;
}

FieldError field_invalid(std::string field, const nlohmann::json& value, std::string detail) {
    return make("FieldValueInvalid", std::move(field), "Invalid value: " + field_value_text(value),
                detail);
}

FieldError field_type_invalid(std::string field, const nlohmann::json& value, std::string detail) {
    return make("FieldValueTypeInvalid", std::move(field),
                "Invalid value: " + field_value_text(value), detail);
}

FieldError field_required(std::string field, std::string detail) {
    return make("FieldValueRequired", std::move(field), "Required value", detail);
}

FieldError field_forbidden(std::string field, std::string detail) {
    return make("FieldValueForbidden", std::move(field), "Forbidden", detail);
}

FieldError field_not_supported(std::string field, const nlohmann::json& value,
                               const std::vector<std::string>& supported) {
    std::string detail;
    if (!supported.empty()) {
        detail = "supported values: ";
        for (std::size_t i = 0; i < supported.size(); ++i) {
            if (i > 0) detail += ", ";
            detail += go_quote(supported[i]);
        }
    }
    return make("FieldValueNotSupported", std::move(field),
                "Unsupported value: " + field_value_text(value), detail);
}

FieldError field_duplicate(std::string field, const nlohmann::json& value) {
    return make("FieldValueDuplicate", std::move(field),
                "Duplicate value: " + field_value_text(value), "");
}

FieldError field_not_found(std::string field, const nlohmann::json& value) {
    return make("FieldValueNotFound", std::move(field), "Not found: " + field_value_text(value),
                "");
}

FieldError field_too_long(std::string field, long long max_bytes) {
    std::string detail = "value is too long";
    if (max_bytes >= 0) {
        detail = "may not be more than " + std::to_string(max_bytes) +
                 (max_bytes == 1 ? " byte" : " bytes");
    }
    return make("FieldValueTooLong", std::move(field), "Too long", detail);
}

FieldError field_too_many(std::string field, long long actual, long long max_items) {
    std::string detail = "has too many items";
    if (max_items >= 0) {
        detail = "must have at most " + std::to_string(max_items) +
                 (max_items == 1 ? " item" : " items");
    }
    std::string body = actual >= 0 ? "Too many: " + std::to_string(actual) : "Too many";
    return make("FieldValueTooMany", std::move(field), body, detail);
}

FieldError field_internal(std::string field, std::string detail) {
    return make("InternalError", std::move(field), "Internal error", detail);
}

std::string join_field_errors(const std::vector<FieldError>& errors) {
    std::set<std::string> seen;
    std::string result;
    for (const auto& error : errors) {
        std::string text = error.to_string();
        if (!seen.insert(text).second) continue;
        if (seen.size() > 1) result += ", ";
        result += text;
    }
    if (seen.size() <= 1) return result;
    return "[" + result + "]";
}

}  // namespace kopf::apiserver
