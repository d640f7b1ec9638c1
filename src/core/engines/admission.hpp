// Admission (Kopf's engines/admission.py): serving the AdmissionReview requests that a webhook
// server receives (kopf/webhooks.hpp) with the validating and mutating handlers, and building
// the webhooks of the managed [Validating|Mutating]WebhookConfiguration.
//
// Two ways to report errors, as in Kopf: a bad webhook request (not JSON, not an
// AdmissionReview, no resource, no user info, no object) gets an HTTP error (400, or 404 for a
// resource or webhook id with no handlers) and a log line; a bad API operation (a handler's
// exception) gets a 200 review with `allowed: false` and the handler's message and code, which
// the API server shows to its client.
#pragma once

#include <kopf/admission.hpp>
#include <kopf/index.hpp>
#include <kopf/json.hpp>
#include <kopf/registry.hpp>
#include <kopf/task.hpp>
#include <kopf/webhooks.hpp>
#include <memory>
#include <string>
#include <vector>

namespace kopf {
struct OperatorSettings;
class Memo;
class Client;
}  // namespace kopf

namespace kopf::engines {

class Metrics;  // core/engines/metrics.hpp

/// What the handlers are given besides the request.
struct AdmissionEnv {
    const Registry& registry;
    const OperatorSettings& settings;
    Memo& memo;
    Indices indices{};
    const Client* client = nullptr;  ///< for ctx.api(); none in tests
    /// The served resources (discovered at start-up): the handlers' selectors match them with
    /// their short names and categories; a resource not among them is known by what the
    /// review says (group, version, plural, kind).
    std::vector<Resource> resources{};
    /// The operator's metrics of reviews (kopf_admission_*); none when metrics are off.
    std::shared_ptr<Metrics> metrics{};
};

/// Serves one webhook request: runs the matching handlers (all of them, or the one named by
/// `request.webhook`), and answers with an AdmissionReview, or with an HTTP error.
Task<WebhookResponse> serve_admission_request(const AdmissionEnv& env, WebhookRequest request);

/// Starts `env.settings.admission.server` with the engine as its function: the requests are
/// served on `loop` (the server calls in from its own thread). Logs the URL of each handler
/// when the server says where it is reached, and hands that client config to `configured` (on
/// the loop). Returns the started server (to stop), or null when there is nothing to serve.
/// Throws std::runtime_error when there are admission handlers but no server.
std::shared_ptr<WebhookServerBase> start_admission_server(
    Executor& loop, std::shared_ptr<const AdmissionEnv> env,
    std::function<void(const WebhookClientConfig&)> configured = {});

/// One handler's failure, for the response.
struct AdmissionFailure {
    enum class Rank { ADMISSION = 0, PERMANENT = 1, TEMPORARY = 2, OTHER = 9 };
    Rank rank = Rank::OTHER;
    std::string message;
    int code = 500;
};

/// The AdmissionReview answer to `review`: allowed if there are no failures (else the first of
/// the most specific: AdmissionError, PermanentError, TemporaryError, any other), the warnings,
/// and the JSON patch (RFC 6902 operations; base64-encoded, patchType JSONPatch) if not empty.
json build_response(const json& review, const std::vector<AdmissionFailure>& failures,
                    const std::vector<std::string>& warnings, const json& jsonpatch);

/// The JSON patch (RFC 6902, no `test`) that `patch` makes on `body`: the merge part first,
/// then the transformations; empty when it changes nothing.
json build_json_patch(const json& body, const Patch& patch);

/// The `webhooks` of a managed configuration for the handlers of one type: one webhook per
/// handler named "<id>.<suffix>" (ids' "/" as ".", "_" as "-"), with rules for `resources`
/// that its selector matches, its operations ("*" if none), the subresource, failurePolicy
/// (Ignore with ignore_failures, else Fail), sideEffects (NoneOnDryRun with side_effects, else
/// None), an objectSelector from its plain label filters, and the client config with "/<id>"
/// appended to the URL or the service's path. `persistent_only`: only the persistent handlers
/// (what stays when the operator exits).
json build_webhooks(const std::vector<WebhookHandler>& handlers, WebhookType type,
                    const std::vector<Resource>& resources, const std::string& name_suffix,
                    const WebhookClientConfig& client_config, bool persistent_only = false);

}  // namespace kopf::engines
