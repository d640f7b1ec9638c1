#include "core/actions/execution.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <kopf/on.hpp>

#include "core/intents/matching.hpp"
#include "loop/cancellable_executor.hpp"
#include "structs/dicts.hpp"

namespace kopf::actions {

namespace {

std::string describe(const char* kind, const std::string& id) {
    return std::string(kind) + " '" + id + "'";
}

std::string format_seconds(double s) {
    // As Python prints the user's numbers: 60 -> "60", 1.5 -> "1.5".
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

// As Python prints a timedelta: "0:00:30" or "0:00:30.500000".
std::string format_timedelta(double seconds) {
    const long long total_us = std::llround(seconds * 1e6);
    long long us = total_us % 1000000;
    long long secs = total_us / 1000000;
    char buf[64];
    if (us) {
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld.%06lld", secs / 3600, secs / 60 % 60,
                      secs % 60, us);
    } else {
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", secs / 3600, secs / 60 % 60,
                      secs % 60);
    }
    return buf;
}

}  // namespace

// Runs the sub-handlers collected in `scope` as one nested cycle; throws HandlerChildrenRetry
// while they are not all done (Kopf's subhandling.execute).
Task<void> execute_subhandlers(InvocationEnv& env, HandlerScope& scope,
                               std::set<std::string>& subrefs) {
    if (scope.subhandlers.empty()) co_return;
    const auto& storage = *env.settings.persistence.progress_storage;
    std::vector<std::string> ids;
    for (const auto& h : scope.subhandlers) {
        if (std::find(ids.begin(), ids.end(), h.id) == ids.end()) ids.push_back(h.id);
    }
    // Sub-handlers have filters too (labels, when, field values...), as in Kopf.
    ChangingHandler blank;
    auto now = env.now();
    FieldValues no_field;
    Context filter_ctx =
        make_context(env, blank, HandlerState::from_scratch(now, std::nullopt), nullptr, no_field);
    auto selected = intents::get_changing_handlers(scope.subhandlers, env.cause, filter_ctx);
    std::vector<std::string> selected_ids;
    for (auto* h : selected) selected_ids.push_back(h->id);
    State state = State::from_storage(env.body, storage, ids, now)
                      .with_purpose(intents::to_string(env.cause.reason))
                      .with_handlers(selected_ids, now);
    auto outcomes = co_await execute_handlers_once(env, selected, state);
    state = state.with_outcomes(outcomes, env.now());
    state.store(env.body, env.patch, storage);
    deliver_results(outcomes, env.patch);
    for (const auto& [id, s] : state.states()) subrefs.insert(id);
    for (const auto& [id, o] : outcomes) subrefs.insert(o.subrefs.begin(), o.subrefs.end());
    if (!state.done()) throw HandlerChildrenRetry(state.delay(env.now()).value_or(0.0));
}

namespace {

// What a failed attempt leads to, by the kind of its error, with Kopf's log line. A plain
// function: the many locals of these cases would otherwise sit in every suspended coroutine
// frame (a daemon's lives as long as the daemon).
}  // namespace

