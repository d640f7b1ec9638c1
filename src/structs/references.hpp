// Resource references and selectors (Kopf's "Resource specification").
//
// A `Resource` is one concrete API endpoint (group, version, plural) with the names that the
// discovery reports for it. A `Selector` is what handlers declare ("kopfexamples",
// "kopfexamples.kopf.dev", "kopf.dev/v1" + "kopfexamples", a kind, a short name, a category or
// kopf::structs::EVERYTHING) and it matches zero or more discovered resources, with Kopf's rules:
// versionless selectors see only preferred versions, and specific names prefer the core v1 group.
#pragma once

#include <functional>
#include <kopf/resource.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kopf::structs {

struct Resource {
    std::string group{};  // "" for the core API
    std::string version{};
    std::string plural{};
    std::string kind{};
    std::string singular{};
    std::set<std::string> shortcuts{};
    std::set<std::string> categories{};
    std::set<std::string> subresources{};  // e.g. {"status", "scale"}
    bool namespaced = true;
    bool preferred = true;  // makes versionless selectors match by default, as in Kopf
    std::set<std::string> verbs{};

    // "kopf.dev/v1" or "v1": the apiVersion of the objects.
    std::string api_version() const;
    // "kopfexamples.v1.kopf.dev", "pods.v1": how Kopf names a resource in logs.
    std::string to_string() const;

    // The API path: /api/v1/... or /apis/<group>/<version>/...; cluster-wide when `namespace_`
    // is empty; an object when `name` is given; a subresource of it when `subresource` is given.
    // Query parameters are percent-encoded. Throws std::invalid_argument for impossible
    // combinations (a namespaced object without a namespace, a subresource without a name).
    std::string path(const std::string& namespace_ = "", const std::string& name = "",
                     const std::string& subresource = "",
                     const std::vector<std::pair<std::string, std::string>>& params = {}) const;

    bool operator==(const Resource& other) const {
        return group == other.group && version == other.version && plural == other.plural;
    }
    bool operator<(const Resource& other) const {
        return std::tie(group, version, plural) <
               std::tie(other.group, other.version, other.plural);
    }
};

// Percent-encoding of a query value or path segment (RFC 3986 unreserved characters kept).
std::string url_encode(const std::string& text);

// The catch-all marker: a selector for all resources (except events, as in Kopf).
struct Everything {};
inline constexpr Everything EVERYTHING{};

struct SelectorFields {
    std::optional<std::string> group{};
    std::optional<std::string> version{};
    std::optional<std::string> kind{};
    std::optional<std::string> plural{};
    std::optional<std::string> singular{};
    std::optional<std::string> shortcut{};
    std::optional<std::string> category{};
    std::optional<std::string> any_name{};
};

// Thrown when a selector matches several resources in different groups (specify the group).
class AmbiguousResourceError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Selector {
  public:
    // The positional forms, as in Kopf:
    //   Selector("pods"), Selector("kopfexamples.kopf.dev"), Selector("pods.v1"),
    //   Selector("kopfexamples.v1.kopf.dev"), Selector("kopf.dev/v1", "kopfexamples"),
    //   Selector("v1", "pods"), Selector("kopf.dev", "kopfexamples"),
    //   Selector("kopf.dev", "v1", "kopfexamples").
    // Throws std::invalid_argument for empty or ambiguous specifications.
    explicit Selector(const std::string& arg1);
    Selector(const std::string& arg1, const std::string& arg2);
    Selector(const std::string& arg1, const std::string& arg2, const std::string& arg3);
    explicit Selector(Everything);
    // Named fields: exactly one of kind/plural/singular/shortcut/category/any_name.
    explicit Selector(SelectorFields fields);
    // A predicate over resources (never matches events, as in Kopf).
    explicit Selector(std::function<bool(const Resource&)> predicate);

    const SelectorFields& fields() const { return fields_; }
    bool is_everything() const { return everything_; }
    // A specific selector names one kind of resource (not a category, not EVERYTHING).
    bool is_specific() const;

    bool check(const Resource& resource) const;
    // All matching resources; core v1 wins over other groups for specific selectors.
    std::vector<Resource> select(const std::vector<Resource>& resources) const;
    // Exactly one matching resource, or nothing; throws AmbiguousResourceError for 2+.
    std::optional<Resource> select_one(const std::vector<Resource>& resources) const;

    std::string to_string() const;

  private:
    void validate() const;

    SelectorFields fields_;
    bool everything_ = false;
    std::function<bool(const Resource&)> predicate_;
};

// The same resource as handlers see it (kopf::Resource in kopf/resource.hpp).
kopf::Resource to_public(const Resource& resource);
// And back (e.g. for a kind that handlers know but the cluster does not serve now).
Resource from_public(const kopf::Resource& resource);

// The selector a user wrote (kopf::Selector: registries, kopf::Api) in this layer's terms, so that
// every resolution goes through Selector::select. Throws std::invalid_argument as the
// constructors do (no name, several names).
Selector from_public(const kopf::Selector& selector);

// The framework's own resources (Kopf's backbone).
Selector crds_selector();
Selector events_selector();
Selector namespaces_selector();
Selector cluster_peerings_selector();     // kopf.dev/v1 clusterkopfpeerings
Selector namespaced_peerings_selector();  // kopf.dev/v1 kopfpeerings

// Discovery: the resources of one APIResourceList (`GET /api/v1`, `GET /apis/<g>/<v>`).
// Subresources ("pods/status") are attached to their main resource.
std::vector<Resource> parse_api_resource_list(const nlohmann::json& list, const std::string& group,
                                              const std::string& version, bool preferred);

}  // namespace kopf::structs
