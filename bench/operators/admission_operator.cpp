// The operator of the `admission` benchmark group: one validating handler on BenchObjects,
// served by a kopf::WebhookServer on the loopback, with managed webhook configurations (so that
// the API server calls it for every create).
//
//   export KUBECONFIG=... KOPF_BENCH_WEBHOOK_PORT=9443 KOPF_BENCH_WEBHOOK_CA=/tmp/ca.pem
//   kopf run bench/operators/admission_operator.cpp --standalone -n default
//
// The handler does what a typical validation does: reads a few fields and refuses a bad value
// (spec.field == "invalid"), so the load tool can also check that refusals are answered.
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <string>

namespace {

const kopf::Selector kBenchObjects{"bench.kopf.dev", "v1", "benchobjects"};

std::string env_or(const char* name, const char* otherwise) {
    const char* value = std::getenv(name);
    return value && *value ? value : otherwise;
}

}  // namespace

void configure(kopf::ActivityContext& ctx) {
    kopf::WebhookServerOptions options;
    options.addr = "127.0.0.1";
    options.port = std::stoi(env_or("KOPF_BENCH_WEBHOOK_PORT", "0"));
    options.cadump = env_or("KOPF_BENCH_WEBHOOK_CA", "/tmp/kopf-bench-webhook-ca.pem");
    ctx.settings.admission.server = std::make_shared<kopf::WebhookServer>(options);
    ctx.settings.admission.managed = "bench.kopf.dev";
}
KOPF_ON_STARTUP(configure);

void validate_fn(kopf::AdmissionContext& ctx) {
    if (ctx.spec.value("field", "") == "invalid")
        throw kopf::AdmissionError("spec.field must not be 'invalid'.", 422);
}
KOPF_VALIDATE(validate_fn, kBenchObjects);
