// src/core/actions: invoking handlers with retries, timeouts and backoff, and delivering their
// results (Kopf's actions/execution.py); the progress records are in progression.hpp, the
// choice of handlers per cycle in lifecycles.hpp.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <kopf/context.hpp>
#include <kopf/registry.hpp>
#include <kopf/settings.hpp>
#include <kopf/task.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/actions/lifecycles.hpp"
#include "core/actions/progression.hpp"
#include "core/intents/causes.hpp"

namespace kopf {

/// Per-invocation scope of a changing handler: collects its sub-handlers.
struct HandlerScope {
    std::string parent_id;
    bool field_needs_change = false;
    std::vector<ChangingHandler> subhandlers;
};

}  // namespace kopf

namespace kopf::actions {

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
    bool spawning() const { return std::string_view(kind) != "Handler"; }
};

/// Run the planned handlers once each; returns their outcomes by id.
Task<std::map<std::string, Outcome>> execute_handlers_once(
    InvocationEnv& env, const std::vector<const ChangingHandler*>& handlers, const State& state);

/// What a failed attempt leads to, by the kind of its error (retry, final failure, ignored),
/// with Kopf's log line; rethrows kopf::CancelledError.
Outcome outcome_of_failure(const OperatorSettings& settings, Logger& logger,
                           const HandlerOptions& options, const HandlerState& state,
                           const std::string& name, double runtime, std::exception_ptr error,
                           std::set<std::string> subrefs = {});

/// Results of successful handlers to status.<id>: mappings merged, other values replaced.
void deliver_results(const std::map<std::string, Outcome>& outcomes, Patch& patch);

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

}  // namespace kopf::actions
