// Resource specifications (what the user asked for) and resolved resources (what the
// cluster serves), as in Kopf's "Resource specification".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopf {

/// A resource kind as served by the API (resolved by discovery).
struct Resource {
    std::string group{};    ///< "" for the core API
    std::string version{};  ///< "v1"
    std::string plural{};   ///< "kopfexamples"
    std::string kind{};     ///< "KopfExample"
    std::string singular{};
    std::vector<std::string> shortcuts{};
    std::vector<std::string> categories{};
    std::vector<std::string> subresources{};  ///< e.g. "status"
    bool namespaced = true;
    std::vector<std::string> verbs{};
    bool preferred = true;

    /// "kopf.dev/v1" or "v1".
    std::string api_version() const { return group.empty() ? version : group + "/" + version; }
    bool has_status_subresource() const;
    bool operator==(const Resource&) const = default;
};

/// Marker for `kopf::EVERYTHING`: all served resources.
struct Everything {};
inline constexpr Everything EVERYTHING{};

/// A resource selector in any of Kopf's forms. It stores what the user gave; the client layer
/// resolves it against discovery (src/structs/references.*), and `check()` matches a resource.
///
///     kopf::Selector("kopfexamples")
///     kopf::Selector("kopfexamples.kopf.dev")        // plural.group
///     kopf::Selector("kopfexamples.v1.kopf.dev")     // plural.version.group
///     kopf::Selector("KopfExample")                  // kind
///     kopf::Selector("apps/v1/deployments")          // group/version/plural
///     kopf::Selector("v1/pods")                      // version/plural (core)
///     kopf::Selector("kopf.dev", "kopfexamples")     // group + name
///     kopf::Selector("kopf.dev/v1", "kopfexamples")  // group/version + name
///     kopf::Selector("kopf.dev", "v1", "kopfexamples")
///     kopf::Selector{.group = "kopf.dev", .plural = "kopfexamples"}
///     kopf::Selector(kopf::EVERYTHING)
struct Selector {
    std::optional<std::string> group;
    std::optional<std::string> version;
    std::optional<std::string> kind;
    std::optional<std::string> plural;
    std::optional<std::string> singular;
    std::optional<std::string> shortcut;
    std::optional<std::string> category;
    std::optional<std::string> any_name;  ///< a plural, singular, kind or short name
    bool everything = false;

    Selector() = default;
    Selector(const char* name);         // NOLINT: implicit like Kopf's positional args
    Selector(const std::string& name);  // NOLINT
    Selector(Everything);               // NOLINT
    Selector(const std::string& group_or_groupversion, const std::string& name);
    Selector(const std::string& group, const std::string& version, const std::string& name);

    /// Whether a resolved resource matches this selector.
    bool check(const Resource& resource) const;
    /// A human-readable form for logs and errors.
    std::string repr() const;
};

}  // namespace kopf
