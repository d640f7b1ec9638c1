// Field managers of kube-apiserver (apimachinery pkg/util/managedfields): every write records
// in `metadata.managedFields` which manager set which fields, and server-side apply refuses
// to change fields that other managers own (409) unless forced.
#pragma once

#include <string>

#include "core/engine.hpp"

namespace kopf::apiserver::core {

struct ManagerContext {
    std::string manager;              // fieldManager, or the User-Agent's product
    std::string api_version;          // of the request ("v1", "example.com/v1")
    std::string subresource;          // "" or "status"
    bool status_subresource = false;  // the kind has one: the main resource ignores .status
    json schema;                      // the list shapes (managed_fields.hpp)
};

ManagerContext manager_context(const RequestInfo& rq);

// An Update (create, PUT, a non-apply PATCH) by ctx.manager turned `live` (null for a create)
// into `updated`: sets updated.metadata.managedFields. The managers come from `updated` if
// the request carried managedFields, from `live` otherwise. The writer takes the fields it
// added or changed from the other managers; removed fields leave everyone's sets.
void track_update(const json* live, json& updated, const ManagerContext& ctx);

// Server-side apply of `config` to `live` (null when the object does not exist yet): the
// merged object with its managedFields. Throws the 409 of Kubernetes, with one
// FieldManagerConflict cause per field, when the apply changes fields other managers own,
// unless `force` (then they change hands). Fields the manager applied before and omits now
// are removed unless another manager owns them.
json server_side_apply(const json* live, json config, const ManagerContext& ctx, bool force);

}  // namespace kopf::apiserver::core
