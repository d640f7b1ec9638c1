// Handler declarations and registries. The default registry collects namespace-scope
// registrations; explicit registries serve embedding and tests.
#pragma once

#include <functional>
#include <kopf/admission.hpp>
#include <kopf/context.hpp>
#include <kopf/errors.hpp>
#include <kopf/filters.hpp>
#include <kopf/index.hpp>
#include <kopf/json.hpp>
#include <kopf/resource.hpp>
#include <kopf/stopped.hpp>
#include <kopf/task.hpp>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

namespace kopf {

struct OperatorSettings;
struct ConnectionInfo;  // include/kopf/connection.hpp

/// Options of resource handlers, in the order of Kopf's decorator arguments.
/// Use designated initialisers: `{.id = "x", .retries = 3, .timeout = 60}`.
struct HandlerOptions {
    std::string id{};  ///< default: the function name (macros) or "lambda:file:line"
    json param{};      ///< passed to the handler as ctx.param
    std::optional<ErrorsMode> errors{};  ///< default: TEMPORARY (IGNORED for event handlers)
    std::optional<double> timeout{};     ///< seconds since the first attempt
    std::optional<int> retries{};        ///< max attempts
    std::optional<double> backoff{};     ///< seconds between attempts (default: settings)
    MetaFilter labels{};
    MetaFilter annotations{};
    WhenFilter when{};
    std::string field{};    ///< dotted path, e.g. "spec.size"
    ValueFilter value{};    ///< criterion for the field's value
    ValueFilter old{};      ///< criterion for the field's old value (update/field)
    ValueFilter new_{};     ///< criterion for the field's new value (update/field)
    bool deleted = false;   ///< resume: also on objects being deleted
    bool optional = false;  ///< delete: do not add a finalizer for this handler
};

/// Options of activity handlers (startup, cleanup, login).
struct ActivityOptions {
    std::string id{};
    json param{};
    std::optional<ErrorsMode> errors{};
    std::optional<double> timeout{};
    std::optional<int> retries{};
    std::optional<double> backoff{};
};

/// A handler callable: synchronous (run on the worker pool) or a coroutine (run on the loop).
struct Callable {
    std::function<json(Context&)> sync;
    std::function<Task<json>(Context&)> async;
    explicit operator bool() const { return sync || async; }
};

/// Adapt `void/json/T(Context&)` and `Task<json>/Task<void>(Context&)` functions.
template <class F>
Callable make_callable(F fn) {
    // One readable message instead of pages of template errors (a new user's first mistake).
    if constexpr (!std::is_invocable_v<F&, Context&>) {
        static_assert(std::is_invocable_v<F&, Context&>,
                      "A handler is called as fn(kopf::Context& ctx), with no other parameter, "
                      "and returns void, anything convertible to kopf::json, kopf::Task<void> or "
                      "kopf::Task<kopf::json>.");
        return Callable{};
    } else {
        using R = std::invoke_result_t<F&, Context&>;
        Callable c;
        if constexpr (std::is_same_v<R, Task<json>>) {
            c.async = std::move(fn);
        } else if constexpr (std::is_same_v<R, Task<void>>) {
            c.async = [fn = std::move(fn)](Context& ctx) -> Task<json> {
                co_await fn(ctx);
                co_return json();
            };
        } else if constexpr (std::is_void_v<R>) {
            c.sync = [fn = std::move(fn)](Context& ctx) -> json {
                fn(ctx);
                return json();
            };
        } else if constexpr (std::is_constructible_v<json, R>) {
            c.sync = [fn = std::move(fn)](Context& ctx) -> json { return json(fn(ctx)); };
        } else {
            static_assert(std::is_constructible_v<json, R>,
                          "A handler's result is stored in the object's status: return void or "
                          "something convertible to kopf::json.");
        }
        return c;
    }
}

/// A resource-changing handler (create, update, delete, resume, field, sub-handlers).
struct ChangingHandler {
    std::string id{};
    Callable fn{};
    Selector selector{};
    bool has_selector = true;             ///< sub-handlers have none
    std::optional<std::string> reason{};  ///< "create", "update", "delete"; none = any cause
    std::vector<std::string> field{};     ///< parsed `field`
    HandlerOptions options{};
    bool initial = false;  ///< resume handlers
    bool requires_finalizer = false;
    bool field_needs_change = false;
};

/// An `on::event` handler: raw watch events, no persistence, errors ignored.
struct WatchingHandler {
    std::string id{};
    Callable fn{};
    Selector selector{};
    HandlerOptions options{};
    std::vector<std::string> field{};
};

/// When a daemon first starts or a timer first runs after it is spawned (Kopf's
/// `initial_delay`): seconds or a std::chrono duration, or a function of the handler's context
/// that returns them — called on the operator's loop each time the daemon or timer is spawned,
/// with the context its handler would get then (body, spec, memo, param...):
///
///     KOPF_TIMER(ping, "kopfexamples", {.interval = 60,
///                                       .initial_delay = [](kopf::Context& ctx) {
///                                           return ctx.spec.value("warmup", 0.0);
///                                       }});
///
/// A negative result means no delay.
class InitialDelay {
  public:
    using Function = std::function<Seconds(Context&)>;
    InitialDelay() = default;
    InitialDelay(double seconds) : seconds_(seconds) {}  // NOLINT: implicit by design
    template <class Rep, class Period>
    InitialDelay(std::chrono::duration<Rep, Period> d)  // NOLINT: implicit by design
        : seconds_(Seconds(d)) {}
    template <class F>
    requires(!std::is_arithmetic_v<std::decay_t<F>> &&
             std::is_invocable_r_v<Seconds, std::decay_t<F>&, Context&>) InitialDelay(F fn)
        : fn_(std::move(fn)) {}  // NOLINT: implicit by design

