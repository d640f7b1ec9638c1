#include "core/engines/daemons.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "clients/json_in_place.hpp"
#include "core/actions/execution.hpp"
#include "core/intents/matching.hpp"
#include "core/intents/stoppers.hpp"
#include "loop/cancellable_executor.hpp"

namespace kopf::engines {

using detail::StopFlag;

namespace {

constexpr double HUNG_DAEMON_GRACE = 5.0;  // Kopf's wait for "hung" tasks at the operator's exit

std::atomic<std::size_t> threads_running{0};

// The loop, for whatever may outlive the operator (threads of abandoned daemons): closed at the
// engine's end, it drops what is posted to it.
class LoopGuard {
  public:
    explicit LoopGuard(Executor& loop) : loop_(&loop) {}
    /// False if the loop is gone (`fn` is dropped).
    bool post(std::function<void()> fn) {
        std::lock_guard lock(mutex_);
        if (!loop_) return false;
        loop_->post(std::move(fn));
        return true;
    }
    void close() {
        std::lock_guard lock(mutex_);
        loop_ = nullptr;
    }

  private:
    std::mutex mutex_;
    Executor* loop_;
};

// The executor of one daemon's coroutines: the loop, with the daemon's own threads for its
// synchronous invocations (or the worker pool, for timers), and forced cancellation: pending
// delays fire at once and the awaitables throw kopf::CancelledError.
class DaemonExecutor final : public loop::CancellableExecutor {
  public:
    DaemonExecutor(Executor& loop, std::shared_ptr<LoopGuard> guard, const StopFlag& flag,
                   bool own_threads)
        : CancellableExecutor(loop),
          guard_(std::move(guard)),
          flag_(flag),
          own_threads_(own_threads) {}

    void run_blocking(std::function<void()> work, std::function<void()> done) override {
        if (!own_threads_) {
            loop().run_blocking(std::move(work), std::move(done));
            return;
        }
        // A daemon's thread of its own: a long-lived loop takes no worker slot from handlers.
        ++threads_running;
        std::thread([guard = guard_, work = std::move(work), done = std::move(done)]() mutable {
            work();
            guard->post(std::move(done));
            --threads_running;
        }).detach();
    }
    bool cancelled() const override { return flag_.cancelled(); }
    /// The executor is part of its daemon: the delays hold on to the daemon.
    void bind(std::weak_ptr<CancellableExecutor> self) { self_ = std::move(self); }

  protected:
    std::weak_ptr<CancellableExecutor> weak_self() override { return self_; }

