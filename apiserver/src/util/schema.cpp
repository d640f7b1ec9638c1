// Structural schemas as apiextensions-apiserver treats them: the structural checks of
// pkg/apiserver/schema/validation.go (+ the CRD-level OpenAPI checks that matter),
// pruning (pkg/apiserver/schema/pruning), defaulting (pkg/apiserver/schema/defaulting) and
// value validation as kube-openapi does it, converted to field errors the way
// pkg/apiserver/validation/validation.go does.
#include "util/schema.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <stdexcept>

#include "util/go_format.hpp"
#include "util/threads.hpp"
#include "util/validation.hpp"

namespace kopf::apiserver {

namespace {

using json = nlohmann::json;

// ------------------------------------------------------------------ schema access helpers

const json* child(const json& schema, const char* key) {
    if (!schema.is_object()) return nullptr;
    auto it = schema.find(key);
    if (it == schema.end() || it->is_null()) return nullptr;
    return &*it;
}

bool flag(const json& schema, const char* key) {
    const json* value = child(schema, key);
    return value && value->is_boolean() && value->get<bool>();
}

std::string type_of(const json& schema) {
    const json* type = child(schema, "type");
    return type && type->is_string() ? type->get<std::string>() : "";
}

const json* property_schema(const json& schema, const std::string& name) {
    const json* properties = child(schema, "properties");
    if (!properties || !properties->is_object()) return nullptr;
    auto it = properties->find(name);
    return it == properties->end() ? nullptr : &*it;
}

// additionalProperties: `present` when set at all; the schema when it is one. For the
// boolean forms upstream has no sub-schema, so their values are pruned like unknown
// subtrees (scalars stay, nested objects are emptied).
const json* additional_schema(const json& schema, bool& present) {
    present = false;
    const json* additional = child(schema, "additionalProperties");
    if (!additional) return nullptr;
    present = additional->is_boolean() || additional->is_object();
    return additional->is_object() ? additional : nullptr;
}

bool additional_forbidden(const json& schema) {
    const json* additional = child(schema, "additionalProperties");
    return additional && additional->is_boolean() && !additional->get<bool>();
}

const json* items_schema(const json& schema) {
    const json* items = child(schema, "items");
    return items && items->is_object() ? items : nullptr;
}

std::string json_type_name(const json& value) {
    switch (value.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::string:
            return "string";
        case json::value_t::boolean:
            return "boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "integer";
        case json::value_t::number_float:
            return "number";
        case json::value_t::array:
            return "array";
        default:
            return "object";
    }
}

bool is_integral(const json& value) {
    if (value.is_number_integer()) return true;
    if (!value.is_number_float()) return false;
    const double d = value.get<double>();
    return std::isfinite(d) && std::floor(d) == d && std::abs(d) < 9.007199254740992e15;
}

// Numeric keyword values as int64 (schemas may hold floats or absurd magnitudes).
long long truncate_to_int64(double value) {
    if (!std::isfinite(value)) return value > 0 ? LLONG_MAX : LLONG_MIN;
    if (value >= 9.2e18) return LLONG_MAX;
    if (value <= -9.2e18) return LLONG_MIN;
    return static_cast<long long>(value);
}

long long count_of(const json& value) {
    if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        return u > static_cast<std::uint64_t>(LLONG_MAX) ? LLONG_MAX : static_cast<long long>(u);
    }
    if (value.is_number_integer()) return value.get<long long>();
    return truncate_to_int64(value.get<double>());
}

std::string key_path(const std::string& base, const std::string& key) {
    return base + "[" + key + "]";
}

// ------------------------------------------------------------------ regex cache

// CRD patterns use Go's RE2 syntax; the few RE2-only spellings seen in CRDs are mapped to
// their ECMAScript equivalents: leading (?i)/(?s)/(?m) flags, (?P<name>...) groups, \A, \z.
struct CompiledPattern {
    std::shared_ptr<const std::regex> regex;
    std::string error;
};

CompiledPattern compile_re2_pattern(const std::string& pattern) {
    std::string text = pattern;
    auto flags = std::regex::ECMAScript;
    while (text.size() >= 4 && text.compare(0, 2, "(?") == 0 && text[3] == ')' &&
           std::string("ism").find(text[2]) != std::string::npos) {
        if (text[2] == 'i') flags |= std::regex::icase;
        text.erase(0, 4);
    }
    std::string translated;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
            if (text[i + 1] == 'A') {
                translated += '^';
                ++i;
                continue;
            }
            if (text[i + 1] == 'z') {
                translated += '$';
                ++i;
                continue;
            }
            translated += text.substr(i, 2);
            ++i;
            continue;
        }
        if (text.compare(i, 4, "(?P<") == 0) {
            const auto close = text.find('>', i);
            if (close != std::string::npos) {
                translated += '(';
                i = close;
                continue;
            }
        }
        translated += text[i];
    }
    CompiledPattern result;
    try {
        result.regex = std::make_shared<const std::regex>(translated, flags);
    } catch (const std::regex_error& e) {
        result.error = e.what();
    }
    return result;
}

std::shared_ptr<const std::regex> compiled_pattern(const std::string& pattern, std::string* error) {
    static std::mutex mutex;
    static std::map<std::string, CompiledPattern> cache;
    std::lock_guard lock(mutex);
    auto it = cache.find(pattern);
    if (it == cache.end()) {
        if (cache.size() > 1000) cache.clear();
        it = cache.emplace(pattern, compile_re2_pattern(pattern)).first;
    }
    if (error) *error = it->second.error;
    return it->second.regex;
}

// libstdc++'s regex executor recurses once per input character, so long strings would
// overflow a normal thread stack. Long inputs are matched on a helper thread whose stack
// grows with the input; absurdly long ones (over 1 MiB) skip the pattern check instead of
// risking the process. Returns true when the text matches (or was not checked).
struct RegexJob {
    const std::regex* regex;
    const std::string* text;
    bool matched = true;
};

void run_regex_job(RegexJob& job) {
    try {
        job.matched = std::regex_search(*job.text, *job.regex);
    } catch (const std::regex_error&) {
        job.matched = true;  // the engine gave up: do not reject the value for that
    }
}

bool pattern_matches(const std::regex& regex, const std::string& text) {
    constexpr std::size_t kInlineLimit = 2000;
    constexpr std::size_t kCheckedLimit = 1 << 20;
    RegexJob job{&regex, &text};
    if (text.size() <= kInlineLimit) {
        run_regex_job(job);
        return job.matched;
    }
    if (text.size() > kCheckedLimit) return true;
    try {
        SizedThread thread((16u << 20) + text.size() * 4096, [&job] { run_regex_job(job); });
    } catch (const std::runtime_error&) {
        return true;  // no thread to match on: the value is not rejected for that
    }                 // joined: the match has finished
    return job.matched;
}