    /// The fixed delay (0 for a function).
    double seconds() const { return seconds_.value; }
    /// The function, if it is one.
    const Function& function() const { return fn_; }

  private:
    Seconds seconds_{};
    Function fn_{};
};

/// Options of `kopf::on::daemon`, in the order of Kopf's decorator arguments. Durations are
/// seconds or std::chrono durations: `{.initial_delay = 30, .cancellation_timeout = 1.5s}`.
struct DaemonOptions {
    std::string id{};
    json param{};
    std::optional<ErrorsMode> errors{};  ///< default: TEMPORARY (restart after backoff)
    std::optional<Seconds> timeout{};
    std::optional<int> retries{};
    std::optional<Seconds> backoff{};             ///< default: settings.execution.default_backoff
    std::optional<InitialDelay> initial_delay{};  ///< before the first start (see InitialDelay)
    /// Stopping: the flag is set at once; after cancellation_backoff, a coroutine daemon is
    /// cancelled (kopf::CancelledError); after cancellation_timeout more, the daemon is
    /// abandoned. Without a timeout, the framework waits forever (polling its exit).
    std::optional<Seconds> cancellation_backoff{};
    std::optional<Seconds> cancellation_timeout{};
    std::optional<Seconds> cancellation_polling{};  ///< default: settings.background
    MetaFilter labels{};
    MetaFilter annotations{};
    WhenFilter when{};
    std::string field{};
    ValueFilter value{};
};

/// Options of `kopf::on::timer`, in the order of Kopf's decorator arguments.
struct TimerOptions {
    std::string id{};
    json param{};
    std::optional<ErrorsMode> errors{};
    std::optional<Seconds> timeout{};
    std::optional<int> retries{};
    std::optional<Seconds> backoff{};
    std::optional<Seconds> interval{};            ///< between the end of a run and the next start
    std::optional<InitialDelay> initial_delay{};  ///< before the first run (see InitialDelay)
    bool sharp = false;                           ///< interval between starts, not end to start
    std::optional<Seconds> idle{};                ///< run only after no change for this long
    MetaFilter labels{};
    MetaFilter annotations{};
    WhenFilter when{};
    std::string field{};
    ValueFilter value{};
};

/// Options of `kopf::on::index`, in the order of Kopf's decorator arguments. Errors are ignored
/// by default (logged; the object's previous entries stay until the handler succeeds).
struct IndexOptions {
    std::string id{};  ///< the index's name; default: the function name
    json param{};
    std::optional<ErrorsMode> errors{};  ///< default: IGNORED
    std::optional<Seconds> timeout{};
    std::optional<int> retries{};
    std::optional<Seconds> backoff{};  ///< TEMPORARY errors: retried after it
    MetaFilter labels{};
    MetaFilter annotations{};
    WhenFilter when{};
    std::string field{};
    ValueFilter value{};
};

/// An index handler: synchronous ones run on the event loop as events arrive (keep them
/// quick: no blocking calls), coroutines on the loop too.
struct IndexingHandler {
    std::string id{};
    std::function<IndexEntries(Context&)> sync;
    std::function<Task<IndexEntries>(Context&)> async;
    Selector selector{};
    std::vector<std::string> field{};  ///< parsed `field`
    /// The options shared with other handlers (id, param, errors, retries, filters).
    HandlerOptions options{};
};

/// A daemon or a timer: spawned per object while its filters match.
struct SpawningHandler {
    enum class Kind { DAEMON, TIMER };
    Kind kind = Kind::DAEMON;
    std::string id{};
    Callable fn{};
    Selector selector{};
    std::vector<std::string> field{};  ///< parsed `field`
    /// The options shared with other handlers (id, param, errors, timeout, retries, backoff and
    /// the filters); the timing options follow.
    HandlerOptions options{};
    std::optional<double> initial_delay{};
    /// A function's initial delay (initial_delay is then unset), called at each spawn.
    std::function<double(Context&)> initial_delay_fn{};
    std::optional<double> cancellation_backoff{};  ///< daemons
    std::optional<double> cancellation_timeout{};  ///< daemons
    std::optional<double> cancellation_polling{};  ///< daemons
    std::optional<double> interval{};              ///< timers
    std::optional<double> idle{};                  ///< timers
    bool sharp = false;                            ///< timers
    bool requires_finalizer = true;
    /// "Daemon 'id'" or "Timer 'id'", as in the log lines.
    std::string describe() const;
};

/// A validating or mutating handler (kopf::on::validate, kopf::on::mutate).
struct WebhookHandler {
    std::string id{};
    WebhookType type = WebhookType::VALIDATING;
    AdmissionCallable fn{};
    Selector selector{};
    std::vector<std::string> field{};  ///< parsed `field`
    AdmissionOptions options{};
    /// "Webhook 'id'", as in the log lines.
    std::string describe() const { return "Webhook '" + id + "'"; }
};

/// The argument of activity handlers.
struct ActivityContext {
    OperatorSettings& settings;  ///< mutable in startup handlers
    Memo& memo;
    Logger& logger;
    std::string activity{};  ///< "startup", "cleanup", "login"
    int retry = 0;
    std::chrono::system_clock::time_point started{};
    std::chrono::duration<double> runtime{};
    json param{};
    const Client* client = nullptr;  ///< the operator's API client, after login (see api())
    Indices indices{};               ///< the operator's in-memory indices (kopf/index.hpp)

