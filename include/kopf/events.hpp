// Kubernetes Events about objects (Kopf's "Events"): shown by `kubectl describe` and
// `kubectl get events`.
//
//     void create_fn(kopf::Context& ctx) {
//         kopf::info(ctx.body, "Scaled", "Scaled to 3 replicas.");
//         kopf::warn(ctx.body, "Slow", "The database answers slowly.");
//         try {
//             risky();
//         } catch (...) {
//             kopf::exception(ctx.body, "", "Risky failed:");  // reason: the exception's type
//         }
//     }
//
// As in Kopf:
// - `objects` is one object body or a JSON array of bodies (arrays may nest): one Event per
//   object, about it (involvedObject: apiVersion, kind, name, uid, namespace). Objects of
//   cluster-scoped resources get their Events in the "default" namespace.
// - The Events are queued and posted asynchronously by the running operator; the calls never
//   block and never throw because of the API. A failed post is logged and ignored. Events
//   queued outside a running operator are posted once one runs.
// - Messages longer than 1024 characters are cut to their head, "..." and their tail.
// - No Events are posted about Events (kind Event), which would loop.
// - settings.posting.enabled = false disables them all; settings.posting.level suppresses
//   info() below INFO, warn() below WARNING and exception() below ERROR.
#pragma once

#include <kopf/json.hpp>
#include <string>

namespace kopf {

/// An Event of any type (usually "Normal" or "Warning") about the object(s).
void event(const json& objects, const std::string& type, const std::string& reason,
           const std::string& message = "");

/// An Event of type "Normal".
void info(const json& objects, const std::string& reason, const std::string& message = "");

/// An Event of type "Warning".
void warn(const json& objects, const std::string& reason, const std::string& message = "");

/// An Event of type "Error" about the exception being handled (call it in a `catch` block):
/// the message is followed by the exception's text; the reason defaults to the exception's
/// type name (e.g. "runtime_error"). Outside a `catch` block, the message is posted as is.
void exception(const json& objects, const std::string& reason = "",
               const std::string& message = "");

}  // namespace kopf