// ------------------------------------------------------------------ structural checks

enum class Level { Root, Item, Field };

// OpenAPI keywords a CRD schema may not use anywhere (specStandardValidatorV3).
void check_unsupported_keywords(const json& s, const std::string& path,
                                std::vector<FieldError>& errors) {
    if (!s.is_object()) return;
    if (const json* id = child(s, "id");
        id && !(id->is_string() && id->get<std::string>().empty())) {
        errors.push_back(field_forbidden(path + ".id", "id is not supported"));
    }
    if (s.contains("additionalItems")) {
        errors.push_back(
            field_forbidden(path + ".additionalItems", "additionalItems is not supported"));
    }
    if (const json* p = child(s, "patternProperties"); p && !(p->is_object() && p->empty())) {
        errors.push_back(
            field_forbidden(path + ".patternProperties", "patternProperties is not supported"));
    }
    if (const json* d = child(s, "definitions"); d && !(d->is_object() && d->empty())) {
        errors.push_back(field_forbidden(path + ".definitions", "definitions is not supported"));
    }
    if (s.contains("dependencies")) {
        errors.push_back(field_forbidden(path + ".dependencies", "dependencies is not supported"));
    }
    if (s.contains("$ref")) {
        errors.push_back(field_forbidden(path + ".$ref", "$ref is not supported"));
    }
    if (type_of(s) == "null") {
        errors.push_back(field_forbidden(
            path + ".type", "type cannot be set to null, use nullable as an alternative"));
    }
    if (const json* items = child(s, "items"); items && items->is_array()) {
        errors.push_back(
            field_forbidden(path + ".items", "items must be a schema object and not an array"));
    }
}

const std::set<std::string> kNestedForbiddenExtensions = {"x-kubernetes-preserve-unknown-fields",
                                                          "x-kubernetes-embedded-resource",
                                                          "x-kubernetes-int-or-string",
                                                          "x-kubernetes-list-map-keys",
                                                          "x-kubernetes-list-type",
                                                          "x-kubernetes-map-type"};

void check_nested_value_validation(const json& v, Level level, const std::string& path,
                                   std::vector<FieldError>& errors, bool skip_any_of = false);

// The int-or-string idioms (anyOf: [{type: integer}, {type: string}], possibly as the
// first allOf entry) may name types; `skip_any_of` / `skip_first_all_of_any_of` exempt them.
void check_value_validation(const json& v, Level level, const std::string& path,
                            std::vector<FieldError>& errors, bool skip_any_of,
                            bool skip_first_all_of_any_of = false) {
    for (const char* key : {"anyOf", "allOf", "oneOf"}) {
        const std::string name = key;
        if (skip_any_of && name == "anyOf") continue;
        const json* list = child(v, key);
        if (!list || !list->is_array()) continue;
        for (std::size_t i = 0; i < list->size(); ++i) {
            check_nested_value_validation((*list)[i], level,
                                          path + "." + key + "[" + std::to_string(i) + "]", errors,
                                          skip_first_all_of_any_of && name == "allOf" && i == 0);
        }
    }
    if (const json* n = child(v, "not"))
        check_nested_value_validation(*n, level, path + ".not", errors);
    if (const json* pattern = child(v, "pattern"); pattern && pattern->is_string()) {
        std::string error;
        if (!compiled_pattern(pattern->get<std::string>(), &error)) {
            errors.push_back(
                field_invalid(path + ".pattern", *pattern,
                              "must be a valid regular expression, but isn't: " + error));
        }
    }
}

void check_nested_value_validation(const json& v, Level level, const std::string& path,
                                   std::vector<FieldError>& errors, bool skip_any_of) {
    if (!v.is_object()) return;
    check_unsupported_keywords(v, path, errors);
    check_value_validation(v, level, path, errors, skip_any_of);
    if (const json* items = items_schema(v)) {
        check_nested_value_validation(*items, level, path + ".items", errors);
    }
    if (const json* properties = child(v, "properties"); properties && properties->is_object()) {
        for (const auto& [name, sub] : properties->items()) {
            check_nested_value_validation(sub, Level::Field, key_path(path + ".properties", name),
                                          errors);
        }
        if (properties->contains("metadata")) {
            errors.push_back(field_forbidden(key_path(path + ".properties", "metadata"),
                                             "must not be specified in a nested context"));
        }
    }
    if (v.contains("type")) {
        errors.push_back(field_forbidden(path + ".type", "must be empty to be structural"));
    }
    if (v.contains("additionalProperties")) {
        errors.push_back(
            field_forbidden(path + ".additionalProperties", "must be undefined to be structural"));
    }
    if (v.contains("default")) {
        errors.push_back(field_forbidden(path + ".default", "must be undefined to be structural"));
    }
    if (const json* title = child(v, "title"); title && title->is_string() && !title->empty()) {
        errors.push_back(field_forbidden(path + ".title", "must be empty to be structural"));
    }
    if (const json* d = child(v, "description");
        d && d->is_string() && !d->get<std::string>().empty()) {
        errors.push_back(field_forbidden(path + ".description", "must be empty to be structural"));
    }
    if (flag(v, "nullable")) {
        errors.push_back(field_forbidden(path + ".nullable", "must be false to be structural"));
    }
    for (const auto& extension : kNestedForbiddenExtensions) {
        const json* value = child(v, extension.c_str());
        if (!value) continue;
        const bool set =
            value->is_boolean() ? value->get<bool>() : !(value->is_array() && value->empty());
        if (!set) continue;
        const bool list_like = extension == "x-kubernetes-list-map-keys";
        const bool undefined_wording =
            extension == "x-kubernetes-list-type" || extension == "x-kubernetes-map-type";
        errors.push_back(field_forbidden(path + "." + extension,
                                         list_like           ? "must be empty to be structural"
                                         : undefined_wording ? "must be undefined to be structural"
                                                             : "must be false to be structural"));
    }
    if (const json* rules = child(v, "x-kubernetes-validations");
        rules && rules->is_array() && !rules->empty()) {
        errors.push_back(
            field_forbidden(path + ".x-kubernetes-validations", "must be empty to be structural"));
    }
}

bool is_int_or_string_any_of(const json* any_of) {
    static const json kPattern = json::array({{{"type", "integer"}}, {{"type", "string"}}});
    return any_of && *any_of == kPattern;
}

void check_completeness(const json& v, const json* s, const std::string& s_path,
                        const std::string& v_path, std::vector<FieldError>& errors);

