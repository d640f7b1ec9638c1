// Owner/children hierarchies: the semantics of Kopf's kopf/_kits/hierarchies.py on kopf::json.
#include "kopf/hierarchies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <kopf/task.hpp>
#include <sstream>
#include <stdexcept>

namespace kopf {
namespace {

std::string excerpt(const json& value) {
    std::string text = value.dump();
    if (text.size() > 80) text = text.substr(0, 77) + "...";
    return text;
}

// Calls `fn` on every object: one object, or the items of (possibly nested) arrays.
void walk(json& objects, const std::function<void(json&)>& fn) {
    if (objects.is_array()) {
        for (auto& item : objects) walk(item, fn);
    } else if (objects.is_object()) {
        fn(objects);
    } else {
        throw std::invalid_argument(
            fmt::format("Kubernetes objects must be JSON objects or arrays of them; got {}: {}",
                        objects.type_name(), excerpt(objects)));
    }
}

// The sub-object at a dotted path ("spec.template"), or nullptr if absent or not an object.
json* resolve_nested(json& object, const std::string& path) {
    json* current = &object;
    std::istringstream parts(path);
    for (std::string key; std::getline(parts, key, '.');) {
        if (!current->is_object() || !current->contains(key)) return nullptr;
        current = &(*current)[key];
    }
    return current->is_object() ? current : nullptr;
}

json& metadata_of(json& object) {
    json& meta = object["metadata"];
    if (!meta.is_object()) meta = json::object();
    return meta;
}

json& list_field(json& meta, const char* key) {
    json& list = meta[key];
    if (!list.is_array()) list = json::array();
    return list;
}

const json& owner_metadata(const json& owner) {
    static const json empty = json::object();
    if (!owner.is_object()) {
        throw std::invalid_argument(
            fmt::format("The owner must be a Kubernetes object (a JSON object); got {}: {}",
                        owner.type_name(), excerpt(owner)));
    }
    const auto it = owner.find("metadata");
    return it != owner.end() && it->is_object() ? *it : empty;
}

std::string owner_uid(const json& owner) {
    const json& meta = owner_metadata(owner);
    const auto uid = meta.find("uid");
    if (uid == meta.end() || !uid->is_string() || uid->get<std::string>().empty()) {
        throw std::invalid_argument(fmt::format(
            "The owner has no metadata.uid, so it cannot own anything (is it an object read "
            "from the API server?): {}",
            excerpt(owner)));
    }
    return uid->get<std::string>();
}

// The handled object (Kopf's cause_var), kept alive by `holder` while it is used.
const json& implicit_owner(const char* function, std::shared_ptr<const void>& holder) {
    holder = detail::current_cause();
    if (!holder) {
        throw std::logic_error(fmt::format(
            "kopf::{}() without an owner works only inside a resource handler, where the handled "
            "object is the owner; outside of handlers, give the owner explicitly.",
            function));
    }
    return *static_cast<const json*>(holder.get());
}

}  // namespace

json build_object_reference(const json& object) {
    const json& meta = owner_metadata(object);
    json reference = json::object();
    auto put = [&reference](const char* key, const json& source, const char* field) {
        const auto found = source.find(field);
        // As Kopf: only the fields with a value (no nulls, no empty strings).
        if (found != source.end() && !found->is_null() && *found != "") reference[key] = *found;
    };
    put("apiVersion", object, "apiVersion");
    put("kind", object, "kind");
    put("name", meta, "name");
    put("uid", meta, "uid");
    put("namespace", meta, "namespace");
    return reference;
}

json build_owner_reference(const json& owner, const OwnerReferenceOptions& options) {
    const json& meta = owner_metadata(owner);
    json reference = json::object();
    if (options.controller) reference["controller"] = *options.controller;
    if (options.block_owner_deletion)
        reference["blockOwnerDeletion"] = *options.block_owner_deletion;
    for (const char* key : {"apiVersion", "kind"}) {
        if (owner.contains(key) && !owner[key].is_null()) reference[key] = owner[key];
    }
    if (meta.contains("name") && !meta["name"].is_null()) reference["name"] = meta["name"];
    reference["uid"] = owner_uid(owner);
    return reference;
}

void detail::append_owner_reference(json& objects, const json& owner,
                                    const OwnerReferenceOptions& options) {
    const json reference = build_owner_reference(owner, options);
    walk(objects, [&](json& object) {
        json& references = list_field(metadata_of(object), "ownerReferences");
        const bool present = std::any_of(references.begin(), references.end(), [&](const json& r) {
            return r.is_object() && r.value("uid", json()) == reference["uid"];
        });
        if (!present) references.push_back(reference);
    });
}

void remove_owner_reference(json& objects, const json& owner) {
    const std::string uid = owner_uid(owner);
    walk(objects, [&](json& object) {
        json& references = list_field(metadata_of(object), "ownerReferences");
        json kept = json::array();
        for (auto& reference : references) {
            if (!(reference.is_object() && reference.value("uid", json()) == uid)) {
                kept.push_back(std::move(reference));
            }
        }
        references = std::move(kept);
    });
}

void detail::label(json& objects, const json& labels, const LabelOptions& options) {
    if (!labels.is_object()) {
        throw std::invalid_argument(
            fmt::format("Labels must be a JSON object of names to values; got {}: {}",
                        labels.type_name(), excerpt(labels)));
    }
    auto apply = [&](json& object) {
        json& existing = metadata_of(object)["labels"];
        if (!existing.is_object()) existing = json::object();
        for (const auto& [key, value] : labels.items()) {
            if (options.forced || !existing.contains(key)) existing[key] = value;
        }
    };
    walk(objects, [&](json& object) {
        apply(object);
        for (const auto& path : options.nested) {
            if (json* nested = resolve_nested(object, path)) apply(*nested);
        }
    });
}

void harmonize_naming(json& objects, const std::string& name, const NamingOptions& options) {
    if (name.empty()) {
        throw std::invalid_argument("harmonize_naming() needs a non-empty name to name after.");
    }
    walk(objects, [&](json& object) {
        const auto meta_it = object.find("metadata");
        const bool unnamed = meta_it == object.end() || !meta_it->is_object() ||
                             (!meta_it->contains("name") && !meta_it->contains("generateName"));
        if (!options.forced && !unnamed) return;
        json& meta = metadata_of(object);
        if (options.strict) {
            meta["name"] = name;
            meta.erase("generateName");
        } else {
            meta["generateName"] = name + "-";
            meta.erase("name");
        }
    });
}

void adjust_namespace(json& objects, const std::optional<std::string>& namespace_,
                      const NamespaceOptions& options) {
    walk(objects, [&](json& object) {
        const auto meta_it = object.find("metadata");
        const bool has_namespace = meta_it != object.end() && meta_it->is_object() &&
                                   meta_it->contains("namespace") &&
                                   !(*meta_it)["namespace"].is_null();
        if (!options.forced && has_namespace) return;
        json& meta = metadata_of(object);
        if (namespace_) {
            meta["namespace"] = *namespace_;
        } else {
            meta.erase("namespace");
        }
    });
}

void detail::adopt(json& objects, const json& owner, const AdoptOptions& options) {
    const json& meta = owner_metadata(owner);
    const auto name = meta.find("name");
    if (name == meta.end() || !name->is_string() || name->get<std::string>().empty()) {
        throw std::invalid_argument(fmt::format(
            "The owner has no metadata.name to name its children after: {}", excerpt(owner)));
    }
    std::optional<std::string> namespace_;
    if (const auto ns = meta.find("namespace"); ns != meta.end() && ns->is_string()) {
        namespace_ = ns->get<std::string>();
    }
    json labels = json::object();
    if (const auto found = meta.find("labels"); found != meta.end() && found->is_object()) {
        labels = *found;
    }
    kopf::append_owner_reference(objects, owner);
    kopf::harmonize_naming(objects, name->get<std::string>(),
                           {.forced = options.forced, .strict = options.strict});
    kopf::adjust_namespace(objects, namespace_, {.forced = options.forced});
    kopf::label(objects, labels, {.forced = options.forced, .nested = options.nested});
}

// ---- the forms with the handled object as the owner (Kopf's owner=None) ----------------------

void append_owner_reference(json& objects, const OwnerReferenceOptions& options) {
    std::shared_ptr<const void> holder;
    append_owner_reference(objects, implicit_owner("append_owner_reference", holder), options);
}

void remove_owner_reference(json& objects) {
    std::shared_ptr<const void> holder;
    remove_owner_reference(objects, implicit_owner("remove_owner_reference", holder));
}

void label(json& objects, const LabelOptions& options) {
    std::shared_ptr<const void> holder;
    const json& meta = owner_metadata(implicit_owner("label", holder));
    const auto labels = meta.find("labels");
    label(objects, labels != meta.end() && labels->is_object() ? *labels : json::object(), options);
}

void harmonize_naming(json& objects, const NamingOptions& options) {
    std::shared_ptr<const void> holder;
    const json& meta = owner_metadata(implicit_owner("harmonize_naming", holder));
    const auto name = meta.find("name");
    if (name == meta.end() || !name->is_string() || name->get<std::string>().empty()) {
        throw std::invalid_argument(
            "kopf::harmonize_naming(): the handled object has no metadata.name to name after; "
            "give the name explicitly.");
    }
    harmonize_naming(objects, name->get<std::string>(), options);
}

void adjust_namespace(json& objects, const NamespaceOptions& options) {
    std::shared_ptr<const void> holder;
    const json& meta = owner_metadata(implicit_owner("adjust_namespace", holder));
    std::optional<std::string> namespace_;
    if (const auto ns = meta.find("namespace"); ns != meta.end() && ns->is_string()) {
        namespace_ = ns->get<std::string>();
    }
    adjust_namespace(objects, namespace_, options);
}

void adopt(json& objects, const AdoptOptions& options) {
    std::shared_ptr<const void> holder;
    adopt(objects, implicit_owner("adopt", holder), options);
}

}  // namespace kopf
