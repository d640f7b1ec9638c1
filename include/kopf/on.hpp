// Registration of handlers, reading like Kopf's decorators.
//
//     kopf::json create_fn(kopf::Context& ctx) { return {{"message", "hello world"}}; }
//     KOPF_ON_CREATE(create_fn, "kopfexamples", {.retries = 3});   // id "create_fn"
//
//     // or with an explicit id, at namespace scope or inside startup code:
//     static kopf::on::update reg("kopf.dev", "v1", "kopfexamples", {.id = "upd", .field = "spec"},
//                                 [](kopf::Context& ctx) { ctx.logger.info("{}", ctx.diff); });
//
// The default id of a handler is the function's name when registered with the KOPF_ON_*
// macros (Kopf's default: the function's qualified name), else "lambda:<file>:<line>".
// The id names the persisted annotations (kopf.zalando.org/<id>): keep it stable.
#pragma once

#include <initializer_list>
#include <kopf/registry.hpp>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace kopf {

namespace detail {

/// The name given by a KOPF_ON_* macro (the default id).
struct Named {
    const char* name;
};

enum class ChangingKind { CREATE, UPDATE, DELETE, RESUME, FIELD };

void register_changing(Registry& registry, ChangingKind kind, Selector selector,
                       HandlerOptions options, Callable fn, std::string default_id);
void register_watching(Registry& registry, Selector selector, HandlerOptions options, Callable fn,
                       std::string default_id);
void register_activity(Registry& registry, std::string activity, ActivityOptions options,
                       std::function<Task<void>(ActivityContext&)> fn, std::string default_id);
void register_login(Registry& registry, ActivityOptions options,
                    std::function<Task<std::shared_ptr<ConnectionInfo>>(ActivityContext&)> fn,
                    std::string default_id);
void register_daemon(Registry& registry, Selector selector, DaemonOptions options, Callable fn,
                     std::string default_id);
void register_timer(Registry& registry, Selector selector, TimerOptions options, Callable fn,
                    std::string default_id);
void add_subhandler(Context& ctx, HandlerOptions options, Callable fn, std::string default_id);

/// An index handler callable: synchronous or a coroutine.
struct IndexCallable {
    std::function<IndexEntries(Context&)> sync;
    std::function<Task<IndexEntries>(Context&)> async;
};
void register_index(Registry& registry, Selector selector, IndexOptions options, IndexCallable fn,
                    std::string default_id);
void register_webhook(Registry& registry, WebhookType type, Selector selector,
                      AdmissionOptions options, AdmissionCallable fn, std::string default_id);
void register_probe(Registry& registry, ActivityOptions options,
                    std::function<Task<json>(ActivityContext&)> fn, std::string default_id);

/// Adapt `json/IndexEntries/T(Context&)` and `Task<json>/Task<IndexEntries>(Context&)`;
/// std::optional results: empty = nothing to index.
template <class F>
IndexCallable make_index_callable(F fn) {
    if constexpr (!std::is_invocable_v<F&, Context&>) {
        static_assert(
            std::is_invocable_v<F&, Context&>,
            "An index handler is called as fn(kopf::Context& ctx), with no other parameter, "
            "and returns what goes into the index (kopf::IndexEntries, a value "
            "convertible to kopf::json, an std::optional of one) or a kopf::Task of it.");
        return IndexCallable{};
    } else {
        using R = std::invoke_result_t<F&, Context&>;
        IndexCallable c;
        if constexpr (std::is_same_v<R, Task<IndexEntries>>) {
            c.async = std::move(fn);
        } else if constexpr (std::is_same_v<R, Task<json>>) {
            c.async = [fn = std::move(fn)](Context& ctx) -> Task<IndexEntries> {
                json result = co_await fn(ctx);
                co_return IndexEntries(std::move(result));
            };
        } else if constexpr (std::is_same_v<R, IndexEntries>) {
            c.sync = std::move(fn);
        } else {
            static_assert(!std::is_void_v<R>, "An index handler returns what goes into the index.");
            c.sync = [fn = std::move(fn)](Context& ctx) -> IndexEntries {
                auto result = fn(ctx);
                if constexpr (requires {
                                  result.has_value();
                                  *result;
                              }) {
                    if (!result.has_value()) return IndexEntries();
                    return IndexEntries(json(std::move(*result)));
                } else {
                    return IndexEntries(json(std::move(result)));
                }
            };
        }
        return c;
    }
}

/// Adapt a probe: `json/T(ActivityContext&)` (on the worker pool) or `Task<json>` (loop).
template <class F>
std::function<Task<json>(ActivityContext&)> make_probe_callable(F fn) {
    if constexpr (!std::is_invocable_v<F&, ActivityContext&>) {
        static_assert(
            std::is_invocable_v<F&, ActivityContext&>,
            "A probe is called as fn(kopf::ActivityContext& ctx), with no other parameter, "
            "and returns a value convertible to kopf::json or kopf::Task<kopf::json>.");
        return std::function<Task<json>(ActivityContext&)>{};
    } else {
        using R = std::invoke_result_t<F&, ActivityContext&>;
        if constexpr (std::is_same_v<R, Task<json>>) {
            return fn;
        } else {
            static_assert(!std::is_void_v<R>,
                          "A probe returns what the liveness endpoint reports.");
            return [fn = std::move(fn)](ActivityContext& ctx) -> Task<json> {
                auto call = [&fn, &ctx] { return json(fn(ctx)); };
                co_return co_await kopf::run_blocking(std::move(call));
            };
        }
    }
}

template <ChangingKind K>
struct ChangingRegistration {
    template <class F>
    ChangingRegistration(Registry& r, Selector s, HandlerOptions o, F fn,
                         std::source_location loc = std::source_location::current()) {
        register_changing(r, K, std::move(s), std::move(o), make_callable(std::move(fn)),
                          location_id(loc));
    }
    template <class F>
    ChangingRegistration(Selector s, HandlerOptions o, F fn,
                         std::source_location loc = std::source_location::current()) {
        register_changing(Registry::default_registry(), K, std::move(s), std::move(o),
                          make_callable(std::move(fn)), location_id(loc));
    }
    template <class F>
    ChangingRegistration(const std::string& g, const std::string& n, HandlerOptions o, F fn,
                         std::source_location loc = std::source_location::current())
        : ChangingRegistration(Selector(g, n), std::move(o), std::move(fn), loc) {}
    template <class F>
    ChangingRegistration(const std::string& g, const std::string& v, const std::string& n,
                         HandlerOptions o, F fn,
                         std::source_location loc = std::source_location::current())
        : ChangingRegistration(Selector(g, v, n), std::move(o), std::move(fn), loc) {}
    template <class F>
    ChangingRegistration(Selector s, F fn,
                         std::source_location loc = std::source_location::current())
        : ChangingRegistration(std::move(s), HandlerOptions{}, std::move(fn), loc) {}
    // Macro forms: the function name is the default id.
    template <class F>
    ChangingRegistration(Named n, Selector s, HandlerOptions o, F fn) {
        register_changing(Registry::default_registry(), K, std::move(s), std::move(o),
                          make_callable(std::move(fn)), n.name);
    }
    template <class F>
    ChangingRegistration(Named n, Selector s, F fn)
        : ChangingRegistration(n, std::move(s), HandlerOptions{}, std::move(fn)) {}
};

/// Registration of daemons and timers: `Register` is register_daemon or register_timer.
template <class Options, void (*Register)(Registry&, Selector, Options, Callable, std::string)>
struct SpawningRegistration {
    template <class F>
    SpawningRegistration(Registry& r, Selector s, Options o, F fn,
                         std::source_location loc = std::source_location::current()) {
        Register(r, std::move(s), std::move(o), make_callable(std::move(fn)), location_id(loc));
    }
    template <class F>
    SpawningRegistration(Selector s, Options o, F fn,
                         std::source_location loc = std::source_location::current())
        : SpawningRegistration(Registry::default_registry(), std::move(s), std::move(o),
                               std::move(fn), loc) {}
    template <class F>
    SpawningRegistration(Selector s, F fn,
                         std::source_location loc = std::source_location::current())
        : SpawningRegistration(std::move(s), Options{}, std::move(fn), loc) {}
    template <class F>
    SpawningRegistration(Named n, Selector s, Options o, F fn) {
        Register(Registry::default_registry(), std::move(s), std::move(o),
                 make_callable(std::move(fn)), n.name);
    }
    template <class F>
    SpawningRegistration(Named n, Selector s, F fn)
        : SpawningRegistration(n, std::move(s), Options{}, std::move(fn)) {}
};

/// Registration of validating and mutating handlers.
template <WebhookType T>
struct WebhookRegistration {
    template <class F>
    WebhookRegistration(Registry& r, Selector s, AdmissionOptions o, F fn,
                        std::source_location loc = std::source_location::current()) {
        register_webhook(r, T, std::move(s), std::move(o), make_admission_callable(std::move(fn)),
                         location_id(loc));
    }
    template <class F>
    WebhookRegistration(Selector s, AdmissionOptions o, F fn,
                        std::source_location loc = std::source_location::current())
        : WebhookRegistration(Registry::default_registry(), std::move(s), std::move(o),
                              std::move(fn), loc) {}
    template <class F>
    WebhookRegistration(Selector s, F fn,
                        std::source_location loc = std::source_location::current())
        : WebhookRegistration(std::move(s), AdmissionOptions{}, std::move(fn), loc) {}
    template <class F>
    WebhookRegistration(Named n, Selector s, AdmissionOptions o, F fn) {
        register_webhook(Registry::default_registry(), T, std::move(s), std::move(o),
                         make_admission_callable(std::move(fn)), n.name);
    }
    template <class F>
    WebhookRegistration(Named n, Selector s, F fn)
        : WebhookRegistration(n, std::move(s), AdmissionOptions{}, std::move(fn)) {}
};

}  // namespace detail