  private:
    std::shared_ptr<LoopGuard> guard_;
    const StopFlag& flag_;  // its daemon's
    std::weak_ptr<CancellableExecutor> self_;
    bool own_threads_;
};

// `co_await yield_to(loop)`: one turn of the loop (Kopf's asyncio.sleep(0)).
struct YieldTo {
    Executor& loop;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const {
        loop.post([h] { h.resume(); });
    }
    void await_resume() const noexcept {}
};
YieldTo yield_to(Executor& loop) {
    return YieldTo{loop};
}
detail::FlagSleep sleep_on(StopFlag& flag, Executor& loop, double seconds) {
    return detail::FlagSleep{flag, loop, seconds};
}

// The body views a context binds to must exist, so that refreshing them in place keeps every
// reference of the context valid.
void ensure_view(json::object_t& level, const char* key) {
    if (const auto it = level.find(key); it == level.end()) level.emplace(key, json::object());
}
void ensure_views(json& body) {
    if (!body.is_object()) body = json::object();
    auto& top = body.get_ref<json::object_t&>();
    for (const char* key : {"metadata", "spec", "status"}) ensure_view(top, key);
    json& meta = top.find("metadata")->second;
    if (meta.is_object()) {
        auto& level = meta.get_ref<json::object_t&>();
        for (const char* key : {"labels", "annotations"}) ensure_view(level, key);
    }
}

// Makes `local` equal to `latest` (in value and in type: nlohmann's == takes 1 and 1.0 for
// equal), copying only what differs: most of an echo's body is unchanged, and a walk that
// allocates nothing costs less than copying the tree and destroying the old one. Unchanged
// nodes stay where they are (a reference into them stays valid). The maps are walked side by
// side (both sorted), with one comparison of the keys per step and no lookups.
void update_in_place(json& local, const json& latest) {
    using value_t = json::value_t;
    if (local.type() != latest.type()) {
        local = latest;
        return;
    }
    switch (latest.type()) {
        case value_t::object: {
            auto& mine = local.get_ref<json::object_t&>();
            const auto& theirs = latest.get_ref<const json::object_t&>();
            auto m = mine.begin();
            for (auto t = theirs.begin(); t != theirs.end(); ++t) {
                int order = 1;
                while (m != mine.end() && (order = m->first.compare(t->first)) < 0)
                    m = mine.erase(m);
                if (m != mine.end() && order == 0) {
                    update_in_place(m->second, t->second);
                    ++m;
                } else {
                    mine.emplace_hint(m, t->first, t->second);
                }
            }
            mine.erase(m, mine.end());
            break;
        }
        case value_t::array: {
            auto& mine = local.get_ref<json::array_t&>();
            const auto& theirs = latest.get_ref<const json::array_t&>();
            if (mine.size() > theirs.size()) mine.resize(theirs.size());
            for (std::size_t i = 0; i < theirs.size(); ++i) {
                if (i < mine.size()) {
                    update_in_place(mine[i], theirs[i]);
                } else {
                    mine.push_back(theirs[i]);
                }
            }
            break;
        }
        case value_t::string: {
            auto& mine = local.get_ref<json::string_t&>();
            const auto& theirs = latest.get_ref<const json::string_t&>();
            if (mine != theirs) mine = theirs;  // the buffer is reused
            break;
        }
        case value_t::boolean:
            local.get_ref<json::boolean_t&>() = latest.get_ref<const json::boolean_t&>();
            break;
        case value_t::number_integer:
            local.get_ref<json::number_integer_t&>() =
                latest.get_ref<const json::number_integer_t&>();
            break;
        case value_t::number_unsigned:
            local.get_ref<json::number_unsigned_t&>() =
                latest.get_ref<const json::number_unsigned_t&>();
            break;
        case value_t::number_float:
            local.get_ref<json::number_float_t&>() = latest.get_ref<const json::number_float_t&>();
            break;
        case value_t::binary:
            if (local != latest) local = latest;
            break;
        case value_t::null:
        case value_t::discarded:
            break;
    }
}

// One level of the views (the body, or its metadata): made equal to `latest` as above, except
// that the nodes a context binds to (`views`) are never erased: emptied if `latest` has none.
// `nested` is the key of the next such level (the metadata), refreshed the same way.
template <std::size_t N>
void refresh_level(json::object_t& mine, const json::object_t& theirs,
                   const std::array<std::string_view, N>& views, std::string_view nested);

constexpr std::array<std::string_view, 3> BODY_VIEWS{"metadata", "spec", "status"};
constexpr std::array<std::string_view, 2> META_VIEWS{"annotations", "labels"};

template <std::size_t N>
bool is_view(const std::string& key, const std::array<std::string_view, N>& views) {
    return std::find(views.begin(), views.end(), key) != views.end();
}

template <std::size_t N>
void refresh_level(json::object_t& mine, const json::object_t& theirs,
                   const std::array<std::string_view, N>& views, std::string_view nested) {
    auto m = mine.begin();
    auto t = theirs.begin();
    while (m != mine.end() || t != theirs.end()) {
        const int order = m == mine.end() ? 1 : t == theirs.end() ? -1 : m->first.compare(t->first);
        if (order < 0) {  // gone from the object
            if (is_view(m->first, views)) {
                if (!m->second.is_object() || !m->second.empty()) m->second = json::object();
                ++m;
            } else {
                m = mine.erase(m);
            }
        } else if (order > 0) {  // new in the object
            mine.emplace_hint(m, t->first, t->second);
            ++t;
        } else {
            if (!nested.empty() && m->first == nested && m->second.is_object() &&
                t->second.is_object()) {
                refresh_level(m->second.get_ref<json::object_t&>(),
                              t->second.get_ref<const json::object_t&>(), META_VIEWS, {});
            } else {
                update_in_place(m->second, t->second);
            }
            ++m;
            ++t;
        }
    }
}

// Replaces the content of `local` with `latest` without moving the nodes a context refers to
// (the body, metadata, spec, status, labels, annotations), nor any node that did not change.
void refresh_in_place(json& local, const json& latest) {
    if (!latest.is_object()) return;
    // The views, once made, are never erased by a refresh: only the first one makes them.
    const bool first = !local.is_object() || local.empty();
    if (!local.is_object()) local = json::object();
    refresh_level(local.get_ref<json::object_t&>(), latest.get_ref<const json::object_t&>(),
                  BODY_VIEWS, "metadata");
    if (first) ensure_views(local);
}

}  // namespace

// ---- shared state -------------------------------------------------------------------------

struct EngineCore : std::enable_shared_from_this<EngineCore> {
    EngineCore(DaemonsEnv env, const std::vector<SpawningHandler>& registered)
        : loop(env.loop),
          guard(std::make_shared<LoopGuard>(env.loop)),
          settings(std::move(env.settings)),
          client(std::move(env.client)),
          write(std::move(env.write)),
          now(std::move(env.now)),
          indices(std::move(env.indices)),
          meter(std::move(env.meter)) {
        for (const auto& h : registered) {
            auto spawning = std::make_shared<const SpawningHandler>(h);
            ChangingHandler changing;
            changing.id = h.id;
            changing.fn = h.fn;
            changing.selector = h.selector;
            changing.options = h.options;
            handlers.push_back({spawning,
                                std::make_shared<const ChangingHandler>(std::move(changing)),
                                h.describe()});
        }
    }

    // Each handler, and the same as a ChangingHandler for the executor of handlers.
    struct Handler {
        std::shared_ptr<const SpawningHandler> spawning;
        std::shared_ptr<const ChangingHandler> invocable;
        std::string name;  ///< "Daemon 'id'", as the log lines name it: one for all its daemons
    };

