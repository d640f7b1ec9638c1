// Registration of handlers into registries (Kopf's on.py and registries.py).
#include <algorithm>
#include <atomic>
#include <kopf/on.hpp>
#include <stdexcept>

#include "structs/dicts.hpp"

namespace kopf {

void Registry::append(ChangingHandler h) {
    changing.push_back(std::move(h));
}
void Registry::append(WatchingHandler h) {
    watching.push_back(std::move(h));
}
void Registry::append(SpawningHandler h) {
    spawning.push_back(std::move(h));
}
void Registry::append(ActivityHandler h) {
    activities.push_back(std::move(h));
}
void Registry::append(IndexingHandler h) {
    // Kopf keeps one index per id: a second handler with the same id would make two writers
    // of one index, which Kopf refuses too.
    for (const auto& other : indexing) {
        if (other.id == h.id) {
            throw std::invalid_argument("Index handler '" + h.id +
                                        "' is registered twice: index ids must be unique.");
        }
    }
    indexing.push_back(std::move(h));
}

void Registry::append(WebhookHandler h) {
    // The id is the webhook's URL path and its name in the managed configurations.
    for (const auto& other : webhooks) {
        if (other.id == h.id) {
            throw std::invalid_argument("Webhook '" + h.id +
                                        "' is registered twice: webhook ids must be unique.");
        }
    }
    webhooks.push_back(std::move(h));
}

const char* to_string(WebhookType type) {
    return type == WebhookType::MUTATING ? "mutating" : "validating";
}

bool Registry::has_handlers(const Resource& resource) const {
    for (const auto& h : changing) {
        if (!h.has_selector || h.selector.check(resource)) return true;
    }
    for (const auto& h : watching) {
        if (h.selector.check(resource)) return true;
    }
    for (const auto& h : spawning) {
        if (h.selector.check(resource)) return true;
    }
    for (const auto& h : indexing) {
        if (h.selector.check(resource)) return true;
    }
    return false;
}

std::string SpawningHandler::describe() const {
    return (kind == Kind::DAEMON ? "Daemon '" : "Timer '") + id + "'";
}

std::vector<Selector> Registry::selectors() const {
    std::vector<Selector> out;
    for (const auto& h : changing) {
        if (h.has_selector) out.push_back(h.selector);
    }
    for (const auto& h : watching) out.push_back(h.selector);
    for (const auto& h : spawning) out.push_back(h.selector);
    for (const auto& h : indexing) out.push_back(h.selector);
    return out;
}

namespace {
Registry& initial_registry() {
    static Registry registry;
    return registry;
}
std::atomic<Registry*> current_default_registry{nullptr};
}  // namespace

Registry& Registry::default_registry() {
    Registry* current = current_default_registry.load();
    return current ? *current : initial_registry();
}

Registry& get_default_registry() {
    return Registry::default_registry();
}

void set_default_registry(Registry& registry) {
    current_default_registry.store(&registry);
}

namespace detail {

namespace {
std::string make_id(const std::string& explicit_id, const std::string& default_id,
                    const std::vector<std::string>& field) {
    std::string id = explicit_id.empty() ? default_id : explicit_id;
    if (!field.empty()) id += "/" + dicts::format_field(field);
    return id;
}
void verify(const Callable& fn, const std::string& what) {
    if (!fn) throw std::invalid_argument("The handler function of " + what + " is empty.");
}
}  // namespace

void register_changing(Registry& registry, ChangingKind kind, Selector selector,
                       HandlerOptions options, Callable fn, std::string default_id) {
    ChangingHandler h;
    h.field = dicts::parse_field(options.field);
    h.id = make_id(options.id, default_id, h.field);
    verify(fn, "handler '" + h.id + "'");
    if (kind == ChangingKind::FIELD && h.field.empty())
        throw std::invalid_argument("Field handler '" + h.id + "' needs a .field option.");
    if ((options.old.is_set() || options.new_.is_set()) &&
        !(kind == ChangingKind::UPDATE || kind == ChangingKind::FIELD))
        throw std::invalid_argument(
            "Handler '" + h.id + "': .old/.new_ filters are only for update and field handlers.");
    if ((options.value.is_set() || options.old.is_set() || options.new_.is_set()) &&
        h.field.empty())
        throw std::invalid_argument("Handler '" + h.id + "': value filters need a .field option.");
    h.fn = std::move(fn);
    h.selector = std::move(selector);
    switch (kind) {
        case ChangingKind::CREATE:
            h.reason = "create";
            break;
        case ChangingKind::UPDATE:
            h.reason = "update";
            h.field_needs_change = true;
            break;
        case ChangingKind::DELETE:
            h.reason = "delete";
            h.requires_finalizer = !options.optional;
            break;
        case ChangingKind::RESUME:
            h.initial = true;
            break;
        case ChangingKind::FIELD:
            h.field_needs_change = true;
            break;
    }
    h.options = std::move(options);
    registry.append(std::move(h));
}

void register_webhook(Registry& registry, WebhookType type, Selector selector,
                      AdmissionOptions options, AdmissionCallable fn, std::string default_id) {
    static const std::vector<std::string> known = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
    WebhookHandler h;
    h.type = type;
    h.field = dicts::parse_field(options.field);
    h.id = make_id(options.id, default_id, h.field);
    if (!fn)
        throw std::invalid_argument("The handler function of webhook '" + h.id + "' is empty.");
    for (const auto& operation : options.operations) {
        if (std::find(known.begin(), known.end(), operation) == known.end())
            throw std::invalid_argument("Webhook '" + h.id + "': unknown operation '" + operation +
                                        "' (use CREATE, UPDATE, DELETE or CONNECT).");
    }
    if (options.value.is_set() && h.field.empty())
        throw std::invalid_argument("Webhook '" + h.id + "': value filters need a .field option.");
    h.fn = std::move(fn);
    h.selector = std::move(selector);
    h.options = std::move(options);
    registry.append(std::move(h));
}

void register_watching(Registry& registry, Selector selector, HandlerOptions options, Callable fn,
                       std::string default_id) {
    WatchingHandler h;
    h.field = dicts::parse_field(options.field);
    h.id = make_id(options.id, default_id, h.field);
    verify(fn, "event handler '" + h.id + "'");
    h.fn = std::move(fn);
    h.selector = std::move(selector);
    if (!options.errors) options.errors = ErrorsMode::IGNORED;
    h.options = std::move(options);
    registry.append(std::move(h));
}

namespace {

std::optional<double> seconds(const std::optional<Seconds>& s) {
    if (!s) return std::nullopt;
    return s->value;
}

// A negative or NaN duration is a mistake in the declaration: name the handler and the option.
void verify_duration(const std::string& what, const char* option, const std::optional<Seconds>& s) {
    if (s && !(s->value >= 0))
        throw std::invalid_argument(what + ": ." + option +
                                    " must be a duration of 0 seconds or "
                                    "more, not " +
                                    std::to_string(s->value) + ".");
}

// The options that daemons, timers and index handlers share with other handlers.
template <class Options>
HandlerOptions common_options(const std::string& id, Options& o) {
    HandlerOptions common;
    common.id = id;
    common.param = std::move(o.param);
    common.errors = o.errors;
    common.timeout = seconds(o.timeout);
    common.retries = o.retries;
    common.backoff = seconds(o.backoff);
    common.labels = std::move(o.labels);
    common.annotations = std::move(o.annotations);
    common.when = std::move(o.when);
    common.field = std::move(o.field);
    common.value = std::move(o.value);
    return common;
}

// The daemon or timer with the options that daemons and timers share with other handlers.
template <class Options>
SpawningHandler make_spawning(SpawningHandler::Kind kind, Selector selector, Options& o,
                              Callable fn, const std::string& default_id) {
    SpawningHandler h;
    h.kind = kind;
    h.field = dicts::parse_field(o.field);
    h.id = make_id(o.id, default_id, h.field);
    const std::string what = h.describe();
    verify(fn, "handler '" + h.id + "'");
    if (o.value.is_set() && h.field.empty())
        throw std::invalid_argument(what + ": value filters need a .field option.");
    verify_duration(what, "timeout", o.timeout);
    verify_duration(what, "backoff", o.backoff);
    if (o.initial_delay && o.initial_delay->function()) {
        h.initial_delay_fn = [fn = o.initial_delay->function()](Context& ctx) {
            return fn(ctx).value;
        };
    } else if (o.initial_delay) {
        verify_duration(what, "initial_delay", Seconds(o.initial_delay->seconds()));
        h.initial_delay = o.initial_delay->seconds();
    }
    h.fn = std::move(fn);
    h.selector = std::move(selector);
    h.options = common_options(h.id, o);
    return h;
}

}  // namespace

void register_daemon(Registry& registry, Selector selector, DaemonOptions options, Callable fn,
                     std::string default_id) {
    auto h = make_spawning(SpawningHandler::Kind::DAEMON, std::move(selector), options,
                           std::move(fn), default_id);
    verify_duration(h.describe(), "cancellation_backoff", options.cancellation_backoff);
    verify_duration(h.describe(), "cancellation_timeout", options.cancellation_timeout);
    verify_duration(h.describe(), "cancellation_polling", options.cancellation_polling);
    h.cancellation_backoff = seconds(options.cancellation_backoff);
    h.cancellation_timeout = seconds(options.cancellation_timeout);
    h.cancellation_polling = seconds(options.cancellation_polling);
    registry.append(std::move(h));
}

void register_timer(Registry& registry, Selector selector, TimerOptions options, Callable fn,
                    std::string default_id) {
    auto h = make_spawning(SpawningHandler::Kind::TIMER, std::move(selector), options,
                           std::move(fn), default_id);
    verify_duration(h.describe(), "interval", options.interval);
    verify_duration(h.describe(), "idle", options.idle);
    h.interval = seconds(options.interval);
    h.idle = seconds(options.idle);
    h.sharp = options.sharp;
    registry.append(std::move(h));
}

void register_activity(Registry& registry, std::string activity, ActivityOptions options,
                       std::function<Task<void>(ActivityContext&)> fn, std::string default_id) {
    if (!fn) throw std::invalid_argument("The " + activity + " handler function is empty.");
    ActivityHandler h;
    h.id = options.id.empty() ? default_id : options.id;
    h.activity = std::move(activity);
    h.options = std::move(options);
    h.fn = std::move(fn);
    registry.append(std::move(h));
}

void register_login(Registry& registry, ActivityOptions options,
                    std::function<Task<std::shared_ptr<ConnectionInfo>>(ActivityContext&)> fn,
                    std::string default_id) {
    if (!fn) throw std::invalid_argument("The login handler function is empty.");
    ActivityHandler h;
    h.id = options.id.empty() ? default_id : options.id;
    h.activity = "login";
    // No default for `errors`: TEMPORARY when run, as for Kopf's login handlers (only its
    // built-in logins ignore their errors).
    h.options = std::move(options);
    h.login = std::move(fn);
    registry.append(std::move(h));
}

void register_index(Registry& registry, Selector selector, IndexOptions options, IndexCallable fn,
                    std::string default_id) {
    IndexingHandler h;
    h.field = dicts::parse_field(options.field);
    h.id = options.id.empty() ? default_id : options.id;  // as Kopf: no field suffix
    const std::string what = "Index handler '" + h.id + "'";
    if (!fn.sync && !fn.async) throw std::invalid_argument(what + ": the function is empty.");
    if (options.value.is_set() && h.field.empty())
        throw std::invalid_argument(what + ": value filters need a .field option.");
    verify_duration(what, "timeout", options.timeout);
    verify_duration(what, "backoff", options.backoff);
    h.sync = std::move(fn.sync);
    h.async = std::move(fn.async);
    h.selector = std::move(selector);
    h.options = common_options(h.id, options);
    if (!h.options.errors) h.options.errors = ErrorsMode::IGNORED;  // as Kopf's indexing
    registry.append(std::move(h));
}

void register_probe(Registry& registry, ActivityOptions options,
                    std::function<Task<json>(ActivityContext&)> fn, std::string default_id) {
    if (!fn) throw std::invalid_argument("The probe handler function is empty.");
    ActivityHandler h;
    h.id = options.id.empty() ? default_id : options.id;
    h.activity = "probe";
    h.options = std::move(options);
    h.probe = std::move(fn);
    registry.append(std::move(h));
}

}  // namespace detail
}  // namespace kopf
