#include "util/managed_fields.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>

namespace kopf::apiserver {

using json = nlohmann::json;

namespace {

const json& no_schema() {
    static const json none;
    return none;
}

// ObjectMeta's list shapes, which CRD schemas never describe.
const json& object_meta_schema() {
    static const json schema = {{"properties",
                                 {{"finalizers", {{"x-kubernetes-list-type", "set"}}},
                                  {"ownerReferences",
                                   {{"x-kubernetes-list-type", "map"},
                                    {"x-kubernetes-list-map-keys", json::array({"uid"})}}}}}};
    return schema;
}

const json& child_schema(const json& schema, const std::string& field, bool root) {
    if (root && field == "metadata") return object_meta_schema();
    if (!schema.is_object()) return no_schema();
    if (auto p = schema.find("properties"); p != schema.end() && p->is_object()) {
        if (auto f = p->find(field); f != p->end()) return *f;
    }
    if (auto a = schema.find("additionalProperties"); a != schema.end() && a->is_object())
        return *a;
    return no_schema();
}

const json& item_schema(const json& schema) {
    if (!schema.is_object()) return no_schema();
    auto it = schema.find("items");
    return it != schema.end() && it->is_object() ? *it : no_schema();
}

enum class ListKind { Atomic, Set, Map };

struct ListShape {
    ListKind kind = ListKind::Atomic;
    std::vector<std::string> keys;
};

ListShape declared_shape(const json& schema) {
    ListShape shape;
    if (!schema.is_object()) return shape;
    const std::string type = schema.value("x-kubernetes-list-type", "atomic");
    if (type == "set") {
        shape.kind = ListKind::Set;
    } else if (type == "map") {
        auto keys = schema.find("x-kubernetes-list-map-keys");
        if (keys != schema.end() && keys->is_array())
            for (const auto& k : *keys)
                if (k.is_string()) shape.keys.push_back(k.get<std::string>());
        if (!shape.keys.empty()) shape.kind = ListKind::Map;
    }
    return shape;
}

// The path element that names a list item: k:{...} or v:..., none if the item lacks its keys.
std::optional<std::string> item_element(const json& item, const ListShape& shape) {
    if (shape.kind == ListKind::Set) {
        if (item.is_object() || item.is_array()) return std::nullopt;
        return "v:" + item.dump();
    }
    if (!item.is_object()) return std::nullopt;
    json key = json::object();  // nlohmann's objects keep keys sorted, as FieldsV1 has them
    for (const auto& name : shape.keys) {
        auto it = item.find(name);
        if (it == item.end() || it->is_object() || it->is_array()) return std::nullopt;
        key[name] = *it;
    }
    return "k:" + key.dump();
}

// A list whose items cannot all be named uniquely is treated as atomic, as the list of a
// schema-less object is (the server then still works, only with coarser ownership).
ListShape effective_shape(const json& schema, std::initializer_list<const json*> lists) {
    ListShape shape = declared_shape(schema);
    if (shape.kind == ListKind::Atomic) return shape;
    for (const json* list : lists) {
        if (!list || !list->is_array()) continue;
        std::set<std::string> seen;
        for (const auto& item : *list) {
            auto element = item_element(item, shape);
            if (!element || !seen.insert(*element).second) return ListShape{};
        }
    }
    return shape;
}

// Items of a granular list by their path elements, in list order.
std::vector<std::pair<std::string, const json*>> named_items(const json* list,
                                                             const ListShape& shape) {
    std::vector<std::pair<std::string, const json*>> out;
    if (!list || !list->is_array()) return out;
    for (const auto& item : *list) out.emplace_back(*item_element(item, shape), &item);
    return out;
}

void collect_applied(const json& value, const json& schema, FieldPath& path, bool root,
                     FieldSet& out) {
    if (value.is_object()) {
        for (const auto& [key, sub] : value.items()) {
            path.push_back("f:" + key);
            collect_applied(sub, child_schema(schema, key, root), path, false, out);
            path.pop_back();
        }
        return;
    }
    if (value.is_array()) {
        ListShape shape = effective_shape(schema, {&value});
        if (shape.kind == ListKind::Atomic) {
            out.insert(path);
            return;
        }
        for (const auto& [element, item] : named_items(&value, shape)) {
            path.push_back(element);
            out.insert(path);
            if (shape.kind == ListKind::Map)
                collect_applied(*item, item_schema(schema), path, false, out);
            path.pop_back();
        }
        return;
    }
    out.insert(path);
}

// The one field a comparison may leave out (metadata.managedFields: the managers' own record).
struct Ignored {
    bool managed_fields = false;
    bool skips(const FieldPath& path, const std::string& key) const {
        return managed_fields && path.size() == 1 && key == "managedFields" &&
               path[0] == "f:metadata";
    }
};

void compare_values(const json* before, const json* after, const json& schema, FieldPath& path,
                    bool root, FieldComparison& out, const Ignored& ignored);

// The two objects' keys walked side by side (both are sorted); a subtree equal on both sides
// holds no difference and is not descended into.
void compare_objects(const json* before, const json* after, const json& schema, FieldPath& path,
                     bool root, FieldComparison& out, const Ignored& ignored) {
    static const json::object_t none;
    const json::object_t& b =
        before && before->is_object() ? before->get_ref<const json::object_t&>() : none;
    const json::object_t& a =
        after && after->is_object() ? after->get_ref<const json::object_t&>() : none;
    auto bi = b.begin();
    auto ai = a.begin();
    while (bi != b.end() || ai != a.end()) {
        const std::string* key = nullptr;
        const json* old_value = nullptr;
        const json* new_value = nullptr;
        if (ai == a.end() || (bi != b.end() && bi->first < ai->first)) {
            key = &bi->first;
            old_value = &(bi++)->second;
        } else if (bi == b.end() || ai->first < bi->first) {
            key = &ai->first;
            new_value = &(ai++)->second;
        } else {
            key = &bi->first;
            old_value = &(bi++)->second;
            new_value = &(ai++)->second;
        }
        if (old_value && new_value && *old_value == *new_value) continue;
        if (ignored.skips(path, *key)) continue;
        path.push_back("f:" + *key);
        compare_values(old_value, new_value, child_schema(schema, *key, root), path, false, out,
                       ignored);
        path.pop_back();
    }
}

void compare_lists(const json* before, const json* after, const json& schema, FieldPath& path,
                   FieldComparison& out, const Ignored& ignored) {
    ListShape shape = effective_shape(schema, {before, after});
    if (shape.kind == ListKind::Atomic) {
        if (before && after && *before != *after) out.modified.insert(path);
        return;
    }
    auto old_items = named_items(before, shape);
    auto new_items = named_items(after, shape);
    std::map<std::string, std::pair<const json*, const json*>> items;
    for (const auto& [element, item] : old_items) items[element].first = item;
    for (const auto& [element, item] : new_items) items[element].second = item;
    for (const auto& [element, sides] : items) {
        path.push_back(element);
        compare_values(sides.first, sides.second, item_schema(schema), path, false, out, ignored);
        path.pop_back();
    }
}

void compare_values(const json* before, const json* after, const json& schema, FieldPath& path,
                    bool root, FieldComparison& out, const Ignored& ignored) {
    if (!before && !after) return;
    if (!path.empty()) {
        if (!before) out.added.insert(path);
        if (!after) out.removed.insert(path);
    }
    const json* shape_of = after ? after : before;
    const bool same_type = !before || !after || before->type() == after->type();
    if (same_type && shape_of->is_object()) {
        compare_objects(before, after, schema, path, root, out, ignored);
    } else if (same_type && shape_of->is_array()) {
        compare_lists(before, after, schema, path, out, ignored);
    } else if (before && after && *before != *after) {
        out.modified.insert(path);
    }
}

json strip_nulls(const json& value) {
    if (!value.is_object()) return value;
    json out = json::object();
    for (const auto& [key, sub] : value.items())
        if (!sub.is_null()) out[key] = strip_nulls(sub);
    return out;
}

json merge_value(const json* live, const json& config, const json& schema, bool root) {
    if (config.is_object()) {
        json result = live && live->is_object() ? *live : json::object();
        for (const auto& [key, sub] : config.items()) {
            if (sub.is_null()) {
                result.erase(key);
                continue;
            }
            const json* old = result.contains(key) ? &result[key] : nullptr;
            json merged = merge_value(old, sub, child_schema(schema, key, root), false);
            result[key] = std::move(merged);
        }
        return result;
    }
    if (config.is_array() && live && live->is_array()) {
        ListShape shape = effective_shape(schema, {live, &config});
        if (shape.kind == ListKind::Atomic) return config;
        json result = *live;
        for (const auto& item : config) {
            const std::string element = *item_element(item, shape);
            auto found = std::find_if(result.begin(), result.end(), [&](const json& existing) {
                return item_element(existing, shape) == element;
            });
            if (found == result.end())
                result.push_back(strip_nulls(item));
            else if (shape.kind == ListKind::Map)
                *found = merge_value(&*found, item, item_schema(schema), false);
        }
        return result;
    }
    return strip_nulls(config);
}

// Parses the key of a k: or v: element; throws std::invalid_argument naming it.
json element_value(const std::string& element) {
    json value = json::parse(element.substr(2), nullptr, false);
    if (value.is_discarded() || (element[0] == 'k' && !value.is_object()))
        throw std::invalid_argument("invalid FieldsV1 key \"" + element + "\"");
    return value;
}

bool item_matches(const json& item, const std::string& element) {
    const json value = element_value(element);
    if (element[0] == 'v') return item == value;
    if (!item.is_object()) return false;
    for (const auto& [key, wanted] : value.items()) {
        auto it = item.find(key);
        if (it == item.end() || *it != wanted) return false;
    }
    return true;
}

void remove_path(json& node, const FieldPath& path, std::size_t at) {
    const std::string& element = path[at];
    const bool last = at + 1 == path.size();
    if (element.rfind("f:", 0) == 0) {
        if (!node.is_object()) return;
        auto it = node.find(element.substr(2));
        if (it == node.end()) return;
        if (last) {
            node.erase(it);
        } else {
            remove_path(*it, path, at + 1);
            // An object emptied by the removal goes too (Go's omitempty maps and structs).
            if (it->is_object() && it->empty()) node.erase(it);
        }
        return;
    }
    if (!node.is_array() || (element.rfind("k:", 0) != 0 && element.rfind("v:", 0) != 0)) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (!item_matches(*it, element)) continue;
        if (last)
            node.erase(it);
        else
            remove_path(*it, path, at + 1);
        return;
    }
}

void read_v1(const json& node, FieldPath& path, FieldSet& out) {
    if (!node.is_object())
        throw std::invalid_argument("FieldsV1 node at \"" + field_path_string(path) +
                                    "\" is not an object");
    if (node.empty() && !path.empty()) out.insert(path);
    for (const auto& [key, sub] : node.items()) {
        if (key == ".") {
            if (!path.empty()) out.insert(path);
            continue;
        }
        if (key.size() < 2 || key[1] != ':' ||
            std::string("fkvi").find(key[0]) == std::string::npos)
            throw std::invalid_argument("invalid FieldsV1 key \"" + key + "\"");
        path.push_back(key);
        read_v1(sub, path, out);
        path.pop_back();
    }
}

}  // namespace