    Executor& loop;
    std::shared_ptr<LoopGuard> guard;
    std::shared_ptr<const OperatorSettings> settings;
    Client client;
    PatchWriter write;
    std::function<actions::TimePoint()> now;
    Indices indices;
    std::shared_ptr<actions::HandlerMeter> meter;
    std::vector<Handler> handlers;
    std::unordered_map<const Daemon*, std::shared_ptr<Daemon>> live;
    // One copy of each resource kind for all its objects' memories (a copy of its own, with the
    // verbs and the names, was half a kilobyte per object). Few kinds: a list.
    std::vector<std::shared_ptr<const Resource>> resources;
    std::shared_ptr<const Resource> shared_resource(const Resource& resource) {
        for (const auto& known : resources)
            if (*known == resource) return known;
        return resources.emplace_back(std::make_shared<const Resource>(resource));
    }
    std::size_t abandoned = 0;
    bool closing = false;
    bool paused = false;  // the operator pauses (peering): nothing is spawned
};

class Daemon : public std::enable_shared_from_this<Daemon> {
  public:
    // `handler` is one of the core's: it lives as long as the core.
    Daemon(std::shared_ptr<EngineCore> core, const EngineCore::Handler& handler,
           std::shared_ptr<DaemonsMemory> memory)
        : core(std::move(core)),
          handler(handler.spawning.get()),
          invocable(handler.invocable.get()),
          memory(std::move(memory)),
          flag(invocable->fn.sync ? StopFlag::Mode::BLOCKING : StopFlag::Mode::SUSPENDING),
          executor(this->core->loop, this->core->guard, flag,
                   this->handler->kind == SpawningHandler::Kind::DAEMON),
          name(handler.name) {}

    // The flag as the context holds it (`ctx.stopped`): it keeps the daemon alive.
    std::shared_ptr<StopFlag> shared_flag() { return {shared_from_this(), &flag}; }

    bool is_daemon() const { return handler->kind == SpawningHandler::Kind::DAEMON; }
    Logger& logger() const { return *memory->logger; }

    // Coroutines read the object's shared views (refreshed in place on the loop, between their
    // steps); code on threads reads a copy of its own, refreshed at its checkpoints.
    bool on_threads() const { return flag.mode() == StopFlag::Mode::BLOCKING; }
    const json& view() const { return on_threads() ? body : memory->live(); }

    // The daemon's own flow (its thread or its coroutine): the latest body into its views.
    void refresh_body() {
        if (!on_threads()) return;
        auto [latest, generation] = memory->body();
        if (!latest || generation == body_generation) return;
        body_generation = generation;
        refresh_in_place(body, *latest);
    }

    // The daemon's own flow: what it patched so far goes to the object, in order.
    void send_patch() {
        if (patch.empty()) return;
        auto taken = std::make_shared<Patch>(std::move(patch));
        patch = Patch();
        ++posted;
        const bool on_its_way = core->guard->post([self = shared_from_this(), taken] {
            --self->posted;
            self->outbox.push_back(std::move(*taken));
            self->kick();
        });
        if (!on_its_way) --posted;
    }

    // On the loop: one writer at a time per daemon keeps its patches in order.
    void kick() {
        if (writing || outbox.empty()) return;
        writing = true;
        auto self = shared_from_this();
        kopf::start_detached(core->loop, write_outbox(self), [self](std::exception_ptr) {
            self->writing = false;
            if (self->written) self->written->set(StopReason::DONE);
        });
    }

    static Task<void> write_outbox(std::shared_ptr<Daemon> self) {
        while (!self->outbox.empty()) {
            Patch next = std::move(self->outbox.front());
            self->outbox.erase(self->outbox.begin());
            // A merge patch needs only the object's address: the views themselves (refreshed in
            // place meanwhile, the address never changes; the memory lives as long as the
            // daemon). Transformations are diffed against the body as it is now.
            const json& live = self->memory->live();
            json snapshot = next.fns.empty() ? json() : live;
            const json& body = next.fns.empty() ? live : snapshot;
            try {
                auto writing = self->core->write(*self->memory->resource, body, std::move(next),
                                                 self->logger());
                co_await std::move(writing);
            } catch (const std::exception& e) {
                self->logger().error("{} could not patch the object: {}", self->name, e.what());
            }
        }
    }

    // On the loop: until everything sent so far is written (posted to the loop included: a
    // timer's patch is written before its interval starts, as in Kopf, and an API server that
    // falls behind slows the ticks instead of piling up their patches).
    Task<void> drain() {
        while (writing || !outbox.empty() || posted > 0) {
            written = std::make_shared<StopFlag>(StopFlag::Mode::SUSPENDING);
            auto waiting = written;
            co_await sleep_on(*waiting, core->loop, -1);
        }
    }

    // The core (its settings and client too) is kept for the daemon's context, which may
    // outlive the operator (an abandoned thread); the handler is one of the core's.
    std::shared_ptr<EngineCore> core;
    const SpawningHandler* handler;
    const ChangingHandler* invocable;
    std::shared_ptr<DaemonsMemory> memory;
    // The flag and the executor are parts of the daemon (one allocation for all three).
    StopFlag flag;
    DaemonExecutor executor;
    // Made when first waited on (few daemons are): set when the runner has finished.
    std::shared_ptr<StopFlag> exited;
    std::shared_ptr<StopFlag> written;  // while drain() waits for the writer
    StopFlag& exited_flag() {
        if (!exited) {
            exited = std::make_shared<StopFlag>(StopFlag::Mode::SUSPENDING);
            if (done) exited->set(StopReason::DONE);
        }
        return *exited;
    }
    const std::string& name;  // the handler's, in the core

