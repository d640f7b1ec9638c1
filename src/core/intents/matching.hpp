// src/core/intents: the registry of handlers, their filters, and cause detection.
// Matching of handlers against causes (Kopf's intents/registries.py: prematch/match).
#pragma once

#include <kopf/context.hpp>
#include <kopf/registry.hpp>
#include <kopf/storage.hpp>
#include <vector>

#include "core/intents/causes.hpp"

namespace kopf::intents {

/// Resource, labels, annotations, field values and `when` (no change criteria).
bool prematch(const ChangingHandler& handler, const ChangingCause& cause, const Context& ctx);
/// prematch plus the field-change criteria (old/new and "the field has changed").
bool match(const ChangingHandler& handler, const ChangingCause& cause, const Context& ctx);
bool match(const WatchingHandler& handler, const json& body, const Context& ctx);
/// Daemons and timers: resource, labels, annotations, the field's value in the body, `when`.
bool match(const SpawningHandler& handler, const Resource& resource, const json& body,
           const Context& ctx);
/// Index handlers: the same criteria as daemons and timers.
bool match(const IndexingHandler& handler, const Resource& resource, const json& body,
           const Context& ctx);

/// Admission handlers: resource, operation, subresource (none, a name, or "*"), labels,
/// annotations, the field's value in the body, `when`. Mutating handlers see DELETE only when it
/// is their only operation (as in Kopf).
bool match(const WebhookHandler& handler, const Resource& resource, const std::string& operation,
           const std::string& subresource, const json& body, const Context& ctx);

/// Changing handlers selected for this cause (reason, resume mixing, filters), deduplicated.
std::vector<const ChangingHandler*> get_changing_handlers(
    const std::vector<ChangingHandler>& handlers, const ChangingCause& cause, const Context& ctx);
/// All changing handlers of the resource (whose progress we own).
std::vector<const ChangingHandler*> get_resource_handlers(
    const std::vector<ChangingHandler>& handlers, const Resource& resource);
bool requires_finalizer(const std::vector<ChangingHandler>& handlers, const ChangingCause& cause,
                        const Context& ctx);
/// Whether any filter of these handlers is a callback (when=, or a callback for a label,
/// annotation or value), and so reads the context it is given.
bool filters_read_context(const std::vector<ChangingHandler>& handlers);
/// Whether the handler's filters read nothing of the object but its labels and annotations
/// (no callbacks, no field): a change elsewhere cannot change whether it matches.
bool filters_read_only_metadata(const SpawningHandler& handler);
/// The same for a changing handler, whose fields may also be in the spec: a change of neither
/// the essence nor the labels and annotations cannot change whether it matches.
bool filters_read_only_essence(const ChangingHandler& handler);
/// Whether an event of the resource's kind that changes nothing but the status and the server's
/// metadata (resourceVersion, generation, managedFields) may leave the handlers as they are:
/// daemons or timers select the kind, event handlers do not, the changing handlers' filters
/// read only the essence and metadata (filters_read_only_essence), no handler's field lies
/// outside the essence, and the diff base (read at each event) is kept in annotations.
bool decided_by_essence_and_metadata(const Registry& registry, const DiffBaseStorage* diffbase,
                                     const Resource& resource);
bool prematch_any(const std::vector<ChangingHandler>& handlers, const ChangingCause& cause,
                  const Context& ctx);
/// Fields that handlers watch, to be kept in the essence (e.g. status.x for field handlers).
std::vector<std::vector<std::string>> get_extra_fields(const Registry& registry,
                                                       const Resource& resource);

}  // namespace kopf::intents
