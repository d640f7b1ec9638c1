// Fuzz target: AdmissionReview requests as the operator's webhook server receives them (the
// request body, from whatever can reach the webhook's port). Served by the admission engine with
// a validating and a mutating handler: every input ends in an answer (200 with a review, or an
// HTTP error for a bad request), never in an exception out of the engine or a crash.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <kopf/kopf.hpp>
#include <string>

#include "core/engines/admission.hpp"
#include "fuzz/support/fuzz.hpp"
#include "loop/virtual_executor.hpp"

namespace {

void check(kopf::AdmissionContext& ctx) {
    if (ctx.spec.is_object() && ctx.spec.value("field", kopf::json()) == "wrong")
        throw kopf::AdmissionError("Meh! I don't like it.", 400);
    ctx.warnings.push_back("checked");
}

void add_defaults(kopf::AdmissionContext& ctx) {
    ctx.patch.spec()["replicas"] = 3;
    ctx.patch["metadata"]["labels"]["mutated"] = "yes";
}

// The registrations are made in the constructor, not as default member initializers: clang 16
// rejects std::source_location::current() as a default argument there (fixed in clang 17).
struct Operator {
    kopf::Registry registry;
    kopf::OperatorSettings settings;
    kopf::Memo memo;
    kopf::on::validate validating;
    kopf::on::mutate mutating;
    Operator()
        : validating(registry, "kopfexamples", {.id = "check"}, check),
          mutating(registry, "kopfexamples", {.id = "defaults"}, add_defaults) {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Operator op;
    kopf::engines::AdmissionEnv env{op.registry, op.settings, op.memo};
    kopf::WebhookRequest request;
    request.body = std::string(kopf::fuzz::as_text(data, size));
    // The URL's handler id: all handlers, or one of them, as the configured webhooks call.
    request.webhook = size % 3 == 0 ? "" : size % 3 == 1 ? "check" : "defaults";
    request.headers = {{"Content-Type", "application/json"}};
    try {
        const auto response =
            kopf::loop::run_sync(kopf::engines::serve_admission_request(env, std::move(request)));
        if (response.status != 200 && response.status != 400 && response.status != 404)
            kopf::fuzz::violated("an unexpected HTTP status", std::to_string(response.status));
    } catch (const std::exception& e) {
        kopf::fuzz::violated("the admission engine threw", e.what());
    }
    return 0;
}
