// Namespace scopes of an operator (Kopf's "Scopes"): `-n PATTERN` (repeatable; a pattern is
// comma-separated globs with `*`, `?` and `!` exclusions, the rightmost matching glob wins and
// the first one is decisive) or `-A` (cluster-wide endpoints, no namespace monitoring).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kopf::runtime {

class NamespacePattern {
  public:
    // Throws std::invalid_argument naming the pattern when it is empty or has characters that
    // cannot be in a namespace name (only a-z, 0-9, '-' plus the glob characters * ? ! ,).
    explicit NamespacePattern(std::string_view text);

    bool matches(std::string_view namespace_) const;
    // A plain namespace name (no glob, no exclusion): servable without listing namespaces.
    bool is_specific() const;
    const std::string& text() const { return text_; }

  private:
    struct Glob {
        std::string glob;
        bool negated;
    };
    std::string text_;
    std::vector<Glob> globs_;
};

// fnmatch-style matching of `*` (any run) and `?` (one character).
bool glob_match(std::string_view glob, std::string_view text);

struct NamespaceScope {
    bool clusterwide = false;                // -A
    std::vector<NamespacePattern> patterns;  // -n ...

    // Throws std::invalid_argument with Kopf's advice when neither or both are given.
    static NamespaceScope from_options(bool all_namespaces,
                                       const std::vector<std::string>& patterns);

    bool matches(std::string_view namespace_) const;
    // True when every pattern is a plain name: the namespaces need not be listed and watched.
    bool all_specific() const;
    std::vector<std::string> specific_namespaces() const;
};

}  // namespace kopf::runtime