    json body;  // the views of a daemon on threads (see view())
    unsigned long body_generation = 0;
    Patch patch;
    std::vector<Patch> outbox;   // few and short-lived (a deque allocates half a KB up front)
    std::atomic<int> posted{0};  // sent, on their way to the outbox (from any thread)
    bool writing = false;
    std::optional<double> stop_started;  // the loop's clock when first asked to stop
    bool done = false;
    // The handler's context while an attempt runs, and the attempt's runtime; a daemon's
    // progress between its steps (see next_attempt()).
    std::optional<Context> ctx;
    double runtime = 0;
    std::chrono::steady_clock::time_point attempt_started{};  // only with metrics
    actions::State state;
};

// ---- the runners --------------------------------------------------------------------------

namespace {

actions::State fresh_state(const Daemon& d) {
    const std::vector<std::string> ids{d.handler->id};
    return actions::State().with_handlers(ids, d.core->now());
}

// The cause of every daemon's and timer's context: no reason, no essences, no diff (the
// contexts refer to its members, so it outlives them all).
const intents::ChangingCause& no_cause() {
    static const intents::ChangingCause none{intents::Reason::NOOP, nullptr, nullptr, std::nullopt,
                                             std::nullopt,          Diff(),  false};
    return none;
}

// What the daemon's contexts are made of.
actions::InvocationEnv invocation_env(Daemon& d) {
    actions::InvocationEnv env{
        *d.core->settings, *d.memory->resource, d.view(),
        d.patch,           d.logger(),          *d.memory->memo,
        no_cause(),        d.core->now,         actions::lifecycles::all_at_once,
        &d.core->client};
    env.kind = d.is_daemon() ? "Daemon" : "Timer";
    env.stopped = DaemonStopped(d.shared_flag());
    env.indices = d.core->indices;
    env.shared_logger = d.memory->logger;
    if (!d.on_threads()) env.views = &d.memory->live_views();
    return env;
}

// Kopf's initial_delay, fixed or a function of the handler's kwargs (its context, as the
// handler would get it now); a negative or NaN delay is no delay.
std::optional<double> initial_delay(Daemon& d) {
    const SpawningHandler& h = *d.handler;
    if (!h.initial_delay_fn) return h.initial_delay;
    d.refresh_body();
    const auto state = fresh_state(d);
    auto env = invocation_env(d);
    actions::FieldValues no_field;
    Context ctx = actions::make_context(env, *d.invocable, state[h.id], nullptr, no_field);
    const double delay = h.initial_delay_fn(ctx);
    return delay > 0 ? delay : 0.0;
}

// The first half of an attempt (a plain function: nothing of it stays in a coroutine frame):
// Kopf's execute_handlers_once with one handler up to the call. False if the handler is not
// due yet; else the context is ready in `d.ctx`, or `error` holds the limit it exceeded.
bool begin_attempt(Daemon& d, const actions::State& state, std::exception_ptr& error) {
    d.refresh_body();
    const auto now = d.core->now();
    const actions::HandlerState& hs = state[d.handler->id];
    if (!hs.awakened(now)) return false;
    d.runtime = hs.runtime(now).count();
    if (d.core->meter) d.attempt_started = std::chrono::steady_clock::now();
    auto env = invocation_env(d);
    // Spawning contexts have no sub-handlers and no field values: neither is referred to.
    HandlerScope scope;
    actions::FieldValues no_field;
    try {
        d.ctx.emplace(
            actions::prepare_invocation(env, *d.invocable, hs, d.name, d.runtime, scope, no_field));
    } catch (...) {
        error = std::current_exception();
    }
    return true;
}

// The second half: the outcome (Kopf's log lines), the state, the results into the patch.
// Rethrows kopf::CancelledError.
actions::State end_attempt(Daemon& d, actions::State state, json result, std::exception_ptr error) {
    d.ctx.reset();
    const actions::HandlerState& hs = state[d.handler->id];
    std::map<std::string, actions::Outcome> outcomes;
    outcomes.emplace(
        d.handler->id,
        error ? actions::outcome_of_failure(*d.core->settings, d.logger(), d.invocable->options, hs,
                                            d.name, d.runtime, error)
              : actions::outcome_of_success(d.logger(), d.name, std::move(result)));
    actions::meter_invocation(d.core->meter.get(), d.handler->id, outcomes.begin()->second,
                              error != nullptr, d.attempt_started, hs.retries > 0);
    actions::deliver_results(outcomes, d.patch);
    return state.with_outcomes(outcomes, d.core->now());
}

// The handler's call: its own coroutine (awaited directly: no invocation frames in between), or
// a synchronous function on a thread.
Task<json> call(Daemon& d) {
    if (d.invocable->fn.async) return d.invocable->fn.async(*d.ctx);
    return actions::invoke(*d.invocable, *d.ctx);
}

// Kopf's _daemon: retried per its errors mode until it succeeds, fails for good, or is stopped.
// A daemon lives inside its handler's call, maybe for the object's whole life: so that nothing
// but the handler's own frames stays allocated that long, the runner is a chain of steps (a
// callback per completion) around the call, not a coroutine awaiting it; the state between the
// steps is the daemon's (its context, its progress state).
void next_attempt(const std::shared_ptr<Daemon>& d);
void complete_attempt(const std::shared_ptr<Daemon>& d, bool attempted, json result,
                      std::exception_ptr error);
void wind_up(const std::shared_ptr<Daemon>& d);
void finish(const std::shared_ptr<Daemon>& d, std::exception_ptr error);

// Before the first attempt: the initial delay.
Task<void> daemon_prelude(std::shared_ptr<Daemon> d) {
    if (const auto delay = initial_delay(*d)) co_await sleep_on(d->flag, d->core->loop, *delay);
    d->state = fresh_state(*d);
}

// Between attempts: the patch written, then the retry's delay (a turn of the loop at least, so
// that retries without a delay do not recurse).
Task<void> daemon_interlude(std::shared_ptr<Daemon> d) {
    co_await d->drain();
    const auto delay = d->state.delay(d->core->now());
    if (delay && *delay > 0) {
        co_await sleep_on(d->flag, d->core->loop, *delay);
    } else {
        co_await yield_to(d->core->loop);
    }
}

// After the last attempt: the patch written, Kopf's log line.
Task<void> daemon_epilogue(std::shared_ptr<Daemon> d) {
    d->send_patch();
    co_await d->drain();
    if (d->flag.is_set()) {
        d->logger().debug("{} has exited on request and will not be retried or restarted.",
                          d->name);
    } else {
        d->logger().debug("{} has exited on its own and will not be retried or restarted.",
                          d->name);
    }
}

void start_daemon(const std::shared_ptr<Daemon>& d) {
    kopf::start_detached(d->executor, daemon_prelude(d), [d](std::exception_ptr error) {
        if (error) {
            finish(d, error);
        } else {
            next_attempt(d);
        }
    });
}

void next_attempt(const std::shared_ptr<Daemon>& d) {
    if (d->flag.is_set() || d->state.done()) {
        wind_up(d);
        return;
    }
    std::exception_ptr error;
    if (!begin_attempt(*d, d->state, error)) {
        complete_attempt(d, false, json(), nullptr);  // not due yet: to the sleep
        return;
    }
    if (error) {
        complete_attempt(d, true, json(), error);
        return;
    }
    // A handler may throw before its coroutine starts: that is its attempt's error too.
    std::optional<Task<json>> running;
    try {
        running.emplace(call(*d));
    } catch (...) {
        complete_attempt(d, true, json(), std::current_exception());
        return;
    }
    kopf::start_detached<json>(
        d->executor, std::move(*running), [d](std::exception_ptr e, std::optional<json> result) {
            complete_attempt(d, true, result ? std::move(*result) : json(), e);
        });
}

void complete_attempt(const std::shared_ptr<Daemon>& d, bool attempted, json result,
                      std::exception_ptr error) {
    if (attempted) {
        try {
            d->state = end_attempt(*d, std::move(d->state), std::move(result), error);
        } catch (const CancelledError&) {
            // Logged by the execution; the daemon ends here.
            wind_up(d);
            return;
        } catch (...) {
            finish(d, std::current_exception());
            return;
        }
        d->send_patch();
    }
    // The last attempt: straight to the end (it writes the patch too), no turn of the loop.
    if (d->flag.is_set() || d->state.done()) {
        wind_up(d);
        return;
    }
    kopf::start_detached(d->executor, daemon_interlude(d), [d](std::exception_ptr e) {
        if (e) {
            finish(d, e);
        } else {
            next_attempt(d);
        }
    });
}

void wind_up(const std::shared_ptr<Daemon>& d) {
    kopf::start_detached(d->executor, daemon_epilogue(d),
                         [d](std::exception_ptr error) { finish(d, error); });
}

// Kopf's _timer: runs every interval (or after idling) until stopped; never overlaps itself.
Task<void> run_timer(std::shared_ptr<Daemon> d) {
    Executor& loop = d->core->loop;
    const SpawningHandler& h = *d->handler;
    StopFlag& flag = d->flag;
    DaemonsMemory& memory = *d->memory;
    if (const auto delay = initial_delay(*d)) co_await sleep_on(flag, loop, *delay);
    actions::State state = fresh_state(*d);
    while (!flag.is_set()) {
        // Every cycle after a success starts its retries from scratch.
        if (state.done()) state = fresh_state(*d);
        // Any essential change during the sleep prolongs it; it is never shortened.
        if (h.idle) {
            while (!flag.is_set() && loop.now() - memory.idle_reset_time < *h.idle) {
                const double delay = memory.idle_reset_time + *h.idle - loop.now();
                co_await sleep_on(flag, loop, delay);
            }
            if (flag.is_set()) continue;
        }
        const double started = loop.now();
        std::exception_ptr error;
        json result;
        if (begin_attempt(*d, state, error)) {
            if (!error) {
                try {
                    result = co_await call(*d);
                } catch (...) {
                    error = std::current_exception();
                }
            }
            state = end_attempt(*d, std::move(state), std::move(result), error);
        }
        d->send_patch();
        co_await d->drain();
        if (!state.done()) {
            // Errors override the schedule: TemporaryError's delay, or the backoff.
            co_await sleep_on(flag, loop, state.delay(d->core->now()).value_or(0.0));
        } else if (h.interval && h.sharp) {
            const double passed = loop.now() - started;
            co_await sleep_on(flag, loop, *h.interval - std::fmod(passed, *h.interval));
        } else if (h.interval) {
            co_await sleep_on(flag, loop, *h.interval);
        } else if (h.idle) {
            // Idling only: the next run waits for the next change and its idle time.
            while (!flag.is_set() && memory.idle_reset_time <= started)
                co_await sleep_on(flag, loop, *h.idle);
        } else {
            break;  // neither interval nor idle: a one-shot timer
        }
    }
}

// Kopf's _runner's end: forget the daemon; one that exited on its own is never spawned again.
void finish(const std::shared_ptr<Daemon>& d, std::exception_ptr error) {
    if (error) {
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            d->logger().error("{} has failed unexpectedly: {}", d->name, e.what());
        }
    }
    DaemonsMemory& memory = *d->memory;
    const StopReason reason = d->flag.reason();
    if (!any(reason)) memory.forever_stopped.insert(d->handler->id);
    if (auto it = memory.running.find(d->handler->id);
        it != memory.running.end() && it->second == d)
        memory.running.erase(it);
    d->core->live.erase(d.get());
    d->done = true;
    if (d->on_threads()) --memory.threaded;
    d->flag.set(StopReason::DONE);
    if (d->exited) d->exited->set(StopReason::DONE);
    // Stopped for the object's sake: its finalizer or a respawn need not wait for the next poll.
    const bool for_the_object =
        any(reason & (StopReason::RESOURCE_DELETED | StopReason::FILTERS_MISMATCH));
    // Stopped for a pause that is over already: the fresh listing may have passed it by.
    const bool resumed = any(reason & StopReason::OPERATOR_PAUSING) && !d->core->paused;
    if ((for_the_object || resumed) && !d->core->closing && memory.poke) memory.poke();
}

void spawn_daemon(const std::shared_ptr<EngineCore>& core, const EngineCore::Handler& handler,
                  const std::shared_ptr<DaemonsMemory>& memory) {
    auto d = std::make_shared<Daemon>(core, handler, memory);
    d->executor.bind(std::shared_ptr<loop::CancellableExecutor>(d, &d->executor));
    if (d->on_threads()) {
        ++memory->threaded;
        auto [latest, generation] = memory->body();
        if (latest) d->body = *latest;
        d->body_generation = generation;
        ensure_views(d->body);
    }
    std::weak_ptr<Daemon> weak = d;
    d->flag.checkpoint = [weak] {
        if (auto self = weak.lock()) {
            self->refresh_body();
            self->send_patch();
        }
    };
    // Coroutines run on the loop: they may be refreshed at any of their resumptions.
    if (d->flag.mode() == StopFlag::Mode::SUSPENDING) d->executor.on_resume = d->flag.checkpoint;
    memory->running[handler.spawning->id] = d;
    core->live[d.get()] = d;
    if (d->is_daemon()) {
        start_daemon(d);
        return;
    }
    kopf::start_detached(d->executor, run_timer(d),
                         [d](std::exception_ptr error) { finish(d, error); });
}

// Kopf's _wait_for_instant_exit: a few turns of the loop (or a short timeout) for a daemon
// that exits as soon as asked, to spare a patch and a polling cycle.
Task<void> wait_for_instant_exit(std::shared_ptr<Daemon> d) {
    const auto& background = d->core->settings->background;
    if (d->done) co_return;
    if (background.instant_exit_timeout) {
        co_await sleep_on(d->exited_flag(), d->core->loop, *background.instant_exit_timeout);
        co_return;
    }
    for (int i = 0; i < background.instant_exit_zero_time_cycles && !d->done; ++i)
        co_await yield_to(d->core->loop);
}

struct Cancellation {
    std::optional<double> backoff;
    std::optional<double> timeout;
    double polling;
};

Cancellation cancellation_of(const Daemon& d) {
    if (!d.is_daemon())
        return {std::nullopt, std::nullopt, d.core->settings->background.cancellation_polling};
    const SpawningHandler& h = *d.handler;
    return {h.cancellation_backoff, h.cancellation_timeout,
            h.cancellation_polling.value_or(d.core->settings->background.cancellation_polling)};
}

void cancel(Daemon& d) {
    d.flag.set(StopReason::DAEMON_CANCELLED);
    d.executor.wake_pending();
}

void abandon(Daemon& d) {
    d.flag.set(StopReason::DAEMON_ABANDONED);
    d.logger().warning("{} did not exit in time. Leaving it orphaned.", d.name);
    ++d.core->abandoned;
}

// Kopf's stop_daemons: one step of stopping per processing cycle; the delays say when to
// look again.
Task<std::vector<double>> stop_daemons(std::vector<std::shared_ptr<Daemon>> daemons,
                                       StopReason reason) {
    std::vector<double> delays;
    for (const auto& d : daemons) {
        const double now = d->core->loop.now();
        if (!d->stop_started) d->stop_started = now;
        const double age = now - *d->stop_started;
        const auto [backoff, timeout, polling] = cancellation_of(*d);
        if (!d->flag.has(reason)) {
            d->flag.set(reason);
            co_await wait_for_instant_exit(d);
        }
        if (d->done) continue;
        if (backoff && age < *backoff) {
            if (!d->flag.has(StopReason::DAEMON_SIGNALLED)) {
                d->flag.set(StopReason::DAEMON_SIGNALLED);
                d->logger().debug("{} is signalled to exit gracefully.", d->name);
                co_await wait_for_instant_exit(d);
            }
            if (!d->done) delays.push_back(*backoff - age);
        } else if (timeout && age < *timeout + backoff.value_or(0)) {
            if (!d->flag.has(StopReason::DAEMON_CANCELLED)) {
                d->logger().debug("{} is signalled to exit by force.", d->name);
                cancel(*d);
                co_await wait_for_instant_exit(d);
            }
            if (!d->done) delays.push_back(*timeout + backoff.value_or(0) - age);
        } else if (timeout) {
            if (!d->flag.has(StopReason::DAEMON_ABANDONED)) abandon(*d);
        } else {
            d->logger().debug("{} is still exiting. The next check is in {} seconds.", d->name,
                              polling);
            delays.push_back(polling);
        }
    }
    co_return delays;
}

// Kopf's stop_daemon at the operator's exit or pause: all phases in one go.
Task<void> stop_at_exit(std::shared_ptr<Daemon> d,
                        StopReason reason = StopReason::OPERATOR_EXITING) {
    Executor& loop = d->core->loop;
    const auto [backoff, timeout, polling] = cancellation_of(*d);
    d->flag.set(reason);
    co_await wait_for_instant_exit(d);
    if (d->done) {
        d->logger().debug("{} has exited gracefully.", d->name);
        co_return;
    }
    if (backoff) {
        d->flag.set(StopReason::DAEMON_SIGNALLED);
        d->logger().debug("{} is signalled to exit gracefully.", d->name);
        co_await sleep_on(d->exited_flag(), loop, *backoff);
    }
    if (!d->done && timeout) {
        d->logger().debug("{} is signalled to exit by force.", d->name);
        cancel(*d);
        co_await sleep_on(d->exited_flag(), loop, *timeout);
    }
    if (!d->done && !backoff && !timeout)
        co_await sleep_on(d->exited_flag(), loop, HUNG_DAEMON_GRACE);
    if (!d->done) abandon(*d);
}

}  // namespace