void check_value_completeness(const json& v, const json* s, const std::string& s_path,
                              const std::string& v_path, std::vector<FieldError>& errors) {
    if (!v.is_object()) return;
    if (const json* n = child(v, "not")) check_completeness(*n, s, s_path, v_path + ".not", errors);
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
        const json* list = child(v, key);
        if (!list || !list->is_array()) continue;
        for (std::size_t i = 0; i < list->size(); ++i) {
            check_completeness((*list)[i], s, s_path,
                               v_path + "." + key + "[" + std::to_string(i) + "]", errors);
        }
    }
}

void check_completeness(const json& v, const json* s, const std::string& s_path,
                        const std::string& v_path, std::vector<FieldError>& errors) {
    if (!v.is_object()) return;
    if (!s) {
        errors.push_back(field_required(s_path, "because it is defined in " + v_path));
        return;
    }
    check_value_completeness(v, s, s_path, v_path, errors);
    if (const json* items = items_schema(v)) {
        check_completeness(*items, items_schema(*s), s_path + ".items", v_path + ".items", errors);
    }
    if (const json* properties = child(v, "properties"); properties && properties->is_object()) {
        for (const auto& [name, sub] : properties->items()) {
            const json* structural = property_schema(*s, name);
            const std::string sp = key_path(s_path + ".properties", name);
            const std::string vp = key_path(v_path + ".properties", name);
            if (!structural) {
                errors.push_back(field_required(sp, "because it is defined in " + vp));
            } else {
                check_completeness(sub, structural, sp, vp, errors);
            }
        }
    }
}

const std::set<std::string> kObjectMetaFields = {"name",
                                                 "generateName",
                                                 "namespace",
                                                 "selfLink",
                                                 "uid",
                                                 "resourceVersion",
                                                 "generation",
                                                 "creationTimestamp",
                                                 "deletionTimestamp",
                                                 "deletionGracePeriodSeconds",
                                                 "labels",
                                                 "annotations",
                                                 "ownerReferences",
                                                 "finalizers",
                                                 "managedFields"};

struct PruneState;
void prune_node(json& x, const json* s, PruneState& state);
std::vector<std::string> prune_unknown(json& x, const json& s);

// `check_defaults` is off below additionalProperties, which upstream does not follow when
// validating defaults.
void check_structural(const json& s, Level level, const std::string& path,
                      std::vector<FieldError>& errors, bool check_defaults = true) {
    if (!s.is_object()) {
        errors.push_back(field_invalid(path, s, "must be a schema object"));
        return;
    }
    const std::string type = type_of(s);
    const bool embedded = flag(s, "x-kubernetes-embedded-resource");
    const bool int_or_string = flag(s, "x-kubernetes-int-or-string");
    const bool preserve = flag(s, "x-kubernetes-preserve-unknown-fields");

    if (const json* t = child(s, "type"); t && !t->is_string()) {
        errors.push_back(field_invalid(path + ".type", *t, "must be a string"));
    } else if (!type.empty() && type != "object" && type != "array" && type != "string" &&
               type != "integer" && type != "number" && type != "boolean") {
        errors.push_back(field_not_supported(
            path + ".type", type, {"array", "boolean", "integer", "number", "object", "string"}));
    }
    if (type == "array" && !items_schema(s)) {
        errors.push_back(field_required(path + ".items", "must be specified"));
    }
    if (const json* items = items_schema(s))
        check_structural(*items, Level::Item, path + ".items", errors, check_defaults);

    const json* properties = child(s, "properties");
    if (properties && properties->is_object()) {
        for (const auto& [name, sub] : properties->items()) {
            check_structural(sub, Level::Field, key_path(path + ".properties", name), errors,
                             check_defaults);
        }
    }
    if (const json* additional = child(s, "additionalProperties")) {
        if (level == Level::Root) {
            errors.push_back(
                field_forbidden(path + ".additionalProperties", "must not be used at the root"));
        }
        if (additional->is_object()) {
            check_structural(*additional, Level::Field, path + ".additionalProperties", errors,
                             false);
        }
        if (properties && properties->is_object() && !properties->empty() &&
            !(additional->is_boolean() && additional->get<bool>())) {
            errors.push_back(field_forbidden(path + ".additionalProperties",
                                             "additionalProperties and properties are mutual "
                                             "exclusive"));
        }
        if (embedded) {
            errors.push_back(field_forbidden(path + ".additionalProperties",
                                             "must not be used if x-kubernetes-embedded-resource "
                                             "is set"));
        }
    }
    if (int_or_string && preserve) {
        errors.push_back(field_invalid(path + ".x-kubernetes-preserve-unknown-fields", true,
                                       "must be false if x-kubernetes-int-or-string is true"));
    }
    if (int_or_string && embedded) {
        errors.push_back(field_invalid(path + ".x-kubernetes-embedded-resource", true,
                                       "must be false if x-kubernetes-int-or-string is true"));
    }
    if (const json* p = child(s, "x-kubernetes-preserve-unknown-fields");
        p && p->is_boolean() && !p->get<bool>()) {
        errors.push_back(field_invalid(path + ".x-kubernetes-preserve-unknown-fields", false,
                                       "must be true or undefined"));
    }
    if (flag(s, "uniqueItems")) {
        errors.push_back(field_forbidden(path + ".uniqueItems",
                                         "uniqueItems cannot be set to true since the runtime "
                                         "complexity becomes quadratic"));
    }
    check_unsupported_keywords(s, path, errors);

    const bool skip_any_of = int_or_string && is_int_or_string_any_of(child(s, "anyOf"));
    const json* all_of = child(s, "allOf");
    const bool skip_first_all_of_any_of = int_or_string && all_of && all_of->is_array() &&
                                          !all_of->empty() && (*all_of)[0].is_object() &&
                                          is_int_or_string_any_of(child((*all_of)[0], "anyOf"));
    check_value_validation(s, level, path, errors, skip_any_of, skip_first_all_of_any_of);

    if (embedded && type != "object") {
        if (type.empty()) {
            errors.push_back(field_required(
                path + ".type", "must be object if x-kubernetes-embedded-resource is true"));
        } else {
            errors.push_back(field_invalid(
                path + ".type", type, "must be object if x-kubernetes-embedded-resource is true"));
        }
    } else if (type.empty() && !int_or_string && !preserve) {
        const char* detail = level == Level::Root ? "must not be empty at the root"
                             : level == Level::Item
                                 ? "must not be empty for specified array items"
                                 : "must not be empty for specified object fields";
        errors.push_back(field_required(path + ".type", detail));
    }
    if (level == Level::Root && !type.empty() && type != "object") {
        errors.push_back(field_invalid(path + ".type", type, "must be object at the root"));
    }
    const bool check_metadata = level == Level::Root || embedded;
    for (const char* name : {"kind", "apiVersion"}) {
        const json* sub = property_schema(s, name);
        if (sub && check_metadata && type_of(*sub) != "string") {
            errors.push_back(field_invalid(key_path(path + ".properties", name) + ".type",
                                           type_of(*sub), "must be string"));
        }
    }
    if (const json* metadata = property_schema(s, "metadata")) {
        const std::string metadata_path = key_path(path + ".properties", "metadata");
        if (check_metadata && type_of(*metadata) != "object") {
            errors.push_back(
                field_invalid(metadata_path + ".type", type_of(*metadata), "must be object"));
        }
        if (level == Level::Root && metadata->is_object()) {
            // Only name/generateName may be constrained; everything else is implied by ObjectMeta.
            json rest = *metadata;
            rest.erase("type");
            rest.erase("default");
            if (auto props = rest.find("properties"); props != rest.end() && props->is_object()) {
                json remaining = *props;
                remaining.erase("name");
                remaining.erase("generateName");
                if (remaining.empty()) rest.erase("properties");
            }
            if (!rest.empty()) {
                errors.push_back(field_forbidden(metadata_path,
                                                 "must not specify anything other than name and "
                                                 "generateName, but metadata is implicitly "
                                                 "specified"));
            }
        }
    }
    if (embedded && !preserve && (!properties || !properties->is_object() || properties->empty())) {
        errors.push_back(field_required(path + ".properties",
                                        "must not be empty if x-kubernetes-embedded-resource is "
                                        "true without x-kubernetes-preserve-unknown-fields"));
    }
    if (const json* list_type = child(s, "x-kubernetes-list-type")) {
        const std::string value = list_type->is_string() ? list_type->get<std::string>() : "";
        if (type != "array") {
            if (type.empty()) {
                errors.push_back(field_required(
                    path + ".type", "must be array if x-kubernetes-list-type is specified"));
            } else {
                errors.push_back(field_invalid(
                    path + ".type", type, "must be array if x-kubernetes-list-type is specified"));
            }
        }
        if (value != "atomic" && value != "set" && value != "map") {
            errors.push_back(field_not_supported(path + ".x-kubernetes-list-type", *list_type,
                                                 {"atomic", "set", "map"}));
        }
        if (value == "map") {
            const json* keys = child(s, "x-kubernetes-list-map-keys");
            if (!keys || !keys->is_array() || keys->empty()) {
                errors.push_back(
                    field_required(path + ".x-kubernetes-list-map-keys",
                                   "must not be empty if x-kubernetes-list-type is map"));
            }
        }
    } else if (const json* keys = child(s, "x-kubernetes-list-map-keys");
               keys && keys->is_array() && !keys->empty()) {
        errors.push_back(field_required(path + ".x-kubernetes-list-type",
                                        "must be map if x-kubernetes-list-map-keys is non-empty"));
    }
    if (const json* map_type = child(s, "x-kubernetes-map-type")) {
        if (type != "object") {
            if (type.empty()) {
                errors.push_back(field_required(
                    path + ".type", "must be object if x-kubernetes-map-type is specified"));
            } else {
                errors.push_back(field_invalid(
                    path + ".type", type, "must be object if x-kubernetes-map-type is specified"));
            }
        }
        if (!map_type->is_string() || (*map_type != "atomic" && *map_type != "granular")) {
            errors.push_back(field_not_supported(path + ".x-kubernetes-map-type", *map_type,
                                                 {"atomic", "granular"}));
        }
    }
    if (const json* d = child(s, "default"); d && check_defaults) {
        // Defaults must be pruned already and validate against their own schema node.
        json pruned = *d;
        if (!prune_unknown(pruned, s).empty() || pruned != *d) {
            errors.push_back(field_invalid(path + ".default", *d, "must not have unknown fields"));
        }
        for (auto& error : validate(*d, s)) {
            error.field = path + ".default" + (error.field == "<nil>" ? "" : "." + error.field);
            errors.push_back(std::move(error));
        }
    }
}