namespace on {

/// A validating admission handler (kopf/admission.hpp): throw kopf::AdmissionError to reject.
///
///     void check(kopf::AdmissionContext& ctx) {
///         if (ctx.spec.value("field", "") == "wrong") throw kopf::AdmissionError("No!", 400);
///     }
///     KOPF_VALIDATE(check, "kopfexamples", {.operations = {"CREATE"}});
using validate = detail::WebhookRegistration<WebhookType::VALIDATING>;
/// A mutating admission handler (kopf/admission.hpp): changes the object through `ctx.patch`.
///
///     void defaults(kopf::AdmissionContext& ctx) { ctx.patch.spec()["field"] = "default"; }
///     KOPF_MUTATE(defaults, "kopfexamples");
using mutate = detail::WebhookRegistration<WebhookType::MUTATING>;

/// A daemon: runs alongside each matching object from when it is first seen until it is
/// deleted, stops matching, or the operator exits (see kopf/stopped.hpp for `ctx.stopped`).
/// Synchronous daemons run on threads of their own, coroutine daemons on the event loop.
///
///     void monitor(kopf::Context& ctx) {
///         while (!ctx.stopped) ctx.stopped.wait(10);
///     }
///     KOPF_DAEMON(monitor, "kopfexamples", {.cancellation_timeout = 1.0});
using daemon = detail::SpawningRegistration<DaemonOptions, detail::register_daemon>;
/// A timer: runs every `interval` seconds for each matching object (synchronous timers on the
/// worker pool, coroutine timers on the loop); never concurrently with itself.
///
///     kopf::json ping(kopf::Context& ctx) { return ctx.spec["field"]; }
///     KOPF_TIMER(ping, "kopfexamples", {.interval = 10, .idle = 60});
using timer = detail::SpawningRegistration<TimerOptions, detail::register_timer>;

/// An index handler: what it returns for each object of the resource goes into the index named
/// by its id (kopf/index.hpp), before any other handler sees the object's event. No handler of
/// any resource runs until the indexed resources are listed and indexed.
///
///     kopf::json by_namespace(kopf::Context& ctx) { return {{ctx.namespace_, ctx.name}}; }
///     KOPF_INDEX(by_namespace, "pods");
struct index {
    template <class F>
    index(Registry& r, Selector s, IndexOptions o, F fn,
          std::source_location loc = std::source_location::current()) {
        detail::register_index(r, std::move(s), std::move(o),
                               detail::make_index_callable(std::move(fn)),
                               detail::location_id(loc));
    }
    template <class F>
    index(Selector s, IndexOptions o, F fn,
          std::source_location loc = std::source_location::current())
        : index(Registry::default_registry(), std::move(s), std::move(o), std::move(fn), loc) {}
    template <class F>
    index(Selector s, F fn, std::source_location loc = std::source_location::current())
        : index(Registry::default_registry(), std::move(s), IndexOptions{}, std::move(fn), loc) {}
    template <class F>
    index(detail::Named n, Selector s, IndexOptions o, F fn) {
        detail::register_index(Registry::default_registry(), std::move(s), std::move(o),
                               detail::make_index_callable(std::move(fn)), n.name);
    }
    template <class F>
    index(detail::Named n, Selector s, F fn)
        : index(n, std::move(s), IndexOptions{}, std::move(fn)) {}
};

/// A probe handler: its result is reported under its id by the liveness endpoint
/// (`kopf run --liveness`), cached for 10 seconds.
///
///     kopf::json pod_count(kopf::ActivityContext& ctx) { return ctx.index("pods").size(); }
///     KOPF_ON_PROBE(pod_count, {});
struct probe {
    template <class F>
    probe(Registry& r, ActivityOptions o, F fn,
          std::source_location loc = std::source_location::current()) {
        detail::register_probe(r, std::move(o), detail::make_probe_callable(std::move(fn)),
                               detail::location_id(loc));
    }
    template <class F>
    probe(ActivityOptions o, F fn, std::source_location loc = std::source_location::current())
        : probe(Registry::default_registry(), std::move(o), std::move(fn), loc) {}
    template <class F>
    probe(detail::Named n, ActivityOptions o, F fn) {
        detail::register_probe(Registry::default_registry(), std::move(o),
                               detail::make_probe_callable(std::move(fn)), n.name);
    }
    template <class F>
    probe(detail::Named n, F fn) : probe(n, ActivityOptions{}, std::move(fn)) {}
};

/// Creation of an object (no diff base yet).
using create = detail::ChangingRegistration<detail::ChangingKind::CREATE>;
/// Essential changes of an object (per the diff base).
using update = detail::ChangingRegistration<detail::ChangingKind::UPDATE>;
/// Deletion (adds a finalizer unless `.optional = true`).
using delete_ = detail::ChangingRegistration<detail::ChangingKind::DELETE>;
/// Objects seen at operator startup (mixed into other causes; `.deleted = true` for deleted ones).
using resume = detail::ChangingRegistration<detail::ChangingKind::RESUME>;
/// Changes of `.field` in any cause (creation included).
using field = detail::ChangingRegistration<detail::ChangingKind::FIELD>;

/// Raw watch events (no persistence; errors are ignored).
struct event {
    template <class F>
    event(Registry& r, Selector s, HandlerOptions o, F fn,
          std::source_location loc = std::source_location::current()) {
        detail::register_watching(r, std::move(s), std::move(o), make_callable(std::move(fn)),
                                  detail::location_id(loc));
    }
    template <class F>
    event(Selector s, HandlerOptions o, F fn,
          std::source_location loc = std::source_location::current())
        : event(Registry::default_registry(), std::move(s), std::move(o), std::move(fn), loc) {}
    template <class F>
    event(Selector s, F fn, std::source_location loc = std::source_location::current())
        : event(Registry::default_registry(), std::move(s), HandlerOptions{}, std::move(fn), loc) {}
    template <class F>
    event(detail::Named n, Selector s, HandlerOptions o, F fn) {
        detail::register_watching(Registry::default_registry(), std::move(s), std::move(o),
                                  make_callable(std::move(fn)), n.name);
    }
    template <class F>
    event(detail::Named n, Selector s, F fn)
        : event(n, std::move(s), HandlerOptions{}, std::move(fn)) {}
};

namespace detail_activity {
template <class F>
std::function<Task<void>(ActivityContext&)> adapt(F fn) {
    if constexpr (!std::is_invocable_v<F&, ActivityContext&>) {
        static_assert(
            std::is_invocable_v<F&, ActivityContext&>,
            "A startup or cleanup handler is called as fn(kopf::ActivityContext& ctx), with no "
            "other parameter, and returns void or kopf::Task<void>.");
        return std::function<Task<void>(ActivityContext&)>{};
    } else {
        using R = std::invoke_result_t<F&, ActivityContext&>;
        if constexpr (std::is_same_v<R, Task<void>>) {
            return fn;
        } else {
            // On the worker pool, as in Kopf: a blocking startup or cleanup handler (an API call
            // with .wait(), say) must not hold the loop that answers it.
            return [fn = std::move(fn)](ActivityContext& ctx) -> Task<void> {
                auto call = [&fn, &ctx] { fn(ctx); };
                co_await kopf::run_blocking(std::move(call));
            };
        }
    }
}
}  // namespace detail_activity

/// An activity handler registration (startup, cleanup).
template <const char* Activity>
struct activity {
    template <class F>
    activity(Registry& r, ActivityOptions o, F fn,
             std::source_location loc = std::source_location::current()) {
        kopf::detail::register_activity(r, Activity, std::move(o),
                                        detail_activity::adapt(std::move(fn)),
                                        kopf::detail::location_id(loc));
    }
    template <class F>
    activity(ActivityOptions o, F fn, std::source_location loc = std::source_location::current())
        : activity(Registry::default_registry(), std::move(o), std::move(fn), loc) {}
    template <class F>
    activity(kopf::detail::Named n, ActivityOptions o, F fn) {
        kopf::detail::register_activity(Registry::default_registry(), Activity, std::move(o),
                                        detail_activity::adapt(std::move(fn)), n.name);
    }
    template <class F>
    activity(kopf::detail::Named n, F fn) : activity(n, ActivityOptions{}, std::move(fn)) {}
};
inline constexpr char startup_name[] = "startup";
inline constexpr char cleanup_name[] = "cleanup";
/// Operator startup (may modify ctx.settings and ctx.memo).
using startup = activity<startup_name>;
/// Operator exit.
using cleanup = activity<cleanup_name>;

/// Authentication: return credentials (`std::optional<kopf::ConnectionInfo>` or a shared_ptr;
/// empty = let the next login handler try), or a `kopf::Task` of them from a coroutine. Every
/// login handler's credentials go to the vault; the highest `.priority` is used first, and
/// when the API server refuses it (401), the next one, until none is left and the login
/// handlers run again.
///
///     std::optional<kopf::ConnectionInfo> login_fn(kopf::ActivityContext&) {
///         return kopf::login_with_kubeconfig();
///     }
///     KOPF_ON_LOGIN(login_fn, {});
struct login {
    using Fn = std::function<Task<std::shared_ptr<ConnectionInfo>>(ActivityContext&)>;
    template <class R>
    static std::shared_ptr<ConnectionInfo> shared(R result) {
        if constexpr (std::is_same_v<R, std::shared_ptr<ConnectionInfo>>) {
            return result;
        } else {
            if (!result) return nullptr;
            return std::make_shared<std::decay_t<decltype(*result)>>(std::move(*result));
        }
    }
    template <class F>
    static Fn adapt(F fn) {
        if constexpr (!std::is_invocable_v<F&, ActivityContext&>) {
            static_assert(
                std::is_invocable_v<F&, ActivityContext&>,
                "A login handler is called as fn(kopf::ActivityContext& ctx), with no other "
                "parameter, and returns std::optional<kopf::ConnectionInfo> or "
                "std::shared_ptr<kopf::ConnectionInfo>, or a kopf::Task of either.");
            return Fn{};
        } else {
            using R = std::invoke_result_t<F&, ActivityContext&>;
            if constexpr (requires(R task) { task.await_resume(); }) {
                // A coroutine: on the operator's loop.
                return [fn = std::move(fn)](
                           ActivityContext& ctx) -> Task<std::shared_ptr<ConnectionInfo>> {
                    auto logging_in = fn(ctx);
                    co_return shared(co_await std::move(logging_in));
                };
            } else {
                // On the worker pool, as other synchronous activity handlers (it may block).
                return [fn = std::move(fn)](
                           ActivityContext& ctx) -> Task<std::shared_ptr<ConnectionInfo>> {
                    std::shared_ptr<ConnectionInfo> info;
                    auto call = [&fn, &ctx, &info] { info = shared(fn(ctx)); };
                    co_await kopf::run_blocking(std::move(call));
                    co_return info;
                };
            }
        }
    }
    template <class F>
    login(Registry& r, ActivityOptions o, F fn,
          std::source_location loc = std::source_location::current()) {
        kopf::detail::register_login(r, std::move(o), adapt(std::move(fn)),
                                     kopf::detail::location_id(loc));
    }
    template <class F>
    login(ActivityOptions o, F fn, std::source_location loc = std::source_location::current())
        : login(Registry::default_registry(), std::move(o), std::move(fn), loc) {}
    template <class F>
    login(kopf::detail::Named n, ActivityOptions o, F fn) {
        kopf::detail::register_login(Registry::default_registry(), std::move(o),
                                     adapt(std::move(fn)), n.name);
    }
    template <class F>
    login(kopf::detail::Named n, F fn) : login(n, ActivityOptions{}, std::move(fn)) {}
};

}  // namespace on

