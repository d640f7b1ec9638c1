// The patch that handlers fill: a JSON merge-patch plus JSON-patch style transformations.
#pragma once

#include <functional>
#include <kopf/json.hpp>
#include <vector>

namespace kopf {

/// Changes to apply to the object after the handlers. The only way to change the object.
///
///     ctx.patch["spec"]["replicas"] = 3;                  // merge-patch edit
///     ctx.patch.status()["phase"] = "Ready";              // status (to /status if a subresource)
///     ctx.patch["metadata"]["labels"]["old"] = nullptr;   // removal
///     ctx.patch.transform([](kopf::json& body) {          // JSON-patch style transformation,
///         body["spec"]["items"].push_back("x");           // diffed against the freshest body
///     });
class Patch {
  public:
    using Fn = std::function<void(json& body)>;

    Patch() = default;
    explicit Patch(std::vector<Fn> fns) : fns(std::move(fns)) {}

    json& operator[](const std::string& key) { return merge[key]; }
    json& meta() { return merge["metadata"]; }
    json& spec() { return merge["spec"]; }
    json& status() { return merge["status"]; }
    /// Add a transformation of the body (applied as a JSON patch with a resourceVersion guard).
    void transform(Fn fn) { fns.push_back(std::move(fn)); }
    /// True if nothing is to be patched.
    bool empty() const { return (merge.is_null() || merge.empty()) && fns.empty(); }

    /// The merge-patch part (JSON object; null fields remove).
    json merge = json::object();
    /// The transformation part.
    std::vector<Fn> fns;

    /// The RFC 6902 operations that the transformations make on `body`, prefixed with the
    /// `test` of `metadata.resourceVersion`; empty if they change nothing.
    json build_json_patch(const json& body) const;
};

}  // namespace kopf
