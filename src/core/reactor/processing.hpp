// src/core/reactor: the processing of one watch event of one object — the entry point that the
// per-object queues (core/reactor/queueing, fed by orchestration's watchers) call. Mirrors Kopf's
// reactor/processing.py.
//
// How the runtime uses it, per object (one worker per object, events batched to the latest):
//
//     // The runtime keeps each object's memory with the rest of its per-object state.
//     if (!entry.memory) entry.memory = kopf::reactor::ResourceMemory::first(raw_event, memo);
//     kopf::reactor::ProcessingOutcome out =
//         co_await kopf::reactor::process_resource_event(env, resource, *entry.memory, raw_event);
//     if (out.gone) forget(entry);
//     auto applied = co_await kopf::reactor::apply_outcome(applier, env, resource, memory, out);
//     // applied.resource_version: wait for it in the watch stream (consistency) before the next
//     // processing of this object; applied.wakeup_after: if no event comes within that many
//     // seconds, call kopf::reactor::touch(...) (Kopf's touch-dummy) to provoke a new event.
//
// The API writes go through `PatchApplier`, which the runtime implements with the API client
// (core/reactor/application).
#pragma once

#include <functional>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <kopf/memo.hpp>
#include <kopf/patch.hpp>
#include <kopf/registry.hpp>
#include <kopf/resource.hpp>
#include <kopf/settings.hpp>
#include <kopf/task.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/actions/execution.hpp"
#include "core/engines/daemons.hpp"

namespace kopf::reactor {

/// Kopf's WAITING_KEEPALIVE_INTERVAL: the longest sleep before a touch-dummy patch.
inline constexpr double WAITING_KEEPALIVE_INTERVAL = 10 * 60;

/// What the operator remembers about one object between events (never persisted).
struct ResourceMemory {
    std::shared_ptr<Memo> memo;
    bool noticed_by_listing = false;       ///< first seen in the initial listing (resume cause)
    bool fully_handled_once = false;       ///< all handlers succeeded once (no more resuming)
    std::vector<Patch::Fn> remaining_fns;  ///< transformations not applied yet (HTTP 422)
    /// The last event needed nothing: no cause but NOOP, no patch, no delay, no deletion. An
    /// event that changes none of what that depended on needs nothing either (and may go to the
    /// daemons' views unprocessed: Orchestration::take_unparsed).
    bool settled = false;
    std::shared_ptr<Logger> logger;  ///< the object's logger, made on its first event
    std::shared_ptr<engines::DaemonsMemory> daemons;  ///< with daemons or timers only
    /// Provokes a new processing of the object (set by the runtime; daemons that exit while
    /// stopping use it to release the object at once).
    std::function<void()> poke;

    /// The memory of an object first processed with `raw_event` (a shallow copy of `memobase`).
    /// A raw event with a null/absent "type" marks the object as noticed by listing.
    static ResourceMemory first(const json& raw_event, const Memo& memobase);
};

/// The inputs that stay the same across events.
struct ProcessingEnv {
    const Registry& registry;
    const OperatorSettings& settings;
    /// Default: Kopf's asap.
    actions::Lifecycle lifecycle = actions::lifecycles::asap;
    /// The wall clock (UTC); tests substitute it.
    std::function<actions::TimePoint()> now = [] { return actions::Clock::now(); };
    /// Object loggers ("[namespace/name] message"); default: spdlog-based.
    std::function<std::shared_ptr<Logger>(const json& body)> make_logger{};
    /// The operator's API client for the handlers' ctx.api(); none in tests without a cluster.
    const Client* client = nullptr;
    /// Daemons and timers; none in tests that have none.
    engines::DaemonsEngine* daemons = nullptr;
    /// The operator's in-memory indices, for ctx.index().
    Indices indices{};
    /// The operator's metrics of handler invocations; none when metrics are off.
    actions::HandlerMeter* meter = nullptr;
};

/// What one processing cycle decided. Nothing is written to the API yet.
struct ProcessingOutcome {
    json body;    ///< the processed body
    Patch patch;  ///< the merge-patch part and transformations (finalizers, user fns)
    std::vector<double> delays;  ///< seconds until delayed handlers are due
    bool gone = false;           ///< DELETED event: forget the memory
    bool matched = false;        ///< changing handlers were considered for this object

