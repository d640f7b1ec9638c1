#include "core/reactor/processing.hpp"

#include <algorithm>

#include "core/actions/logging.hpp"
#include "core/intents/causes.hpp"
#include "core/intents/matching.hpp"
#include "structs/dicts.hpp"
#include "structs/finalizers.hpp"
#include "structs/redaction.hpp"

namespace kopf::reactor {

using actions::Outcome;
using actions::State;
using intents::ChangingCause;
using intents::Reason;

namespace {

// Bodies and patches as debug lines show them: a Secret's values redacted (see redaction.hpp).
json shown_in_log(const Resource& resource, const json& body_or_patch) {
    return structs::is_secret(resource) ? structs::redact_secret_values(body_or_patch)
                                        : body_or_patch;
}
json shown_json_patch(const Resource& resource, const json& ops) {
    return structs::is_secret(resource) ? structs::redact_secret_json_patch(ops) : ops;
}

std::string capitalize(std::string s) {
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
}

// An object's namespace, name and uid never change: one logger serves all its events.
Logger& object_logger(const ProcessingEnv& env, ResourceMemory& memory, const json& body) {
    if (!memory.logger)
        memory.logger = env.make_logger ? env.make_logger(body) : actions::make_object_logger(body);
    return *memory.logger;
}

bool has_event_handlers(const ProcessingEnv& env, const Resource& resource) {
    for (const auto& h : env.registry.watching) {
        if (h.selector.check(resource)) return true;
    }
    return false;
}

// True if a merge patch changes nothing that cause detection compares: seen as a body, it has
// an empty essence (status, metadata other than labels and user annotations, Kopf's own
// annotations and progress records all fall outside it).
bool patch_keeps_essence(const ProcessingEnv& env, const Resource& resource, const json& merge) {
    if (!merge.is_object()) return true;
    const auto& persistence = env.settings.persistence;
    const auto extra_fields = intents::get_extra_fields(env.registry, resource);
    json essence = persistence.diffbase_storage->build(merge, extra_fields);
    essence = persistence.progress_storage->clear(std::move(essence));
    return essence.is_object() && essence.empty();
}

Task<void> process_watching_cause(const ProcessingEnv& env, const Resource& resource,
                                  ResourceMemory& memory, const json& raw_event, const json& body,
                                  Patch& patch, Logger& logger) {
    std::string type = raw_event.contains("type") && raw_event["type"].is_string()
                           ? raw_event["type"].get<std::string>()
                           : "";
    ChangingCause cause{Reason::NOOP, &resource, &body, std::nullopt, std::nullopt, Diff(), false};
    actions::InvocationEnv ienv{env.settings, resource, body,
                                patch,        logger,   *memory.memo,
                                cause,        env.now,  actions::lifecycles::all_at_once,
                                env.client};
    ienv.indices = env.indices;
    ienv.shared_logger = memory.logger;
    ienv.meter = env.meter;
    std::map<std::string, Outcome> outcomes;
    for (const auto& h : env.registry.watching) {
        ChangingHandler as_changing;
        as_changing.id = h.id;
        as_changing.field = h.field;
        as_changing.options = h.options;
        auto state = actions::HandlerState::from_scratch(env.now(), std::nullopt);
        actions::FieldValues field_values;
        Context ctx = actions::make_context(ienv, as_changing, state, nullptr, field_values);
        ctx.reason = "";
        ctx.type = type;
        ctx.event = raw_event;
        if (!intents::match(h, body, ctx)) continue;
        const std::string name = "Handler '" + h.id + "'";
        const auto started =
            env.meter ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
        try {
            json result;
            if (h.fn.async) {
                result = co_await h.fn.async(ctx);
            } else {
                auto call = [&h, &ctx] { return h.fn.sync(ctx); };
                result = co_await run_blocking(std::move(call));
            }
            logger.info("{} succeeded.", name);
            Outcome o;
            o.final = true;
            o.result = std::move(result);
            actions::meter_invocation(env.meter, h.id, o, false, started, false);
            outcomes[h.id] = std::move(o);
        } catch (const std::exception& e) {
            // Event handlers are never retried: whatever the error, it is logged and ignored.
            logger.exception("{} failed with an exception and will ignore it: {}", name, e.what());
            Outcome ignored;
            ignored.final = true;
            actions::meter_invocation(env.meter, h.id, ignored, true, started, false);
        }
    }
    actions::deliver_results(outcomes, patch);
}

Task<std::vector<double>> process_changing_cause(const ProcessingEnv& env, const Resource& resource,
                                                 ResourceMemory& memory, ChangingCause& cause,
                                                 const json& body, Patch& patch, Logger& logger,
                                                 const Context& cause_ctx) {
    std::vector<double> delays;
    bool done = false;
    bool skip = false;
    const auto& storage = *env.settings.persistence.progress_storage;

    if (intents::is_handler_reason(cause.reason)) {
        const std::string title = intents::title(cause.reason);
        const std::string purpose = intents::to_string(cause.reason);
        auto owned = intents::get_resource_handlers(env.registry.changing, resource);
        auto selected = intents::get_changing_handlers(env.registry.changing, cause, cause_ctx);
        std::vector<std::string> owned_ids, selected_ids;
        owned_ids.reserve(owned.size());
        selected_ids.reserve(selected.size());
        for (auto* h : owned) owned_ids.push_back(h->id);
        for (auto* h : selected) selected_ids.push_back(h->id);

        auto now = env.now();
        State state = State::from_storage(body, storage, owned_ids, now)
                          .with_purpose(purpose)
                          .with_handlers(selected_ids, now);

        // Report the causes superseded by this one; re-purpose the handlers that are selected
        // again.
        for (const auto& [extra_purpose, c] : state.extras()) {
            std::string extra_title = extra_purpose;
            for (auto r : {Reason::CREATE, Reason::UPDATE, Reason::DELETE, Reason::RESUME}) {
                if (intents::to_string(r) == extra_purpose) extra_title = intents::title(r);
            }
            logger.info("{} is superseded by {}: {} succeeded; {} failed; {} left to the moment.",
                        capitalize(extra_title), title, c.success, c.failure, c.running);
            state = state.with_purpose(purpose, selected_ids);
        }
        if (!state.extras().empty()) state.purge(body, patch, storage, owned_ids);

        if (logger.enabled_for(LogLevel::DEBUG)) {
            logger.debug("{} is in progress: {}", capitalize(title), shown_in_log(resource, body));
            if (cause.diff && cause.old && cause.new_) {
                logger.debug("{} diff: {}", capitalize(title),
                             structs::is_secret(resource)
                                 ? structs::redact_secret_values(cause.diff)
                                 : cause.diff);
            }
        }

        if (!selected.empty()) {
            actions::InvocationEnv ienv{env.settings, resource, body,    patch,         logger,
                                        *memory.memo, cause,    env.now, env.lifecycle, env.client};
            ienv.indices = env.indices;
            ienv.shared_logger = memory.logger;
            ienv.meter = env.meter;
            auto outcomes = co_await actions::execute_handlers_once(ienv, selected, state);
            state = state.with_outcomes(outcomes, env.now());
            // A finished cycle purges every record it would store: skip the round trip.
            if (!state.done()) state.store(body, patch, storage);
            actions::deliver_results(outcomes, patch);
            if (state.done()) {
                auto c = state.counts();
                logger.info("{} is processed: {} succeeded; {} failed.", capitalize(title),
                            c.success, c.failure);
                state.purge(body, patch, storage, owned_ids);
            }
            done = state.done();
            delays = state.delays(env.now());
        } else {
            skip = true;
        }
    }

    if (done || skip) {
        if (cause.new_ && cause.old != cause.new_) {
            env.settings.persistence.diffbase_storage->store(body, patch, *cause.new_);
        }
        memory.fully_handled_once = true;
    }
    if (cause.reason == Reason::GONE) logger.debug("Deleted, really deleted, and we are notified.");
    if (cause.reason == Reason::FREE)
        logger.debug("Deletion, but we are done with it, and we do not care.");
    if (cause.reason == Reason::NOOP)
        logger.debug("Something has changed, but we are not interested (the essence is the same).");
    co_return delays;
}

}  // namespace

ResourceMemory ResourceMemory::first(const json& raw_event, const Memo& memobase) {
    ResourceMemory memory;
    memory.memo = memobase.copy();
    memory.noticed_by_listing = !raw_event.contains("type") || raw_event["type"].is_null();
    return memory;
}

std::optional<double> ProcessingOutcome::delay() const {
    if (delays.empty()) return std::nullopt;
    return *std::min_element(delays.begin(), delays.end());
}

namespace {

// Whether a merge patch's status goes to /status, apart from the rest.
bool status_goes_apart(const json& merge, const Resource& resource) {
    return merge.is_object() && resource.has_status_subresource() && merge.contains("status");
}

}  // namespace

json body_merge_patch(const json& merge, const Resource& resource) {
    if (!merge.is_object()) return json::object();
    if (!status_goes_apart(merge, resource)) return merge;
    json stripped = json::object();  // the status is not copied only to be erased
    for (auto it = merge.begin(); it != merge.end(); ++it)
        if (it.key() != "status") stripped[it.key()] = *it;
    return stripped;
}

json status_merge_patch(const json& merge, const Resource& resource) {
    return status_goes_apart(merge, resource) ? json{{"status", merge["status"]}} : json();
}

json ProcessingOutcome::body_merge_patch(const Resource& resource) const {
    return reactor::body_merge_patch(patch.merge, resource);
}

json ProcessingOutcome::status_merge_patch(const Resource& resource) const {
    return reactor::status_merge_patch(patch.merge, resource);
}

Task<ProcessingOutcome> process_resource_event(const ProcessingEnv& env, const Resource& resource,
                                               ResourceMemory& memory, json raw_event) {
    if (!raw_event.is_object() || !raw_event.contains("object") || !raw_event["object"].is_object())
        throw std::invalid_argument(
            "A raw watch event must be an object with an \"object\" body: " +
            raw_event.dump().substr(0, 200));
    if (!memory.memo) memory.memo = std::make_shared<Memo>();
    memory.settled = false;  // until this event proves to need nothing (not if it throws)

    // Event handlers see every event, before anything else (and the raw event whole).
    const bool has_watching = has_event_handlers(env, resource);

    ProcessingOutcome out;
    out.body = has_watching ? raw_event["object"] : std::move(raw_event["object"]);
    const json& body = out.body;
    const std::string raw_type = raw_event.contains("type") && raw_event["type"].is_string()
                                     ? raw_event["type"].get<std::string>()
                                     : "";
    out.gone = raw_type == "DELETED";

    Patch& patch = out.patch;
    patch.fns = std::move(memory.remaining_fns);
    memory.remaining_fns.clear();
    // Leftover transformations (a guarded JSON patch that conflicted) that this body already
    // shows leave nothing to do: their first attempt was applied although its answer was lost
    // (e.g. to a server that stopped after writing it). Kept, they would hold the handlers back
    // until yet another event, which may never come.
    if (!patch.fns.empty() && patch.build_json_patch(body).empty()) patch.fns.clear();
    const bool patch_initially_empty = patch.empty();

    Logger& logger = object_logger(env, memory, body);
    const auto& settings = env.settings;
    const auto& finalizer = settings.persistence.finalizer;

    bool has_changing = false;
    for (const auto& h : env.registry.changing)
        has_changing |= (!h.has_selector || h.selector.check(resource));

    // Daemons and timers are spawned before the changing handlers and stopped after them.
    const bool has_spawning = env.daemons && env.daemons->has_handlers(resource);

    // The essence and its diff serve the changing handlers and the idling of timers only: an
    // object with daemons or plain timers alone skips them on every event. The diff base is read
    // before any handler runs: one that is not JSON fails the cycle before the first (as Kopf).
    const bool needs_essence =
        has_changing || (has_spawning && env.daemons->has_idle_timers(resource));
    const auto& diffbase = *settings.persistence.diffbase_storage;
    std::optional<json> old;
    if (needs_essence) old = diffbase.fetch(body);

    if (has_watching)
        co_await process_watching_cause(env, resource, memory, raw_event, body, patch, logger);

    // Detect the changing cause from the diff base (cleared of our own progress traces).
    std::optional<ChangingCause> cause;
    bool essence_changed = false;  // resets the timers' idling, not every event does
    auto extra_fields = intents::get_extra_fields(env.registry, resource);
    const auto& progress = *settings.persistence.progress_storage;
    if (needs_essence) {
        std::optional<json> new_ = diffbase.build(body, extra_fields);
        if (old) old = progress.clear(std::move(*old));
        if (new_) new_ = progress.clear(std::move(*new_));
        Diff d = diff(old ? *old : json(), new_ ? *new_ : json());
        essence_changed = !d.empty();
        if (has_changing) {
            bool initial = memory.noticed_by_listing && !memory.fully_handled_once;
            Reason reason = intents::detect_reason(raw_type, body, finalizer, old, d, initial);
            cause = ChangingCause{reason,          &resource,    &body,  std::move(old),
                                  std::move(new_), std::move(d), initial};
        }
    }

    // A context of the cause, for filters (labels callbacks, when=...).
    std::optional<Context> cause_ctx;
    actions::HandlerState blank = actions::HandlerState::from_scratch(env.now(), std::nullopt);
    ChangingCause noop_cause{Reason::NOOP, &resource, &body, std::nullopt,
                             std::nullopt, Diff(),    false};
    // Without callback filters, nothing reads the context: the essences are not copied into it.
    const bool context_is_read = cause && intents::filters_read_context(env.registry.changing);
    actions::InvocationEnv fenv{settings,
                                resource,
                                body,
                                patch,
                                logger,
                                *memory.memo,
                                context_is_read ? *cause : noop_cause,
                                env.now,
                                env.lifecycle,
                                env.client};
    fenv.indices = env.indices;
    fenv.shared_logger = memory.logger;
    ChangingHandler blank_handler;
    actions::FieldValues no_field;
    cause_ctx.emplace(actions::make_context(fenv, blank_handler, blank, nullptr, no_field));

    const bool deletion_is_ongoing = finalizers::is_deletion_ongoing(body);
    std::vector<double> spawning_delays;
    if (has_spawning) {
        if (!memory.daemons) {
            memory.daemons = env.daemons->remember(resource, memory.memo, memory.logger);
            memory.daemons->poke = memory.poke;
        }
        memory.daemons->set_body(body);
        if (essence_changed) env.daemons->reset_idle(*memory.daemons);
        spawning_delays = co_await env.daemons->process(
            memory.daemons, body, deletion_is_ongoing || out.gone, *cause_ctx);
    }

    if (cause && !intents::prematch_any(env.registry.changing, *cause, *cause_ctx)) cause.reset();

    const bool deletion_is_blocked = finalizers::is_deletion_blocked(body, finalizer);
    const bool deletion_must_be_blocked =
        (has_spawning && env.daemons->requires_finalizer(*memory.daemons, body, *cause_ctx)) ||
        (cause && intents::requires_finalizer(env.registry.changing, *cause, *cause_ctx));

    if (deletion_must_be_blocked && !deletion_is_blocked && !deletion_is_ongoing) {
        logger.debug("Adding the finalizer, thus preventing the actual deletion.");
        patch.transform([finalizer](json& b) { finalizers::block_deletion(b, finalizer); });
        cause.reset();
    }
    if (!deletion_must_be_blocked && deletion_is_blocked) {
        logger.debug("Removing the finalizer, as there are no handlers requiring it.");
        patch.transform([finalizer](json& b) { finalizers::allow_deletion(b, finalizer); });
        cause.reset();
    }

    // Leftover transformations mean an inconsistent state: apply them first, handle later.
    if (cause && !patch_initially_empty && cause->reason != Reason::GONE) {
        out.matched = false;
        out.delays = std::move(spawning_delays);
        if (!patch.empty() && !out.gone) progress.touch(body, patch, std::nullopt);
        co_return out;
    }

    std::vector<double> delays;
    if (cause) {
        out.matched = true;
        delays = co_await process_changing_cause(env, resource, memory, *cause, body, patch, logger,
                                                 *cause_ctx);
    }

    delays.insert(delays.end(), spawning_delays.begin(), spawning_delays.end());
    if (!out.gone && deletion_is_ongoing && deletion_is_blocked && delays.empty()) {
        logger.debug("Removing the finalizer, thus allowing the actual deletion.");
        patch.transform([finalizer](json& b) { finalizers::allow_deletion(b, finalizer); });
    }

    out.delays = std::move(delays);
    if (!out.gone && !patch.empty()) progress.touch(body, patch, std::nullopt);
    memory.settled = !out.gone && !deletion_is_ongoing && patch.empty() && out.delays.empty() &&
                     (!cause || cause->reason == Reason::NOOP);
    co_return out;
}

namespace {

// A guarded JSON patch (the transformations) is sent this many times at most per cycle, the
// object read again after each conflict; then it waits for the next event.
constexpr int kGuardedPatchAttempts = 3;

// Each patch's answer is the freshest state of the object we know.
void remember_patched(ApplyResult& result, PatchResult& patched) {
    if (!patched.resource_version) return;
    if (result.resource_version) result.earlier_versions.push_back(*result.resource_version);
    result.resource_version = std::move(patched.resource_version);
    result.patched_object = std::move(patched.object);
}

}  // namespace

Task<ApplyResult> apply_patch(PatchApplier& applier, const ProcessingEnv& env,
                              const Resource& resource, Logger& logger, const json& body,
                              const Patch& patch, std::vector<Patch::Fn>& remaining_fns,
                              std::function<void(const std::string&)> on_superseded_write) {
    ApplyResult result;
    // Without a status subresource, or without status in it, the merge patch goes as it is,
    // uncopied; else without its status, which goes to /status.
    const json& merge = patch.merge;
    json status_patch = status_merge_patch(merge, resource);
    json stripped_patch;
    const json* body_patch = &merge;
    if (!status_patch.is_null() || !merge.is_object()) {
        stripped_patch = body_merge_patch(merge, resource);
        body_patch = &stripped_patch;
    }
    if (!body_patch->empty()) {
        if (logger.enabled_for(LogLevel::DEBUG))
            logger.debug("Patching with: {}", shown_in_log(resource, *body_patch));
        auto r = co_await applier.merge_patch(resource, body, *body_patch, false);
        if (!r.found) {
            result.gone = true;
            co_return result;
        }
        // (Event handlers see every event, our own writes' included.)
        if (on_superseded_write && r.resource_version && !status_patch.is_null() &&
            !has_event_handlers(env, resource))
            on_superseded_write(*r.resource_version);
        remember_patched(result, r);
    }
    if (!status_patch.is_null()) {
        if (logger.enabled_for(LogLevel::DEBUG))
            logger.debug("Patching the status with: {}", shown_in_log(resource, status_patch));
        auto r = co_await applier.merge_patch(resource, body, status_patch, true);
        if (!r.found) {
            result.gone = true;
            co_return result;
        }
        remember_patched(result, r);
    }
    if (!patch.fns.empty()) {
        // Diff the transformations against the freshest body we know (after the merge patches).
        json fresh = body;
        if (result.resource_version) {
            fresh.merge_patch(merge);
            fresh["metadata"]["resourceVersion"] = *result.resource_version;
        }
        // The guard (a test of the resourceVersion) fails if anyone wrote since: e.g. a timer
        // patching the status every second, when each event an operator under load processes
        // is older than that. The next event would be as old, and the finalizer never added:
        // the object is read again and the patch retried at once, a few times.
        for (int attempt = 1;; ++attempt) {
            json ops = patch.build_json_patch(fresh);
            if (ops.empty()) break;
            if (logger.enabled_for(LogLevel::DEBUG))
                logger.debug("Patching with: {}", shown_json_patch(resource, ops));
            auto r = co_await applier.json_patch(resource, fresh, ops, false);
            if (!r.conflict) {
                if (r.found) remember_patched(result, r);
                break;
            }
            if (attempt >= kGuardedPatchAttempts) {
                remaining_fns = patch.fns;  // retried on the next event
                break;
            }
            logger.debug("The object has changed since; reading it again for the guarded patch.");
            auto current = co_await applier.read(resource, fresh);
            if (!current) break;  // gone: nothing to transform
            fresh = std::move(*current);
        }
    }
    co_return result;
}

Task<ApplyResult> apply_outcome(PatchApplier& applier, const ProcessingEnv& env,
                                const Resource& resource, ResourceMemory& memory,
                                ProcessingOutcome& outcome,
                                std::function<void(const std::string&)> on_superseded_write) {
    if (outcome.gone) co_return ApplyResult();
    Logger& logger = object_logger(env, memory, outcome.body);
    // Purged progress leaves empty stanzas behind ({"metadata":{"annotations":{}}}): they
    // change nothing, so they cost no request (a resume of a handled object writes nothing).
    dicts::remove_empty_stanzas(outcome.patch.merge);
    const bool patched = !outcome.patch.empty();
    ApplyResult result;
    if (patched) {
        // Named first: g++ 12 destroys argument temporaries of a co_await twice.
        auto applying = apply_patch(applier, env, resource, logger, outcome.body, outcome.patch,
                                    memory.remaining_fns, std::move(on_superseded_write));
        result = co_await std::move(applying);
        if (result.gone) co_return result;
    }

    auto delay = outcome.delay();
    result.own_echo_is_noop = result.resource_version && !delay && outcome.patch.fns.empty() &&
                              memory.remaining_fns.empty() &&
                              !logger.enabled_for(LogLevel::DEBUG) &&
                              !has_event_handlers(env, resource) &&
                              !(env.daemons && env.daemons->has_handlers(resource)) &&
                              patch_keeps_essence(env, resource, outcome.patch.merge);
    if (delay && patched) {
        logger.debug("Sleeping was skipped because of the patch, {} seconds left.", *delay);
    } else if (delay) {
        double limit = std::min(*delay, WAITING_KEEPALIVE_INTERVAL);
        logger.debug("Sleeping for {} seconds for the delayed handlers.", limit);
        result.wakeup_after = limit;
    } else if (!patched) {
        result.applied = true;
        if (outcome.matched) logger.debug("Handling cycle is finished, waiting for new changes.");
    }
    co_return result;
}

namespace {

// Deeper than any object of the API: the rest is freed by the destructor's own loop.
constexpr int RELEASE_DEPTH = 32;

void release_children(json& node, int depth) noexcept {
    if (auto* object = node.get_ptr<json::object_t*>()) {
        if (depth < RELEASE_DEPTH) {
            for (auto& [key, value] : *object)
                if (value.is_structured()) release_children(value, depth + 1);
        }
        object->clear();
    } else if (auto* array = node.get_ptr<json::array_t*>()) {
        if (depth < RELEASE_DEPTH) {
            for (auto& value : *array)
                if (value.is_structured()) release_children(value, depth + 1);
        }
        array->clear();
    }
}

}  // namespace

void release_body(json& body) noexcept {
    release_children(body, 0);
    body = nullptr;
}

json touch_patch(const OperatorSettings& settings, const json& body, actions::TimePoint now) {
    Patch patch;
    settings.persistence.progress_storage->touch(body, patch, actions::format_iso8601(now));
    return patch.merge;
}

}  // namespace kopf::reactor
