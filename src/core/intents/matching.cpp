#include "core/intents/matching.hpp"

#include <algorithm>
#include <typeinfo>

#include "structs/dicts.hpp"

namespace kopf {

bool ValueFilter::check(const json* value, const Context& ctx) const {
    switch (kind_) {
        case Kind::UNSET:
            return true;
        case Kind::PRESENT:
            return value != nullptr;
        case Kind::ABSENT:
            return value == nullptr;
        case Kind::CALLBACK:
            return callback_(value, ctx);
        case Kind::EQUALS:
            return value != nullptr && *value == value_;
    }
    return false;
}

}  // namespace kopf

namespace kopf::intents {

namespace {

bool matches_metadata(const MetaFilter& pattern, const json* content, const Context& ctx) {
    for (const auto& [key, filter] : pattern) {
        const json* value = nullptr;
        if (content && content->is_object()) {
            auto it = content->find(key);
            if (it != content->end()) value = &*it;
        }
        if (!filter.check(value, ctx)) return false;
    }
    return true;
}

bool matches_labels_annotations(const HandlerOptions& o, const json& body, const Context& ctx) {
    if (!o.labels.empty() &&
        !matches_metadata(o.labels, dicts::resolve(body, {"metadata", "labels"}), ctx))
        return false;
    if (!o.annotations.empty() &&
        !matches_metadata(o.annotations, dicts::resolve(body, {"metadata", "annotations"}), ctx))
        return false;
    return true;
}

// Kopf: with a field, the value criterion passes if either the new or the old value satisfies it;
// with no criterion, the field must be present in either.
bool matches_field_values(const std::vector<std::string>& field, const ValueFilter& value,
                          const std::vector<const json*>& values, const Context& ctx) {
    if (field.empty()) return true;
    if (!value.is_set()) {
        for (auto* v : values)
            if (v) return true;
        return false;
    }
    for (auto* v : values) {
        if (value.check(v, ctx)) return true;
    }
    return false;
}

bool matches_resource(const ChangingHandler& h, const Resource& r) {
    return !h.has_selector || h.selector.check(r);
}

bool prematch_impl(const ChangingHandler& h, const ChangingCause& cause, const Context& ctx) {
    if (!matches_resource(h, *cause.resource)) return false;
    if (!matches_labels_annotations(h.options, *cause.body, ctx)) return false;
    const json* old_v = cause.old ? dicts::resolve(*cause.old, h.field) : nullptr;
    const json* new_v = cause.new_ ? dicts::resolve(*cause.new_, h.field) : nullptr;
    if (!matches_field_values(h.field, h.options.value, {new_v, old_v}, ctx)) return false;
    return true;
}

bool matches_field_changes(const ChangingHandler& h, const ChangingCause& cause,
                           const Context& ctx) {
    if (h.field.empty()) return true;
    const json* old_v = cause.old ? dicts::resolve(*cause.old, h.field) : nullptr;
    const json* new_v = cause.new_ ? dicts::resolve(*cause.new_, h.field) : nullptr;
    bool changed = (old_v == nullptr) != (new_v == nullptr) || (old_v && new_v && *old_v != *new_v);
    if (h.field_needs_change && !changed) return false;
    if (!h.options.old.check(old_v, ctx)) return false;
    if (!h.options.new_.check(new_v, ctx)) return false;
    return true;
}

bool matches_when(const HandlerOptions& o, const Context& ctx) {
    return !o.when || o.when(ctx);
}

}  // namespace

bool prematch(const ChangingHandler& h, const ChangingCause& cause, const Context& ctx) {
    return prematch_impl(h, cause, ctx) && matches_when(h.options, ctx);
}

bool match(const ChangingHandler& h, const ChangingCause& cause, const Context& ctx) {
    return prematch_impl(h, cause, ctx) && matches_field_changes(h, cause, ctx) &&
           matches_when(h.options, ctx);
}

bool match(const WatchingHandler& h, const json& body, const Context& ctx) {
    if (!h.selector.check(ctx.resource)) return false;
    if (!matches_labels_annotations(h.options, body, ctx)) return false;
    if (!matches_field_values(h.field, h.options.value, {dicts::resolve(body, h.field)}, ctx))
        return false;
    return matches_when(h.options, ctx);
}

namespace {

// Handlers that see one state of the object, not a change: daemons, timers, indices.
template <class Handler>
bool match_state(const Handler& h, const Resource& resource, const json& body, const Context& ctx) {
    if (!h.selector.check(resource)) return false;
    if (!matches_labels_annotations(h.options, body, ctx)) return false;
    if (!matches_field_values(h.field, h.options.value, {dicts::resolve(body, h.field)}, ctx))
        return false;
    return matches_when(h.options, ctx);
}

}  // namespace

bool match(const SpawningHandler& h, const Resource& resource, const json& body,
           const Context& ctx) {
    return match_state(h, resource, body, ctx);
}

bool match(const IndexingHandler& h, const Resource& resource, const json& body,
           const Context& ctx) {
    return match_state(h, resource, body, ctx);
}

namespace {

// An operator has few handlers: scanning those already taken is cheaper than a set of ids,
// which was three allocations per event.
bool taken(const std::vector<const ChangingHandler*>& out, const std::string& id) {
    return std::any_of(out.begin(), out.end(),
                       [&id](const ChangingHandler* h) { return h->id == id; });
}

}  // namespace

std::vector<const ChangingHandler*> get_changing_handlers(
    const std::vector<ChangingHandler>& handlers, const ChangingCause& cause, const Context& ctx) {
    std::vector<const ChangingHandler*> out;
    const std::string reason = to_string(cause.reason);
    for (const auto& h : handlers) {
        if (h.reason && *h.reason != reason) continue;
        if (h.initial && !cause.initial) continue;  // resume handlers only on initial causes
        if (h.initial && cause.deleted() && !h.options.deleted) continue;
        if (!match(h, cause, ctx)) continue;
        if (taken(out, h.id)) continue;  // the same id registered twice runs once
        out.push_back(&h);
    }
    return out;
}

std::vector<const ChangingHandler*> get_resource_handlers(
    const std::vector<ChangingHandler>& handlers, const Resource& resource) {
    std::vector<const ChangingHandler*> out;
    out.reserve(handlers.size());
    for (const auto& h : handlers) {
        if (matches_resource(h, resource) && !taken(out, h.id)) out.push_back(&h);
    }
    return out;
}

bool requires_finalizer(const std::vector<ChangingHandler>& handlers, const ChangingCause& cause,
                        const Context& ctx) {
    for (const auto& h : handlers) {
        if (h.requires_finalizer && prematch(h, cause, ctx)) return true;
    }
    return false;
}

namespace {

bool is_callback(const ValueFilter& filter) {
    return filter.kind() == ValueFilter::Kind::CALLBACK;
}

// Whether a (non-empty) field is in the essence's own stanzas: the spec, labels, annotations.
bool within_essence(const std::vector<std::string>& f) {
    return f[0] == "spec" ||
           (f[0] == "metadata" && f.size() > 1 && (f[1] == "labels" || f[1] == "annotations"));
}

bool reads_context(const HandlerOptions& o) {
    const auto any_callback = [](const MetaFilter& filters) {
        return std::any_of(filters.begin(), filters.end(),
                           [](const auto& entry) { return is_callback(entry.second); });
    };
    return static_cast<bool>(o.when) || any_callback(o.labels) || any_callback(o.annotations) ||
           is_callback(o.value) || is_callback(o.old) || is_callback(o.new_);
}

}  // namespace

bool filters_read_context(const std::vector<ChangingHandler>& handlers) {
    return std::any_of(handlers.begin(), handlers.end(),
                       [](const ChangingHandler& h) { return reads_context(h.options); });
}

bool filters_read_only_metadata(const SpawningHandler& handler) {
    return !reads_context(handler.options) && handler.field.empty() &&
           handler.options.field.empty();
}

bool filters_read_only_essence(const ChangingHandler& handler) {
    const auto in_essence = [](const std::vector<std::string>& f) {
        return f.empty() || within_essence(f);
    };
    return !reads_context(handler.options) && in_essence(handler.field) &&
           in_essence(detail::parse_field(handler.options.field));
}

bool decided_by_essence_and_metadata(const Registry& registry, const DiffBaseStorage* diffbase,
                                     const Resource& resource) {
    const auto selects = [&resource](const auto& h) { return h.selector.check(resource); };
    bool has_changing = false;
    for (const ChangingHandler& h : registry.changing) {
        if (h.has_selector && !h.selector.check(resource)) continue;
        has_changing = true;
        if (!filters_read_only_essence(h)) return false;
    }
    // Another diff base storage (in status, or a class of the user's) may read what changed.
    if (has_changing) {
        if (!diffbase) return false;
        const DiffBaseStorage& storage = *diffbase;
        if (typeid(storage) != typeid(AnnotationsDiffBaseStorage)) return false;
    }
    return std::none_of(registry.watching.begin(), registry.watching.end(), selects) &&
           std::any_of(registry.spawning.begin(), registry.spawning.end(), selects) &&
           get_extra_fields(registry, resource).empty();
}

bool prematch_any(const std::vector<ChangingHandler>& handlers, const ChangingCause& cause,
                  const Context& ctx) {
    for (const auto& h : handlers) {
        if (prematch(h, cause, ctx)) return true;
    }
    return false;
}

std::vector<std::vector<std::string>> get_extra_fields(const Registry& registry,
                                                       const Resource& resource) {
    std::vector<std::vector<std::string>> out;
    auto add = [&out](const std::vector<std::string>& f) {
        // Fields outside of the essence's own stanzas must be carried explicitly.
        if (f.empty() || within_essence(f)) return;
        for (const auto& e : out)
            if (e == f) return;
        out.push_back(f);
    };
    for (const auto& h : registry.changing) {
        if (!h.has_selector || h.selector.check(resource)) add(h.field);
    }
    for (const auto& h : registry.watching) {
        if (h.selector.check(resource)) add(h.field);
    }
    for (const auto& h : registry.spawning) {
        if (h.selector.check(resource)) add(h.field);
    }
    return out;
}

}  // namespace kopf::intents

namespace kopf::intents {

bool match(const WebhookHandler& h, const Resource& resource, const std::string& operation,
           const std::string& subresource, const json& body, const Context& ctx) {
    if (!h.selector.check(resource)) return false;
    const auto& operations = h.options.operations;
    if (!operations.empty() &&
        std::find(operations.begin(), operations.end(), operation) == operations.end())
        return false;
    const bool only_deletion = operations.size() == 1 && operations.front() == "DELETE";
    if (h.type == WebhookType::MUTATING && operation == "DELETE" && !only_deletion) return false;
    const auto& wanted = h.options.subresource;
    if (wanted ? (*wanted != "*" && *wanted != subresource) : !subresource.empty()) return false;
    if (!h.options.labels.empty() &&
        !matches_metadata(h.options.labels, dicts::resolve(body, {"metadata", "labels"}), ctx))
        return false;
    if (!h.options.annotations.empty() &&
        !matches_metadata(h.options.annotations, dicts::resolve(body, {"metadata", "annotations"}),
                          ctx))
        return false;
    if (!matches_field_values(h.field, h.options.value, {dicts::resolve(body, h.field)}, ctx))
        return false;
    return !h.options.when || h.options.when(ctx);
}

}  // namespace kopf::intents
