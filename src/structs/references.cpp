#include "structs/references.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace kopf::structs {

namespace {

// Conventional versions in dotted names: "pods.v1", "kopfexamples.v1beta1.kopf.dev".
const std::regex& group_version_pattern() {
    static const std::regex pattern(R"(^[^.]*\.v\d+(?:(?:alpha|beta)\d+)?(?:\..*)?$)");
    return pattern;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::string::size_type start = 0;
    while (true) {
        auto pos = text.find(separator, start);
        if (pos == std::string::npos) {
            parts.push_back(text.substr(start));
            return parts;
        }
        parts.push_back(text.substr(start, pos - start));
        start = pos + 1;
    }
}

bool is_event_resource(const Resource& resource) {
    return resource.plural == "events" && ((resource.group.empty() && resource.version == "v1") ||
                                           resource.group == "events.k8s.io");
}

}  // namespace

std::string Resource::api_version() const {
    return group.empty() ? version : group + "/" + version;
}

std::string Resource::to_string() const {
    std::string text = plural + "." + version;
    if (!group.empty()) text += "." + group;
    return text;
}

namespace {

bool is_unreserved(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

// Runs of unreserved characters (all of most names) are appended whole: every write's path has
// a few of them.
void append_url_encoded(std::string& out, const std::string& text) {
    static const char* hex = "0123456789ABCDEF";
    std::size_t run = 0;
    for (std::size_t at = 0; at < text.size(); ++at) {
        const auto c = static_cast<unsigned char>(text[at]);
        if (is_unreserved(c)) continue;
        out.append(text, run, at - run);
        out.push_back('%');
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 0x0F]);
        run = at + 1;
    }
    out.append(text, run, text.size() - run);
}

}  // namespace

std::string url_encode(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    append_url_encoded(out, text);
    return out;
}

// Built by appending into one string: every write request asks for a path.
std::string Resource::path(const std::string& namespace_, const std::string& name,
                           const std::string& subresource,
                           const std::vector<std::pair<std::string, std::string>>& params) const {
    if (!subresource.empty() && name.empty()) {
        throw std::invalid_argument(
            fmt::format("Subresource '{}' of {} needs an object name.", subresource, to_string()));
    }
    if (namespaced && namespace_.empty() && !name.empty()) {
        throw std::invalid_argument(fmt::format(
            "Object '{}' of the namespaced resource {} needs a namespace.", name, to_string()));
    }
    std::string url;
    url.reserve(64 + group.size() + plural.size() + namespace_.size() + name.size() +
                subresource.size());
    if (group.empty()) {
        url += "/api/";
    } else {
        url += "/apis/";
        url += group;
        url += '/';
    }
    url += version;
    if (namespaced && !namespace_.empty()) {
        url += "/namespaces/";
        append_url_encoded(url, namespace_);
    }
    url += '/';
    url += plural;
    if (!name.empty()) {
        url += '/';
        append_url_encoded(url, name);
    }
    if (!subresource.empty()) {
        url += '/';
        url += subresource;
    }
    char separator = '?';
    for (const auto& [key, value] : params) {
        url += separator;
        append_url_encoded(url, key);
        url += '=';
        append_url_encoded(url, value);
        separator = '&';
    }
    return url;
}

Selector::Selector(const std::string& arg1) {
    if (std::regex_match(arg1, group_version_pattern())) {
        auto parts = split(arg1, '.');
        if (parts.size() >= 3) fields_.group = arg1.substr(parts[0].size() + parts[1].size() + 2);
        fields_.version = parts[1];
        fields_.any_name = parts[0];
    } else if (auto dot = arg1.find('.'); dot != std::string::npos) {
        fields_.group = arg1.substr(dot + 1);
        fields_.any_name = arg1.substr(0, dot);
    } else {
        fields_.any_name = arg1;
    }
    validate();
}

Selector::Selector(const std::string& arg1, const std::string& arg2) {
    if (auto slash = arg1.rfind('/'); slash != std::string::npos) {
        fields_.group = arg1.substr(0, slash);
        fields_.version = arg1.substr(slash + 1);
    } else if (arg1 == "v1") {
        fields_.group = "";
        fields_.version = arg1;
    } else {
        fields_.group = arg1;
    }
    fields_.any_name = arg2;
    validate();
}

