// Strategic merge patch, following apimachinery pkg/util/strategicpatch/patch.go
// (StrategicMergeMapPatch: MergeParallelList and IgnoreUnmatchedNulls on), with the
// patch metadata of the built-in types taken from their Go struct tags.
#include "util/strategic_merge.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "util/go_format.hpp"

namespace kopf::apiserver {

namespace {

using json = nlohmann::json;

constexpr const char* kDirective = "$patch";
constexpr const char* kRetainKeys = "$retainKeys";
constexpr const char* kDeleteFromPrimitiveList = "$deleteFromPrimitiveList";
constexpr const char* kSetElementOrder = "$setElementOrder";

// ------------------------------------------------------------------ patch metadata

// A field's patch metadata plus, for structs and list items, the metadata of sub-fields.
struct Meta {
    std::string strategy;   // "", "merge" (lists), "retainKeys" is irrelevant when applying
    std::string merge_key;  // for lists of objects merged by key
    std::map<std::string, std::shared_ptr<const Meta>> fields;

    const Meta* field(const std::string& name) const {
        auto it = fields.find(name);
        return it == fields.end() ? nullptr : it->second.get();
    }
};

using MetaPtr = std::shared_ptr<const Meta>;

MetaPtr make(std::string strategy = "", std::string merge_key = "",
             std::map<std::string, MetaPtr> fields = {}) {
    auto meta = std::make_shared<Meta>();
    meta->strategy = std::move(strategy);
    meta->merge_key = std::move(merge_key);
    meta->fields = std::move(fields);
    return meta;
}

MetaPtr merge_list(const std::string& key, std::map<std::string, MetaPtr> item_fields = {}) {
    return make("merge", key, std::move(item_fields));
}

MetaPtr object_meta() {
    static const MetaPtr meta = make("", "",
                                     {
                                         {"finalizers", make("merge")},
                                         {"ownerReferences", merge_list("uid")},
                                     });
    return meta;
}

MetaPtr container() {
    static const MetaPtr meta = make("", "",
                                     {
                                         {"ports", merge_list("containerPort")},
                                         {"env", merge_list("name")},
                                         {"volumeMounts", merge_list("mountPath")},
                                         {"volumeDevices", merge_list("devicePath")},
                                     });
    return meta;
}

MetaPtr pod_spec() {
    static const MetaPtr meta =
        make("", "",
             {
                 {"volumes", merge_list("name")},
                 {"initContainers", merge_list("name", container()->fields)},
                 {"containers", merge_list("name", container()->fields)},
                 {"ephemeralContainers", merge_list("name", container()->fields)},
                 {"imagePullSecrets", merge_list("name")},
                 {"hostAliases", merge_list("ip")},
                 {"topologySpreadConstraints", merge_list("topologyKey")},
                 {"schedulingGates", merge_list("name")},
                 {"resourceClaims", merge_list("name")},
             });
    return meta;
}

MetaPtr conditions_status() {
    static const MetaPtr meta = make("", "", {{"conditions", merge_list("type")}});
    return meta;
}

MetaPtr pod_template() {
    static const MetaPtr meta = make("", "", {{"metadata", object_meta()}, {"spec", pod_spec()}});
    return meta;
}

MetaPtr workload(bool with_strategy) {
    std::map<std::string, MetaPtr> spec = {{"template", pod_template()}};
    if (with_strategy) spec["strategy"] = make();  // retainKeys: only the directive matters
    return make("", "",
                {{"metadata", object_meta()},
                 {"spec", make("", "", std::move(spec))},
                 {"status", conditions_status()}});
}

MetaPtr kind_meta(const std::string& group, const std::string& kind) {
    static const std::map<std::pair<std::string, std::string>, MetaPtr> kinds = [] {
        std::map<std::pair<std::string, std::string>, MetaPtr> m;
        m[{"", "Pod"}] = make("", "",
                              {
                                  {"metadata", object_meta()},
                                  {"spec", pod_spec()},
                                  {"status", make("", "",
                                                  {{"conditions", merge_list("type")},
                                                   {"podIPs", merge_list("ip")},
                                                   {"hostIPs", merge_list("ip")}})},
                              });
        m[{"", "PodTemplate"}] =
            make("", "", {{"metadata", object_meta()}, {"template", pod_template()}});
        m[{"apps", "Deployment"}] = workload(true);
        m[{"apps", "ReplicaSet"}] = workload(false);
        m[{"apps", "StatefulSet"}] = workload(false);
        m[{"apps", "DaemonSet"}] = workload(false);
        m[{"", "ReplicationController"}] = workload(false);
        m[{"batch", "Job"}] = workload(false);
        m[{"batch", "CronJob"}] = make(
            "", "",
            {
                {"metadata", object_meta()},
                {"spec", make("", "",
                              {{"jobTemplate",
                                make("", "",
                                     {
                                         {"metadata", object_meta()},
                                         {"spec", make("", "", {{"template", pod_template()}})},
                                     })}})},
            });
        m[{"", "Service"}] = make("", "",
                                  {
                                      {"metadata", object_meta()},
                                      {"spec", make("", "", {{"ports", merge_list("port")}})},
                                      {"status", conditions_status()},
                                  });
        m[{"", "Node"}] = make("", "",
                               {
                                   {"metadata", object_meta()},
                                   {"status", make("", "",
                                                   {{"conditions", merge_list("type")},
                                                    {"addresses", merge_list("type")}})},
                               });
        m[{"", "Namespace"}] =
            make("", "", {{"metadata", object_meta()}, {"status", conditions_status()}});
        m[{"", "PersistentVolumeClaim"}] = m[{"", "Namespace"}];
        m[{"", "ServiceAccount"}] =
            make("", "", {{"metadata", object_meta()}, {"secrets", merge_list("name")}});
        const auto webhooks =
            make("", "", {{"metadata", object_meta()}, {"webhooks", merge_list("name")}});
        m[{"admissionregistration.k8s.io", "MutatingWebhookConfiguration"}] = webhooks;
        m[{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"}] = webhooks;
        return m;
    }();
    auto it = kinds.find({group, kind});
    if (it != kinds.end()) return it->second;
    static const MetaPtr generic = make("", "", {{"metadata", object_meta()}});
    return generic;
}

// ------------------------------------------------------------------ Go-like rendering

// Go's %v of a decoded JSON value: map[k:v ...] with sorted keys, [a b], <nil>.
std::string go_text(const json& value) {
    if (value.is_object()) {
        std::string out = "map[";
        bool first = true;
        for (const auto& [key, item] : value.items()) {
            if (!first) out += " ";
            first = false;
            out += key + ":" + go_text(item);
        }
        return out + "]";
    }
    if (value.is_array()) {
        std::string out = "[";
        for (std::size_t i = 0; i < value.size(); ++i) {
            if (i > 0) out += " ";
            out += go_text(value[i]);
        }
        return out + "]";
    }
    if (value.is_number()) return go_float(value.get<double>());
    return go_value(value);
}

std::string go_type(const json& value) {
    switch (value.type()) {
        case json::value_t::object:
            return "map[string]interface {}";
        case json::value_t::array:
            return "[]interface {}";
        case json::value_t::string:
            return "string";
        case json::value_t::boolean:
            return "bool";
        case json::value_t::null:
            return "<nil>";
        default:
            return "float64";
    }
}

[[noreturn]] void no_merge_key(const json& map, const std::string& key) {
    throw PatchError("map: " + go_text(map) + " does not contain declared merge key: " + key);
}

[[noreturn]] void bad_patch_type(const json& type, const json& map) {
    throw PatchError("unknown patch type: " + go_text(type) + " in map: " + go_text(map));
}

// Go compares decoded JSON scalars with ==; numbers are all float64.
bool scalar_equal(const json& a, const json& b) {
    if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
    if (a.is_object() || a.is_array() || b.is_object() || b.is_array()) return false;
    return a == b;
}

bool same_kind(const json& a, const json& b) {
    if (a.is_number() && b.is_number()) return true;
    return a.type() == b.type();
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

std::string extract_key(const std::string& key, const std::string& prefix) {
    const auto slash = key.find('/');
    if (slash == std::string::npos || key.substr(0, slash) != prefix) {
        if (prefix == kDeleteFromPrimitiveList) {
            throw PatchError("invalid patch format of primitive list");
        }
        throw PatchError("invalid patch format of setElementOrder list");
    }
    return key.substr(slash + 1);
}

// ------------------------------------------------------------------ the algorithm

json merge_map(json original, json patch, const Meta* meta);

bool is_directive_key(const std::string& key) {
    return key == kRetainKeys || starts_with(key, std::string(kSetElementOrder) + "/") ||
           starts_with(key, std::string(kDeleteFromPrimitiveList) + "/");
}

// Returns false when the value must be dropped (a map carrying a $patch directive).
// Other directive keys are dropped too: the typed decoding of a real server discards them
// as unknown fields, and objects here are stored as JSON.
bool remove_directives(json& value) {
    if (value.is_object()) {
        if (value.contains(kDirective)) return false;
        std::vector<std::string> drop;
        for (auto& [key, item] : value.items()) {
            if (is_directive_key(key) || !remove_directives(item)) drop.push_back(key);
        }
        for (const auto& key : drop) value.erase(key);
    } else if (value.is_array()) {
        json kept = json::array();
        for (auto& item : value) {
            if (remove_directives(item)) kept.push_back(std::move(item));
        }
        value = std::move(kept);
    }
    return true;
}

void discard_nulls(json& value) {
    if (value.is_object()) {
        std::vector<std::string> drop;
        for (auto& [key, item] : value.items()) {
            if (item.is_null()) {
                drop.push_back(key);
            } else {
                discard_nulls(item);
            }
        }
        for (const auto& key : drop) value.erase(key);
    } else if (value.is_array()) {
        for (auto& item : value) discard_nulls(item);
    }
}

// reflect.Kind of the list elements: object, scalar, or error for mixed/nested lists.
json::value_t element_kind(const std::vector<const json*>& lists) {
    const json* previous = nullptr;
    for (const json* list : lists) {
        for (const auto& item : *list) {
            if (!previous) {
                previous = &item;
                if (item.is_array()) throw PatchError("lists of lists are not supported");
            } else if (!same_kind(*previous, item)) {
                std::string text = "[";
                for (std::size_t i = 0; i < lists.size(); ++i) {
                    if (i > 0) text += " ";
                    text += go_text(*lists[i]);
                }
                throw PatchError("list element types are not identical: " + text + "]");
            }
        }
    }
    if (!previous) throw PatchError("no elements in any of the given slices");
    return previous->is_object() ? json::value_t::object : previous->type();
}

const json* key_value(const json& item, const std::string& merge_key, bool by_key) {
    if (!by_key) return &item;
    if (!item.is_object()) return nullptr;
    auto it = item.find(merge_key);
    return it == item.end() ? nullptr : &*it;
}

int index_of(const json& list, const json& value, const std::string& merge_key, bool by_key) {
    const json* wanted = key_value(value, merge_key, by_key);
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json* candidate = key_value(list[i], merge_key, by_key);
        if (!wanted && !candidate) return static_cast<int>(i);
        if (wanted && candidate && scalar_equal(*wanted, *candidate)) return static_cast<int>(i);
    }
    return -1;
}

// Go's sort.SliceStable with the (not strictly weak) "unknown sorts first" comparator;
// insertion sort reproduces Go's result for the list sizes that occur in objects.
void sort_by_order(std::vector<json>& items, const json& order, const std::string& merge_key,
                   bool by_key) {
    const auto less = [&](const json& a, const json& b) {
        const int ia = index_of(order, a, merge_key, by_key);
        if (ia >= 0) {
            const int ib = index_of(order, b, merge_key, by_key);
            if (ib >= 0) return ia < ib;
        }
        return true;
    };
    for (std::size_t i = 1; i < items.size(); ++i) {
        for (std::size_t j = i; j > 0 && less(items[j], items[j - 1]); --j) {
            std::swap(items[j], items[j - 1]);
        }
    }
}

void validate_merge_keys(const std::string& merge_key, const std::vector<const json*>& lists) {
    for (const json* list : lists) {
        for (const auto& item : *list) {
            if (!item.is_object()) {
                throw PatchError("expected a map[string]interface {}, but received a " +
                                 go_type(item));
            }
            if (!item.contains(merge_key)) no_merge_key(item, merge_key);
        }
    }
}

std::vector<json> normalize_slice_order(std::vector<json> to_sort, const json& order,
                                        const std::string& merge_key, bool by_key) {
    std::vector<json> to_delete;
    if (by_key) {
        json as_array(to_sort);
        validate_merge_keys(merge_key, {&as_array, &order});
        std::vector<json> keep;
        for (auto& item : to_sort) {
            auto directive = item.find(kDirective);
            if (directive != item.end() && *directive == "delete") {
                to_delete.push_back(std::move(item));
            } else {
                keep.push_back(std::move(item));
            }
        }
        to_sort = std::move(keep);
    }
    sort_by_order(to_sort, order, merge_key, by_key);
    for (auto& item : to_delete) to_sort.push_back(std::move(item));
    return to_sort;
}

json normalize_element_order(std::vector<json> patch_items, std::vector<json> server_only,
                             const json& patch_order, const json& server_order,
                             const std::string& merge_key, bool by_key) {
    patch_items = normalize_slice_order(std::move(patch_items), patch_order, merge_key, by_key);
    server_only = normalize_slice_order(std::move(server_only), server_order, merge_key, by_key);
    json all = json::array();
    std::size_t i = 0;
    std::size_t j = 0;
    const std::size_t size = patch_items.size() + server_only.size();
    for (std::size_t k = 0; k < size; ++k) {
        if (i >= server_only.size() && j < patch_items.size()) {
            all.push_back(std::move(patch_items[j++]));
        } else if (j >= patch_items.size() && i < server_only.size()) {
            all.push_back(std::move(server_only[i++]));
        } else {
            const int li = index_of(server_order, server_only[i], merge_key, by_key);
            const int ri = index_of(server_order, patch_items[j], merge_key, by_key);
            if (li >= 0 && ri >= 0 && li < ri) {
                all.push_back(std::move(server_only[i++]));
            } else {
                all.push_back(std::move(patch_items[j++]));
            }
        }
    }
    return all;
}

void partition(const json& merged, const json& partition_by, const std::string& merge_key,
               bool by_key, std::vector<json>& in_patch, std::vector<json>& server_only) {
    for (const auto& item : merged) {
        bool found = false;
        if (by_key) {
            if (!item.is_object()) {
                throw PatchError("expected a map[string]interface {}, but received a " +
                                 go_type(item));
            }
            auto value = item.find(merge_key);
            if (value == item.end()) no_merge_key(item, merge_key);
            for (std::size_t k = 0; k < partition_by.size() && !found; ++k) {
                const auto& candidate = partition_by[k];
                if (!candidate.is_object()) {
                    throw PatchError("value for key " + std::to_string(k) + " is not a map");
                }
                auto other = candidate.find(merge_key);
                found = other != candidate.end() && scalar_equal(*other, *value);
            }
        } else {
            for (const auto& candidate : partition_by) {
                if (scalar_equal(candidate, item)) {
                    found = true;
                    break;
                }
            }
        }
        (found ? in_patch : server_only).push_back(item);
    }
}

int find_by_key(const json& list, const std::string& merge_key, const json& value) {
    for (std::size_t k = 0; k < list.size(); ++k) {
        if (!list[k].is_object())
            throw PatchError("value for key " + std::to_string(k) + " is not a map");
        auto it = list[k].find(merge_key);
        if (it != list[k].end() && scalar_equal(*it, value)) return static_cast<int>(k);
    }
    return -1;
}

// `server_view`, when given, receives what Go's caller still sees through its slice of the
// original list afterwards. Upstream deletes and appends in place on the original's backing
// array (its capacity equals its length after the unstructured conversion), and
// $setElementOrder uses that mutated view as the server order; reproducing it keeps the
// resulting element order identical.
json merge_slice(json original, json patch, const Meta* item_meta, const std::string& merge_key,
                 bool is_delete_list, json* server_view = nullptr) {
    if (server_view) *server_view = original;
    if (original.empty() && patch.empty()) return original;
    const bool by_object = element_kind({&original, &patch}) == json::value_t::object;
    json merged;
    if (!by_object) {
        if (is_delete_list) {
            json kept = json::array();
            for (const auto& item : original) {
                bool remove = false;
                for (const auto& gone : patch) remove = remove || scalar_equal(item, gone);
                if (!remove) kept.push_back(item);
            }
            return kept;
        }
        // append + Go's in-place de-duplication (order is normalised afterwards).
        std::vector<json> both(original.begin(), original.end());
        both.insert(both.end(), patch.begin(), patch.end());
        std::size_t length = both.size() - 1;
        for (std::size_t i = 0; both.size() > 0 && i < length; ++i) {
            for (std::size_t j = i + 1; j <= length; ++j) {
                if (scalar_equal(both[i], both[j])) {
                    both[j] = both[length];
                    both.resize(length);
                    --length;
                    --j;
                }
            }
        }
        merged = json(both);
    } else {
        if (merge_key.empty()) throw PatchError("cannot merge lists without merge key");
        std::vector<json> backing(original.begin(), original.end());
        const std::size_t capacity = backing.size();
        std::size_t live = capacity;
        // Special elements: {"$patch": "delete", key: v} and {"$patch": "replace"}.
        json plain = json::array();
        bool replace = false;
        for (const auto& item : patch) {
            auto directive = item.find(kDirective);
            if (directive == item.end()) {
                plain.push_back(item);
                continue;
            }
            if (*directive == "delete") {
                auto value = item.find(merge_key);
                if (value == item.end()) no_merge_key(item, merge_key);
                while (true) {
                    json current(std::vector<json>(backing.begin(), backing.begin() + live));
                    const int at = find_by_key(current, merge_key, *value);
                    if (at < 0) break;
                    // append(s[:at], s[at+1:]...): shift left; the last slot keeps its value.
                    for (std::size_t i = static_cast<std::size_t>(at); i + 1 < live; ++i) {
                        backing[i] = backing[i + 1];
                    }
                    --live;
                }
            } else if (*directive == "replace") {
                replace = true;
            } else if (*directive == "merge") {
                throw PatchError("merging lists cannot yet be specified in the patch");
            } else {
                bad_patch_type(*directive, item);
            }
        }
        const std::size_t live_after_deletes = live;
        bool aliased = !replace;
        if (replace) {
            original = plain;
            patch = json::array();
        } else {
            original = json(std::vector<json>(backing.begin(), backing.begin() + live));
            patch = plain;
        }
        merged = original;
        for (const auto& item : patch) {
            auto value = item.find(merge_key);
            if (value == item.end()) no_merge_key(item, merge_key);
            const int at = find_by_key(merged, merge_key, *value);
            if (at >= 0) {
                const auto index = static_cast<std::size_t>(at);
                merged[index] = merge_map(merged[index], item, item_meta);
                if (aliased) backing[index] = merged[index];
            } else {
                json added = item;
                remove_directives(added);
                if (aliased && merged.size() < capacity) {
                    backing[merged.size()] = added;
                } else {
                    aliased = false;  // append reallocated: the original array is left alone
                }
                merged.push_back(std::move(added));
            }
        }
        if (!replace) {
            original =
                json(std::vector<json>(backing.begin(), backing.begin() + live_after_deletes));
        }
        if (server_view) *server_view = json(backing);
    }
    std::vector<json> in_patch;
    std::vector<json> server_only;
    partition(merged, patch, merge_key, by_object, in_patch, server_only);
    return normalize_element_order(std::move(in_patch), std::move(server_only), patch, original,
                                   merge_key, by_object);
}

void check_set_element_order(const json& patch_list, const json& order,
                             const std::string& merge_key) {
    if (!order.is_array() || !(patch_list.is_array() || patch_list.is_null())) {
        throw PatchError("invalid patch format of setElementOrder list");
    }
    if (order.empty() || patch_list.is_null() || patch_list.empty()) return;
    std::vector<json> candidates;
    for (const auto& item : patch_list) {
        if (!merge_key.empty()) {
            if (!item.is_object()) {
                throw PatchError("expected a map[string]interface {}, but received a " +
                                 go_type(item));
            }
            auto directive = item.find(kDirective);
            if (directive != item.end() && *directive == "delete") continue;
        }
        candidates.push_back(item);
    }
    std::size_t p = 0;
    std::size_t s = 0;
    while (p < candidates.size() && s < order.size()) {
        if (candidates[p].is_object() && candidates[p].contains(kDirective)) {
            ++p;
            continue;
        }
        bool equal;
        if (merge_key.empty()) {
            equal = scalar_equal(candidates[p], order[s]);
        } else {
            if (!candidates[p].is_object() || !order[s].is_object()) {
                throw PatchError("expected a map[string]interface {}, but received a " +
                                 go_type(order[s]));
            }
            auto left = candidates[p].find(merge_key);
            if (left == candidates[p].end()) no_merge_key(candidates[p], merge_key);
            auto right = order[s].find(merge_key);
            if (right == order[s].end()) no_merge_key(order[s], merge_key);
            equal = scalar_equal(*left, *right);
        }
        if (equal) ++p;
        ++s;
    }
    if (p < candidates.size() && s >= order.size()) {
        throw PatchError("The order in patch list:\n" + go_text(patch_list) +
                         "\n doesn't match $setElementOrder list:\n" + go_text(order) + "\n");
    }
}

void apply_set_element_order(json& original, json& patch, const Meta* meta) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : patch.items()) {
        if (starts_with(key, kSetElementOrder)) keys.push_back(key);
    }
    for (const auto& key : keys) {
        json order = patch[key];
        patch.erase(key);
        if (!order.is_array()) {
            throw PatchError("expected a []interface {}, but received a " + go_type(order));
        }
        const std::string field = extract_key(key, kSetElementOrder);
        const bool in_original = original.contains(field);
        const bool in_patch = patch.contains(field);
        json original_list = in_original ? original[field] : json::array();
        json patch_list = in_patch ? patch[field] : json::array();
        if (in_original && !original_list.is_array()) {
            throw PatchError("expected a []interface {}, but received a " + go_type(original_list));
        }
        if (in_patch && !patch_list.is_array()) {
            throw PatchError("expected a []interface {}, but received a " + go_type(patch_list));
        }
        const Meta* field_meta = meta ? meta->field(field) : nullptr;
        const std::string merge_key = field_meta ? field_meta->merge_key : "";
        check_set_element_order(in_patch ? patch_list : json(nullptr), order, merge_key);
        json merged;
        json server_order = original_list;
        if (in_original && !in_patch) {
            merged = original_list;
        } else if (!in_original && in_patch) {
            if (!remove_directives(patch_list)) continue;
            merged = patch_list;
        } else if (in_original && in_patch) {
            if (field_meta && field_meta->strategy == "merge") {
                merged = merge_slice(original_list, patch_list, field_meta, merge_key, false,
                                     &server_order);
            } else {
                merged = patch_list;
            }
        } else {
            continue;
        }
        const bool by_key = !merge_key.empty();
        std::vector<json> in_order;
        std::vector<json> server_only;
        partition(merged, order, merge_key, by_key, in_order, server_only);
        const bool by_object = element_kind({&original_list, &patch_list}) == json::value_t::object;
        original[field] = normalize_element_order(std::move(in_order), std::move(server_only),
                                                  order, server_order, merge_key, by_object);
        patch.erase(field);
    }
}

void apply_retain_keys(json& original, json& patch) {
    auto it = patch.find(kRetainKeys);
    if (it == patch.end()) return;
    json retain = *it;
    patch.erase(it);
    if (!retain.is_array()) throw PatchError("invalid patch format of retainKeys");
    std::set<std::string> keep;
    for (const auto& key : retain) {
        if (key.is_string()) keep.insert(key.get<std::string>());
    }
    for (const auto& [key, value] : patch.items()) {
        if (value.is_null() || starts_with(key, kDeleteFromPrimitiveList) ||
            starts_with(key, kSetElementOrder)) {
            continue;
        }
        if (!keep.count(key)) throw PatchError("invalid patch format of retainKeys");
    }
    std::vector<std::string> drop;
    for (const auto& [key, value] : original.items()) {
        if (!keep.count(key)) drop.push_back(key);
    }
    for (const auto& key : drop) original.erase(key);
}

json merge_map(json original, json patch, const Meta* meta) {
    if (!patch.is_object()) {
        throw PatchError("expected a map[string]interface {}, but received a " + go_type(patch));
    }
    if (auto directive = patch.find(kDirective); directive != patch.end()) {
        if (*directive == "replace") {
            patch.erase(kDirective);
            return patch;
        }
        if (*directive == "delete") return json::object();
        bad_patch_type(*directive, patch);
    }
    if (original.is_null()) original = json::object();
    if (!original.is_object()) {
        throw PatchError("expected a map[string]interface {}, but received a " + go_type(original));
    }
    apply_retain_keys(original, patch);
    apply_set_element_order(original, patch, meta);

    for (auto& [patch_key, patch_value] : patch.items()) {
        std::string key = patch_key;
        const bool is_delete_list = starts_with(key, kDeleteFromPrimitiveList);
        if (is_delete_list) key = extract_key(key, kDeleteFromPrimitiveList);

        if (patch_value.is_null()) {
            original.erase(key);
            continue;  // IgnoreUnmatchedNulls
        }
        auto existing = original.find(key);
        if (existing == original.end() || !same_kind(*existing, patch_value)) {
            if (!is_delete_list) {
                json value = patch_value;
                discard_nulls(value);
                if (remove_directives(value)) {
                    original[key] = std::move(value);
                } else {
                    original.erase(key);
                }
            }
            continue;
        }
        const Meta* field_meta = meta ? meta->field(key) : nullptr;
        if (existing->is_object()) {
            if (field_meta && field_meta->strategy == "replace") {
                *existing = patch_value;
            } else {
                *existing = merge_map(*existing, patch_value, field_meta);
            }
        } else if (existing->is_array()) {
            if ((field_meta && field_meta->strategy == "merge") || is_delete_list) {
                *existing = merge_slice(*existing, patch_value, field_meta,
                                        field_meta ? field_meta->merge_key : "", is_delete_list);
            } else {
                json value = patch_value;
                remove_directives(value);
                *existing = std::move(value);
            }
        } else {
            json value = patch_value;
            if (remove_directives(value)) {
                *existing = std::move(value);
            } else {
                original.erase(key);
            }
        }
    }
    return original;
}

MetaPtr meta_from_json(const json& description, int depth) {
    if (depth > 64 || !description.is_object()) return make();
    auto meta = std::make_shared<Meta>();
    // "merge,retainKeys" -> "merge": retainKeys only matters through the $retainKeys directive.
    std::string strategy = description.value("strategy", std::string());
    std::string kept;
    std::size_t start = 0;
    while (start <= strategy.size()) {
        auto comma = strategy.find(',', start);
        if (comma == std::string::npos) comma = strategy.size();
        const std::string part = strategy.substr(start, comma - start);
        if (part != "retainKeys" && !part.empty()) kept = part;
        start = comma + 1;
    }
    meta->strategy = kept;
    meta->merge_key = description.value("mergeKey", std::string());
    if (auto fields = description.find("fields");
        fields != description.end() && fields->is_object()) {
        for (const auto& [name, sub] : fields->items()) {
            meta->fields[name] = meta_from_json(sub, depth + 1);
        }
    }
    return meta;
}

// A patch metadata tree as the structural schema of its list shapes (managed_fields.hpp):
// lists merged by key are keyed lists, lists merged without a key are sets.
json shapes_of(const Meta& meta) {
    json out = json::object();
    json properties = json::object();
    for (const auto& [name, sub] : meta.fields) properties[name] = shapes_of(*sub);
    if (meta.strategy == "merge") {
        if (meta.merge_key.empty()) {
            out["x-kubernetes-list-type"] = "set";
        } else {
            out["x-kubernetes-list-type"] = "map";
            out["x-kubernetes-list-map-keys"] = json::array({meta.merge_key});
            out["items"] = {{"properties", std::move(properties)}};
        }
        return out;
    }
    if (!properties.empty()) out["properties"] = std::move(properties);
    return out;
}

}  // namespace

nlohmann::json strategic_merge_patch_with_meta(const nlohmann::json& original,
                                               const nlohmann::json& patch,
                                               const nlohmann::json& meta) {
    if (!patch.is_object()) throw PatchError("invalid JSON document");
    json base = original.is_null() ? json::object() : original;
    if (!base.is_object()) throw PatchError("invalid JSON document");
    const MetaPtr tree = meta_from_json(meta, 0);
    return merge_map(std::move(base), patch, tree.get());
}

nlohmann::json strategic_merge_patch(const nlohmann::json& original, const nlohmann::json& patch,
                                     const std::string& group, const std::string& kind) {
    if (!patch.is_object()) throw PatchError("invalid JSON document");
    json base = original.is_null() ? json::object() : original;
    if (!base.is_object()) throw PatchError("invalid JSON document");
    const MetaPtr meta = kind_meta(group, kind);
    return merge_map(std::move(base), patch, meta.get());
}

nlohmann::json list_shapes_schema(const std::string& group, const std::string& kind) {
    return shapes_of(*kind_meta(group, kind));
}

}  // namespace kopf::apiserver
