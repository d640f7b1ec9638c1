// Selectors as the user gave them, and matching of resolved resources (Kopf's Selector.check).
#include <algorithm>
#include <kopf/resource.hpp>
#include <stdexcept>

namespace kopf {

namespace {
bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}
bool looks_like_version(const std::string& s) {
    // v1, v1beta1, v2alpha3
    if (s.size() < 2 || s[0] != 'v' || !std::isdigit(static_cast<unsigned char>(s[1])))
        return false;
    return s.find('.') == std::string::npos;
}
}  // namespace

bool Resource::has_status_subresource() const {
    return contains(subresources, "status");
}

Selector::Selector(const char* name) : Selector(std::string(name ? name : "")) {}

Selector::Selector(const std::string& name) {
    if (name.empty()) throw std::invalid_argument("A resource selector cannot be empty.");
    if (const auto slash = name.rfind('/'); slash != std::string::npos) {
        // "apps/v1/deployments", "v1/pods": as kubectl's and the API paths' spelling.
        *this = Selector(name.substr(0, slash), name.substr(slash + 1));
        return;
    }
    auto first_dot = name.find('.');
    if (first_dot == std::string::npos) {
        any_name = name;  // plural, singular, kind or short name
        return;
    }
    // "plural.group" or "plural.version.group"
    auto rest = name.substr(first_dot + 1);
    plural = name.substr(0, first_dot);
    auto second_dot = rest.find('.');
    if (second_dot != std::string::npos && looks_like_version(rest.substr(0, second_dot))) {
        version = rest.substr(0, second_dot);
        group = rest.substr(second_dot + 1);
    } else {
        group = rest;
    }
}

Selector::Selector(Everything) : everything(true) {}

Selector::Selector(const std::string& group_or_groupversion, const std::string& name) {
    if (name.empty()) throw std::invalid_argument("A resource selector needs a resource name.");
    auto slash = group_or_groupversion.find('/');
    if (slash != std::string::npos) {
        group = group_or_groupversion.substr(0, slash);
        version = group_or_groupversion.substr(slash + 1);
    } else if (looks_like_version(group_or_groupversion)) {
        group = "";
        version = group_or_groupversion;
    } else {
        group = group_or_groupversion;
    }
    if (name.find('.') != std::string::npos)
        throw std::invalid_argument("Resource name must not contain dots when a group is given: '" +
                                    name + "'");
    any_name = name;
}

Selector::Selector(const std::string& group, const std::string& version, const std::string& name)
    : group(group), version(version), any_name(name) {
    if (name.empty()) throw std::invalid_argument("A resource selector needs a resource name.");
}

bool Selector::check(const Resource& r) const {
    if (everything) return true;
    if (group && *group != r.group) return false;
    if (version && *version != r.version) return false;
    if (kind && *kind != r.kind) return false;
    if (plural && *plural != r.plural) return false;
    if (singular && *singular != r.singular) return false;
    if (shortcut && !contains(r.shortcuts, *shortcut)) return false;
    if (category && !contains(r.categories, *category)) return false;
    if (any_name) {
        const auto& n = *any_name;
        if (n != r.plural && n != r.singular && n != r.kind && !contains(r.shortcuts, n))
            return false;
    }
    return true;
}

std::string Selector::repr() const {
    if (everything) return "EVERYTHING";
    std::string out;
    auto add = [&out](const char* k, const std::optional<std::string>& v) {
        if (!v) return;
        if (!out.empty()) out += ", ";
        out += std::string(k) + "=" + "'" + *v + "'";
    };
    add("group", group);
    add("version", version);
    add("kind", kind);
    add("plural", plural);
    add("singular", singular);
    add("shortcut", shortcut);
    add("category", category);
    add("any_name", any_name);
    return "Selector(" + out + ")";
}

}  // namespace kopf