Selector::Selector(const std::string& arg1, const std::string& arg2, const std::string& arg3) {
    fields_.group = arg1;
    fields_.version = arg2;
    fields_.any_name = arg3;
    validate();
}

Selector::Selector(Everything) : everything_(true) {}

Selector::Selector(SelectorFields fields) : fields_(std::move(fields)) {
    validate();
}

Selector::Selector(std::function<bool(const Resource&)> predicate)
    : predicate_(std::move(predicate)) {
    if (!predicate_) throw std::invalid_argument("Resource selector predicate is empty.");
}

void Selector::validate() const {
    std::vector<std::string> names;
    for (const auto* name : {&fields_.kind, &fields_.plural, &fields_.singular, &fields_.shortcut,
                             &fields_.category, &fields_.any_name}) {
        if (*name) {
            if (name->value().empty()) {
                throw std::invalid_argument(
                    "Resource names must not be empty strings in a resource selector.");
            }
            names.push_back(name->value());
        }
    }
    if (names.size() > 1) {
        throw std::invalid_argument(fmt::format("Ambiguous resource specification with names: {}.",
                                                fmt::join(names, ", ")));
    }
    if (names.empty()) throw std::invalid_argument("Unspecific resource selector with no names.");
    if (fields_.version && fields_.version->empty()) {
        throw std::invalid_argument("The API version must not be empty in a resource selector.");
    }
}

bool Selector::is_specific() const {
    return fields_.kind || fields_.plural || fields_.singular || fields_.shortcut ||
           fields_.any_name;
}

bool Selector::check(const Resource& r) const {
    const auto& f = fields_;
    if (f.group && *f.group != r.group) return false;
    if (f.version) {
        if (*f.version != r.version) return false;
    } else if (!r.preferred && !predicate_) {
        return false;
    }
    if (f.kind && *f.kind != r.kind) return false;
    if (f.plural && *f.plural != r.plural) return false;
    if (f.singular && *f.singular != r.singular) return false;
    if (f.category && !r.categories.count(*f.category)) return false;
    if (f.shortcut && !r.shortcuts.count(*f.shortcut)) return false;
    if (f.any_name && *f.any_name != r.kind && *f.any_name != r.plural &&
        *f.any_name != r.singular && !r.shortcuts.count(*f.any_name)) {
        return false;
    }
    // Events are excluded from catch-all selectors: handling produces them, so they would loop.
    if (everything_ && is_event_resource(r)) return false;
    if (predicate_ && (is_event_resource(r) || !predicate_(r))) return false;
    return true;
}

std::vector<Resource> Selector::select(const std::vector<Resource>& resources) const {
    std::vector<Resource> result;
    for (const auto& resource : resources) {
        if (check(resource) && std::find(result.begin(), result.end(), resource) == result.end()) {
            result.push_back(resource);
        }
    }
    // The core v1 group has priority over other groups with the same names, as in kubectl.
    if (is_specific()) {
        std::vector<Resource> core;
        for (const auto& resource : result) {
            if (resource.group.empty()) core.push_back(resource);
        }
        if (!core.empty()) return core;
    }
    return result;
}

std::optional<Resource> Selector::select_one(const std::vector<Resource>& resources) const {
    auto selected = select(resources);
    if (selected.empty()) return std::nullopt;
    if (selected.size() > 1) {
        std::vector<std::string> names;
        for (const auto& resource : selected) names.push_back(resource.to_string());
        throw AmbiguousResourceError(
            fmt::format("Ambiguous resources will not be served (try specifying API groups): "
                        "{} => {}",
                        to_string(), fmt::join(names, ", ")));
    }
    return selected.front();
}