    /// The index made by the index handler with this id; throws std::out_of_range naming the
    /// known indices.
    Index index(const std::string& name) const { return indices.get(name); }
    template <class T>
    TypedIndex<T> index(const std::string& name) const {
        return TypedIndex<T>(indices.get(name));
    }

    /// The Kubernetes API of one resource (kopf/api.hpp); in cleanup handlers, not in startup
    /// or login handlers, which run before the operator has logged in.
    Api api(Selector resource, std::string namespace_ = "") const;
};

/// Startup, cleanup and login handlers (run by the runtime).
struct ActivityHandler {
    std::string id{};
    std::string activity{};
    ActivityOptions options{};
    std::function<Task<void>(ActivityContext&)> fn;  ///< startup, cleanup
    /// login: returns credentials, or nullopt to let the next login handler try.
    std::function<Task<std::shared_ptr<ConnectionInfo>>(ActivityContext&)> login;
    /// probe: its result is reported under its id by the liveness endpoint.
    std::function<Task<json>(ActivityContext&)> probe;
};

/// All handlers of one operator.
class Registry {
  public:
    std::vector<ChangingHandler> changing;
    std::vector<WatchingHandler> watching;
    std::vector<ActivityHandler> activities;
    std::vector<SpawningHandler> spawning;  ///< daemons and timers
    std::vector<IndexingHandler> indexing;
    std::vector<WebhookHandler> webhooks;  ///< validating and mutating

    void append(ChangingHandler h);
    void append(SpawningHandler h);
    void append(WatchingHandler h);
    void append(ActivityHandler h);
    void append(IndexingHandler h);
    void append(WebhookHandler h);
    /// Whether any changing/watching handler is declared for this resource.
    bool has_handlers(const Resource& resource) const;
    /// The selectors of all resource handlers (for the runtime to resolve and watch).
    std::vector<Selector> selectors() const;

    /// The registry that namespace-scope registrations go to (see set_default_registry()).
    static Registry& default_registry();
};

/// Kopf's `kopf.get_default_registry()`: the registry that namespace-scope registrations
/// (KOPF_ON_CREATE and the like, also in files loaded by `kopf run`) go to, and that an
/// operator serves when RunOptions::registry is null.
Registry& get_default_registry();
/// Kopf's `kopf.set_default_registry()`: from now on, registrations and operators without a
/// registry of their own use `registry` (which must outlive them). Registrations made before
/// stay where they are.
void set_default_registry(Registry& registry);

namespace detail {
/// "lambda:<file>:<line>" — the id of unnamed callables, as Kopf does for lambdas.
std::string location_id(const std::source_location& loc);
/// Split "spec.field" into ("spec", "field").
std::vector<std::string> parse_field(const std::string& field);
}  // namespace detail

}  // namespace kopf
