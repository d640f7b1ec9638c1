#include "core/reactor/queueing.hpp"

#include <algorithm>

#include "structs/bodies.hpp"

namespace kopf::runtime {
namespace {

// Versions remembered while a worker is busy, to recognise its own patch among them.
constexpr std::size_t kSeenVersionsKept = 64;

// Notes the version of an event that came while the worker was busy.
void note_seen(std::vector<std::string>& seen, bool& truncated, std::string version) {
    if (seen.size() < kSeenVersionsKept)
        seen.push_back(std::move(version));
    else
        truncated = true;
}

// How late, as a share of the idle timeout, an idle worker may exit so that one wake-up of the
// loop releases every worker that went idle within that span.
constexpr double kIdleSlackShare = 0.01;

std::optional<std::string> resource_version_of(const json& event) {
    const auto object = event.find("object");
    if (object == event.end() || !object->is_object()) return std::nullopt;
    const auto meta = object->find("metadata");
    if (meta == object->end() || !meta->is_object()) return std::nullopt;
    const auto version = meta->find("resourceVersion");
    if (version == meta->end() || !version->is_string()) return std::nullopt;
    return version->get<std::string>();
}

}  // namespace

ObjectQueues::ObjectQueues(Executor& executor, QueueingOptions options, Processor processor)
    : executor_(executor), options_(options), processor_(std::move(processor)) {
    idle_deadlines_.slack = std::max(0.0, options_.idle_timeout) * kIdleSlackShare;
}

std::size_t ObjectQueues::busy_workers() const {
    return static_cast<std::size_t>(
        std::count_if(workers_.begin(), workers_.end(),
                      [](const auto& w) { return w.second.state == State::busy; }));
}

std::unordered_map<std::string, ObjectQueues::Census> ObjectQueues::census() const {
    std::unordered_map<std::string, Census> found;
    for (const auto& [key, worker] : workers_) {
        auto& census = found[key.substr(0, key.find('/'))];
        ++census.workers;
        if (worker.state == State::busy) ++census.busy;
        if (worker.latest) ++census.pending;
    }
    return found;
}

bool ObjectQueues::has_slot() const {
    return !options_.worker_limit || *options_.worker_limit <= 0 ||
           running_ < static_cast<std::size_t>(*options_.worker_limit);
}

bool ObjectQueues::push(const std::string& key, json event, bool listed) {
    auto version = resource_version_of(event);
    return push_pending(key, Pending{std::move(event), {}, std::move(version), listed});
}

bool ObjectQueues::push_unparsed(const std::string& key, const std::string& version,
                                 std::string_view line, bool& batched) {
    if (stopping_ || !parser_) return false;
    const auto it = workers_.find(key);
    if (it == workers_.end() || it->second.state == State::idle) return false;
    batched = push_pending(key, Pending{json(), std::string(line), version});
    return true;
}

bool ObjectQueues::is_idle(const std::string& key) const {
    const auto it = workers_.find(key);
    return !stopping_ && (it == workers_.end() || it->second.state == State::idle);
}

std::optional<json> ObjectQueues::take_latest(const std::string& key, Worker& worker) {
    Pending pending = std::move(*worker.latest);
    worker.latest.reset();
    if (pending.line.empty()) return std::move(pending.event);
    return parser_(key, pending.line);
}

bool ObjectQueues::push_pending(const std::string& key, Pending pending) {
    if (stopping_) return false;
    auto [it, created] = workers_.try_emplace(key);
    Worker& worker = it->second;
    const std::optional<std::string> version = pending.version;
    const bool listed = pending.listed;
    const bool batched = worker.latest.has_value();
    worker.latest = std::move(pending);
    if (created) {
        if (has_slot()) {
            ++running_;
            process(key, worker);
        } else {
            waiting_.push_back(key);
        }
        return batched;
    }
    switch (worker.state) {
        case State::idle:
            process(key, worker);
            break;
        case State::consistency:
            if (listed) {
                // Our patch may have been merged over someone else's change whose event the
                // listing skipped: its version is to be processed, not let pass.
                forget_noop_echo(key, worker);
                worker.expected_is_noop = false;
            }
            if (version && std::erase(worker.expected_earlier, *version) > 0) {
                // Our earlier write of the cycle, delivered after our last patch's answer: it
                // is superseded by the expected event, which is still due.
                worker.latest.reset();
                break;
            }
            forget_noop_echo(key, worker);
            // Our own patch has arrived: the object is consistent with what we wrote.
            if (version && version == worker.expected_version) {
                if (worker.expected_is_noop) {
                    worker.latest.reset();
                    go_idle(key, worker);
                } else {
                    process(key, worker);
                }
            } else {
                // Someone else's change came first: our patch's event will carry it too.
                worker.expected_is_noop = false;
            }
            break;
        case State::held:
            break;  // batched: the latest event is processed when the hold is over
        case State::busy:
            note_seen(worker.seen_versions, worker.seen_truncated, version.value_or(""));
            if (listed) worker.seen_listed = true;
            break;  // batched: the worker takes the latest event when it is free
        case State::waiting_for_slot:
            break;
    }
    return batched;
}

void ObjectQueues::process(const std::string& key, Worker& worker) {
    worker.state = State::busy;
    renew_generation(worker);
    worker.expected_version.reset();
    worker.expected_earlier.clear();
    if (!worker.superseded_echoes.empty()) forget_superseded_echoes(key, worker);
    worker.expected_object.clear();
    worker.expected_is_noop = false;
    worker.processing_version = worker.latest->version;
    worker.seen_versions.clear();
    worker.seen_truncated = false;
    worker.seen_listed = false;
    std::optional<json> event = take_latest(key, worker);
    if (!event) {
        go_idle(key, worker);
        return;
    }
    const unsigned long generation = worker.generation;
    processor_(key, std::move(*event), [this, key, generation](Processed processed) {
        executor_.post([this, key, generation, processed = std::move(processed)]() mutable {
            auto it = workers_.find(key);
            if (it == workers_.end() || it->second.generation != generation) return;
            on_done(key, it->second, std::move(processed));
        });
    });
}

void ObjectQueues::on_done(const std::string& key, Worker& worker, Processed processed) {
    const std::optional<std::string>& version = processed.patched_version;
    const bool echo_is_noop = processed.echo_is_noop;
    const std::optional<double>& hold = processed.hold;
    if (stopping_) {
        release(key);
        check_finished();
        return;
    }
    if (hold) {
        // Each hold has its own duration: a timer of its own (errors are rare).
        worker.state = State::held;
        worker.seen_versions.clear();
        worker.seen_truncated = false;
        worker.seen_listed = false;
        const unsigned long generation = renew_generation(worker);
        executor_.post_after(std::max(0.0, *hold), [this, key, generation] {
            const auto it = workers_.find(key);
            if (it == workers_.end() || it->second.generation != generation) return;
            on_hold_expired(key);
        });
        return;
    }
    // The events of our earlier patches of this cycle are our own writes, superseded by our
    // last patch's event: they count as nothing that came (the status subresource's cycle
    // writes twice, and the first write's event arrives while the second is under way).
    auto& seen = worker.seen_versions;
    const std::size_t seen_at_all = seen.size();
    worker.expected_earlier.clear();  // those whose events have not come yet
    for (auto& own : processed.earlier_versions) {
        if (std::erase(seen, own) == 0) worker.expected_earlier.push_back(std::move(own));
    }
    // Consistent if our patch's version passed by while we were busy (as Kopf, which looks for
    // it in the batch), even if newer events came after it; or if the patch wrote nothing
    // (the answer shows the version we processed).
    const auto seen_at = version ? std::find(seen.begin(), seen.end(), *version) : seen.end();
    const bool wrote_nothing = version && version == worker.processing_version;
    const bool version_seen = wrote_nothing || seen_at != seen.end();
    // Our own event needs nothing only if it is the only one since: an earlier one is someone
    // else's change, which the server merged under our patch. A listing may have skipped that
    // earlier one: what it shows is processed.
    const bool listed = worker.seen_listed;
    if (echo_is_noop && !wrote_nothing && !listed && seen.size() == 1 && seen_at == seen.begin()) {
        worker.latest.reset();
    }
    // Only our earlier writes came: the event held is one of them, older than our last patch.
    if (seen.empty() && seen_at_all > 0 && !worker.seen_truncated) worker.latest.reset();
    const bool nothing_came = seen.empty() && !worker.seen_truncated && !listed;
    worker.seen_versions.clear();
    worker.seen_truncated = false;
    worker.seen_listed = false;
    if (version && !version_seen) {
        worker.state = State::consistency;
        worker.expected_version = version;
        worker.expected_object = std::move(processed.patched_object);
        worker.expected_is_noop = echo_is_noop && nothing_came;
        if (worker.expected_is_noop) noop_echoes_.emplace(*version, key);
        const unsigned long generation = renew_generation(worker);
        set_deadline(consistency_deadlines_, options_.consistency_timeout, key, generation,
                     &ObjectQueues::on_consistency_timeout);
        return;
    }
    if (worker.latest)
        process(key, worker);
    else
        go_idle(key, worker);
}

void ObjectQueues::expect_superseded_echo(const std::string& key, const std::string& version) {
    const auto it = workers_.find(key);
    if (stopping_ || it == workers_.end() || it->second.state != State::busy) return;
    it->second.superseded_echoes.push_back(version);
    superseded_echoes_.emplace(version, key);
}

namespace {

// The key of the first object of kind `key_prefix` expecting the echo of `version`, taken out.
std::optional<std::string> take_echo(std::unordered_multimap<std::string, std::string>& echoes,
                                     const std::string& version, std::string_view key_prefix) {
    auto [echo, end] = echoes.equal_range(version);
    while (echo != end && !std::string_view(echo->second).starts_with(key_prefix)) ++echo;
    if (echo == end) return std::nullopt;
    std::string key = std::move(echo->second);
    echoes.erase(echo);
    return key;
}

// Forgets that the object `key` expects the echo of `version`.
void erase_echo(std::unordered_multimap<std::string, std::string>& echoes,
                const std::string& version, const std::string& key) {
    auto [echo, end] = echoes.equal_range(version);
    for (; echo != end; ++echo) {
        if (echo->second == key) {
            echoes.erase(echo);
            return;
        }
    }
}

}  // namespace

std::optional<std::string> ObjectQueues::drop_superseded_echo(const std::string& version,
                                                              std::string_view key_prefix) {
    auto key = take_echo(superseded_echoes_, version, key_prefix);
    if (!key) return std::nullopt;
    const auto it = workers_.find(*key);
    if (stopping_ || it == workers_.end()) return std::nullopt;
    Worker& worker = it->second;
    std::erase(worker.superseded_echoes, version);
    switch (worker.state) {
        case State::busy:
            // Seen, as push() would note it, but never the latest: our later patch follows.
            note_seen(worker.seen_versions, worker.seen_truncated, version);
            return key;
        case State::consistency:
            if (std::erase(worker.expected_earlier, version) > 0) return key;
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

void ObjectQueues::forget_superseded_echoes(const std::string& key, Worker& worker) {
    for (const auto& version : worker.superseded_echoes)
        erase_echo(superseded_echoes_, version, key);
    worker.superseded_echoes.clear();
}

std::optional<std::string> ObjectQueues::drop_echo(const std::string& version,
                                                   std::string_view key_prefix) {
    if (!superseded_echoes_.empty()) {
        if (auto key = drop_superseded_echo(version, key_prefix)) return key;
    }
    auto key = take_echo(noop_echoes_, version, key_prefix);
    if (!key) return std::nullopt;
    const auto it = workers_.find(*key);
    if (stopping_ || it == workers_.end()) return std::nullopt;
    Worker& worker = it->second;
    if (worker.state != State::consistency || !worker.expected_is_noop ||
        worker.expected_version != version)
        return std::nullopt;
    go_idle(*key, worker);
    return key;
}

void ObjectQueues::forget_noop_echo(const std::string& key, const Worker& worker) {
    if (!worker.expected_is_noop || !worker.expected_version) return;
    erase_echo(noop_echoes_, *worker.expected_version, key);
}

void ObjectQueues::on_consistency_timeout(const std::string& key) {
    Worker& worker = workers_.at(key);
    forget_noop_echo(key, worker);
    // The patched version never arrived: go on with the freshest state we know. That is the
    // object as our patch's answer showed it, unless a newer event came (a relisting after a
    // restarted watch): never an event older than the patch, which would not show the
    // handlers' successes the patch recorded, so they would run again. Even if it would change
    // nothing, it is processed: the runtime then knows that version, and drops the late
    // events older than it (ObjectEntry::newest_version).
    if (auto patched = patched_event_if_freshest(worker)) worker.latest = std::move(patched);
    std::string().swap(worker.expected_object);
    if (worker.latest)
        process(key, worker);
    else
        go_idle(key, worker);
}

std::optional<ObjectQueues::Pending> ObjectQueues::patched_event_if_freshest(const Worker& worker) {
    if (worker.expected_object.empty() || !worker.expected_version) return std::nullopt;
    if (worker.latest) {
        // Versions compared only where they are numbers; otherwise the latest event wins (as
        // Kopf, which never compares them).
        const auto patched = structs::version_number(*worker.expected_version);
        const auto& latest = worker.latest->version;
        const auto latest_number = latest ? structs::version_number(*latest) : std::nullopt;
        if (!patched || !latest_number || *latest_number > *patched) return std::nullopt;
    }
    json object = json::parse(worker.expected_object, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object()) return std::nullopt;
    json event(json::value_t::object);
    event["type"] = "MODIFIED";
    event["object"] = std::move(object);
    return Pending{std::move(event), {}, worker.expected_version};
}

void ObjectQueues::on_hold_expired(const std::string& key) {
    if (on_hold_over_) on_hold_over_(key);
    Worker& worker = workers_.at(key);
    if (worker.latest)
        process(key, worker);
    else
        go_idle(key, worker);
}

void ObjectQueues::go_idle(const std::string& key, Worker& worker) {
    worker.state = State::idle;
    std::string().swap(worker.expected_object);
    const unsigned long generation = renew_generation(worker);
    set_deadline(idle_deadlines_, options_.idle_timeout, key, generation, &ObjectQueues::release);
}

void ObjectQueues::set_deadline(Deadlines& deadlines, double timeout, const std::string& key,
                                unsigned long generation, Expire expire) {
    deadlines.due.push_back(Deadline{executor_.now() + timeout, key, generation});
    arm(deadlines, expire);
}

unsigned long ObjectQueues::renew_generation(Worker& worker) {
    worker.generation = ++last_generation_;
    return worker.generation;
}

bool ObjectQueues::in_force(const Deadline& deadline) const {
    const auto it = workers_.find(deadline.key);
    return it != workers_.end() && it->second.generation == deadline.generation;
}

void ObjectQueues::arm(Deadlines& deadlines, Expire expire) {
    if (deadlines.armed) return;
    while (!deadlines.due.empty() && !in_force(deadlines.due.front())) deadlines.due.pop_front();
    if (deadlines.due.empty()) return;
    deadlines.armed = true;
    const double delay =
        std::max(0.0, deadlines.due.front().at + deadlines.slack - executor_.now());
    executor_.post_after(delay, [this, &deadlines, expire] { expire_due(deadlines, expire); });
}

void ObjectQueues::expire_due(Deadlines& deadlines, Expire expire) {
    deadlines.armed = false;
    // A timer may fire a rounding error before the deadline it was set for.
    constexpr double kClockTolerance = 1e-6;
    const double now = executor_.now();
    while (!deadlines.due.empty() && deadlines.due.front().at <= now + kClockTolerance) {
        Deadline deadline = std::move(deadlines.due.front());
        deadlines.due.pop_front();
        if (in_force(deadline)) (this->*expire)(deadline.key);
    }
    arm(deadlines, expire);
}

void ObjectQueues::release(const std::string& key) {
    if (const auto it = workers_.find(key);
        it != workers_.end() && !it->second.superseded_echoes.empty())
        forget_superseded_echoes(key, it->second);
    workers_.erase(key);  // only idle or stopping workers are released: none awaits an echo
    if (running_ > 0) --running_;
    while (!stopping_ && !waiting_.empty() && has_slot()) {
        const std::string next = waiting_.front();
        waiting_.pop_front();
        const auto it = workers_.find(next);
        if (it == workers_.end()) continue;
        ++running_;
        process(next, it->second);
    }
}

void ObjectQueues::shutdown(std::function<void()> finished) {
    stopping_ = true;
    finished_ = std::move(finished);
    waiting_.clear();
    noop_echoes_.clear();
    for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->second.state == State::busy) {
            ++it;
        } else {
            if (it->second.state != State::waiting_for_slot && running_ > 0) --running_;
            it = workers_.erase(it);
        }
    }
    executor_.post_after(options_.exit_timeout, [this] {
        workers_.clear();
        running_ = 0;
        check_finished();
    });
    check_finished();
}

void ObjectQueues::check_finished() {
    if (!stopping_ || !finished_ || !workers_.empty()) return;
    auto finished = std::move(finished_);
    finished_ = nullptr;
    finished();
}

}  // namespace kopf::runtime