// ---- the object's memory ------------------------------------------------------------------

DaemonsMemory::DaemonsMemory(std::shared_ptr<const Resource> resource, std::shared_ptr<Memo> memo,
                             std::shared_ptr<Logger> logger)
    : resource(std::move(resource)), memo(std::move(memo)), logger(std::move(logger)) {}

void DaemonsMemory::set_body(const json& body) {
    if (running.empty()) {
        stale_ = true;
        return;
    }
    refresh(body);
}

void DaemonsMemory::refresh(const json& body) {
    live_text_.clear();
    refresh_in_place(live_, body);
    refreshed();
}

void DaemonsMemory::refreshed() {
    stale_ = false;
    live_views_ = actions::body_views(live_);
    // Daemons on threads take their copies from a snapshot of their own.
    std::shared_ptr<const json> fresh =
        threaded > 0 ? std::make_shared<const json>(live_) : nullptr;
    std::lock_guard lock(mutex_);
    body_ = std::move(fresh);
    ++generation_;
}

std::pair<std::shared_ptr<const json>, unsigned long> DaemonsMemory::body() {
    std::lock_guard lock(mutex_);
    // The first daemon on a thread, or one spawned since: the snapshot is made on the loop.
    if (!body_ && threaded > 0) body_ = std::make_shared<const json>(live_);
    return {body_, generation_};
}

