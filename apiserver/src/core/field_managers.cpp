#include "core/field_managers.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "util/managed_fields.hpp"
#include "util/strategic_merge.hpp"

namespace kopf::apiserver::core {

namespace {

struct Manager {
    std::string manager, operation, api_version, time, subresource;
    FieldSet fields;

    // Kubernetes' manager identifier: appliers are one manager whatever apiVersion they use.
    bool same_as(const Manager& other) const {
        return manager == other.manager && operation == other.operation &&
               subresource == other.subresource &&
               (operation == "Apply" || api_version == other.api_version);
    }
    // As conflict messages name it (printManager in apimachinery's conflict.go).
    std::string describe() const {
        std::string out = json(manager).dump();
        if (!subresource.empty()) out += " with subresource " + json(subresource).dump();
        if (operation == "Update") out += " using " + api_version;
        return out;
    }
};

std::vector<Manager> decode_managers(const json& entries) {
    std::vector<Manager> out;
    if (!entries.is_array()) return out;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const json& e = entries[i];
        const std::string where = "metadata.managedFields[" + std::to_string(i) + "]";
        if (!e.is_object()) throw bad_request(where + " must be an object");
        auto text = [&](const char* key) {
            auto it = e.find(key);
            if (it == e.end() || it->is_null()) return std::string();
            if (!it->is_string())
                throw bad_request(where + "." + key + " must be a string, not " + it->dump());
            return it->get<std::string>();
        };
        Manager m{text("manager"), text("operation"),   text("apiVersion"),
                  text("time"),    text("subresource"), {}};
        if (!m.operation.empty() && m.operation != "Apply" && m.operation != "Update")
            throw invalid_error(
                "meta.k8s.io", "ObjectMeta", "",
                json::array({cause("FieldValueNotSupported", where + ".operation",
                                   "Unsupported value: " + json(m.operation).dump() +
                                       ": supported values: \"Apply\", \"Update\"")}));
        const std::string type = text("fieldsType");
        if (!type.empty() && type != "FieldsV1")
            throw invalid_error("meta.k8s.io", "ObjectMeta", "",
                                json::array({cause("FieldValueNotSupported", where + ".fieldsType",
                                                   "Unsupported value: " + json(type).dump() +
                                                       ": supported values: \"FieldsV1\"")}));
        try {
            m.fields = fields_from_v1(e.value("fieldsV1", json()));
        } catch (const std::invalid_argument& error) {
            throw bad_request(where + ".fieldsV1: " + error.what());
        }
        // An entry without fields (Kubernetes' `managedFields: [{}]`, which resets them) is
        // dropped.
        if (!m.fields.empty()) out.push_back(std::move(m));
    }
    return out;
}

json encode_managers(std::vector<Manager> managers) {
    std::erase_if(managers, [](const Manager& m) { return m.fields.empty(); });
    // apimachinery's sortEncodedManagedFields: operation, time, manager, apiVersion, subresource.
    std::stable_sort(managers.begin(), managers.end(), [](const Manager& a, const Manager& b) {
        return std::tie(a.operation, a.time, a.manager, a.api_version, a.subresource) <
               std::tie(b.operation, b.time, b.manager, b.api_version, b.subresource);
    });
    json out = json::array();
    for (const auto& m : managers) {
        json e = {{"manager", m.manager},        {"operation", m.operation},
                  {"apiVersion", m.api_version}, {"time", m.time},
                  {"fieldsType", "FieldsV1"},    {"fieldsV1", fields_to_v1(m.fields)}};
        if (!m.subresource.empty()) e["subresource"] = m.subresource;
        out.push_back(std::move(e));
    }
    return out;
}

// Fields no manager owns (stripMetaManager) and those the endpoint resets (the main resource
// of a kind with a status subresource ignores .status, /status ignores everything else).
FieldSet owned_part(const FieldSet& fields, const ManagerContext& ctx) {
    static const std::set<std::string> server_meta = {
        "f:name",        "f:namespace",  "f:creationTimestamp", "f:selfLink",       "f:uid",
        "f:clusterName", "f:generation", "f:managedFields",     "f:resourceVersion"};
    FieldSet out;
    for (const auto& path : fields) {
        if (path.empty() || path[0] == "f:apiVersion" || path[0] == "f:kind") continue;
        if (path[0] == "f:metadata" && (path.size() == 1 || server_meta.contains(path[1])))
            continue;
        const bool status = path[0] == "f:status";
        if (ctx.subresource == "status" && !status) continue;
        if (ctx.subresource.empty() && ctx.status_subresource && status) continue;
        out.insert(path);
    }
    return out;
}

// Without metadata.managedFields: the managers' record is not a field anyone manages.
FieldComparison owned_comparison(const json& before, const json& after, const ManagerContext& ctx) {
    FieldComparison c = compare_fields(before, after, ctx.schema, true);
    return {owned_part(c.added, ctx), owned_part(c.modified, ctx), owned_part(c.removed, ctx)};
}

json without_managed_fields(const json* object) {
    if (!object) return json::object();
    json out = *object;
    if (out.contains("metadata") && out["metadata"].is_object())
        out["metadata"].erase("managedFields");
    return out;
}

const json& managed_fields_of(const json& object) {
    static const json none;
    if (!object.is_object()) return none;
    auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return none;
    auto it = meta->find("managedFields");
    return it == meta->end() ? none : *it;
}

// A string field of a managedFields entry; nullopt when it is there but not a string.
std::optional<std::string> entry_text(const json& entry, const char* key) {
    const auto it = entry.find(key);
    if (it == entry.end() || it->is_null()) return std::string();
    if (!it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

// An Update that moves no field between managers leaves their record as it is but for the
// writer's time: done on the entries themselves, without decoding and re-encoding every
// manager's fields (most of a write's bookkeeping). False, with `entries` untouched (they
// change only once every check has passed), when the write moves fields, adds a manager, or
// the entries are not as this server encodes them.
bool keep_managers(json& entries, const FieldSet& changed, const FieldSet& removed,
                   const ManagerContext& ctx) {
    if (!entries.is_array() || entries.empty()) return false;
    json* own = nullptr;
    for (auto& entry : entries) {
        if (!entry.is_object()) return false;
        const auto fields = entry.find("fieldsV1");
        if (fields == entry.end() || !fields->is_object() || fields->empty()) return false;
        const auto manager = entry_text(entry, "manager");
        const auto operation = entry_text(entry, "operation");
        const auto api_version = entry_text(entry, "apiVersion");
        const auto subresource = entry_text(entry, "subresource");
        if (!manager || !operation || !api_version || !subresource || !entry_text(entry, "time"))
            return false;
        const bool writer = *manager == ctx.manager && *operation == "Update" &&
                            *api_version == ctx.api_version && *subresource == ctx.subresource;
        if (writer) {
            if (own) return false;  // two entries of one manager: merged by the full path
            own = &entry;
        }
        // The writer keeps what it changed and loses what was removed; the others keep theirs
        // only if the write touched none of it.
        for (const auto& path : changed)
            if (fields_v1_contains(*fields, path) != writer) return false;
        for (const auto& path : removed)
            if (fields_v1_contains(*fields, path)) return false;
    }
    if (changed.empty()) return true;
    if (!own) return false;
    (*own)["time"] = now_rfc3339();
    // apimachinery's sortEncodedManagedFields, as encode_managers sorts.
    auto sort_key = [](const json& e) {
        return std::make_tuple(*entry_text(e, "operation"), *entry_text(e, "time"),
                               *entry_text(e, "manager"), *entry_text(e, "apiVersion"),
                               *entry_text(e, "subresource"));
    };
    std::stable_sort(entries.begin(), entries.end(),
                     [&](const json& a, const json& b) { return sort_key(a) < sort_key(b); });
    return true;
}

}  // namespace

ManagerContext manager_context(const RequestInfo& rq) {
    const Resource& res = *rq.res;
    ManagerContext ctx;
    ctx.manager = rq.field_manager;
    ctx.api_version = res.group_version(rq.version);
    ctx.subresource = rq.sub == "status" ? "status" : "";
    ctx.status_subresource = res.has_status(rq.version);
    if (res.builtin) {
        ctx.schema = list_shapes_schema(res.group, res.kind);
    } else if (const ResourceVersion* v = res.version(rq.version)) {
        ctx.schema = v->schema;
    }
    return ctx;
}

void track_update(const json* live, json& updated, const ManagerContext& ctx) {
    static const json nothing = json::object();
    const FieldComparison c = owned_comparison(live ? *live : nothing, updated, ctx);
    const FieldSet changed = field_union(c.added, c.modified);
    // The usual write: the writer's managedFields are the live ones (a patch that does not
    // touch them), and it changes only fields it owns already.
    if (live && updated.is_object() && updated.contains("metadata") &&
        updated["metadata"].is_object() && updated["metadata"].contains("managedFields") &&
        updated["metadata"]["managedFields"] == managed_fields_of(*live)) {
        if (keep_managers(updated["metadata"]["managedFields"], changed, c.removed, ctx)) return;
    }
    const json& given = managed_fields_of(updated);
    std::vector<Manager> managers =
        decode_managers(given.is_null() && live ? managed_fields_of(*live) : given);
    const Manager self{ctx.manager, "Update", ctx.api_version, "", ctx.subresource, {}};
    bool found = false;
    for (auto& m : managers) {
        if (m.same_as(self)) {
            found = true;
            m.fields = field_union(field_difference(m.fields, c.removed), changed);
            if (!changed.empty()) m.time = now_rfc3339();
        } else {
            m.fields = field_difference(field_difference(m.fields, changed), c.removed);
        }
    }
    if (!found && !changed.empty()) {
        Manager m = self;
        m.time = now_rfc3339();
        m.fields = changed;
        managers.push_back(std::move(m));
    }
    json encoded = encode_managers(std::move(managers));
    if (encoded.empty())
        updated["metadata"].erase("managedFields");
    else
        updated["metadata"]["managedFields"] = std::move(encoded);
}

json server_side_apply(const json* live, json config, const ManagerContext& ctx, bool force) {
    if (!config.is_object())
        throw bad_request("the apply patch must be an object (a YAML mapping)");
    if (config.contains("metadata") && !config["metadata"].is_object())
        throw api_error(422, "Invalid",
                        "the applied configuration's metadata must be a mapping, not " +
                            config["metadata"].dump());
    if (config.contains("metadata")) config["metadata"].erase("managedFields");
    std::vector<Manager> managers = decode_managers(live ? managed_fields_of(*live) : json());
    const std::vector<Manager> original = managers;
    const json before = without_managed_fields(live);
    const FieldSet applied = owned_part(applied_fields(config, ctx.schema), ctx);
    json merged = apply_merge(before, config, ctx.schema);

    const Manager self{ctx.manager, "Apply", ctx.api_version, "", ctx.subresource, {}};
    auto self_it = std::find_if(managers.begin(), managers.end(),
                                [&](const Manager& m) { return m.same_as(self); });
    if (self_it != managers.end()) {
        // What this manager applied before and omits now goes, unless another manager has it.
        FieldSet others;
        for (const auto& m : managers)
            if (!m.same_as(self)) others = field_union(others, m.fields);
        FieldSet dropped;
        for (const auto& path : field_difference(self_it->fields, applied))
            if (!owns_within(others, path)) dropped.insert(path);
        remove_fields(merged, dropped);
    }

    const FieldComparison c = owned_comparison(before, merged, ctx);
    const FieldSet changed = field_union(c.added, c.modified);
    std::vector<std::pair<Manager*, FieldSet>> conflicts;
    for (auto& m : managers) {
        if (m.same_as(self)) continue;
        FieldSet taken = field_intersection(m.fields, changed);
        if (!taken.empty()) conflicts.emplace_back(&m, std::move(taken));
    }
    if (!conflicts.empty() && !force) {
        std::sort(conflicts.begin(), conflicts.end(), [](const auto& a, const auto& b) {
            return a.first->describe() < b.first->describe();
        });
        json causes = json::array();
        std::size_t count = 0;
        std::string listing;
        for (const auto& [m, fields] : conflicts) {
            listing += (listing.empty() ? "" : "\n") + std::string("conflicts with ") +
                       m->describe() + ":";
            for (const auto& path : fields) {
                ++count;
                causes.push_back(cause("FieldManagerConflict", field_path_string(path),
                                       "conflict with " + m->describe()));
                listing += "\n- " + field_path_string(path);
            }
        }
        std::string message =
            count == 1
                ? "Apply failed with 1 conflict: " + causes[0]["message"].get<std::string>() +
                      ": " + causes[0]["field"].get<std::string>()
                : "Apply failed with " + std::to_string(count) + " conflicts: " + listing;
        throw api_error(409, "Conflict", message, {{"causes", causes}});
    }
    for (auto& [m, fields] : conflicts) m->fields = field_difference(m->fields, fields);
    for (auto& m : managers)
        if (!m.same_as(self)) m.fields = field_difference(m.fields, c.removed);

    if (self_it == managers.end()) {
        managers.push_back(self);
        self_it = std::prev(managers.end());
    }
    self_it->fields = applied;
    self_it->api_version = ctx.api_version;

    bool managers_changed = managers.size() != original.size();
    for (std::size_t i = 0; !managers_changed && i < managers.size(); ++i)
        managers_changed = managers[i].fields != original[i].fields ||
                           managers[i].api_version != original[i].api_version;
    if (live && merged == before && !managers_changed) return *live;  // a no-op keeps its times
    self_it->time = now_rfc3339();
    if (!merged.contains("metadata") || !merged["metadata"].is_object())
        merged["metadata"] = json::object();
    json encoded = encode_managers(std::move(managers));
    if (!encoded.empty()) merged["metadata"]["managedFields"] = std::move(encoded);
    return merged;
}

}  // namespace kopf::apiserver::core