// ------------------------------------------------------------------ pruning

struct PruneState {
    std::vector<std::string> unknown;
    std::string path;
    const json* root = nullptr;  // the resource's schema: its root is an embedded resource
    void record(const std::string& key) { unknown.push_back(child_path(path, key)); }
    bool embedded(const json* s) const {
        return s == root || flag(*s, "x-kubernetes-embedded-resource");
    }
};

void prune_node(json& x, const json* s, PruneState& state);

void coerce_metadata(json& object, PruneState& state) {
    auto it = object.find("metadata");
    if (it == object.end() || !it->is_object()) return;
    std::vector<std::string> drop;
    for (const auto& [key, value] : it->items()) {
        if (!kObjectMetaFields.count(key)) drop.push_back(key);
    }
    const std::string saved = state.path;
    state.path = child_path(saved, "metadata");
    for (const auto& key : drop) {
        state.record(key);
        it->erase(key);
    }
    state.path = saved;
}

void skip_prune(json& x, const json* s, PruneState& state) {
    if (!s) return;
    const std::string saved = state.path;
    const bool embedded = state.embedded(s);
    if (x.is_object()) {
        if (embedded) coerce_metadata(x, state);
        bool additional_present = false;
        const json* additional = additional_schema(*s, additional_present);
        for (auto& [key, value] : x.items()) {
            if (embedded && (key == "apiVersion" || key == "kind" || key == "metadata")) continue;
            if (const json* prop = property_schema(*s, key)) {
                state.path = child_path(saved, key);
                prune_node(value, prop, state);
            } else if (additional_present) {
                state.path = child_path(saved, key);
                prune_node(value, additional, state);
            }
            state.path = saved;
        }
    } else if (x.is_array()) {
        for (std::size_t i = 0; i < x.size(); ++i) {
            state.path = saved + "[" + std::to_string(i) + "]";
            skip_prune(x[i], items_schema(*s), state);
        }
        state.path = saved;
    }
}

