// Kopf's progression: the persisted state of each handler (its progress record) and of all the
// handlers of one cause, and how outcomes change them.
#include "core/actions/progression.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kopf::actions {

HandlerState HandlerState::from_scratch(TimePoint now, std::optional<std::string> purpose) {
    HandlerState s;
    s.active = true;
    s.started = now;
    s.purpose = std::move(purpose);
    return s;
}

namespace {

// Kopf writes an integer; a float or a huge number (a hand-edited or corrupt record) is read
// as the nearest count (0 to INT_MAX), never converted out of range (undefined behaviour).
int retries_from(const json& value) {
    constexpr auto highest = std::numeric_limits<int>::max();
    if (value.is_number_unsigned()) {
        return static_cast<int>(std::min<std::uint64_t>(value.get<std::uint64_t>(), highest));
    }
    if (value.is_number_integer()) {
        return static_cast<int>(std::clamp<std::int64_t>(value.get<std::int64_t>(), 0, highest));
    }
    if (value.is_number_float()) {
        const double number = value.get<double>();
        if (std::isnan(number)) return 0;
        return static_cast<int>(std::clamp<double>(number, 0, highest));
    }
    return 0;
}

}  // namespace

HandlerState HandlerState::from_storage(const json& r, TimePoint now) {
    HandlerState s;
    auto ts = [&r](const char* k) -> std::optional<TimePoint> {
        auto it = r.find(k);
        if (it == r.end() || !it->is_string()) return std::nullopt;
        return parse_iso8601(it->get<std::string>());
    };
    s.active = false;
    s.started = ts("started").value_or(now);
    s.stopped = ts("stopped");
    s.delayed = ts("delayed");
    if (r.contains("purpose") && r["purpose"].is_string() &&
        !r["purpose"].get<std::string>().empty())
        s.purpose = r["purpose"].get<std::string>();
    s.retries = r.contains("retries") ? retries_from(r["retries"]) : 0;
    s.success = r.contains("success") && r["success"].is_boolean() && r["success"].get<bool>();
    s.failure = r.contains("failure") && r["failure"].is_boolean() && r["failure"].get<bool>();
    if (r.contains("message") && r["message"].is_string())
        s.message = r["message"].get<std::string>();
    if (r.contains("subrefs") && r["subrefs"].is_array()) {
        for (const auto& x : r["subrefs"]) {
            if (x.is_string()) s.subrefs.push_back(x.get<std::string>());
        }
    }
    s.origin = r;
    return s;
}

json HandlerState::for_storage() const {
    json r = json::object();
    r["started"] = format_iso8601(started);
    r["stopped"] = stopped ? json(format_iso8601(*stopped)) : json();
    r["delayed"] = delayed ? json(format_iso8601(*delayed)) : json();
    r["purpose"] = purpose ? json(*purpose) : json();
    r["retries"] = retries;
    r["success"] = success;
    r["failure"] = failure;
    r["message"] = message ? json(*message) : json();
    if (subrefs.empty()) {
        r["subrefs"] = nullptr;
    } else {
        auto sorted = subrefs;
        std::sort(sorted.begin(), sorted.end());
        r["subrefs"] = sorted;
    }
    return r;
}

json HandlerState::as_in_storage() const {
    json full = for_storage();
    json out = json::object();
    for (auto it = full.begin(); it != full.end(); ++it) {
        if (!it->is_null()) out[it.key()] = *it;
    }
    return out;
}

HandlerState HandlerState::with_outcome(const Outcome& o, TimePoint now) const {
    HandlerState s = *this;
    s.stopped = stopped ? stopped : (o.final ? std::optional<TimePoint>(now) : std::nullopt);
    s.delayed = o.delay
                    ? std::optional<TimePoint>(now + std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(*o.delay)))
                    : std::nullopt;
    s.success = o.final && !o.failed;
    s.failure = o.final && o.failed;
    s.retries = retries < std::numeric_limits<int>::max() ? retries + 1 : retries;
    s.message = o.failed || o.message ? o.message : std::nullopt;
    std::set<std::string> refs(subrefs.begin(), subrefs.end());
    refs.insert(o.subrefs.begin(), o.subrefs.end());
    s.subrefs.assign(refs.begin(), refs.end());
    return s;
}