Outcome outcome_of_failure(const OperatorSettings& settings, Logger& logger,
                           const HandlerOptions& options, const HandlerState& state,
                           const std::string& name, double runtime, std::exception_ptr error,
                           std::set<std::string> subrefs) {
    const auto errors_mode = options.errors.value_or(ErrorsMode::TEMPORARY);
    const double backoff = options.backoff.value_or(settings.execution.default_backoff);
    const auto& timeout = options.timeout;
    const auto& retries = options.retries;

    auto final_failure = [&](const std::string& msg) {
        Outcome o;
        o.final = true;
        o.failed = true;
        o.message = msg;
        o.subrefs = subrefs;
        return o;
    };
    auto retry_after = [&](std::optional<double> delay, std::string message) {
        Outcome o;
        o.final = false;
        o.failed = true;
        o.delay = delay;
        o.message = std::move(message);
        o.subrefs = subrefs;
        return o;
    };

    try {
        std::rethrow_exception(error);
    } catch (const CancelledError&) {
        // The expected end of a daemon cancelled by force: its runner stops it for good.
        logger.warning("{} is cancelled. Will escalate.", name);
        throw;
    } catch (const HandlerChildrenRetry& e) {
        logger.debug("{} has unfinished sub-handlers. Will retry soon.", name);
        return retry_after(e.delay, "None");  // Kopf stores str() of a message-less retry
    } catch (const HandlerTimeoutError& e) {
        logger.error("{}", e.what());
        return final_failure(e.what());
    } catch (const HandlerRetriesError& e) {
        logger.error("{}", e.what());
        return final_failure(e.what());
    } catch (const TemporaryError& e) {
        double lookahead = runtime + e.delay;
        if (timeout && lookahead >= *timeout) {
            auto msg = name + " failed temporarily but will time out after " +
                       format_seconds(*timeout) + " seconds: " + e.what();
            logger.error("{}", msg);
            return final_failure(msg);
        }
        if (retries && state.retries + 1 >= *retries) {
            auto msg = name + " failed temporarily but will exceed " + std::to_string(*retries) +
                       " retries: " + e.what();
            logger.error("{}", msg);
            return final_failure(msg);
        }
        logger.error("{} failed temporarily: {}", name, e.what());
        return retry_after(e.delay, e.what());
    } catch (const PermanentError& e) {
        logger.error("{} failed permanently: {}", name, e.what());
        return final_failure(e.what());
    } catch (const std::exception& e) {
        double lookahead = runtime + backoff;
        std::string what = e.what();
        if (errors_mode == ErrorsMode::IGNORED) {
            logger.exception("{} failed with an exception and will ignore it: {}", name, what);
            Outcome o;
            o.final = true;
            o.subrefs = subrefs;
            return o;
        }
        if (errors_mode == ErrorsMode::TEMPORARY && timeout && lookahead >= *timeout) {
            auto msg = name + " failed with an exception and will stop now (it would time out in " +
                       format_seconds(*timeout) + " seconds on the next attempt): " + what;
            logger.exception("{}", msg);
            return final_failure(msg);
        }
        if (errors_mode == ErrorsMode::TEMPORARY && retries && state.retries + 1 >= *retries) {
            auto msg = name + " failed with an exception and will stop now (it would exceed " +
                       std::to_string(*retries) + " retries on the next attempt): " + what;
            logger.exception("{}", msg);
            return final_failure(msg);
        }
        if (errors_mode == ErrorsMode::TEMPORARY) {
            logger.exception("{} failed with an exception and will try again in {} seconds: {}",
                             name, format_seconds(backoff), what);
            return retry_after(backoff, what);
        }
        logger.exception("{} failed with an exception and will stop now: {}", name, what);
        return final_failure(what);
    }
}

// Checks the limits and builds the context before the invocation (a plain function, for the
// same reason as above); throws the limit's error.
Context prepare_invocation(InvocationEnv& env, const ChangingHandler& handler,
                           const HandlerState& state, const std::string& name, double runtime,
                           HandlerScope& scope, FieldValues& field_values) {
    env.logger.debug("{} is invoked.", name);
    const auto& timeout = handler.options.timeout;
    const auto& retries = handler.options.retries;
    if (timeout && runtime >= *timeout) {
        throw HandlerTimeoutError(name + " has timed out after " + format_timedelta(runtime) + ".");
    }
    if (retries && state.retries >= *retries) {
        throw HandlerRetriesError(name + " has exceeded " + std::to_string(state.retries) +
                                  " retries.");
    }
    return make_context(env, handler, state, &scope, field_values);
}

void meter_invocation(HandlerMeter* meter, const std::string& id, const Outcome& outcome,
                      bool errored, std::chrono::steady_clock::time_point started, bool retry) {
    if (!meter) return;
    const auto kind = !outcome.failed
                          ? (errored ? HandlerOutcome::ignored : HandlerOutcome::success)
                      : outcome.final ? HandlerOutcome::permanent
                                      : HandlerOutcome::temporary;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    meter->invoked(id, kind, seconds, retry);
}

