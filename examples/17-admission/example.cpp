// Admission control (Kopf's 17-admission example): validating and mutating webhooks, served by
// the operator's own HTTPS server with a generated certificate, and the webhook configurations
// ("auto.kopf.dev") managed by the operator.
// Run it with: kopf run examples/17-admission/example.cpp --verbose -n default
// then: kubectl apply -f examples/obj.yaml   (try spec.field "wrong" or "not-allowed")
#include <kopf/kopf.hpp>

void config(kopf::ActivityContext& ctx) {
    // A local endpoint with a generated CA and certificate (https://localhost:<a free port>).
    // Other servers: kopf::WebhookServer({.certfile = "cert.pem", .pkeyfile = "key.pem",
    // .port = 1234}); kopf::WebhookK3dServer({.cadump = "ca.pem"}); kopf::WebhookMinikubeServer.
    ctx.settings.admission.server = std::make_shared<kopf::WebhookServer>();
    ctx.settings.admission.managed = "auto.kopf.dev";
}
KOPF_ON_STARTUP(config);

void authhook(kopf::AdmissionContext& ctx) {
    const auto agent = ctx.headers.find("User-Agent");
    ctx.warnings.push_back("Accessing as user-agent: " +
                           (agent != ctx.headers.end() ? agent->second : "(unidentified)"));
    const auto subject = ctx.sslpeer.value("subject", kopf::json::array());
    if (subject.empty()) {
        ctx.warnings.push_back("SSL peer is not identified.");
        return;
    }
    for (const auto& attribute : subject[0]) {  // [["commonName", "..."]], as Python's
        if (attribute[0] == "commonName") {
            ctx.warnings.push_back("SSL peer is " + attribute[1].get<std::string>() + ".");
            return;
        }
    }
    ctx.warnings.push_back("SSL peer's common name is absent.");
}
KOPF_VALIDATE(authhook, "kex");

void validate1(kopf::AdmissionContext& ctx) {
    if (!ctx.dryrun && ctx.spec.value("field", "") == "wrong")
        throw kopf::AdmissionError("Meh! I don't like it. Change the field.");
}
KOPF_VALIDATE(validate1, "kex");

void validate2(kopf::AdmissionContext&) {
    throw kopf::AdmissionError("I'm too lazy anyway. Go away!", 555);
}
KOPF_VALIDATE(validate2, "kex", {.field = "spec.field", .value = "not-allowed"});

void validate_subresources(kopf::AdmissionContext& ctx) {
    const auto spec_field = ctx.spec.value("field", kopf::json());
    const auto status_field = ctx.status.value("field", kopf::json());
    if (ctx.subresource == "status" && status_field != spec_field) {
        throw kopf::AdmissionError("status.field MUST be equal to spec.field!");
    } else if (ctx.subresource.empty() && status_field != spec_field) {
        ctx.warnings.push_back("Also update status.field to match spec.field: " +
                               spec_field.dump() + " != " + status_field.dump());
    }
}
KOPF_VALIDATE(validate_subresources, "kex", {.subresource = "*"});

void mutate1(kopf::AdmissionContext& ctx) {
    ctx.patch.spec()["injected"] = 123;
}
KOPF_MUTATE(mutate1, "kex", {.labels = {{"somelabel", "somevalue"}}});