FieldSet fields_from_v1(const json& fields_v1) {
    FieldSet out;
    FieldPath path;
    if (fields_v1.is_null()) return out;
    read_v1(fields_v1, path, out);
    return out;
}

bool fields_v1_contains(const json& fields_v1, const FieldPath& path) {
    if (path.empty()) return false;
    const json* node = &fields_v1;
    for (const auto& element : path) {
        if (!node->is_object()) return false;
        const auto child = node->find(element);
        if (child == node->end()) return false;
        node = &*child;
    }
    return node->is_object() && (node->empty() || node->contains("."));
}

json fields_to_v1(const FieldSet& fields) {
    json root = json::object();
    for (const auto& path : fields) {
        json* node = &root;
        for (const auto& element : path) node = &(*node)[element];
        if (node->is_null()) *node = json::object();
    }
    for (const auto& path : fields) {
        json* node = &root;
        for (const auto& element : path) node = &(*node)[element];
        if (!node->empty()) (*node)["."] = json::object();
    }
    return root;
}

std::string field_path_string(const FieldPath& path) {
    std::string out;
    for (const auto& element : path) {
        const std::string rest = element.size() > 2 ? element.substr(2) : "";
        switch (element.empty() ? ' ' : element[0]) {
            case 'f':
                out += "." + rest;
                break;
            case 'k': {
                json key = json::parse(rest, nullptr, false);
                out += "[";
                bool first = true;
                if (key.is_object())
                    for (const auto& [name, value] : key.items()) {
                        out += (first ? "" : ",") + name + "=" + value.dump();
                        first = false;
                    }
                out += "]";
                break;
            }
            case 'v':
                out += "[=" + rest + "]";
                break;
            case 'i':
                out += "[" + rest + "]";
                break;
            default:
                out += "." + element;
        }
    }
    return out;
}