Outcome outcome_of_success(Logger& logger, const std::string& name, json result,
                           std::set<std::string> subrefs) {
    logger.info("{} succeeded.", name);
    Outcome o;
    o.final = true;
    o.result = std::move(result);
    o.subrefs = std::move(subrefs);
    return o;
}

namespace {

// The executor of a coroutine handler with a `timeout`: when the handler's overall runtime (since
// its first attempt) reaches the timeout, it is cancelled as a daemon is cancelled by force: its
// pending kopf::sleep wakes at once, and it and every later one throw kopf::CancelledError
// (Kopf's docs: an asyncio.TimeoutError is raised in a coroutine still running then).
class TimeoutExecutor final : public loop::CancellableExecutor {
  public:
    using CancellableExecutor::CancellableExecutor;
    // Also when the executor it runs on is cancelled: a sub-handler with a timeout of its own,
    // run in place by kopf::execute() in a parent that times out, is cancelled with it.
    bool cancelled() const override { return timed_out_ || loop().cancelled(); }

    /// Cancels the handler after `seconds`, unless it has finished by then (this executor is
    /// gone: the timer then does nothing).
    void arm(double seconds) {
        loop().post_after(seconds, [weak = weak_from_this()] {
            if (auto self = std::static_pointer_cast<TimeoutExecutor>(weak.lock())) {
                self->timed_out_ = true;
                self->wake_pending();
            }
        });
    }

  private:
    bool timed_out_ = false;
};

// `co_await executor_of_this_coroutine()`: the executor the awaiting coroutine runs on.
struct ExecutorOfThisCoroutine {
    Executor* executor = nullptr;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        executor = h.promise().executor;
        return false;  // goes on at once
    }
    Executor* await_resume() const noexcept { return executor; }
};

// `co_await on_executor(task, executor)`: runs `task` (and the tasks it awaits) on `executor`.
template <class T>
struct OnExecutor {
    Task<T> task;
    Executor& executor;
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
        auto child = task.handle();
        child.promise().executor = &executor;
        child.promise().continuation = parent;
        return child;
    }
    T await_resume() { return task.await_resume(); }
};

Task<Outcome> execute_handler_once(InvocationEnv& env, const ChangingHandler& handler,
                                   const HandlerState& state) {
    const std::string name = describe(env.kind, handler.id);
    const double runtime = state.runtime(env.now()).count();
    std::set<std::string> subrefs;
    std::exception_ptr error;
    json result;
    const auto started =
        env.meter ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    // Only coroutines can be interrupted: a synchronous handler's thread runs to its end.
    std::shared_ptr<TimeoutExecutor> limiter;
    if (handler.fn.async && handler.options.timeout && runtime < *handler.options.timeout) {
        ExecutorOfThisCoroutine this_executor;
        Executor* loop = co_await this_executor;
        limiter = std::make_shared<TimeoutExecutor>(*loop);
        limiter->arm(*handler.options.timeout - runtime);
    }
    {
        HandlerScope scope{handler.id, handler.field_needs_change, {}, &env, &subrefs};
        FieldValues field_values;
        try {
            Context ctx =
                prepare_invocation(env, handler, state, name, runtime, scope, field_values);
            if (limiter) {
                OnExecutor<json> limited{invoke(handler, ctx), *limiter};
                result = co_await limited;
            } else {
                result = co_await invoke(handler, ctx);
            }
            co_await execute_subhandlers(env, scope, subrefs);
        } catch (const CancelledError&) {
            error = std::current_exception();
            if (limiter && limiter->cancelled()) {
                // Kopf's HandlerTimeoutError: a permanent failure, never retried.
                error = std::make_exception_ptr(
                    HandlerTimeoutError(name + " has timed out after " +
                                        format_timedelta(state.runtime(env.now()).count()) + "."));
            }
        } catch (...) {
            error = std::current_exception();
        }
    }
    Outcome outcome =
        error ? outcome_of_failure(env.settings, env.logger, handler.options, state, name, runtime,
                                   error, std::move(subrefs))
              : outcome_of_success(env.logger, name, std::move(result), std::move(subrefs));
    meter_invocation(env.meter, handler.id, outcome, error != nullptr, started, state.retries > 0);
    co_return outcome;
}

}  // namespace