// ---- the engine ---------------------------------------------------------------------------

DaemonsEngine::DaemonsEngine(DaemonsEnv env, const std::vector<SpawningHandler>& handlers)
    : core_(std::make_shared<EngineCore>(std::move(env), handlers)) {}

DaemonsEngine::~DaemonsEngine() {
    core_->closing = true;
    core_->guard->close();
    core_->live.clear();  // the runners of abandoned daemons keep theirs alive
}

bool DaemonsEngine::has_handlers(const Resource& resource) const {
    for (const auto& h : core_->handlers) {
        if (h.spawning->selector.check(resource)) return true;
    }
    return false;
}

bool DaemonsEngine::has_idle_timers(const Resource& resource) const {
    for (const auto& h : core_->handlers) {
        if (h.spawning->idle && h.spawning->selector.check(resource)) return true;
    }
    return false;
}

std::shared_ptr<DaemonsMemory> DaemonsEngine::remember(const Resource& resource,
                                                       std::shared_ptr<Memo> memo,
                                                       std::shared_ptr<Logger> logger) const {
    auto memory = std::make_shared<DaemonsMemory>(core_->shared_resource(resource), std::move(memo),
                                                  std::move(logger));
    memory->idle_reset_time = core_->loop.now();
    return memory;
}

void DaemonsEngine::reset_idle(DaemonsMemory& memory) const {
    memory.idle_reset_time = core_->loop.now();
}