/// Kopf's `@kopf.daemon`, `@kopf.timer` and `@kopf.index` spellings.
using daemon = on::daemon;
using timer = on::timer;
using index = on::index;

/// Declare a sub-handler of the running handler (id "<parent>/<id>"); it runs after the parent
/// returns, with its own progress and retries; the parent finishes when all children do.
///
///     for (auto& item : ctx.spec["items"])
///         kopf::subhandler(ctx, {.id = item.get<std::string>()}, [item](kopf::Context& c) { ...
///         });
template <class F>
void subhandler(Context& ctx, HandlerOptions options, F fn,
                std::source_location loc = std::source_location::current()) {
    detail::add_subhandler(ctx, std::move(options), make_callable(std::move(fn)),
                           detail::location_id(loc));
}

/// Same as subhandler(), Kopf's `kopf.register(fn, id=...)` form.
template <class F>
void register_(Context& ctx, F fn, HandlerOptions options = {},
               std::source_location loc = std::source_location::current()) {
    subhandler(ctx, std::move(options), std::move(fn), loc);
}

/// One function for kopf::execute(): the sub-handler's id and any handler function.
struct SubhandlerFn {
    std::string id;
    Callable fn;
    template <class F>
    SubhandlerFn(std::string id, F fn) : id(std::move(id)), fn(make_callable(std::move(fn))) {}
};