void prune_node(json& x, const json* s, PruneState& state) {
    if (s && flag(*s, "x-kubernetes-preserve-unknown-fields")) {
        skip_prune(x, s, state);
        return;
    }
    const std::string saved = state.path;
    if (x.is_object()) {
        if (!s) {
            for (const auto& [key, value] : x.items()) state.record(key);
            x = json::object();
            return;
        }
        const bool embedded = state.embedded(s);
        if (embedded) coerce_metadata(x, state);
        bool additional_present = false;
        const json* additional = additional_schema(*s, additional_present);
        std::vector<std::string> drop;
        for (auto& [key, value] : x.items()) {
            const bool meta_field = key == "apiVersion" || key == "kind" || key == "metadata";
            if (embedded && meta_field) continue;
            if (const json* prop = property_schema(*s, key)) {
                state.path = child_path(saved, key);
                prune_node(value, prop, state);
            } else if (additional_present) {
                state.path = child_path(saved, key);
                prune_node(value, additional, state);
            } else {
                if (!meta_field || !saved.empty()) state.record(key);
                drop.push_back(key);
            }
            state.path = saved;
        }
        for (const auto& key : drop) x.erase(key);
    } else if (x.is_array()) {
        const json* items = s ? items_schema(*s) : nullptr;
        for (std::size_t i = 0; i < x.size(); ++i) {
            state.path = saved + "[" + std::to_string(i) + "]";
            prune_node(x[i], items, state);
        }
        state.path = saved;
    }
}

std::vector<std::string> prune_unknown(json& x, const json& s) {
    PruneState state;
    prune_node(x, &s, state);
    return state.unknown;
}

// Nulls of non-nullable fields without a default are dropped (they would fail validation).
void prune_non_nullable_nulls(json& x, const json& s) {
    if (x.is_object()) {
        bool additional_present = false;
        const json* additional = additional_schema(s, additional_present);
        std::vector<std::string> drop;
        for (auto& [key, value] : x.items()) {
            const json* sub = property_schema(s, key);
            if (!sub) sub = additional_present ? additional : nullptr;
            if (!sub) continue;
            if (value.is_null()) {
                if (!flag(*sub, "nullable") && !child(*sub, "default")) drop.push_back(key);
                continue;
            }
            prune_non_nullable_nulls(value, *sub);
        }
        for (const auto& key : drop) x.erase(key);
    } else if (x.is_array()) {
        if (const json* items = items_schema(s)) {
            for (auto& item : x) {
                if (!item.is_null()) prune_non_nullable_nulls(item, *items);
            }
        }
    }
}

// ------------------------------------------------------------------ defaulting

bool non_nullable_null(const json& x, const json* s) {
    return x.is_null() && s && !flag(*s, "nullable");
}

void default_node(json& x, const json* s) {
    if (!s) return;
    if (x.is_object()) {
        if (const json* properties = child(*s, "properties");
            properties && properties->is_object()) {
            for (const auto& [key, prop] : properties->items()) {
                const json* d = child(prop, "default");
                if (!d) continue;
                auto it = x.find(key);
                if (it == x.end() || non_nullable_null(*it, &prop)) x[key] = *d;
            }
        }
        bool additional_present = false;
        const json* additional = additional_schema(*s, additional_present);
        for (auto& [key, value] : x.items()) {
            if (const json* prop = property_schema(*s, key)) {
                default_node(value, prop);
            } else if (additional_present && additional) {
                if (const json* d = child(*additional, "default");
                    d && non_nullable_null(value, additional)) {
                    value = *d;
                }
                default_node(value, additional);
            }
        }
    } else if (x.is_array()) {
        const json* items = items_schema(*s);
        if (!items) return;
        for (auto& item : x) {
            if (const json* d = child(*items, "default"); d && non_nullable_null(item, items))
                item = *d;
            default_node(item, items);
        }
    }
}

// ------------------------------------------------------------------ value validation

// kube-openapi error texts use the dotted path ("spec.items[2].name") with "in body".
struct Validator {
    std::vector<FieldError>& errors;

    static std::string field_for(const std::string& path) {
        std::string trimmed = path;
        if (!trimmed.empty() && trimmed.front() == '.') trimmed.erase(0, 1);
        return trimmed.empty() ? "<nil>" : trimmed;
    }

    void invalid(const std::string& path, const json& value, const std::string& message) {
        errors.push_back(field_invalid(field_for(path), value, message));
    }
    void type_invalid(const std::string& path, const std::string& expected,
                      const std::string& actual) {
        errors.push_back(field_type_invalid(
            field_for(path), actual,
            path + " in body must be of type " + expected + ": " + go_quote(actual)));
    }
    void composite(const std::string& message) {
        errors.push_back(field_invalid("<nil>", "", message));
    }

    bool valid(const json& x, const json& s, const std::string& path) {
        std::vector<FieldError> scratch;
        Validator inner{scratch};
        inner.check(x, s, path);
        return scratch.empty();
    }

    static std::vector<std::string> types_of(const json& s) {
        if (flag(s, "x-kubernetes-int-or-string")) return {"integer", "string"};
        const std::string type = type_of(s);
        if (type.empty()) return {};
        return {type};
    }

    void check_type(const json& x, const json& s, const std::string& path) {
        const auto types = types_of(s);
        if (types.empty()) return;
        std::string joined;
        for (const auto& t : types) joined += (joined.empty() ? "" : ",") + t;
        const auto has = [&](const char* t) {
            return std::find(types.begin(), types.end(), t) != types.end();
        };
        if (x.is_null()) {
            if (!flag(s, "nullable")) type_invalid(path, joined, "null");
            return;
        }
        const std::string actual = json_type_name(x);
        const bool float_int = actual == "number" && is_integral(x) && has("integer");
        const bool int_float = actual == "integer" && has("number");
        if (!(has(actual.c_str()) || float_int || int_float)) type_invalid(path, joined, actual);
    }

    void check_composition(const json& x, const json& s, const std::string& path) {
        const std::string quoted = go_quote(path);
        if (const json* any_of = child(s, "anyOf");
            any_of && any_of->is_array() && !any_of->empty()) {
            bool any = false;
            for (const auto& sub : *any_of) {
                if (valid(x, sub, path)) {
                    any = true;
                    break;
                }
            }
            if (!any) {
                composite(quoted + " must validate at least one schema (anyOf)");
                check(x, any_of->front(), path);
            }
        }
        if (const json* one_of = child(s, "oneOf");
            one_of && one_of->is_array() && !one_of->empty()) {
            std::size_t count = 0;
            for (const auto& sub : *one_of) count += valid(x, sub, path) ? 1 : 0;
            if (count != 1) {
                composite(quoted + " must validate one and only one schema (oneOf). " +
                          (count == 0 ? std::string("Found none valid")
                                      : "Found " + std::to_string(count) + " valid alternatives"));
                if (count == 0) check(x, one_of->front(), path);
            }
        }
        if (const json* all_of = child(s, "allOf");
            all_of && all_of->is_array() && !all_of->empty()) {
            std::size_t count = 0;
            for (const auto& sub : *all_of) {
                const std::size_t before = errors.size();
                check(x, sub, path);
                count += errors.size() == before ? 1 : 0;
            }
            if (count != all_of->size()) {
                composite(quoted + " must validate all the schemas (allOf)" +
                          (count == 0 ? ". None validated" : ""));
            }
        }
        if (const json* n = child(s, "not"); n && n->is_object()) {
            if (valid(x, *n, path)) composite(quoted + " must not validate the schema (not)");
        }
    }

