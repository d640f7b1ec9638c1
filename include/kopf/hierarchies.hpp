// Owner/children hierarchies (Kopf's "Hierarchies" kit): make objects the children of the
// handled object before creating them, so that Kubernetes' garbage collector deletes them
// together with their owner.
//
//     kopf::json create_fn(kopf::Context& ctx) {
//         kopf::json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"spec", ...}};
//         kopf::adopt(pod, ctx.body);  // owner reference, namespace, name prefix, labels
//         ...create the pod with any client...
//     }
//
// Inside a handler, the owner may be left out: the handled object is the owner (Kopf's
// implicit current object), in synchronous handlers and in coroutines across kopf's own
// awaitables (kopf::sleep, kopf::run_blocking, API calls, ctx.stopped.wait()):
//
//     kopf::adopt(pod);                       // owned by, named after, labelled as ctx.body
//     kopf::label(pod, {.nested = {"spec.template"}});
//
// Outside a handler (e.g. in a startup handler, or in a thread of your own) the forms without
// an owner throw std::logic_error: give the owner explicitly there.
//
// Every function takes one object or a JSON array of objects (arrays may nest), modifies them
// in place, and throws std::invalid_argument naming the offending value when an item is not a
// JSON object.
#pragma once

#include <concepts>
#include <initializer_list>
#include <kopf/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kopf {

/// Options of kopf::append_owner_reference(). An unset flag is left out of the reference.
struct OwnerReferenceOptions {
    std::optional<bool> controller = true;
    std::optional<bool> block_owner_deletion = true;
};

/// Options of kopf::label().
struct LabelOptions {
    /// Overwrite labels the objects already have (by default, their own values win).
    bool forced = false;
    /// Dotted paths of sub-objects to label too, e.g. "spec.template" of a Deployment or Job.
    /// Paths that do not exist or do not lead to a JSON object are skipped.
    std::vector<std::string> nested = {};
};

/// Options of kopf::harmonize_naming().
struct NamingOptions {
    /// Rename objects that already have a `name` or `generateName`.
    bool forced = false;
    /// Use the name as is (`metadata.name`) instead of a prefix (`generateName: "<name>-"`).
    bool strict = false;
};

/// Options of kopf::adjust_namespace().
struct NamespaceOptions {
    /// Move objects that already have a namespace.
    bool forced = false;
};

/// Options of kopf::adopt(): `forced` and `strict` as for naming, `nested` as for labels.
struct AdoptOptions {
    bool forced = false;
    bool strict = false;
    std::vector<std::string> nested = {};
};

/// The reference of `object` as Events and other objects refer to it: apiVersion, kind, name,
/// uid and namespace, each only if the object has it (Kopf's build_object_reference).
json build_object_reference(const json& object);

namespace detail {
// A kopf::json itself, not a braced list: the forms with an explicit owner (or labels) are
// templates on it, so that `kopf::adopt(pod, {.strict = true})` means the options (g++ 12
// would otherwise find a braced list of designators as good a kopf::json as the options).
template <class T>
concept JsonValue = std::same_as<std::remove_cvref_t<T>, json>;

void append_owner_reference(json& objects, const json& owner, const OwnerReferenceOptions& options);
void label(json& objects, const json& labels, const LabelOptions& options);
void adopt(json& objects, const json& owner, const AdoptOptions& options);
}  // namespace detail

/// The owner reference of `owner` as Kubernetes expects it in `metadata.ownerReferences`:
/// apiVersion, kind, name, uid, and the controller/blockOwnerDeletion flags.
/// Throws std::invalid_argument if the owner has no `metadata.uid`.
json build_owner_reference(const json& owner, const OwnerReferenceOptions& options = {});

/// Adds the owner reference of `owner` to the objects, unless one with the owner's uid is there.
template <detail::JsonValue Owner>
void append_owner_reference(json& objects, const Owner& owner,
                            const OwnerReferenceOptions& options = {}) {
    detail::append_owner_reference(objects, owner, options);
}

/// The same, owned by the handled object (inside a handler only).
void append_owner_reference(json& objects, const OwnerReferenceOptions& options = {});

/// Removes the owner references with the owner's uid from the objects, if there are any.
void remove_owner_reference(json& objects, const json& owner);
/// The same, for the handled object as the owner (inside a handler only).
void remove_owner_reference(json& objects);

/// Sets the labels (a JSON object of strings, or nulls) on the objects and nested sub-objects.
template <detail::JsonValue Labels>
void label(json& objects, const Labels& labels, const LabelOptions& options = {}) {
    detail::label(objects, labels, options);
}
/// The same with the labels written in place: `kopf::label(pod, {{"app", "web"}})`.
inline void label(json& objects, std::initializer_list<std::pair<const std::string, json>> labels,
                  const LabelOptions& options = {}) {
    json object = json::object();
    for (const auto& [key, value] : labels) object[key] = value;
    detail::label(objects, object, options);
}
/// The same with the handled object's labels (inside a handler only).
void label(json& objects, const LabelOptions& options = {});

/// Names the objects after `name`: `generateName: "<name>-"` (Kubernetes adds a suffix), or
/// `name: "<name>"` when strict. Objects with a name or generateName keep it unless forced.
void harmonize_naming(json& objects, const std::string& name, const NamingOptions& options = {});
/// The same after the handled object's name (inside a handler only).
void harmonize_naming(json& objects, const NamingOptions& options = {});

/// Puts the objects into `namespace_`, unless they have a namespace (or unless forced).
/// With no namespace (a cluster-scoped owner), nothing is set; forced removes theirs.
void adjust_namespace(json& objects, const std::optional<std::string>& namespace_,
                      const NamespaceOptions& options = {});
/// The same into the handled object's namespace (inside a handler only; none if it is
/// cluster-scoped).
void adjust_namespace(json& objects, const NamespaceOptions& options = {});

/// Makes the objects children of `owner`, as Kopf's kopf.adopt(): the owner reference (as
/// controller, blocking the owner's deletion), the owner's name as a prefix of generated names,
/// the owner's namespace (only for namespaced owners), and the owner's labels.
template <detail::JsonValue Owner>
void adopt(json& objects, const Owner& owner, const AdoptOptions& options = {}) {
    detail::adopt(objects, owner, options);
}
/// The same with the handled object as the owner (inside a handler only).
void adopt(json& objects, const AdoptOptions& options = {});

}  // namespace kopf
