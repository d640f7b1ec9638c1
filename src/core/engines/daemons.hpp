// src/core/engines: daemons and timers (Kopf's engines/daemons.py). Each matching object gets one
// runner per daemon or timer handler: spawned when the object is first seen, stopped when it is
// marked for deletion, stops matching the filters, or the operator exits.
//
// How the reactor uses it, per event of an object with daemons or timers:
//
//     memory.set_body(body);                       // daemons see the latest body
//     if (essence_changed) memory.reset_idle();    // timers' idle countdown
//     auto delays = co_await engine.process(memory_ptr, body, deletion_ongoing, filter_ctx);
//     bool needs_finalizer = engine.requires_finalizer(memory, body, filter_ctx);
//     // delays: re-check the stopping daemons this much later (a touch-dummy), as Kopf does.
//
// Stopping follows Kopf's phases: the flag is set at once; after `cancellation_backoff` a
// coroutine daemon is cancelled (kopf::CancelledError at its waits); after
// `cancellation_timeout` more it is abandoned (the finalizer is released); without a timeout
// the engine keeps polling (settings.background.cancellation_polling). A daemon that exits while
// being stopped pokes its object, so the finalizer goes without waiting for the next poll.
#pragma once

#include <functional>
#include <kopf/api.hpp>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <kopf/memo.hpp>
#include <kopf/patch.hpp>
#include <kopf/registry.hpp>
#include <kopf/settings.hpp>
#include <kopf/task.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "clients/json_in_place.hpp"
#include "core/actions/invocation.hpp"
#include "core/actions/metering.hpp"
#include "core/actions/progression.hpp"

namespace kopf::engines {

class Daemon;  // one running daemon or timer
struct EngineCore;

/// How the engine writes a daemon's or timer's patch (the reactor's patching: the merge patch,
/// the status subresource, transformations). `body` is the object's address (namespace, name),
/// and with transformations its latest known body; it stays valid until the task ends.
using PatchWriter = std::function<Task<void>(const Resource& resource, const json& body,
                                             Patch patch, Logger& logger)>;

struct DaemonsEnv {
    Executor& loop;
    /// The operator's final settings, shared with daemons that may outlive the operator.
    std::shared_ptr<const OperatorSettings> settings;
    Client client;  ///< for ctx.api()
    PatchWriter write;
    /// The wall clock of the handlers' progress (retries, timeouts); tests substitute it.
    std::function<actions::TimePoint()> now = [] { return actions::Clock::now(); };
    Indices indices{};  ///< for ctx.index()
    /// The operator's metrics of invocations (none when off); shared: daemons may outlive it.
    std::shared_ptr<actions::HandlerMeter> meter{};
};

/// What the engine remembers of one object (Kopf's DaemonsMemory), shared with the object's
/// daemons: they may outlive the rest of the object's memory.
class DaemonsMemory {
  public:
    DaemonsMemory(std::shared_ptr<const Resource> resource, std::shared_ptr<Memo> memo,
                  std::shared_ptr<Logger> logger);

    /// The latest body (on the loop, every event): coroutine daemons and timers see it at once
    /// (their views are refreshed in place), daemons on threads at their next check or run.
    /// Without running daemons nothing is kept (an object whose daemons are all filtered out
    /// holds no copy): the views are made from the event that spawns the first one.
    void set_body(const json& body);
    /// The latest body for daemons on threads, and its generation (increases with every
    /// set_body); any thread.
    std::pair<std::shared_ptr<const json>, unsigned long> body();
    /// The views that coroutines bind to: the latest body, its nodes kept in place. On the loop.
    const json& live() const { return live_; }
    /// body_views(live()), found again whenever it changes (on the loop, while it is in the
    /// caches), for the contexts of coroutines and timers.
    const actions::BodyViews& live_views() const { return live_views_; }

    const std::shared_ptr<const Resource> resource;
    const std::shared_ptr<Memo> memo;
    const std::shared_ptr<Logger> logger;
    /// Provokes a new processing of the object (set by the runtime); empty in tests.
    std::function<void()> poke;