    void check_string(const std::string& text, const json& x, const json& s,
                      const std::string& path) {
        std::size_t runes = 0;
        for (unsigned char c : text) runes += (c & 0xC0) != 0x80 ? 1 : 0;
        if (const json* max = child(s, "maxLength"); max && max->is_number()) {
            if (static_cast<double>(runes) > max->get<double>()) {
                errors.push_back(field_too_long(field_for(path), count_of(*max)));
                return;
            }
        }
        if (const json* min = child(s, "minLength"); min && min->is_number()) {
            if (static_cast<double>(runes) < min->get<double>()) {
                invalid(path, x,
                        path + " in body should be at least " + std::to_string(count_of(*min)) +
                            " chars long");
                return;
            }
        }
        if (const json* pattern = child(s, "pattern"); pattern && pattern->is_string()) {
            auto regex = compiled_pattern(pattern->get<std::string>(), nullptr);
            if (regex && !pattern_matches(*regex, text)) {
                invalid(path, x,
                        path + " in body should match '" + pattern->get<std::string>() + "'");
            }
        }
    }

    void check_format(const std::string& text, const json& s, const std::string& path);

    void check_number(const json& x, const json& s, const std::string& path) {
        const bool integer_value = x.is_number_integer();
        const double value = x.get<double>();
        // Integer values compare against bounds truncated to int64, as kube-openapi does.
        const auto bound_text = [&](double bound) {
            return integer_value ? std::to_string(truncate_to_int64(bound)) : go_float(bound);
        };
        const auto compare_value = [&](double bound) {
            return integer_value ? static_cast<double>(truncate_to_int64(bound)) : bound;
        };
        if (const json* multiple = child(s, "multipleOf"); multiple && multiple->is_number()) {
            const double factor = multiple->get<double>();
            if (factor <= 0) {
                invalid(path, x,
                        "factor MultipleOf declared for " + path +
                            " must be positive: " + go_float(factor));
            } else {
                const double quotient = value / factor;
                if (std::abs(quotient - std::round(quotient)) >
                    1e-9 * std::max(1.0, std::abs(quotient))) {
                    invalid(path, x,
                            path + " in body should be a multiple of " + go_value(*multiple));
                }
            }
        }
        if (const json* max = child(s, "maximum"); max && max->is_number()) {
            const double bound = compare_value(max->get<double>());
            const bool exclusive = flag(s, "exclusiveMaximum");
            if (exclusive ? value >= bound : value > bound) {
                invalid(path, x,
                        path + " in body should be less than " + (exclusive ? "" : "or equal to ") +
                            bound_text(max->get<double>()));
            }
        }
        if (const json* min = child(s, "minimum"); min && min->is_number()) {
            const double bound = compare_value(min->get<double>());
            const bool exclusive = flag(s, "exclusiveMinimum");
            if (exclusive ? value <= bound : value < bound) {
                invalid(path, x,
                        path + " in body should be greater than " +
                            (exclusive ? "" : "or equal to ") + bound_text(min->get<double>()));
            }
        }
    }

    void check_array(const json& x, const json& s, const std::string& path) {
        const auto size = static_cast<long long>(x.size());
        if (const json* min = child(s, "minItems"); min && min->is_number()) {
            if (size < count_of(*min)) {
                invalid(path, size,
                        path + " in body should have at least " + std::to_string(count_of(*min)) +
                            " items");
            }
        }
        if (const json* max = child(s, "maxItems"); max && max->is_number()) {
            if (size > count_of(*max)) {
                errors.push_back(field_too_many(field_for(path), size, count_of(*max)));
            }
        }
        if (flag(s, "uniqueItems")) {
            const std::set<json> distinct(x.begin(), x.end());
            if (distinct.size() != x.size()) {
                invalid(path, "", path + " in body shouldn't contain duplicates");
            }
        }
        if (const json* items = items_schema(s)) {
            for (std::size_t i = 0; i < x.size(); ++i) {
                check(x[i], *items, path + "[" + std::to_string(i) + "]");
            }
        }
    }

    void check_enum(const json& x, const json& s, const std::string& path) {
        const json* values = child(s, "enum");
        if (!values || !values->is_array() || values->empty()) return;
        for (const auto& allowed : *values) {
            if (allowed == x) return;
            if (allowed.is_number() && x.is_number() && allowed.get<double>() == x.get<double>())
                return;
        }
        std::vector<std::string> supported;
        for (const auto& allowed : *values) {
            supported.push_back(allowed.is_string() ? allowed.get<std::string>() : allowed.dump());
        }
        errors.push_back(field_not_supported(field_for(path), x, supported));
    }

    void check_object(const json& x, const json& s, const std::string& path) {
        const auto size = static_cast<long long>(x.size());
        if (const json* min = child(s, "minProperties"); min && min->is_number()) {
            if (size < count_of(*min)) {
                invalid(path, size,
                        path + " in body should have at least " + std::to_string(count_of(*min)) +
                            " properties");
            }
        }
        if (const json* max = child(s, "maxProperties"); max && max->is_number()) {
            if (size > count_of(*max)) {
                errors.push_back(field_too_many(field_for(path), size, count_of(*max)));
            }
        }
        bool additional_present = false;
        const json* additional = additional_schema(s, additional_present);
        const json* properties = child(s, "properties");
        if (additional_forbidden(s)) {
            for (const auto& [key, value] : x.items()) {
                if (!property_schema(s, key)) {
                    invalid(path, key, path + "." + key + " in body is a forbidden property");
                }
            }
        }
        for (const auto& [key, value] : x.items()) {
            const std::string sub_path = path.empty() ? key : path + "." + key;
            if (const json* prop = property_schema(s, key)) {
                check(value, *prop, sub_path);
            } else if (additional_present && additional) {
                check(value, *additional, path + "." + key);
            }
        }
        (void)properties;
        if (const json* required = child(s, "required"); required && required->is_array()) {
            for (const auto& name : *required) {
                if (!name.is_string()) continue;
                if (!x.contains(name.get<std::string>())) {
                    errors.push_back(
                        field_required(field_for(path + "." + name.get<std::string>())));
                }
            }
        }
    }

