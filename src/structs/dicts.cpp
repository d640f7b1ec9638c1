#include "structs/dicts.hpp"

#include <kopf/registry.hpp>

namespace kopf::dicts {

FieldPath parse_field(const std::string& field) {
    FieldPath path;
    if (field.empty()) return path;
    std::size_t start = 0;
    while (true) {
        auto dot = field.find('.', start);
        path.push_back(
            field.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return path;
}

std::string format_field(const FieldPath& path) {
    std::string out;
    for (const auto& p : path) {
        if (!out.empty()) out += '.';
        out += p;
    }
    return out;
}

namespace {
// Walks `path` (strings or string views) through nested objects.
template <class Path>
const json* walk(const json& root, const Path& path) {
    const json* node = &root;
    for (const auto& key : path) {
        if (!node->is_object()) return nullptr;
        const auto& object = node->get_ref<const json::object_t&>();
        auto it = object.find(std::string_view(key));
        if (it == object.end()) return nullptr;
        node = &it->second;
    }
    return node;
}
}  // namespace

const json* resolve(const json& root, const FieldPath& path) {
    return walk(root, path);
}

const json* resolve(const json& root, std::initializer_list<std::string_view> path) {
    return walk(root, path);
}

void ensure(json& root, const FieldPath& path, json value) {
    json* node = &root;
    for (const auto& key : path) {
        if (!node->is_object()) *node = json::object();
        node = &(*node)[key];
    }
    *node = std::move(value);
}

void remove(json& root, const FieldPath& path) {
    if (path.empty()) return;
    json* node = &root;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        if (!node->is_object() || !node->contains(path[i])) return;
        node = &(*node)[path[i]];
    }
    if (node->is_object()) node->erase(path.back());
}

void remove_empty_stanzas(json& root) {
    if (!root.is_object()) return;
    for (auto it = root.begin(); it != root.end();) {
        remove_empty_stanzas(it.value());
        if (it.value().is_object() && it.value().empty()) {
            it = root.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace kopf::dicts

namespace kopf::detail {
std::vector<std::string> parse_field(const std::string& field) {
    return dicts::parse_field(field);
}
std::string location_id(const std::source_location& loc) {
    return std::string("lambda:") + loc.file_name() + ":" + std::to_string(loc.line());
}
}  // namespace kopf::detail