    // On the loop only:
    double idle_reset_time = 0;             ///< on the loop's clock: the last essential change
    std::set<std::string> forever_stopped;  ///< exited on their own: not spawned again
    std::map<std::string, std::shared_ptr<Daemon>> running;  ///< by handler id
    int threaded = 0;  ///< running daemons whose code runs on threads (they need snapshots)

  private:
    friend class DaemonsEngine;
    void refresh(const json& body);
    void refreshed();    // after the views changed: daemons on threads get a new snapshot
    bool stale_ = true;  // the views miss events (no daemon ran): refreshed before a spawn
    json live_ = json::object();
    actions::BodyViews live_views_ = actions::body_views(live_);
    // The object's text as last parsed into the views (adopt_line), so that the next echo's
    // unchanged values are passed over; empty once the views are changed otherwise.
    clients::RememberedText live_text_;
    mutable std::mutex mutex_;
    std::shared_ptr<const json> body_;
    unsigned long generation_ = 0;
};

class DaemonsEngine {
  public:
    DaemonsEngine(DaemonsEnv env, const std::vector<SpawningHandler>& handlers);
    /// Closes the engine: abandoned daemons that finish later touch nothing of the operator.
    ~DaemonsEngine();
    DaemonsEngine(const DaemonsEngine&) = delete;
    DaemonsEngine& operator=(const DaemonsEngine&) = delete;

    bool has_handlers(const Resource& resource) const;
    /// Whether a timer of the resource idles: only then do essential changes matter here.
    bool has_idle_timers(const Resource& resource) const;
    /// The memory of an object first processed now (idle countdown starting now).
    std::shared_ptr<DaemonsMemory> remember(const Resource& resource, std::shared_ptr<Memo> memo,
                                            std::shared_ptr<Logger> logger) const;
    /// An essential change: restarts the timers' idle countdowns.
    void reset_idle(DaemonsMemory& memory) const;

    /// Kopf's process_spawning_cause: stop all daemons if the object is being deleted, else
    /// spawn the matching ones not running and stop the mismatching ones. Returns the delays
    /// after which the stopping daemons must be checked again.
    Task<std::vector<double>> process(std::shared_ptr<DaemonsMemory> memory, const json& body,
                                      bool deletion_ongoing, const Context& ctx);
    /// A MODIFIED event's watch line that may need no processing (on the loop): if every
    /// handler of the kind runs, none is stopping and their filters read only labels and
    /// annotations, the line is parsed straight into the views (in place: unchanged nodes stay
    /// where they are). True if the event changed nothing they decide on: neither the labels,
    /// annotations or finalizers, nor the essence (all but status and metadata, as idle timers
    /// see it), and the object is not being deleted. False otherwise — the views may have taken
    /// the event already — and the event is to be processed as any (its processing refreshes
    /// the views again, finding them equal); false too for a malformed line, views untouched.
    bool adopt_line(DaemonsMemory& memory, std::string_view line) const;
    /// Whether a matching daemon or timer (not stopped forever) needs the finalizer.
    bool requires_finalizer(const DaemonsMemory& memory, const json& body,
                            const Context& ctx) const;

    /// At the operator's exit: stop every daemon (Kopf's stop_daemon: graceful, forced,
    /// abandoned; daemons with no cancellation timeouts get 5 seconds), then `finished`.
    /// No daemons are spawned after this.
    void stop_all(std::function<void()> finished);
    /// The operator pauses (peering): every daemon and timer is stopped as at the exit (with
    /// the reason OPERATOR_PAUSING) and none is spawned until it resumes; then the objects'
    /// next processing (the watchers' fresh listing) spawns them again.
    void pause(bool paused);
    /// Daemons and timers running now.
    std::size_t running() const;
    /// Of the running ones, the timers.
    std::size_t running_timers() const;
    /// Daemons abandoned so far (still running on their own, maybe on threads).
    std::size_t abandoned() const;

  private:
    std::shared_ptr<EngineCore> core_;
};

/// Threads of synchronous daemons still running in this process (of any operator), e.g. those
/// abandoned at an operator's exit: the `kopf` command ends without static destructors then.
std::size_t daemon_threads_running();

}  // namespace kopf::engines