    void check_list_type(const json& x, const json& s, const std::string& path) {
        const json* list_type = child(s, "x-kubernetes-list-type");
        if (!list_type || !list_type->is_string()) return;
        const std::string field = field_for(path);
        if (*list_type == "set") {
            std::set<json> seen;
            for (std::size_t i = 0; i < x.size(); ++i) {
                if (!seen.insert(x[i]).second) {
                    errors.push_back(field_duplicate(field + "[" + std::to_string(i) + "]", x[i]));
                }
            }
        } else if (*list_type == "map") {
            const json* keys = child(s, "x-kubernetes-list-map-keys");
            if (!keys || !keys->is_array()) return;
            std::set<json> seen;
            for (std::size_t i = 0; i < x.size(); ++i) {
                if (!x[i].is_object()) continue;
                json key = json::object();
                for (const auto& name : *keys) {
                    if (!name.is_string()) continue;
                    auto it = x[i].find(name.get<std::string>());
                    if (it != x[i].end()) key[name.get<std::string>()] = *it;
                }
                if (!seen.insert(key).second) {
                    errors.push_back(field_duplicate(field + "[" + std::to_string(i) + "]", key));
                }
            }
        }
    }

    void check(const json& x, const json& s, const std::string& path) {
        if (!s.is_object()) return;
        check_type(x, s, path);
        if (x.is_null()) {
            check_enum(x, s, path);
            return;
        }
        check_composition(x, s, path);
        if (x.is_string()) {
            check_string(x.get_ref<const std::string&>(), x, s, path);
            check_format(x.get_ref<const std::string&>(), s, path);
        }
        if (x.is_number()) check_number(x, s, path);
        if (x.is_array()) check_array(x, s, path);
        check_enum(x, s, path);
        if (x.is_object()) check_object(x, s, path);
        if (x.is_array()) check_list_type(x, s, path);
    }
};

// ------------------------------------------------------------------ formats

bool all_of(std::string_view text, bool (*predicate)(char)) {
    return std::all_of(text.begin(), text.end(), predicate);
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// go-openapi: case-insensitive, hyphens optional; versioned UUIDs pin the version digit.
bool valid_uuid(const std::string& text, char version) {
    std::string hex;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23)) continue;
        if (!is_hex(text[i])) return false;
        hex.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
    }
    if (hex.size() != 32) return false;
    if (version != 0 && hex[12] != version) return false;
    if ((version == '4' || version == '5') &&
        std::string("89ab").find(hex[16]) == std::string::npos) {
        return false;
    }
    return true;
}

bool valid_date(std::string_view text) {
    if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
    if (!all_of(text.substr(0, 4), is_digit) || !all_of(text.substr(5, 2), is_digit) ||
        !all_of(text.substr(8, 2), is_digit)) {
        return false;
    }
    const int month = std::stoi(std::string(text.substr(5, 2)));
    const int day = std::stoi(std::string(text.substr(8, 2)));
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// The layouts go-openapi's strfmt accepts: RFC 3339 with or without fraction, offset
// colon, seconds or zone.
bool valid_date_time(const std::string& text) {
    static const std::regex pattern(
        R"(^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$)");
    return std::regex_match(text, pattern) && valid_date(std::string_view(text).substr(0, 10));
}

bool valid_ipv4(const std::string& text) {
    in_addr address{};
    return inet_pton(AF_INET, text.c_str(), &address) == 1;
}
bool valid_ipv6(const std::string& text) {
    in6_addr address{};
    return inet_pton(AF_INET6, text.c_str(), &address) == 1;
}

bool valid_cidr(const std::string& text) {
    const auto slash = text.find('/');
    if (slash == std::string::npos) return false;
    const std::string ip = text.substr(0, slash);
    const std::string bits = text.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 || !all_of(bits, is_digit)) return false;
    const int prefix = std::stoi(bits);
    if (valid_ipv4(ip)) return prefix <= 32;
    if (valid_ipv6(ip)) return prefix <= 128;
    return false;
}

bool valid_hostname(const std::string& text) {
    if (text.empty() || text.size() > 255) return false;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto dot = text.find('.', start);
        if (dot == std::string::npos) dot = text.size();
        std::string_view label(text.data() + start, dot - start);
        if (label.empty() || label.size() > 63) return false;
        for (char c : label) {
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
        }
        if (label.front() == '-' || label.back() == '-') return false;
        start = dot + 1;
        if (dot == text.size()) break;
    }
    return true;
}

bool valid_base64(const std::string& text) {
    if (text.size() % 4 != 0) return false;
    std::size_t padding = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '=') {
            ++padding;
            continue;
        }
        if (padding > 0) return false;
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/')) return false;
    }
    return padding <= 2;
}

bool valid_duration(const std::string& text) {
    // Go time.ParseDuration syntax, e.g. "1h30m", "-1.5s", "0".
    static const std::regex go_style(
        R"(^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$)");
    static const std::regex spaced(
        R"(^(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$)");
    return std::regex_match(text, go_style) || std::regex_match(text, spaced);
}

bool matches_label(std::string_view text) {
    if (text.empty() || text.front() == '-' || text.back() == '-') return false;
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
}

