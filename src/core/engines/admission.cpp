#include "core/engines/admission.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <kopf/settings.hpp>
#include <memory>
#include <optional>

#include "clients/auth.hpp"
#include "clients/json_codec.hpp"
#include "core/actions/invocation.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/metrics.hpp"
#include "core/intents/matching.hpp"
#include "structs/dicts.hpp"

namespace kopf::engines {

namespace {

// A bad webhook request (not a bad API operation): answered with an HTTP error.
struct WebhookError : std::runtime_error {
    WebhookError(int status, const std::string& message)
        : std::runtime_error(message), status(status) {}
    int status;
};

const json& empty_object() {
    static const json empty = json::object();
    return empty;
}
const json& null_json() {
    static const json null;
    return null;
}
const json& sub_or_empty(const json& body, std::initializer_list<std::string_view> path) {
    const json* v = dicts::resolve(body, path);
    return v && v->is_object() ? *v : empty_object();
}
std::string string_at(const json& object, const char* key) {
    if (!object.is_object()) return {};
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

// The parts of the review that the handlers need; throws WebhookError when they are missing.
struct Review {
    json document;
    const json* request = nullptr;
    Resource resource;
    std::string operation;
    std::string subresource;
    bool dry_run = false;
    const json* old = nullptr;  // none when absent or null
    const json* new_ = nullptr;
    const json* body = nullptr;  // new, else old
};

Review parse_review(const std::string& text) {
    Review review;
    // Boost.JSON's parser building the same values (clients/json_codec.hpp): nlohmann's reads
    // every byte of the object one at a time, which was half of a review's CPU.
    review.document = clients::parse_json_or_discarded(text);
    if (review.document.is_discarded() || !review.document.is_object()) {
        throw WebhookError(400,
                           "The request is not an AdmissionReview: the body is not a JSON "
                           "object.");
    }
    const json& document = review.document;
    const std::string api_version = string_at(document, "apiVersion");
    const std::string kind = string_at(document, "kind");
    if (kind != "AdmissionReview") {
        throw WebhookError(
            400, fmt::format("The request is not an AdmissionReview: kind is '{}'.", kind));
    }
    if (api_version != "admission.k8s.io/v1" && api_version != "admission.k8s.io/v1beta1") {
        throw WebhookError(400, fmt::format("Unsupported AdmissionReview apiVersion '{}': "
                                            "admission.k8s.io/v1 and v1beta1 are served.",
                                            api_version));
    }
    const auto request = document.find("request");
    if (request == document.end() || !request->is_object()) {
        throw WebhookError(400, "The AdmissionReview has no request.");
    }
    review.request = &*request;
    const auto resource = request->find("resource");
    if (resource == request->end() || !resource->is_object() ||
        string_at(*resource, "version").empty() || string_at(*resource, "resource").empty()) {
        throw WebhookError(400,
                           "The AdmissionReview request has no resource "
                           "(request.resource: group, version, resource).");
    }
    review.resource.group = string_at(*resource, "group");
    review.resource.version = string_at(*resource, "version");
    review.resource.plural = string_at(*resource, "resource");
    review.resource.kind = string_at(request->value("kind", json::object()), "kind");
    std::string singular = review.resource.kind;
    std::transform(singular.begin(), singular.end(), singular.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    review.resource.singular = singular;
    review.resource.namespaced = !string_at(*request, "namespace").empty();
    review.operation = string_at(*request, "operation");
    review.subresource = string_at(*request, "subResource");  // absent or "": the main resource
    if (const auto dry_run = request->find("dryRun"); dry_run != request->end()) {
        if (!dry_run->is_boolean() && !dry_run->is_null()) {
            throw WebhookError(400, fmt::format("The AdmissionReview request's dryRun is not a "
                                                "boolean: {}.",
                                                dry_run->dump().substr(0, 100)));
        }
        review.dry_run = dry_run->is_boolean() && dry_run->get<bool>();
    }
    const auto userinfo = request->find("userInfo");
    if (userinfo == request->end() || !userinfo->is_object()) {
        throw WebhookError(400, "User info is missing from the admission request.");
    }
    const auto object = request->find("object");
    const auto old_object = request->find("oldObject");
    if (object != request->end() && object->is_object()) review.new_ = &*object;
    if (old_object != request->end() && old_object->is_object()) review.old = &*old_object;
    review.body = review.new_ ? review.new_ : review.old;
    if (!review.body) {
        throw WebhookError(400, "Either old or new object is missing from the admission request.");
    }
    return review;
}

std::map<std::string, std::string> headers_of(const WebhookRequest& request) {
    return request.headers;
}

// Everything the contexts of one request refer to (they hold references).
struct RequestState {
    const Review& review;
    Patch patch;             // the mutating handlers'
    Patch validating_patch;  // ignored: validating webhooks may not patch
    Diff diff;
    std::shared_ptr<Logger> logger;
};

AdmissionContext make_context(const AdmissionEnv& env, RequestState& state,
                              const WebhookHandler& handler, const WebhookRequest& request) {
    const Review& review = state.review;
    const json& body = *review.body;
    const json& meta = sub_or_empty(body, {"metadata"});
    Context base{
        .body = body,
        .meta = meta,
        .spec = sub_or_empty(body, {"spec"}),
        .status = sub_or_empty(body, {"status"}),
        .labels = sub_or_empty(meta, {"labels"}),
        .annotations = sub_or_empty(meta, {"annotations"}),
        .name = string_at(meta, "name"),
        .namespace_ = string_at(meta, "namespace"),
        .uid = string_at(meta, "uid"),
        .patch = handler.type == WebhookType::MUTATING ? state.patch : state.validating_patch,
        .logger = *state.logger,
        .memo = env.memo,
        .resource = review.resource,
        .settings = env.settings,
        .reason = to_string(handler.type),
        .old = review.old ? *review.old : null_json(),
        .new_ = review.new_ ? *review.new_ : null_json(),
        .diff = state.diff,
        .retry = 0,
        .started = Context::Clock::now(),
        .runtime = std::chrono::duration<double>(0),
        .param = handler.options.param,
        .type = "",
        .event = json(),
        .scope = nullptr,
        .client = env.client,
        .stopped = {},
        .indices = env.indices,
        .logger_ptr = state.logger,
    };
    const json& rq = *review.request;
    return AdmissionContext{
        base,
        review.dry_run,
        {},
        rq.value("userInfo", json::object()),
        headers_of(request),
        request.sslpeer,
        review.operation,
        review.subresource,
        handler.type,
    };
}

AdmissionFailure failure_of(const std::exception_ptr& error) {
    AdmissionFailure failure;
    try {
        std::rethrow_exception(error);
    } catch (const AdmissionError& e) {
        failure = {AdmissionFailure::Rank::ADMISSION, e.what(), e.code};
        if (failure.message.empty()) failure.message = "AdmissionError()";
    } catch (const PermanentError& e) {
        failure = {AdmissionFailure::Rank::PERMANENT, e.what(), 500};
        if (failure.message.empty()) failure.message = "PermanentError()";
    } catch (const TemporaryError& e) {
        failure = {AdmissionFailure::Rank::TEMPORARY, e.what(), 500};
        if (failure.message.empty()) failure.message = "TemporaryError()";
    } catch (const std::exception& e) {
        failure = {AdmissionFailure::Rank::OTHER, e.what(), 500};
        if (failure.message.empty()) failure.message = "An exception with no message.";
    } catch (...) {
        failure = {AdmissionFailure::Rank::OTHER, "An unknown exception.", 500};
    }
    return failure;
}

Task<void> invoke(const WebhookHandler& handler, AdmissionContext& ctx) {
    // The admitted object is the current cause meanwhile, as in Kopf (kopf::adopt() & co.).
    const auto previous = detail::current_cause();
    detail::set_current_cause(actions::cause_of(ctx.body));
    try {
        if (handler.fn.async) {
            co_await handler.fn.async(ctx);
        } else {
            auto call = [&handler, &ctx] { handler.fn.sync(ctx); };
            co_await run_blocking(std::move(call));
        }
    } catch (...) {
        detail::set_current_cause(previous);
        throw;
    }
    detail::set_current_cause(previous);
}

WebhookResponse error_response(int status, const std::string& message) {
    // As Kubernetes' own errors: a Status object.
    return WebhookResponse{status, json{{"apiVersion", "v1"},
                                        {"kind", "Status"},
                                        {"status", "Failure"},
                                        {"message", message},
                                        {"code", status}}};
}

std::string url_quote(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || c == '/') {
            out += static_cast<char>(c);
        } else {
            out += fmt::format("%{:02X}", c);
        }
    }
    return out;
}

json client_config_for(const WebhookClientConfig& config, const std::string& id) {
    json out = config.to_json();
    const std::string quoted = url_quote(id);
    if (config.url) {
        std::string url = *config.url;
        while (!url.empty() && url.back() == '/') url.pop_back();
        out["url"] = url + "/" + quoted;
    }
    if (config.service) {
        out["service"]["path"] = config.service->value("path", "") + "/" + quoted;
    }
    return out;
}

}  // namespace

json build_json_patch(const json& body, const Patch& patch) {
    if (patch.empty()) return json::array();
    json target = body;
    if (patch.merge.is_object() && !patch.merge.empty()) target.merge_patch(patch.merge);
    for (const auto& fn : patch.fns) fn(target);
    return json::diff(body, target);
}

json build_response(const json& review, const std::vector<AdmissionFailure>& failures,
                    const std::vector<std::string>& warnings, const json& jsonpatch) {
    // Also for reviews refused as malformed: nothing here may assume a field's type.
    const auto request = review.is_object() ? review.find("request") : review.end();
    const bool has_request = review.is_object() && request != review.end();
    // Built key by key: nlohmann's initializer lists copy every value and check every element
    // for being a key-value pair, which cost a review more than all of its answer's fields.
    json response = json::object();
    response["uid"] = has_request ? string_at(*request, "uid") : std::string();
    response["allowed"] = failures.empty();
    if (!warnings.empty()) response["warnings"] = warnings;
    if (jsonpatch.is_array() && !jsonpatch.empty()) {
        response["patch"] = clients::base64_encode(jsonpatch.dump());
        response["patchType"] = "JSONPatch";
    }
    if (!failures.empty()) {
        const auto first = std::min_element(
            failures.begin(), failures.end(),
            [](const AdmissionFailure& a, const AdmissionFailure& b) { return a.rank < b.rank; });
        json& status = response["status"] = json::object();
        status["message"] = first->message;
        status["code"] = first->code;
    }
    std::string api_version = string_at(review, "apiVersion");
    if (api_version.empty()) api_version = "admission.k8s.io/v1";
    json answer = json::object();
    answer["apiVersion"] = std::move(api_version);
    answer["kind"] = "AdmissionReview";
    answer["response"] = std::move(response);
    return answer;
}

namespace {

Task<WebhookResponse> serve_review(const AdmissionEnv& env, WebhookRequest request) {
    runtime::NamedLogger log("kopf.engines.admission");
    std::optional<Review> parsed;
    std::optional<WebhookError> bad;
    try {
        parsed.emplace(parse_review(request.body));
    } catch (const WebhookError& error) {
        bad.emplace(error);
    }
    if (bad) {
        log.error(fmt::format("Bad admission request{}: {}",
                              request.webhook.empty() ? "" : " for '" + request.webhook + "'",
                              bad->what()));
        co_return error_response(bad->status, bad->what());
    }
    Review& review = *parsed;
    for (const auto& served : env.resources) {
        if (served.group == review.resource.group && served.version == review.resource.version &&
            served.plural == review.resource.plural) {
            review.resource = served;
            break;
        }
    }

    // The handlers of this resource (of the webhook named in the URL, if any).
    std::vector<const WebhookHandler*> candidates;
    bool resource_known = false;
    bool webhook_known = request.webhook.empty();
    for (const auto& handler : env.registry.webhooks) {
        if (!request.webhook.empty() && handler.id != request.webhook) continue;
        webhook_known = true;
        if (!handler.selector.check(review.resource)) continue;
        resource_known = true;
        candidates.push_back(&handler);
    }
    // As Kopf names resources: "kopfexamples.v1.kopf.dev", "pods.v1".
    const std::string resource_name =
        review.resource.plural + "." + review.resource.version +
        (review.resource.group.empty() ? "" : "." + review.resource.group);
    if (!webhook_known || !resource_known) {
        const std::string message =
            !webhook_known
                ? fmt::format("No admission handler with the id '{}' (the URL's last segment).",
                              request.webhook)
                : fmt::format(
                      "The resource {} has no admission handlers{}.", resource_name,
                      request.webhook.empty() ? "" : " with the id '" + request.webhook + "'");
        log.error(fmt::format("Bad admission request: {}", message));
        co_return error_response(404, message);
    }

    RequestState state{review, Patch(), Patch(), Diff(), nullptr};
    state.diff = kopf::diff(review.old ? *review.old : json(), review.new_ ? *review.new_ : json());
    state.logger = actions::make_object_logger(*review.body);
    std::vector<AdmissionFailure> failures;
    std::vector<std::string> warnings;
    bool mutating = false;
    for (const WebhookHandler* handler : candidates) {
        auto ctx = std::make_unique<AdmissionContext>(make_context(env, state, *handler, request));
        bool matched = false;
        std::exception_ptr error;
        try {
            matched = intents::match(*handler, review.resource, review.operation,
                                     review.subresource, *review.body, *ctx);
        } catch (...) {
            error = std::current_exception();
        }
        if (!matched && !error) continue;
        if (!error) {
            try {
                co_await invoke(*handler, *ctx);
            } catch (...) {
                error = std::current_exception();
            }
        }
        mutating = mutating || handler->type == WebhookType::MUTATING;
        warnings.insert(warnings.end(), ctx->warnings.begin(), ctx->warnings.end());
        if (error) {
            auto failure = failure_of(error);
            state.logger->error(
                fmt::format("{} failed permanently: {}", handler->describe(), failure.message));
            failures.push_back(std::move(failure));
        } else {
            state.logger->debug(fmt::format("{} succeeded.", handler->describe()));
        }
    }
    if (!state.validating_patch.empty()) {
        log.warning("Validating handlers' patches are ignored: only mutating handlers patch.");
    }
    json jsonpatch = json::array();
    if (mutating && failures.empty()) {
        try {
            jsonpatch = build_json_patch(*review.body, state.patch);
        } catch (const std::exception& error) {
            failures.push_back({AdmissionFailure::Rank::OTHER,
                                fmt::format("The patch cannot be applied: {}", error.what()), 500});
        }
    }
    co_return WebhookResponse{200, build_response(review.document, failures, warnings, jsonpatch)};
}

}  // namespace

Task<WebhookResponse> serve_admission_request(const AdmissionEnv& env, WebhookRequest request) {
    if (!env.metrics) {
        auto serving = serve_review(env, std::move(request));
        co_return co_await std::move(serving);
    }
    const auto started = std::chrono::steady_clock::now();
    const std::string webhook = request.webhook;
    // Named first: g++ 12 destroys argument temporaries of a co_await twice.
    auto serving = serve_review(env, std::move(request));
    WebhookResponse response = co_await std::move(serving);
    const json* allowed = nullptr;
    if (response.status == 200 && response.body.is_object()) {
        if (const auto found = response.body.find("response");
            found != response.body.end() && found->is_object() && found->contains("allowed"))
            allowed = &(*found)["allowed"];
    }
    const std::string_view outcome = !allowed                                        ? "error"
                                     : allowed->is_boolean() && allowed->get<bool>() ? "allowed"
                                                                                     : "denied";
    env.metrics->reviewed(
        webhook, outcome,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    co_return response;
}

std::shared_ptr<WebhookServerBase> start_admission_server(
    Executor& loop, std::shared_ptr<const AdmissionEnv> env,
    std::function<void(const WebhookClientConfig&)> configured) {
    const auto& server = env->settings.admission.server;
    if (!server) {
        if (env->registry.webhooks.empty()) return nullptr;
        throw std::runtime_error(
            "Admission handlers exist, but no admission server/tunnel is configured in "
            "settings.admission.server (see docs/admission.md).");
    }
    WebhookFn fn = [&loop, env](WebhookRequest request,
                                std::function<void(WebhookResponse)> reply) {
        start_detached<WebhookResponse>(
            loop, serve_admission_request(*env, std::move(request)),
            [reply = std::move(reply)](std::exception_ptr error,
                                       std::optional<WebhookResponse> response) {
                if (response) {
                    reply(std::move(*response));
                    return;
                }
                const std::string message =
                    error ? runtime::describe(error) : "The admission request was not served.";
                runtime::NamedLogger("kopf.engines.admission")
                    .error("The admission request failed: {}", message);
                reply(WebhookResponse{500,
                                      {{"kind", "Status"},
                                       {"apiVersion", "v1"},
                                       {"status", "Failure"},
                                       {"message", message},
                                       {"code", 500}}});
            });
    };
    auto on_config = [&loop, env, configured](WebhookClientConfig config) {
        loop.post([env, configured, config = std::move(config)] {
            runtime::NamedLogger log("kopf.engines.admission");
            for (const auto& handler : env->registry.webhooks) {
                json reached = client_config_for(config, handler.id);
                const std::string where =
                    reached.contains("url")
                        ? reached["url"].get<std::string>()
                        : fmt::format("service {}", reached.value("service", json()).dump());
                log.info("{} ({}) is served at {}", handler.describe(), to_string(handler.type),
                         where);
            }
            if (configured) configured(config);
        });
    };
    server->start(std::move(fn), std::move(on_config));
    return server;
}

namespace {

// Kopf's normalisation: ids' "/" as ".", "_" as "-", other characters but [\w.-] as hex.
std::string webhook_name(const std::string& id, const std::string& suffix) {
    std::string name;
    for (unsigned char c : id) {
        if (c == '/') {
            name += '.';
        } else if (c == '_') {
            name += '-';
        } else if (std::isalnum(c) || c == '.' || c == '-') {
            name += static_cast<char>(c);
        } else {
            name += fmt::format("{:02x}", c);
        }
    }
    return suffix.empty() ? name : name + "." + suffix;
}

json labels_selector(const MetaFilter& labels) {
    json expressions = json::array();
    for (const auto& [key, filter] : labels) {
        switch (filter.kind()) {
            case ValueFilter::Kind::PRESENT:
                expressions.push_back({{"key", key}, {"operator", "Exists"}});
                break;
            case ValueFilter::Kind::ABSENT:
                expressions.push_back({{"key", key}, {"operator", "DoesNotExist"}});
                break;
            case ValueFilter::Kind::EQUALS: {
                const json& v = filter.value();
                expressions.push_back(
                    {{"key", key},
                     {"operator", "In"},
                     {"values", {v.is_string() ? v.get<std::string>() : v.dump()}}});
                break;
            }
            default:
                break;  // callbacks are checked by the operator only
        }
    }
    return expressions.empty() ? json() : json{{"matchExpressions", expressions}};
}

}  // namespace

json build_webhooks(const std::vector<WebhookHandler>& handlers, WebhookType type,
                    const std::vector<Resource>& resources, const std::string& name_suffix,
                    const WebhookClientConfig& client_config, bool persistent_only) {
    json webhooks = json::array();
    for (const auto& handler : handlers) {
        if (handler.type != type) continue;
        if (persistent_only && !handler.options.persistent) continue;
        json rules = json::array();
        for (const auto& resource : resources) {
            if (!handler.selector.check(resource)) continue;
            const auto& sub = handler.options.subresource;
            const std::string plural = sub ? resource.plural + "/" + *sub : resource.plural;
            json operations = handler.options.operations.empty() ? json::array({"*"})
                                                                 : json(handler.options.operations);
            rules.push_back({{"apiGroups", {resource.group}},
                             {"apiVersions", {resource.version}},
                             {"resources", {plural}},
                             {"operations", operations},
                             {"scope", "*"}});
        }
        json webhook = {
            {"name", webhook_name(handler.id, name_suffix)},
            {"sideEffects", handler.options.side_effects ? "NoneOnDryRun" : "None"},
            {"failurePolicy", handler.options.ignore_failures ? "Ignore" : "Fail"},
            {"matchPolicy", "Equivalent"},
            {"rules", rules},
            {"clientConfig", client_config_for(client_config, handler.id)},
            {"timeoutSeconds", 30},
            {"admissionReviewVersions", {"v1", "v1beta1"}},
        };
        json selector = labels_selector(handler.options.labels);
        if (!selector.is_null()) webhook["objectSelector"] = selector;
        webhooks.push_back(std::move(webhook));
    }
    return webhooks;
}

}  // namespace kopf::engines

namespace kopf {

json WebhookClientConfig::to_json() const {
    json out = json::object();
    if (url) out["url"] = *url;
    if (service) out["service"] = *service;
    if (!ca_bundle.empty()) out["caBundle"] = clients::base64_encode(ca_bundle);
    return out;
}

}  // namespace kopf
