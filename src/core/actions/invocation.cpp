#include "core/actions/invocation.hpp"

#include "core/intents/matching.hpp"
#include "structs/bodies.hpp"
#include "structs/dicts.hpp"

namespace kopf::actions {

namespace {

const json& empty_object() {
    static const json empty = json::object();
    return empty;
}
const json& null_json() {
    static const json null;
    return null;
}
const json* sub_or_empty(const json& body, std::initializer_list<std::string_view> path) {
    const json* v = dicts::resolve(body, path);
    return v ? v : &empty_object();
}

std::string_view string_or_empty(const json& object, const char* key) {
    const std::string* value = structs::string_member(object, key);
    return value ? std::string_view(*value) : std::string_view();
}

}  // namespace

BodyViews body_views(const json& body) {
    const json* meta = sub_or_empty(body, {"metadata"});
    return BodyViews{
        .meta = meta,
        .spec = sub_or_empty(body, {"spec"}),
        .status = sub_or_empty(body, {"status"}),
        .labels = sub_or_empty(*meta, {"labels"}),
        .annotations = sub_or_empty(*meta, {"annotations"}),
        .name = string_or_empty(*meta, "name"),
        .namespace_ = string_or_empty(*meta, "namespace"),
        .uid = string_or_empty(*meta, "uid"),
    };
}

Context make_context(InvocationEnv& env, const ChangingHandler& handler, const HandlerState& state,
                     HandlerScope* scope, FieldValues& field_values) {
    const json& body = env.body;
    const auto now = env.now();
    const json* old = env.cause.old ? &*env.cause.old : &null_json();
    const json* new_ = env.cause.new_ ? &*env.cause.new_ : &null_json();
    const Diff* diff = &env.cause.diff;
    if (!handler.field.empty()) {
        const json* o = env.cause.old ? dicts::resolve(*env.cause.old, handler.field) : nullptr;
        const json* n = env.cause.new_ ? dicts::resolve(*env.cause.new_, handler.field) : nullptr;
        field_values.old = o ? *o : json();
        field_values.new_ = n ? *n : json();
        field_values.diff = reduce(env.cause.diff, handler.field);
        old = &field_values.old;
        new_ = &field_values.new_;
        diff = &field_values.diff;
    }
    const BodyViews views = env.views ? *env.views : body_views(body);
    return Context{
        .body = body,
        .meta = *views.meta,
        .spec = *views.spec,
        .status = *views.status,
        .labels = *views.labels,
        .annotations = *views.annotations,
        .name = std::string(views.name),
        .namespace_ = std::string(views.namespace_),
        .uid = std::string(views.uid),
        .patch = env.patch,
        .logger = env.logger,
        .memo = env.memo,
        .resource = env.resource,
        .settings = env.settings,
        .reason = env.spawning() ? std::string() : intents::to_string(env.cause.reason),
        .old = *old,
        .new_ = *new_,
        .diff = *diff,
        .retry = state.retries,
        .started = state.started,
        .runtime = state.runtime(now),
        .param = handler.options.param,
        .type = "",
        .event = json(),
        .scope = env.spawning() ? nullptr : scope,
        .client = env.client,
        .stopped = env.stopped,
        .indices = env.indices,
        .logger_ptr = env.shared_logger,
    };
}

std::shared_ptr<const void> cause_of(const json& body) {
    if (!body.is_object()) return nullptr;
    json owner = json::object();
    for (const char* key : {"apiVersion", "kind"}) {
        if (const auto found = body.find(key); found != body.end()) owner[key] = *found;
    }
    json& meta = owner["metadata"] = json::object();
    if (const auto found = body.find("metadata"); found != body.end() && found->is_object()) {
        for (const char* key : {"name", "namespace", "uid", "labels"}) {
            if (const auto value = found->find(key); value != found->end()) meta[key] = *value;
        }
    }
    return std::make_shared<const json>(std::move(owner));
}

Task<json> invoke(const ChangingHandler& handler, Context& ctx) {
    // Restored as the handler ends: the thread goes on with other coroutines.
    const auto previous = detail::current_cause();
    detail::set_current_cause(cause_of(ctx.body));
    json result;
    try {
        if (handler.fn.async) {
            result = co_await handler.fn.async(ctx);
        } else {
            auto call = [&handler, &ctx] { return handler.fn.sync(ctx); };
            result = co_await run_blocking(std::move(call));
        }
    } catch (...) {
        detail::set_current_cause(previous);
        throw;
    }
    detail::set_current_cause(previous);
    co_return result;
}

}  // namespace kopf::actions