bool matches_long_name(std::string_view text) {
    std::size_t start = 0;
    while (true) {
        const auto dot = text.find('.', start);
        if (!matches_label(text.substr(start, dot - start))) return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

bool valid_mac(const std::string& text) {
    static const std::regex pattern(
        R"(^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$)");
    return std::regex_match(text, pattern);
}

void Validator::check_format(const std::string& text, const json& s, const std::string& path) {
    const json* format = child(s, "format");
    if (!format || !format->is_string()) return;
    // Formats only apply to string schemas; names are compared without dashes.
    const std::string type = type_of(s);
    if (!type.empty() && type != "string") return;
    const std::string written = format->get<std::string>();
    std::string name;
    for (char c : written) {
        if (c != '-') name.push_back(c);
    }
    bool ok = true;
    if (name == "uuid") {
        ok = valid_uuid(text, 0);
    } else if (name == "uuid3" || name == "uuid4" || name == "uuid5") {
        ok = valid_uuid(text, name.back());
    } else if (name == "date") {
        ok = valid_date(text);
    } else if (name == "datetime") {
        ok = valid_date_time(text);
    } else if (name == "ipv4") {
        ok = valid_ipv4(text);
    } else if (name == "ipv6") {
        ok = valid_ipv6(text);
    } else if (name == "cidr") {
        ok = valid_cidr(text);
    } else if (name == "hostname") {
        ok = valid_hostname(text);
    } else if (name == "byte") {
        ok = valid_base64(text);
    } else if (name == "duration") {
        ok = valid_duration(text);
    } else if (name == "mac") {
        ok = valid_mac(text);
    } else if (name == "email") {
        const auto at = text.rfind('@');
        ok = at != std::string::npos && at > 0 && at + 1 < text.size() &&
             text.find(' ') == std::string::npos && valid_hostname(text.substr(at + 1));
    } else if (name == "hexcolor") {
        static const std::regex pattern(R"(^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$)");
        ok = std::regex_match(text, pattern);
    } else if (name == "rgbcolor") {
        static const std::regex pattern(
            R"(^rgb\(\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*\)$)");
        ok = std::regex_match(text, pattern);
    } else if (name == "bsonobjectid") {
        ok = text.size() == 24 && all_of(text, is_hex);
    } else if (name == "ssn") {
        static const std::regex pattern(R"(^\d{3}[- ]?\d{2}[- ]?\d{4}$)");
        ok = std::regex_match(text, pattern);
    } else if (name == "uri") {
        static const std::regex pattern(R"(^([A-Za-z][A-Za-z0-9+.-]*:[^\s]*|/[^\s]*)$)");
        ok = std::regex_match(text, pattern);
    } else if (name == "k8sshortname") {
        ok = matches_label(text) && text.size() <= 63;
    } else if (name == "k8slongname") {
        ok = text.size() <= 253 && matches_long_name(text);
    }
    if (!ok) {
        errors.push_back(field_type_invalid(
            field_for(path), text,
            path + " in body must be of type " + written + ": " + go_quote(text)));
    }
}

// ------------------------------------------------------------------ embedded resources

// Nested x-kubernetes-embedded-resource objects must look like objects of their own
// (apiextensions pkg/apiserver/schema/objectmeta/validation.go).
void check_embedded(const json& x, const json* s, const std::string& path,
                    std::vector<FieldError>& errors, bool is_root);

void check_embedded_resource(const json& x, const std::string& path,
                             std::vector<FieldError>& errors) {
    const auto sub = [&](const char* name) {
        return path.empty() ? std::string(name) : path + "." + name;
    };
    if (!x.contains("apiVersion")) errors.push_back(field_required(sub("apiVersion")));
    if (!x.contains("kind")) errors.push_back(field_required(sub("kind")));
    for (const auto& [key, value] : x.items()) {
        if (key == "apiVersion") {
            if (!value.is_string()) {
                errors.push_back(field_invalid(sub("apiVersion"), value, "must be a string"));
            } else if (value.get_ref<const std::string&>().empty()) {
                errors.push_back(field_invalid(sub("apiVersion"), value, "must not be empty"));
            } else if (const auto& text = value.get_ref<const std::string&>();
                       std::count(text.begin(), text.end(), '/') > 1) {
                errors.push_back(field_invalid(sub("apiVersion"), value,
                                               "unexpected GroupVersion string: " + text));
            }
        } else if (key == "kind") {
            if (!value.is_string()) {
                errors.push_back(field_invalid(sub("kind"), value, "must be a string"));
            } else if (value.get_ref<const std::string&>().empty()) {
                errors.push_back(field_invalid(sub("kind"), value, "must not be empty"));
            } else {
                std::string lower = value.get<std::string>();
                for (char& c : lower)
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                auto messages = validate_dns1035_label(lower);
                if (!messages.empty()) {
                    std::string joined;
                    for (const auto& m : messages) joined += (joined.empty() ? "" : ",") + m;
                    errors.push_back(field_invalid(
                        sub("kind"), value,
                        "may have mixed case, but should otherwise match: " + joined));
                }
            }
        } else if (key == "metadata") {
            if (!value.is_object()) {
                errors.push_back(field_invalid(sub("metadata"), value, "must be an object"));
                continue;
            }
            json metadata = value;
            if (metadata.value("name", std::string()).empty()) metadata["name"] = "fakename";
            const bool namespaced = !metadata.value("namespace", std::string()).empty();
            for (auto error : validate_object_meta(metadata, "path-segment", namespaced)) {
                error.field = sub("metadata") + error.field.substr(std::string("metadata").size());
                errors.push_back(std::move(error));
            }
        }
    }
}

void check_embedded(const json& x, const json* s, const std::string& path,
                    std::vector<FieldError>& errors, bool is_root) {
    if (!s || !s->is_object()) return;
    if (x.is_object()) {
        if (!is_root && flag(*s, "x-kubernetes-embedded-resource")) {
            check_embedded_resource(x, path, errors);
        }
        bool additional_present = false;
        const json* additional = additional_schema(*s, additional_present);
        for (const auto& [key, value] : x.items()) {
            if (const json* prop = property_schema(*s, key)) {
                check_embedded(value, prop, path.empty() ? key : path + "." + key, errors, false);
            } else if (additional_present) {
                check_embedded(value, additional, path + "[" + key + "]", errors, false);
            }
        }
    } else if (x.is_array()) {
        const json* items = items_schema(*s);
        for (std::size_t i = 0; i < x.size(); ++i) {
            check_embedded(x[i], items, path + "[" + std::to_string(i) + "]", errors, false);
        }
    }
}

}  // namespace

std::vector<FieldError> validate_structural_schema(const nlohmann::json& schema,
                                                   const std::string& path) {
    std::vector<FieldError> errors;
    if (!schema.is_object()) {
        errors.push_back(field_required(path, "must be an object describing the schema"));
        return errors;
    }
    check_structural(schema, Level::Root, path, errors);
    check_value_completeness(schema, &schema, path, path, errors);
    std::stable_sort(errors.begin(), errors.end(), [](const FieldError& a, const FieldError& b) {
        return a.to_string() < b.to_string();
    });
    errors.erase(std::unique(errors.begin(), errors.end(),
                             [](const FieldError& a, const FieldError& b) {
                                 return a.to_string() == b.to_string();
                             }),
                 errors.end());
    return errors;
}

std::vector<std::string> prune(nlohmann::json& object, const nlohmann::json& schema) {
    // The resource root behaves like an embedded resource: apiVersion, kind and metadata stay
    // (the schema is not copied to say so: CRD schemas can be large, and this is per write).
    static const json no_schema = json::object();
    const json& root = schema.is_object() ? schema : no_schema;
    PruneState state;
    state.root = &root;
    prune_node(object, &root, state);
    if (object.is_object()) prune_non_nullable_nulls(object, root);
    std::sort(state.unknown.begin(), state.unknown.end());
    return state.unknown;
}

void apply_defaults(nlohmann::json& object, const nlohmann::json& schema) {
    if (!schema.is_object()) return;
    default_node(object, &schema);
}

std::vector<FieldError> validate(const nlohmann::json& object, const nlohmann::json& schema) {
    std::vector<FieldError> errors;
    Validator validator{errors};
    validator.check(object, schema, "");
    check_embedded(object, &schema, "", errors, true);
    return errors;
}

std::string child_path(const std::string& base, const std::string& name) {
    return base.empty() ? name : base + "." + name;
}

}  // namespace kopf::apiserver
