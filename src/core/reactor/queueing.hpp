// Per-object queueing (Kopf's "queueing"): one worker per object; the events that arrive
// while the worker is busy are batched to the latest one; after our own patch the worker waits
// for the watch stream to show the patched resourceVersion (consistency) before processing
// again; idle workers exit after settings.queueing.idle_timeout (at most 1% of it later: their
// exits are batched); at most worker_limit objects are processed at once; at shutdown, busy
// workers get exit_timeout to finish. After an unexpected error, the processor may hold the
// object back for a while (Kopf's throttling, actions/throttlers): its events are batched
// meanwhile, and the latest one is processed when the hold is over.
//
// Runs on one event loop through kopf::Executor: every method is called on the loop.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <kopf/json.hpp>
#include <kopf/task.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kopf::runtime {

struct QueueingOptions {
    double idle_timeout = 5.0;         // settings.queueing.idle_timeout
    double exit_timeout = 2.0;         // settings.queueing.exit_timeout
    std::optional<int> worker_limit;   // settings.queueing.worker_limit
    double consistency_timeout = 5.0;  // settings.persistence.consistency_timeout
};

class ObjectQueues {
  public:
    // What the processor tells the queue when it has processed an event.
    struct Processed {
        // The resourceVersion of the object after our own patch (if we patched it): the next
        // processing waits for the watch stream to show it (consistency).
        std::optional<std::string> patched_version;
        // The object as the answer to that patch showed it (JSON text): if the watch stream
        // withholds the patch's event past consistency_timeout, this is processed rather than
        // an older event (which would not show the handlers' successes we have just recorded).
        std::string patched_object;
        // The versions of our earlier patches in the same cycle (the body's before the status'):
        // their events are our own writes, not someone else's change, and the last patch's
        // event supersedes them.
        std::vector<std::string> earlier_versions;
        // Processing the event of the patched version would change nothing: it is dropped when
        // it arrives, unless newer events came with it.
        bool echo_is_noop = false;
        // After an unexpected error: the seconds for which the object's next events wait (the
        // worker keeps its slot).
        std::optional<double> hold;
    };
    using Done = std::function<void(Processed)>;
    using Processor = std::function<void(const std::string& key, json&& event, Done done)>;
    // Makes the watch event of a line taken by push_unparsed(); nullopt if it cannot (after
    // saying why).
    using Parser =
        std::function<std::optional<json>(const std::string& key, std::string_view line)>;

    ObjectQueues(Executor& executor, QueueingOptions options, Processor processor);
    ObjectQueues(const ObjectQueues&) = delete;
    ObjectQueues& operator=(const ObjectQueues&) = delete;

    // A watch event ({"type": ..., "object": {...}}) for the object identified by `key`.
    // Returns true when it replaced an event not processed yet (batched: only the newest
    // event of an object is processed). `listed`: the event comes from a listing, which shows
    // the object's latest state but skips the events that led to it; it is never let pass as
    // the echo of our own patch, which may have been merged over a change the listing skipped.
    bool push(const std::string& key, json event, bool listed = false);
    // The same for an event still in its watch line, if the object's worker is not idle (else
    // false, and the caller parses and push()es it): it is parsed only if it is still the newest
    // when the worker takes it. Most are superseded by then (the echoes of our own patches that
    // arrive while the worker waits for the patches' answers above all), and never parsed.
    // `batched` tells whether it replaced an event not processed yet.
    bool push_unparsed(const std::string& key, const std::string& version, std::string_view line,
                       bool& batched);
    void parse_unparsed_with(Parser parser) { parser_ = std::move(parser); }
    // Whether the object has nothing queued, under way or awaited (an echo, a hold).
    bool is_idle(const std::string& key) const;

    // Drops the event of our own patch of this resourceVersion if it is awaited and would
    // change nothing (see Done), without it ever being parsed; returns the key of its object,
    // or nullopt if the event must be pushed as usual. Only keys starting with `key_prefix`
    // are considered: versions are unique per API server, and kinds may be served by several
    // (aggregated APIs).
    std::optional<std::string> drop_echo(const std::string& version, std::string_view key_prefix);
    // Our patch of the object being processed wrote `version`, and a later patch of the same
    // cycle follows (the status after the body): that version's event is superseded by the
    // later one's, and drop_echo() drops it unparsed when it comes.
    void expect_superseded_echo(const std::string& key, const std::string& version);
    // Stops accepting events; calls `finished` once every worker is done, or after exit_timeout
    // (then the still-busy workers' results are ignored).
    void shutdown(std::function<void()> finished);
    // Called with the object's key when a hold is over (for its log line), before its batched
    // event, if any, is processed.
    void on_hold_over(std::function<void(const std::string& key)> callback) {
        on_hold_over_ = std::move(callback);
    }

