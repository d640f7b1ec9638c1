// Kopf's progression: the persisted state of each handler (its progress record, in Kopf's
// format) and of all the handlers of one cause.
#pragma once

#include <chrono>
#include <kopf/json.hpp>
#include <kopf/patch.hpp>
#include <kopf/storage.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "structs/timestamps.hpp"

namespace kopf::actions {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// Kopf's timestamps (structs/timestamps.hpp), under the names this layer has always used.
using structs::format_iso8601;
using structs::parse_iso8601;

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

}  // namespace kopf::actions