    std::optional<double> delay() const;
    /// The merge patch without `status` if the resource has a status subresource, else all.
    json body_merge_patch(const Resource& resource) const;
    /// `{"status": ...}` to send to /status (status subresource only), or null.
    json status_merge_patch(const Resource& resource) const;
    // (Both as the free functions below, which the patch writers use.)
    /// RFC 6902 ops of the transformations against `body`, guarded by a resourceVersion test.
    json json_patch() const { return patch.build_json_patch(body); }
};

/// Run everything this event calls for: event handlers, finalizer management, cause detection,
/// changing handlers with progress and results. Returns the patch and the delays.
/// The raw event is taken by value: its object becomes the outcome's body without a copy.
Task<ProcessingOutcome> process_resource_event(const ProcessingEnv& env, const Resource& resource,
                                               ResourceMemory& memory, json raw_event);

/// The result of one API write.
struct PatchResult {
    bool found = true;      ///< false on HTTP 404 (the object is gone; ignored)
    bool conflict = false;  ///< true on HTTP 422/409 of a guarded JSON patch
    std::optional<std::string> resource_version;  ///< of the patched object
    std::string object;  ///< the patched object as the answer showed it (JSON text)
};

/// The API writes of the processing, implemented by the runtime with the API client.
class PatchApplier {
  public:
    virtual ~PatchApplier() = default;
    /// PATCH (application/merge-patch+json) the object or its /status.
    virtual Task<PatchResult> merge_patch(const Resource& resource, const json& body,
                                          const json& patch, bool status) = 0;
    /// PATCH (application/json-patch+json) the object or its /status.
    virtual Task<PatchResult> json_patch(const Resource& resource, const json& body,
                                         const json& ops, bool status) = 0;
    /// GET the object as it is now (after a guarded JSON patch conflicted); nullopt if it is
    /// gone (HTTP 404).
    virtual Task<std::optional<json>> read(const Resource& resource, const json& body) = 0;
};

struct ApplyResult {
    bool applied = false;  ///< nothing to patch and nothing delayed: the cycle is finished
    std::optional<std::string> resource_version;  ///< of our last successful patch
    /// The versions our earlier patches of this cycle made (the body's, before the status'):
    /// their watch events are our own writes, superseded by the last one's.
    std::vector<std::string> earlier_versions;
    std::string patched_object;  ///< the object as that patch's answer showed it (JSON text)
    std::optional<double> wakeup_after;  ///< sleep this long, then touch() (if no events)
    /// Processing the watch event of our own last patch would change nothing: the patch touched
    /// no field of the essence (only status and Kopf's annotations), every handler is done, no
    /// transformation is pending and no event handler watches the resource. The runtime may
    /// then let that event pass unprocessed. (Off with debug logging, which would show Kopf's
    /// line about the unchanged essence.)
    bool own_echo_is_noop = false;
    bool gone = false;  ///< a write found no object (HTTP 404): the rest was not attempted
};

/// A merge patch's part for the object itself: without `status` if the resource has a status
/// subresource (an object, even if `merge` is not), else all of it.
json body_merge_patch(const json& merge, const Resource& resource);
/// A merge patch's part for /status: `{"status": ...}` (status subresource only), or null.
json status_merge_patch(const json& merge, const Resource& resource);

/// The writes of one patch in Kopf's order: the body merge patch, the status merge patch (to
/// /status with a status subresource), the JSON patch of the transformations. `body` is the
/// object the patch is for: its address, and for transformations the whole body to diff
/// against; it must stay valid until the task ends. A conflict of the guarded JSON patch puts
/// the transformations into `remaining_fns`. Only the writes' fields of the result are set.
Task<ApplyResult> apply_patch(PatchApplier& applier, const ProcessingEnv& env,
                              const Resource& resource, Logger& logger, const json& body,
                              const Patch& patch, std::vector<Patch::Fn>& remaining_fns,
                              std::function<void(const std::string&)> on_superseded_write = {});

/// Apply the outcome in Kopf's order: body merge patch, status merge patch, JSON patch.
/// A conflict of the guarded JSON patch keeps its transformations in `memory` for the next event.
/// `on_superseded_write` is told the version of the body patch when the status patch follows
/// it, before that is sent (so that the runtime can drop the body patch's echo unparsed).
Task<ApplyResult> apply_outcome(PatchApplier& applier, const ProcessingEnv& env,
                                const Resource& resource, ResourceMemory& memory,
                                ProcessingOutcome& outcome,
                                std::function<void(const std::string&)> on_superseded_write = {});

/// Frees the nodes of a body (leaving it null) with less work than its destructor: nlohmann's
/// destructor moves every node onto a stack of its own first (so that no depth overflows the
/// call stack); this frees the first levels directly, each container after its children, and
/// leaves deeper levels to the destructor. For bodies freed once per event.
void release_body(json& body) noexcept;

/// The touch-dummy patch that provokes a watch event after a delay (Kopf's touch()).
json touch_patch(const OperatorSettings& settings, const json& body, actions::TimePoint now);

}  // namespace kopf::reactor