Task<std::vector<double>> DaemonsEngine::process(std::shared_ptr<DaemonsMemory> memory,
                                                 const json& body, bool deletion_ongoing,
                                                 const Context& ctx) {
    if (deletion_ongoing) {
        std::vector<std::shared_ptr<Daemon>> all;
        for (const auto& [id, d] : memory->running) all.push_back(d);
        co_return co_await stop_daemons(std::move(all), StopReason::RESOURCE_DELETED);
    }
    std::set<std::string> matching;
    for (const auto& h : core_->handlers) {
        const auto& id = h.spawning->id;
        if (memory->forever_stopped.count(id)) continue;
        if (!intents::match(*h.spawning, *memory->resource, body, ctx)) continue;
        matching.insert(id);
        // A daemon still stopping counts as running: respawned only once it has exited.
        if (!core_->closing && !core_->paused && !memory->running.count(id)) {
            if (memory->stale_) memory->refresh(body);
            spawn_daemon(core_, h, memory);
        }
    }
    std::vector<std::shared_ptr<Daemon>> mismatching;
    for (const auto& [id, d] : memory->running) {
        if (!matching.count(id)) mismatching.push_back(d);
    }
    if (mismatching.empty()) co_return std::vector<double>();
    co_return co_await stop_daemons(std::move(mismatching), StopReason::FILTERS_MISMATCH);
}

