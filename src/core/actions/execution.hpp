// src/core/actions: invoking handlers with retries, timeouts and backoff; persisting their
// progress; delivering results. Mirrors Kopf's actions/{execution,progression,lifecycles}.py.
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
#include <vector>

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

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

/// "2026-11-21T23:21:38.929772+00:00" (UTC, microseconds), as Kopf writes timestamps.
std::string format_iso8601(TimePoint t);
/// Parses Kopf's timestamps with or without a zone ("+00:00", "Z", none = UTC) and fraction.
std::optional<TimePoint> parse_iso8601(const std::string& s);

/// The result of one execution of one handler.
struct Outcome {
    bool final = false;
    std::optional<double> delay;
    json result;                         ///< null = no result
    std::optional<std::string> message;  ///< set if the attempt failed (str(exception))
    bool failed = false;
    std::set<std::string> subrefs;
};

/// The persisted state of one handler (Kopf's progress record).
struct HandlerState {
    bool active = false;
    TimePoint started{};
    std::optional<TimePoint> stopped;
    std::optional<TimePoint> delayed;
    std::optional<std::string> purpose;
    int retries = 0;
    bool success = false;
    bool failure = false;
    std::optional<std::string> message;
    std::vector<std::string> subrefs;
    std::optional<json> origin;  ///< as read from the storage, to skip unchanged writes

    bool finished() const { return success || failure; }
    bool sleeping(TimePoint now) const { return !finished() && delayed && *delayed > now; }
    bool awakened(TimePoint now) const { return !finished() && !sleeping(now); }
    std::chrono::duration<double> runtime(TimePoint now) const { return now - started; }

    static HandlerState from_scratch(TimePoint now, std::optional<std::string> purpose);
    static HandlerState from_storage(const json& record, TimePoint now);
    /// The full record, all fields (nulls included), in Kopf's field order.
    json for_storage() const;
    /// The record without nulls (what the API server keeps).
    json as_in_storage() const;
    HandlerState with_outcome(const Outcome& outcome, TimePoint now) const;
};

struct StateCounters {
    int success = 0;
    int failure = 0;
    int running = 0;
};

/// The states of the handlers selected for this cause, plus the leftovers of other causes.
class State {
  public:
    static State from_storage(const json& body, const ProgressStorage& storage,
                              const std::vector<std::string>& handler_ids, TimePoint now);
    State with_purpose(const std::optional<std::string>& purpose,
                       const std::vector<std::string>& repurposed = {}) const;
    State with_handlers(const std::vector<std::string>& handler_ids, TimePoint now) const;
    State with_outcomes(const std::map<std::string, Outcome>& outcomes, TimePoint now) const;
    void store(const json& body, Patch& patch, const ProgressStorage& storage) const;
    void purge(const json& body, Patch& patch, const ProgressStorage& storage,
               const std::vector<std::string>& owned_ids) const;

    bool done() const;
    std::vector<double> delays(TimePoint now) const;
    std::optional<double> delay(TimePoint now) const;
    StateCounters counts() const;
    std::map<std::string, StateCounters> extras() const;
    const HandlerState& operator[](const std::string& id) const { return states_.at(id); }
    bool contains(const std::string& id) const { return states_.count(id) > 0; }
    const std::map<std::string, HandlerState>& states() const { return states_; }
    const std::optional<std::string>& purpose() const { return purpose_; }

  private:
    std::map<std::string, HandlerState> states_;
    std::optional<std::string> purpose_;
};

/// Chooses which of the awakened handlers run in this cycle.
using Lifecycle = std::function<std::vector<const ChangingHandler*>(
    std::vector<const ChangingHandler*> handlers, const State& state)>;

namespace lifecycles {
/// One handler per cycle, the one with the fewest retries (Kopf's default).
std::vector<const ChangingHandler*> asap(std::vector<const ChangingHandler*> handlers,
                                         const State& state);
/// All handlers at once, in the order of registration.
std::vector<const ChangingHandler*> all_at_once(std::vector<const ChangingHandler*> handlers,
                                                const State&);
/// The first handler only, in the order of registration.
std::vector<const ChangingHandler*> one_by_one(std::vector<const ChangingHandler*> handlers,
                                               const State&);
/// One random handler.
std::vector<const ChangingHandler*> randomized(std::vector<const ChangingHandler*> handlers,
                                               const State&);
/// All handlers in a random order.
std::vector<const ChangingHandler*> shuffled(std::vector<const ChangingHandler*> handlers,
                                             const State&);
}  // namespace lifecycles

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
};

/// Run the planned handlers once each; returns their outcomes by id.
Task<std::map<std::string, Outcome>> execute_handlers_once(
    InvocationEnv& env, const std::vector<const ChangingHandler*>& handlers, const State& state);

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