State State::from_storage(const json& body, const ProgressStorage& storage,
                          const std::vector<std::string>& handler_ids, TimePoint now) {
    State st;
    for (const auto& id : handler_ids) {
        if (auto record = storage.fetch(id, body))
            st.states_[id] = HandlerState::from_storage(*record, now);
    }
    return st;
}

State State::with_purpose(const std::optional<std::string>& purpose,
                          const std::vector<std::string>& repurposed) const {
    State st = *this;
    st.purpose_ = purpose;
    for (const auto& id : repurposed) {
        auto it = st.states_.find(id);
        if (it != st.states_.end()) it->second.purpose = purpose;
    }
    return st;
}

State State::with_handlers(const std::vector<std::string>& ids, TimePoint now) const {
    State st = *this;
    for (const auto& id : ids) {
        auto it = st.states_.find(id);
        if (it == st.states_.end()) {
            st.states_[id] = HandlerState::from_scratch(now, purpose_);
        } else {
            it->second.active = true;
        }
    }
    return st;
}

State State::with_outcomes(const std::map<std::string, Outcome>& outcomes, TimePoint now) const {
    State st = *this;
    for (const auto& [id, outcome] : outcomes) {
        auto it = st.states_.find(id);
        if (it == st.states_.end())
            throw std::logic_error("Unexpected outcomes for unknown handlers: '" + id + "'");
        it->second = it->second.with_outcome(outcome, now);
    }
    return st;
}

void State::store(const json& body, Patch& patch, const ProgressStorage& storage) const {
    for (const auto& [id, s] : states_) {
        if (!s.origin || s.as_in_storage() != *s.origin)
            storage.store(id, s.for_storage(), body, patch);
    }
}

void State::purge(const json& body, Patch& patch, const ProgressStorage& storage,
                  const std::vector<std::string>& owned_ids) const {
    for (const auto& id : owned_ids) storage.purge(id, body, patch);
    for (const auto& [id, s] : states_) {
        if (std::find(owned_ids.begin(), owned_ids.end(), id) == owned_ids.end())
            storage.purge(id, body, patch);
        for (const auto& sub : s.subrefs) storage.purge(sub, body, patch);
    }
}

bool State::done() const {
    for (const auto& [id, s] : states_) {
        if (s.active && !s.finished()) return false;
    }
    return true;
}

std::vector<double> State::delays(TimePoint now) const {
    std::vector<double> out;
    for (const auto& [id, s] : states_) {
        if (!s.active || s.finished()) continue;
        out.push_back(s.delayed
                          ? std::max(0.0, std::chrono::duration<double>(*s.delayed - now).count())
                          : 0.0);
    }
    return out;
}

std::optional<double> State::delay(TimePoint now) const {
    auto d = delays(now);
    if (d.empty()) return std::nullopt;
    return *std::min_element(d.begin(), d.end());
}

StateCounters State::counts() const {
    StateCounters c;
    for (const auto& [id, s] : states_) {
        if (purpose_ && s.purpose && *s.purpose != *purpose_) continue;
        if (s.success) ++c.success;
        if (s.failure) ++c.failure;
        if (!s.finished()) ++c.running;
    }
    return c;
}

std::map<std::string, StateCounters> State::extras() const {
    std::map<std::string, StateCounters> out;
    for (const auto& [id, s] : states_) {
        if (!s.purpose || (purpose_ && *s.purpose == *purpose_)) continue;
        auto& c = out[*s.purpose];
        if (s.success) ++c.success;
        if (s.failure) ++c.failure;
        if (!s.finished()) ++c.running;
    }
    return out;
}

}  // namespace kopf::actions