namespace {

// What an event must not change to be only viewed (see adopt_line): anything the daemons'
// filters, the finalizer, the deletion or an idle timer's essence depend on.
bool decides(const clients::InPlaceChanges& changes) {
    const auto outside = [](const std::string& key) {
        return key != "status" && key != "metadata";
    };
    const auto decisive_meta = [](const std::string& key) {
        return key == "*" || key == "labels" || key == "annotations" || key == "finalizers" ||
               key == "deletionTimestamp";
    };
    return std::any_of(changes.top.begin(), changes.top.end(), outside) ||
           std::any_of(changes.metadata.begin(), changes.metadata.end(), decisive_meta);
}

bool being_deleted(const json& views) {
    const auto meta = views.find("metadata");
    if (meta == views.end() || !meta->is_object()) return false;
    const auto deletion = meta->find("deletionTimestamp");
    return deletion != meta->end() && !deletion->is_null();
}

}  // namespace

bool DaemonsEngine::adopt_line(DaemonsMemory& memory, std::string_view line) const {
    if (core_->closing || core_->paused || memory.stale_ || memory.running.empty()) return false;
    std::size_t handlers = 0;
    for (const auto& h : core_->handlers) {
        if (!h.spawning->selector.check(*memory.resource)) continue;
        ++handlers;
        if (!intents::filters_read_only_metadata(*h.spawning)) return false;
        const auto running = memory.running.find(h.spawning->id);
        if (running == memory.running.end() || running->second->flag.is_set()) return false;
    }
    if (handlers != memory.running.size()) return false;
    clients::InPlaceChanges changes;
    try {
        changes = clients::parse_event_object_in_place(line, memory.live_, BODY_VIEWS, META_VIEWS,
                                                       &memory.live_text_);
    } catch (const std::invalid_argument&) {
        // The views as they were: the rollback puts back the very nodes and strings, so the
        // kept views (live_views_) still point at them. The event's own reading reports it.
        return false;
    }
    // The parse empties the views rather than erasing them; only a metadata (or object)
    // replaced as a whole can lose some, and that always decides.
    const bool decisive = decides(changes);
    if (decisive) {
        ensure_views(memory.live_);
        memory.live_text_.clear();
    }
    memory.refreshed();
    return !decisive && !being_deleted(memory.live_);
}

bool DaemonsEngine::requires_finalizer(const DaemonsMemory& memory, const json& body,
                                       const Context& ctx) const {
    for (const auto& h : core_->handlers) {
        if (!h.spawning->requires_finalizer || memory.forever_stopped.count(h.spawning->id))
            continue;
        if (intents::match(*h.spawning, *memory.resource, body, ctx)) return true;
    }
    return false;
}

void DaemonsEngine::stop_all(std::function<void()> finished) {
    core_->closing = true;
    std::vector<std::shared_ptr<Daemon>> daemons;
    for (const auto& [ptr, d] : core_->live) daemons.push_back(d);
    if (daemons.empty()) {
        finished();
        return;
    }
    auto remaining = std::make_shared<std::size_t>(daemons.size());
    auto done = std::make_shared<std::function<void()>>(std::move(finished));
    for (const auto& d : daemons) {
        kopf::start_detached(core_->loop, stop_at_exit(d), [remaining, done](std::exception_ptr) {
            if (--*remaining == 0) (*done)();
        });
    }
}

void DaemonsEngine::pause(bool paused) {
    if (core_->paused == paused) return;
    core_->paused = paused;
    if (!paused || core_->closing) return;
    std::vector<std::shared_ptr<Daemon>> daemons;
    for (const auto& [ptr, d] : core_->live) daemons.push_back(d);
    for (const auto& d : daemons) {
        kopf::start_detached(core_->loop, stop_at_exit(d, StopReason::OPERATOR_PAUSING),
                             [](std::exception_ptr) {});
    }
}

std::size_t DaemonsEngine::running() const {
    return core_->live.size();
}

std::size_t DaemonsEngine::running_timers() const {
    return static_cast<std::size_t>(
        std::count_if(core_->live.begin(), core_->live.end(),
                      [](const auto& entry) { return !entry.second->is_daemon(); }));
}

std::size_t DaemonsEngine::abandoned() const {
    return core_->abandoned;
}

std::size_t daemon_threads_running() {
    return threads_running.load();
}

}  // namespace kopf::engines
