#include "core/reactor/namespaces.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/actions/logging.hpp"

namespace kopf::runtime {

bool glob_match(std::string_view glob, std::string_view text) {
    // Iterative wildcard matching with backtracking to the last '*'.
    std::size_t g = 0, t = 0, star = std::string_view::npos, mark = 0;
    while (t < text.size()) {
        if (g < glob.size() && (glob[g] == '?' || glob[g] == text[t])) {
            ++g;
            ++t;
        } else if (g < glob.size() && glob[g] == '*') {
            star = g++;
            mark = t;
        } else if (star != std::string_view::npos) {
            g = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (g < glob.size() && glob[g] == '*') ++g;
    return g == glob.size();
}

NamespacePattern::NamespacePattern(std::string_view text) : text_(text) {
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view part = text.substr(start, end - start);
        while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
        while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
        const bool negated = !part.empty() && part.front() == '!';
        if (negated) part.remove_prefix(1);
        if (part.empty()) {
            throw std::invalid_argument(fmt::format(
                "Invalid namespace pattern '{}': every comma-separated glob must be non-empty, "
                "e.g. -n 'myapp-*,!*-pr-*'.",
                text));
        }
        for (char c : part) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '*' || c == '?';
            if (!ok) {
                throw std::invalid_argument(fmt::format(
                    "Invalid namespace pattern '{}': '{}' cannot be in a namespace name (use "
                    "lowercase letters, digits, '-', and the globs '*', '?', '!').",
                    text, c));
            }
        }
        globs_.push_back({std::string(part), negated});
        start = end + 1;
    }
}

bool NamespacePattern::matches(std::string_view namespace_) const {
    bool result = false;
    for (std::size_t i = 0; i < globs_.size(); ++i) {
        const bool hit = glob_match(globs_[i].glob, namespace_);
        if (i == 0) {
            if (globs_[i].negated) {
                result = !hit;  // as if preceded by '*'
            } else if (!hit) {
                return false;  // the first positive glob is decisive
            } else {
                result = true;
            }
            continue;
        }
        if (hit) result = !globs_[i].negated;
    }
    return result;
}

bool NamespacePattern::is_specific() const {
    return globs_.size() == 1 && !globs_[0].negated &&
           globs_[0].glob.find_first_of("*?") == std::string::npos;
}

NamespaceScope NamespaceScope::from_options(bool all_namespaces,
                                            const std::vector<std::string>& patterns) {
    if (all_namespaces && !patterns.empty()) {
        throw std::invalid_argument(
            "Either --namespace or --all-namespaces can be used, not both: -A serves the whole "
            "cluster through the cluster-wide endpoints, -n serves the matching namespaces.");
    }
    NamespaceScope scope;
    scope.clusterwide = all_namespaces;
    if (!all_namespaces && patterns.empty()) {
        // As Kopf: a warning, and the whole cluster.
        logger("kopf.reactor.running")
            ->warn(
                "Absence of either namespaces or cluster-wide flag will become an error soon. For "
                "now, switching to the cluster-wide mode for backward compatibility. Use "
                "-A/--all-namespaces for the whole cluster, or -n/--namespace NAME (repeatable, "
                "globs and !exclusions allowed) for namespaces.");
        scope.clusterwide = true;
    }
    for (const auto& text : patterns) scope.patterns.emplace_back(text);
    return scope;
}

bool NamespaceScope::matches(std::string_view namespace_) const {
    if (clusterwide) return true;
    for (const auto& pattern : patterns) {
        if (pattern.matches(namespace_)) return true;
    }
    return false;
}

bool NamespaceScope::all_specific() const {
    if (clusterwide) return false;
    for (const auto& pattern : patterns) {
        if (!pattern.is_specific()) return false;
    }
    return true;
}

std::vector<std::string> NamespaceScope::specific_namespaces() const {
    std::vector<std::string> out;
    for (const auto& pattern : patterns) {
        if (pattern.is_specific()) out.push_back(pattern.text());
    }
    return out;
}

}  // namespace kopf::runtime
