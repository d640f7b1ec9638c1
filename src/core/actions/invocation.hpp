// One invocation of a changing handler (Kopf's actions/invocation.py): the context built from
// the cause (Kopf's kwargs) and the call itself, on the loop for coroutines and on the worker
// pool for synchronous functions.
#pragma once

#include <functional>
#include <kopf/context.hpp>
#include <kopf/registry.hpp>
#include <kopf/settings.hpp>
#include <kopf/task.hpp>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/actions/lifecycles.hpp"
#include "core/actions/metering.hpp"
#include "core/actions/progression.hpp"
#include "core/intents/causes.hpp"

namespace kopf {

namespace actions {
struct InvocationEnv;
}

/// Per-invocation scope of a changing handler: collects its sub-handlers.
struct HandlerScope {
    std::string parent_id;
    bool field_needs_change = false;
    std::vector<ChangingHandler> subhandlers;  ///< run after the parent returns
    /// For kopf::execute(), which runs sub-handlers in place: the parent's invocation, and the
    /// ids of the sub-handlers run (purged with the parent's progress when it is done).
    actions::InvocationEnv* env = nullptr;
    std::set<std::string>* subrefs = nullptr;
};

}  // namespace kopf

namespace kopf::actions {

/// The parts of a body that a context refers to: nodes of the body (an empty object where it
/// has none) and views into its identity strings. Valid while the body is not changed.
struct BodyViews {
    const json* meta;
    const json* spec;
    const json* status;
    const json* labels;
    const json* annotations;
    std::string_view name;
    std::string_view namespace_;
    std::string_view uid;
};
BodyViews body_views(const json& body);

/// Everything a handler invocation needs besides the handler itself.
struct InvocationEnv {
    const OperatorSettings& settings;
    const Resource& resource;
    const json& body;
    Patch& patch;
    Logger& logger;
    Memo& memo;
    const intents::ChangingCause& cause;
    std::function<TimePoint()> now;
    Lifecycle lifecycle;
    const Client* client = nullptr;  ///< for ctx.api()
    /// Daemons and timers: how the log lines name the handler ("Daemon", "Timer"; "Handler"
    /// for the others), and the stop flag for ctx.stopped. Their contexts have no reason and
    /// no sub-handlers.
    const char* kind = "Handler";
    DaemonStopped stopped{};
    Indices indices{};                        ///< for ctx.index()
    std::shared_ptr<Logger> shared_logger{};  ///< `logger`, owned: for ctx.logger_ptr
    HandlerMeter* meter = nullptr;            ///< the operator's metrics; none when off
    /// body_views(body), if kept beside the body (daemons and timers: a timer's body is out of
    /// the caches by its next tick, and finding the views took a tenth of a tick); else found.
    const BodyViews* views = nullptr;
    bool spawning() const { return std::string_view(kind) != "Handler"; }
};

/// What a field handler sees instead of the cause's essences: the field's old and new values
/// and the diff reduced to the field.
struct FieldValues {
    json old;
    json new_;
    Diff diff;
};

/// Build the context of a changing handler. Its old/new/diff refer to the cause, or for a field
/// handler to `field_values`, which must outlive the context.
Context make_context(InvocationEnv& env, const ChangingHandler& handler, const HandlerState& state,
                     HandlerScope* scope, FieldValues& field_values);

/// Calls the handler: a coroutine on the loop, a synchronous function on the worker pool.
/// The object is the current cause meanwhile (kopf::adopt() & co. without an owner).
Task<json> invoke(const ChangingHandler& handler, Context& ctx);

/// What the hierarchy functions take from the handled object when no owner is given (Kopf's
/// cause_var holding the cause's body): its apiVersion, kind, name, namespace, uid and labels;
/// for detail::set_current_cause().
std::shared_ptr<const void> cause_of(const json& body);

}  // namespace kopf::actions
