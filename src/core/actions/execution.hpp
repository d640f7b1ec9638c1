// src/core/actions: executing handlers with retries, timeouts and backoff, their sub-handlers,
// and delivering their results (Kopf's actions/execution.py); one invocation (the context, the
// call) is in invocation.hpp, the progress records in progression.hpp, the choice of handlers
// per cycle in lifecycles.hpp.
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

#include "core/actions/invocation.hpp"
#include "core/actions/lifecycles.hpp"
#include "core/actions/metering.hpp"
#include "core/actions/progression.hpp"
#include "core/intents/causes.hpp"

namespace kopf::actions {

/// Run the planned handlers once each; returns their outcomes by id.
Task<std::map<std::string, Outcome>> execute_handlers_once(
    InvocationEnv& env, const std::vector<const ChangingHandler*>& handlers, const State& state);

/// What a failed attempt leads to, by the kind of its error (retry, final failure, ignored),
/// with Kopf's log line; rethrows kopf::CancelledError.
Outcome outcome_of_failure(const OperatorSettings& settings, Logger& logger,
                           const HandlerOptions& options, const HandlerState& state,
                           const std::string& name, double runtime, std::exception_ptr error,
                           std::set<std::string> subrefs = {});

/// The two plain halves of one attempt, around the call of the handler, for callers that keep
/// their own coroutine frames lean (daemons and timers: their attempt lasts as long as they do).
/// Logs "… is invoked.", checks the handler's timeout and retries (throws HandlerTimeoutError or
/// HandlerRetriesError, which outcome_of_failure turns into the final failure) and builds the
/// context; `scope` and `field_values` must outlive it.
Context prepare_invocation(InvocationEnv& env, const ChangingHandler& handler,
                           const HandlerState& state, const std::string& name, double runtime,
                           HandlerScope& scope, FieldValues& field_values);
/// A successful attempt, with Kopf's log line "… succeeded.".
/// Reports one invocation's outcome to `meter` (none: metrics are off); `errored`: the
/// invocation raised (an ignored error ends as a success would).
void meter_invocation(HandlerMeter* meter, const std::string& id, const Outcome& outcome,
                      bool errored, std::chrono::steady_clock::time_point started, bool retry);

Outcome outcome_of_success(Logger& logger, const std::string& name, json result,
                           std::set<std::string> subrefs = {});

/// Runs the sub-handlers collected in `scope` as one nested cycle of the invocation `env`, their
/// ids added to `subrefs`; throws HandlerChildrenRetry while they are not all done.
Task<void> execute_subhandlers(InvocationEnv& env, HandlerScope& scope,
                               std::set<std::string>& subrefs);

/// Results of successful handlers to status.<id>: mappings merged, other values replaced.
void deliver_results(const std::map<std::string, Outcome>& outcomes, Patch& patch);

}  // namespace kopf::actions