std::string Selector::to_string() const {
    if (everything_) return "Selector(EVERYTHING)";
    if (predicate_) return "Selector(<predicate>)";
    std::vector<std::string> parts;
    auto add = [&](const char* key, const std::optional<std::string>& value) {
        if (value) parts.push_back(fmt::format("{}='{}'", key, *value));
    };
    add("group", fields_.group);
    add("version", fields_.version);
    add("kind", fields_.kind);
    add("plural", fields_.plural);
    add("singular", fields_.singular);
    add("shortcut", fields_.shortcut);
    add("category", fields_.category);
    add("any_name", fields_.any_name);
    return fmt::format("Selector({})", fmt::join(parts, ", "));
}

kopf::Resource to_public(const Resource& r) {
    kopf::Resource out;
    out.group = r.group;
    out.version = r.version;
    out.plural = r.plural;
    out.kind = r.kind;
    out.singular = r.singular;
    out.shortcuts.assign(r.shortcuts.begin(), r.shortcuts.end());
    out.categories.assign(r.categories.begin(), r.categories.end());
    out.subresources.assign(r.subresources.begin(), r.subresources.end());
    out.namespaced = r.namespaced;
    out.verbs.assign(r.verbs.begin(), r.verbs.end());
    out.preferred = r.preferred;
    return out;
}

Resource from_public(const kopf::Resource& r) {
    Resource out;
    out.group = r.group;
    out.version = r.version;
    out.plural = r.plural;
    out.kind = r.kind;
    out.singular = r.singular;
    out.shortcuts.insert(r.shortcuts.begin(), r.shortcuts.end());
    out.categories.insert(r.categories.begin(), r.categories.end());
    out.subresources.insert(r.subresources.begin(), r.subresources.end());
    out.namespaced = r.namespaced;
    out.verbs.insert(r.verbs.begin(), r.verbs.end());
    out.preferred = r.preferred;
    return out;
}

Selector from_public(const kopf::Selector& selector) {
    if (selector.everything) return Selector(EVERYTHING);
    return Selector(SelectorFields{selector.group, selector.version, selector.kind, selector.plural,
                                   selector.singular, selector.shortcut, selector.category,
                                   selector.any_name});
}

Selector crds_selector() {
    return Selector("apiextensions.k8s.io", "customresourcedefinitions");
}
Selector events_selector() {
    return Selector("v1", "events");
}
Selector namespaces_selector() {
    return Selector("v1", "namespaces");
}
Selector cluster_peerings_selector() {
    return Selector("kopf.dev/v1", "clusterkopfpeerings");
}
Selector namespaced_peerings_selector() {
    return Selector("kopf.dev/v1", "kopfpeerings");
}

std::vector<Resource> parse_api_resource_list(const nlohmann::json& list, const std::string& group,
                                              const std::string& version, bool preferred) {
    std::vector<Resource> resources;
    if (!list.is_object() || !list.contains("resources") || !list["resources"].is_array()) {
        throw std::runtime_error(
            fmt::format("Discovery of {}: the APIResourceList has no 'resources' array.",
                        group.empty() ? version : group + "/" + version));
    }
    auto strings = [](const nlohmann::json& item, const char* key) {
        std::set<std::string> values;
        if (auto it = item.find(key); it != item.end() && it->is_array()) {
            for (const auto& value : *it) {
                if (value.is_string()) values.insert(value.get<std::string>());
            }
        }
        return values;
    };
    for (const auto& item : list["resources"]) {
        std::string name = item.value("name", "");
        if (name.empty() || name.find('/') != std::string::npos) continue;
        Resource resource;
        resource.group = group;
        resource.version = version;
        resource.plural = name;
        resource.kind = item.value("kind", "");
        resource.singular = item.value("singularName", "");
        resource.namespaced = item.value("namespaced", false);
        resource.preferred = preferred;
        resource.shortcuts = strings(item, "shortNames");
        resource.categories = strings(item, "categories");
        resource.verbs = strings(item, "verbs");
        resources.push_back(std::move(resource));
    }
    for (const auto& item : list["resources"]) {
        std::string name = item.value("name", "");
        auto slash = name.find('/');
        if (slash == std::string::npos) continue;
        for (auto& resource : resources) {
            if (resource.plural == name.substr(0, slash)) {
                resource.subresources.insert(name.substr(slash + 1));
            }
        }
    }
    return resources;
}

}  // namespace kopf::structs