Task<std::map<std::string, Outcome>> execute_handlers_once(
    InvocationEnv& env, const std::vector<const ChangingHandler*>& handlers, const State& state) {
    auto now = env.now();
    std::vector<const ChangingHandler*> todo;
    for (auto* h : handlers) {
        if (state[h->id].awakened(now)) todo.push_back(h);
    }
    auto plan = env.lifecycle ? env.lifecycle(todo, state) : lifecycles::asap(todo, state);
    std::map<std::string, Outcome> outcomes;
    for (auto* h : plan) outcomes[h->id] = co_await execute_handler_once(env, *h, state[h->id]);
    co_return outcomes;
}

void deliver_results(const std::map<std::string, Outcome>& outcomes, Patch& patch) {
    for (const auto& [id, o] : outcomes) {
        if (o.failed || o.result.is_null()) continue;
        auto& slot = patch.merge["status"][id];
        if (o.result.is_object()) {
            if (!slot.is_object()) slot = json::object();
            for (auto it = o.result.begin(); it != o.result.end(); ++it)
                slot[it.key()] = it.value();
        } else {
            slot = o.result;
        }
    }
}

}  // namespace kopf::actions

namespace kopf::detail {

namespace {

ChangingHandler subhandler_of(const HandlerScope& parent, HandlerOptions options, Callable fn,
                              const std::string& default_id) {
    ChangingHandler h;
    h.field = dicts::parse_field(options.field);
    h.id = parent.parent_id + "/" + (options.id.empty() ? default_id : options.id);
    if (!fn) {
        throw std::invalid_argument("The handler function of sub-handler '" + h.id + "' is empty.");
    }
    h.fn = std::move(fn);
    h.has_selector = false;
    h.field_needs_change = parent.field_needs_change;
    h.options = std::move(options);
    return h;
}

}  // namespace

// Sub-handlers belong to the invocation of their parent (its HandlerScope), so they are
// declared here rather than with the registry's handlers.
void add_subhandler(Context& ctx, HandlerOptions options, Callable fn, std::string default_id) {
    if (!ctx.scope)
        throw std::logic_error(
            "Sub-handlers can be declared only inside resource-changing handlers.");
    ctx.scope->subhandlers.push_back(
        subhandler_of(*ctx.scope, std::move(options), std::move(fn), default_id));
}

// As Kopf's `await kopf.execute(fns=...)`: the functions run now as one nested cycle of
// sub-handlers; while they are not all done, HandlerChildrenRetry leaves the parent, which is
// retried (the sub-handlers that succeeded are not run again).
Task<void> execute(Context& ctx, std::vector<SubhandlerFn> fns) {
    if (!ctx.scope || !ctx.scope->env || !ctx.scope->subrefs)
        throw std::logic_error(
            "kopf::execute() runs sub-handlers: it can be used only inside resource-changing "
            "handlers (create, update, delete, resume, field).");
    HandlerScope children{ctx.scope->parent_id,
                          ctx.scope->field_needs_change,
                          {},
                          ctx.scope->env,
                          ctx.scope->subrefs};
    for (auto& fn : fns) {
        HandlerOptions options;
        options.id = fn.id;
        children.subhandlers.push_back(
            subhandler_of(children, std::move(options), std::move(fn.fn), fn.id));
    }
    co_await actions::execute_subhandlers(*children.env, children, *children.subrefs);
}

}  // namespace kopf::detail
