// Admission handlers: validating and mutating webhooks (Kopf's "Admission control").
//
//     void check_spec(kopf::AdmissionContext& ctx) {
//         if (ctx.spec.value("field", "") == "wrong")
//             throw kopf::AdmissionError("Meh! I don't like it. Change the field.", 400);
//         if (ctx.dryrun) ctx.warnings.push_back("A dry run: nothing is stored.");
//     }
//     KOPF_VALIDATE(check_spec, "kopfexamples", {.operations = {"CREATE", "UPDATE"}});
//
//     void set_default(kopf::AdmissionContext& ctx) {
//         if (!ctx.spec.contains("field")) ctx.patch.spec()["field"] = "default";
//     }
//     KOPF_MUTATE(set_default, "kopfexamples", {});
//
// The handlers run when the API server calls the operator's webhook server
// (`settings.admission.server`, kopf/webhooks.hpp), each at POST <path>/<handler-id>.
#pragma once

#include <functional>
#include <kopf/context.hpp>
#include <kopf/errors.hpp>
#include <kopf/filters.hpp>
#include <kopf/json.hpp>
#include <kopf/resource.hpp>
#include <kopf/task.hpp>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace kopf {

/// Rejects the checked API operation with a message and an HTTP code (500 by default), which
/// the API client sees. Any other exception of a handler rejects it with code 500 too.
class AdmissionError : public PermanentError {
  public:
    explicit AdmissionError(const std::string& message = "", int code = 500)
        : PermanentError(message), code(code) {}
    int code;
};

/// Which kind of webhook a handler serves.
enum class WebhookType { VALIDATING, MUTATING };
/// "validating" or "mutating".
const char* to_string(WebhookType type);

/// Options of `kopf::on::validate` and `kopf::on::mutate`, in the order of Kopf's arguments.
struct AdmissionOptions {
    std::string id{};  ///< default: the function name (macros) or "lambda:file:line"
    json param{};      ///< passed to the handler as ctx.param
    /// "CREATE", "UPDATE", "DELETE", "CONNECT"; empty: all. Mutating handlers are not called
    /// for DELETE unless it is their only operation (as in Kopf).
    std::vector<std::string> operations{};
    /// None: the main resource only; "status", "scale"...; "*": any subresource or none.
    std::optional<std::string> subresource{};
    bool persistent = false;       ///< keep the managed webhook when the operator exits
    bool side_effects = false;     ///< the handler has side effects (sideEffects: NoneOnDryRun)
    bool ignore_failures = false;  ///< failurePolicy: Ignore (the object passes if we are down)
    MetaFilter labels{};
    MetaFilter annotations{};
    WhenFilter when{};
    std::string field{};  ///< dotted path, e.g. "spec.size"
    ValueFilter value{};  ///< criterion for the field's value
};

/// What an admission handler receives: the object (`body`, `spec`, … of the new object, or of
/// the old one for DELETE), the request's details, and `patch` (mutating handlers) and
/// `warnings` (all handlers) to answer with. `reason` is "validating" or "mutating".
struct AdmissionContext : Context {
    bool dryrun = false;                ///< the request is a dry run: no side effects
    std::vector<std::string> warnings;  ///< appended to: shown by kubectl as "Warning: ..."
    json userinfo;                      ///< who sends the request: {username, uid, groups}
    std::map<std::string, std::string> headers;  ///< of the webhook's HTTP request
    json sslpeer;                                ///< the API server's client certificate, if any
    std::string operation;                       ///< "CREATE", "UPDATE", "DELETE", "CONNECT"
    std::string subresource;                     ///< "" for the main resource
    WebhookType webhook_type = WebhookType::VALIDATING;
};

/// An admission handler callable: synchronous (run on the worker pool) or a coroutine.
struct AdmissionCallable {
    std::function<void(AdmissionContext&)> sync;
    std::function<Task<void>(AdmissionContext&)> async;
    explicit operator bool() const { return sync || async; }
};

/// Adapt `void/T(AdmissionContext&)` and `Task<void>/Task<T>(AdmissionContext&)`; results are
/// not used (as in Kopf).
template <class F>
AdmissionCallable make_admission_callable(F fn) {
    if constexpr (!std::is_invocable_v<F&, AdmissionContext&>) {
        static_assert(
            std::is_invocable_v<F&, AdmissionContext&>,
            "An admission handler is called as fn(kopf::AdmissionContext& ctx), with no other "
            "parameter, and returns void or kopf::Task<void> (its result is not used).");
        return AdmissionCallable{};
    } else {
        using R = std::invoke_result_t<F&, AdmissionContext&>;
        AdmissionCallable c;
        if constexpr (std::is_same_v<R, Task<void>>) {
            c.async = std::move(fn);
        } else if constexpr (std::is_same_v<R, Task<json>>) {
            c.async = [fn = std::move(fn)](AdmissionContext& ctx) -> Task<void> {
                co_await fn(ctx);
            };
        } else {
            c.sync = [fn = std::move(fn)](AdmissionContext& ctx) { (void)fn(ctx); };
        }
        return c;
    }
}

}  // namespace kopf