namespace detail {
Task<void> execute(Context& ctx, std::vector<SubhandlerFn> fns);
}  // namespace detail

/// Kopf's `await kopf.execute(fns={...})`, in a coroutine handler: runs the functions now, in
/// place, as sub-handlers "<parent>/<id>" with their own progress and retries. It returns once
/// all of them are done; while some are not, it throws (as Kopf's does), the rest of the
/// parent does not run, and the parent is retried later — the sub-handlers that succeeded are
/// not run again. Name the list first: temporaries inside a `co_await` are unsafe with g++ 12
/// (see kopf/task.hpp), so a braced list in the call does not compile.
///
///     std::vector<kopf::SubhandlerFn> steps = {{"volume", make_volume}, {"pod", make_pod}};
///     co_await kopf::execute(ctx, steps);
///     ctx.logger.info("Both are there.");
///
/// Synchronous handlers declare sub-handlers with kopf::subhandler(), which run after them.
inline Task<void> execute(Context& ctx, std::vector<SubhandlerFn>& fns) {
    return detail::execute(ctx, fns);
}

}  // namespace kopf

#define KOPF_DETAIL_CONCAT2(a, b) a##b
#define KOPF_DETAIL_CONCAT(a, b) KOPF_DETAIL_CONCAT2(a, b)
#define KOPF_DETAIL_REGISTER(kind, fn, ...)                                     \
    static const kind KOPF_DETAIL_CONCAT(kopf_registration_##fn##_, __LINE__) { \
        ::kopf::detail::Named{#fn} __VA_OPT__(, ) __VA_ARGS__, fn               \
    }

/// `KOPF_ON_CREATE(fn, "kopfexamples", {.retries = 3});` — id defaults to "fn".
#define KOPF_ON_CREATE(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::create, fn, __VA_ARGS__)
#define KOPF_ON_UPDATE(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::update, fn, __VA_ARGS__)
#define KOPF_ON_DELETE(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::delete_, fn, __VA_ARGS__)
#define KOPF_ON_RESUME(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::resume, fn, __VA_ARGS__)
#define KOPF_ON_FIELD(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::field, fn, __VA_ARGS__)
#define KOPF_ON_EVENT(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::event, fn, __VA_ARGS__)
#define KOPF_ON_STARTUP(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::startup, fn, __VA_ARGS__)
#define KOPF_ON_CLEANUP(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::cleanup, fn, __VA_ARGS__)
/// `KOPF_DAEMON(fn, "kopfexamples", {.cancellation_timeout = 1.0});` — id defaults to "fn".
#define KOPF_DAEMON(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::daemon, fn, __VA_ARGS__)
/// `KOPF_TIMER(fn, "kopfexamples", {.interval = 10});` — id defaults to "fn".
#define KOPF_TIMER(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::timer, fn, __VA_ARGS__)
#define KOPF_ON_DAEMON(fn, ...) KOPF_DAEMON(fn, __VA_ARGS__)
#define KOPF_ON_TIMER(fn, ...) KOPF_TIMER(fn, __VA_ARGS__)
/// `KOPF_INDEX(fn, "pods");` — the index is named "fn" (or by `.id`).
#define KOPF_INDEX(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::index, fn, __VA_ARGS__)
#define KOPF_ON_INDEX(fn, ...) KOPF_INDEX(fn, __VA_ARGS__)
/// `KOPF_ON_PROBE(fn);` — reported under "fn" (or `.id`) by the liveness endpoint.
#define KOPF_ON_PROBE(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::probe, fn, __VA_ARGS__)
#define KOPF_PROBE(fn, ...) KOPF_ON_PROBE(fn, __VA_ARGS__)
/// `KOPF_VALIDATE(fn, "kopfexamples", {.operations = {"CREATE"}});` — id defaults to "fn".
#define KOPF_VALIDATE(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::validate, fn, __VA_ARGS__)
#define KOPF_ON_VALIDATE(fn, ...) KOPF_VALIDATE(fn, __VA_ARGS__)
/// `KOPF_MUTATE(fn, "kopfexamples", {});` — id defaults to "fn".
#define KOPF_MUTATE(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::mutate, fn, __VA_ARGS__)
#define KOPF_ON_MUTATE(fn, ...) KOPF_MUTATE(fn, __VA_ARGS__)
#define KOPF_ON_LOGIN(fn, ...) KOPF_DETAIL_REGISTER(::kopf::on::login, fn, __VA_ARGS__)