    std::size_t workers() const { return workers_.size(); }
    // The workers by their keys' first segment (the resource, for keys "RESOURCE/..."): how
    // many there are, how many are processing, how many have an event waiting (batched behind
    // a busy one, held, or waiting for a slot). Walks every worker: for scrapes, not hot paths.
    struct Census {
        std::size_t workers = 0;
        std::size_t busy = 0;
        std::size_t pending = 0;
    };
    std::unordered_map<std::string, Census> census() const;
    std::size_t busy_workers() const;
    bool stopping() const { return stopping_; }

  private:
    enum class State { waiting_for_slot, busy, consistency, held, idle };
    // An event waiting for its worker: parsed, or still the text of its watch line.
    struct Pending {
        json event;                          // null while `line` holds it
        std::string line;                    // the watch line, not parsed yet (if not empty)
        std::optional<std::string> version;  // its resourceVersion
        bool listed = false;                 // from a listing (see push())
    };
    struct Worker {
        State state = State::waiting_for_slot;
        std::optional<Pending> latest;  // the batched backlog: only the newest event matters
        std::optional<std::string> expected_version;
        std::string expected_object;                // JSON text of the expected version (Processed)
        bool expected_is_noop = false;              // the expected version needs no processing
        std::vector<std::string> expected_earlier;  // Processed::earlier_versions, still due
        std::vector<std::string> superseded_echoes;     // expect_superseded_echo(), still due
        std::optional<std::string> processing_version;  // of the event being processed
        std::vector<std::string> seen_versions;         // of the events that came while busy
        bool seen_truncated = false;                    // more came than are kept
        bool seen_listed = false;  // one of them came from a listing (see push())
        // Invalidates the timers of earlier states; unique among all workers, past and present
        // (a worker that exits and comes back must not inherit its predecessor's timers).
        unsigned long generation = 0;
    };

    bool push_pending(const std::string& key, Pending pending);
    // The worker's latest event, parsed if it was not (nullopt if it cannot be).
    std::optional<json> take_latest(const std::string& key, Worker& worker);
    bool has_slot() const;
    // Voids the timers of the worker's earlier states; returns its new generation.
    unsigned long renew_generation(Worker& worker);
    // `worker` is workers_.at(key), which the callers have already found.
    void process(const std::string& key, Worker& worker);
    void on_done(const std::string& key, Worker& worker, Processed processed);
    void on_hold_expired(const std::string& key);
    void go_idle(const std::string& key, Worker& worker);
    // Each kind of timeout has a constant duration, so its deadlines come due in the order they
    // were set: one executor timer at a time serves them all (two timers per handled object
    // showed in profiles). The timer is armed only for a deadline still in force (most
    // consistency deadlines are voided by the echo within milliseconds), and `slack` lets one
    // wake-up serve the deadlines that come due shortly after each other (a burst of handled
    // objects going idle cost one wake-up of the loop each, ~30 µs of CPU per object).
    struct Deadline {
        double at;
        std::string key;
        unsigned long generation;  // the worker's; a newer state cancels the deadline
    };
    using Expire = void (ObjectQueues::*)(const std::string& key);
    struct Deadlines {
        std::deque<Deadline> due;
        double slack = 0;  // seconds a deadline may be served late
        bool armed = false;
    };
    void set_deadline(Deadlines& deadlines, double timeout, const std::string& key,
                      unsigned long generation, Expire expire);
    void arm(Deadlines& deadlines, Expire expire);
    void expire_due(Deadlines& deadlines, Expire expire);
    bool in_force(const Deadline& deadline) const;
    void on_consistency_timeout(const std::string& key);
    // The event of the object as our last patch left it, if nothing newer is known.
    static std::optional<Pending> patched_event_if_freshest(const Worker& worker);
    void forget_noop_echo(const std::string& key, const Worker& worker);
    void forget_superseded_echoes(const std::string& key, Worker& worker);
    // drop_echo() of an event that expect_superseded_echo() announced.
    std::optional<std::string> drop_superseded_echo(const std::string& version,
                                                    std::string_view key_prefix);
    void release(const std::string& key);
    void check_finished();

    Executor& executor_;
    QueueingOptions options_;
    Processor processor_;
    Parser parser_;
    std::unordered_map<std::string, Worker> workers_;
    unsigned long last_generation_ = 0;
    // resourceVersion -> key of the workers whose awaited event needs no processing.
    std::unordered_multimap<std::string, std::string> noop_echoes_;
    std::unordered_multimap<std::string, std::string> superseded_echoes_;  // version -> key
    Deadlines consistency_deadlines_;
    Deadlines idle_deadlines_;
    std::deque<std::string> waiting_;  // keys waiting for a worker slot, in arrival order
    std::size_t running_ = 0;          // workers holding a slot
    bool stopping_ = false;
    std::function<void()> finished_;
    std::function<void(const std::string&)> on_hold_over_;
};

}  // namespace kopf::runtime