FieldSet applied_fields(const json& config, const json& schema) {
    FieldSet out;
    FieldPath path;
    collect_applied(config, schema, path, true, out);
    return out;
}

FieldComparison compare_fields(const json& before, const json& after, const json& schema,
                               bool ignore_managed_fields) {
    FieldComparison out;
    FieldPath path;
    compare_values(&before, &after, schema, path, true, out, Ignored{ignore_managed_fields});
    return out;
}

json apply_merge(const json& live, const json& config, const json& schema) {
    return merge_value(&live, config, schema, true);
}

void remove_fields(json& object, const FieldSet& paths) {
    // Deepest first, so removing an item does not shift the paths below it.
    for (auto it = paths.rbegin(); it != paths.rend(); ++it)
        if (!it->empty()) remove_path(object, *it, 0);
}

FieldSet field_union(const FieldSet& a, const FieldSet& b) {
    FieldSet out = a;
    out.insert(b.begin(), b.end());
    return out;
}

FieldSet field_difference(const FieldSet& a, const FieldSet& b) {
    FieldSet out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
    return out;
}

FieldSet field_intersection(const FieldSet& a, const FieldSet& b) {
    FieldSet out;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
    return out;
}

bool owns_within(const FieldSet& fields, const FieldPath& path) {
    auto it = fields.lower_bound(path);
    return it != fields.end() && it->size() >= path.size() &&
           std::equal(path.begin(), path.end(), it->begin());
}

}  // namespace kopf::apiserver
