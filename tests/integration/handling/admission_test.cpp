// Admission webhooks end to end: the operator's webhook server (kopf::WebhookServer) serves its
// validating and mutating handlers to the embedded API server, which calls them as configured
// by a Validating/MutatingWebhookConfiguration; what a client sees — refusals with the handler's
// message and code, mutations on the stored object, warnings and dry runs in kubectl — and the
// failure policy when the webhook cannot be reached.
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>

#include "kits/certificates.hpp"
#include "net/admission_client.hpp"
#include "support/cluster.hpp"
#include "support/log_lines.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string base64(const std::string& text) {
    static const char* chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < text.size(); i += 3) {
        const unsigned n = (static_cast<unsigned char>(text[i]) << 16) |
                           (static_cast<unsigned char>(text[i + 1]) << 8) |
                           static_cast<unsigned char>(text[i + 2]);
        for (int shift : {18, 12, 6, 0}) out += chars[(n >> shift) & 63];
    }
    if (i < text.size()) {
        unsigned n = static_cast<unsigned char>(text[i]) << 16;
        if (i + 1 < text.size()) n |= static_cast<unsigned char>(text[i + 1]) << 8;
        out += chars[(n >> 18) & 63];
        out += chars[(n >> 12) & 63];
        out += i + 1 < text.size() ? chars[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

class AdmissionHandling : public HandlingTest {
  protected:
    Registry registry;
    std::shared_ptr<WebhookServer> webhooks;

    // Starts the operator with a webhook server on a free port of the loopback (its CA dumped).
    // `customize`: changes to the run options (e.g. a metrics endpoint).
    std::unique_ptr<OperatorThread> start(WebhookServerOptions options = {},
                                          std::function<void(RunOptions&)> customize = {}) {
        options.addr = "127.0.0.1";
        options.cadump = (workdir() / "ca.pem").string();
        webhooks = std::make_shared<WebhookServer>(options);
        OperatorSettings settings = fast_settings();
        settings.admission.server = webhooks;
        return start_operator(registry, settings, std::move(customize));
    }

    // A webhook configuration pointing at one handler of the operator's webhook server.
    void configure(const std::string& kind, const std::string& id,
                   const std::string& failure_policy = "Fail", int port = 0) {
        const std::string plural = kind == "ValidatingWebhookConfiguration"
                                       ? "validatingwebhookconfigurations"
                                       : "mutatingwebhookconfigurations";
        json webhook = {{"name", id + ".kopf.dev"},
                        {"clientConfig",
                         {{"url", "https://127.0.0.1:" +
                                      std::to_string(port ? port : webhooks->port()) + "/" + id},
                          {"caBundle", base64(read_text(workdir() / "ca.pem"))}}},
                        {"rules",
                         {{{"apiGroups", {"kopf.dev"}},
                           {"apiVersions", {"v1"}},
                           {"resources", {"kopfexamples"}},
                           {"operations", {"CREATE", "UPDATE"}}}}},
                        {"failurePolicy", failure_policy},
                        {"sideEffects", "None"},
                        {"admissionReviewVersions", {"v1"}}};
        request("POST", "/apis/admissionregistration.k8s.io/v1/" + plural,
                {{"apiVersion", "admissionregistration.k8s.io/v1"},
                 {"kind", kind},
                 {"metadata", {{"name", id + ".kopf.dev"}}},
                 {"webhooks", {webhook}}});
    }

    // kubectl with this test's cluster; stdout and stderr together.
    std::string kubectl(const std::string& args) {
        const std::string command =
            "kubectl --kubeconfig=" + (workdir() / "kubeconfig.yaml").string() + " " + args +
            " 2>&1";
        std::string output;
        if (FILE* pipe = ::popen(command.c_str(), "r")) {
            char buffer[4096];
            while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
                output.append(buffer, n);
            ::pclose(pipe);
        }
        return output;
    }
    std::string kubectl_create(const json& body, const std::string& flags = "") {
        const auto path = workdir() / "object.json";
        std::ofstream(path) << body.dump();
        return kubectl("create --validate=false " + flags + " -f " + path.string());
    }
};

void reject_wrong(AdmissionContext& ctx) {
    if (ctx.spec.value("field", "") == "wrong")
        throw AdmissionError("Meh! I don't like it. Change the field.", 400);
}

TEST_F(AdmissionHandling, AValidatingHandlerRefusesWithItsMessageAndCode) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    auto op = start();
    configure("ValidatingWebhookConfiguration", "check");

    try {
        create(example("kex-wrong", {{"field", "wrong"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_EQ(error.code(), 400);
        EXPECT_NE(error.message().find("Meh! I don't like it. Change the field."),
                  std::string::npos)
            << error.message();
    }
    EXPECT_FALSE(get("kex-wrong").has_value());
    create(example("kex-right", {{"field", "right"}}));
    EXPECT_TRUE(get("kex-right").has_value());
}

TEST_F(AdmissionHandling, ReviewsAreCountedInTheMetricsByWebhookAndOutcome) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    const int port = free_port();
    auto op = start({}, [port](RunOptions& options) {
        options.metrics_endpoint = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
    });
    configure("ValidatingWebhookConfiguration", "check");
    EXPECT_THROW(create(example("kex-wrong", {{"field", "wrong"}})), ApiError);
    create(example("kex-right", {{"field", "right"}}));
    const std::string text = http_get(port, "/metrics");
    EXPECT_NE(text.find("\nkopf_admission_reviews_total{outcome=\"denied\",webhook=\"check\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find("\nkopf_admission_reviews_total{outcome=\"allowed\",webhook=\"check\"} 1\n"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("\nkopf_admission_review_duration_seconds_count{webhook=\"check\"} 2\n"),
              std::string::npos)
        << text;
}

TEST_F(AdmissionHandling, HandlersOfShortNamesServeTheirResource) {
    on::validate check(registry, "kex", {.id = "check"}, reject_wrong);
    auto op = start();
    configure("ValidatingWebhookConfiguration", "check");
    try {
        create(example("kex-wrong", {{"field", "wrong"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_EQ(error.code(), 400) << error.message();
    }
    EXPECT_FALSE(get("kex-wrong").has_value());
}

TEST_F(AdmissionHandling, AnyOtherExceptionRefusesWithCode500) {
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [](AdmissionContext&) { throw std::runtime_error("Something broke."); });
    auto op = start();
    configure("ValidatingWebhookConfiguration", "check");
    try {
        create(example("kex-1", {{"field", "x"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_EQ(error.code(), 500);
        EXPECT_NE(error.message().find("Something broke."), std::string::npos) << error.message();
    }
}

TEST_F(AdmissionHandling, AMutatingHandlersPatchLandsOnTheStoredObject) {
    on::mutate defaults(registry, "kopfexamples", {.id = "defaults"}, [](AdmissionContext& ctx) {
        if (!ctx.spec.contains("replicas")) ctx.patch.spec()["replicas"] = 3;
        ctx.patch["metadata"]["labels"]["mutated-by"] = "kopf";
    });
    auto op = start();
    configure("MutatingWebhookConfiguration", "defaults");

    const json created = create(example("kex-1", {{"field", "x"}}));
    EXPECT_EQ(created["spec"]["replicas"], 3);
    const auto stored = get("kex-1");
    ASSERT_TRUE(stored.has_value());
    EXPECT_EQ((*stored)["spec"]["replicas"], 3);
    EXPECT_EQ((*stored)["spec"]["field"], "x");
    EXPECT_EQ((*stored)["metadata"]["labels"]["mutated-by"], "kopf");
}

TEST_F(AdmissionHandling, WarningsAndRefusalsReachKubectl) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext& ctx) {
        ctx.warnings.push_back("Accessing as user " +
                               ctx.userinfo.value("username", std::string("?")) + ".");
        reject_wrong(ctx);
    });
    auto op = start();
    configure("ValidatingWebhookConfiguration", "check");

    const std::string accepted = kubectl_create(example("kex-1", {{"field", "right"}}));
    EXPECT_NE(accepted.find("Warning: Accessing as user"), std::string::npos) << accepted;
    EXPECT_NE(accepted.find("kopfexample.kopf.dev/kex-1 created"), std::string::npos) << accepted;
    const std::string refused = kubectl_create(example("kex-2", {{"field", "wrong"}}));
    EXPECT_NE(refused.find("denied the request: Meh! I don't like it. Change the field."),
              std::string::npos)
        << refused;
}

// A configuration kube-apiserver would refuse (here: a selector operator that does not exist)
// is refused by kubectl's create with the field named, not stored to fail every later write.
TEST_F(AdmissionHandling, AMalformedConfigurationIsRefusedAndAdmissionGoesOn) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    auto op = start();
    configure("ValidatingWebhookConfiguration", "check");

    const json malformed = {
        {"apiVersion", "admissionregistration.k8s.io/v1"},
        {"kind", "ValidatingWebhookConfiguration"},
        {"metadata", {{"name", "malformed.kopf.dev"}}},
        {"webhooks",
         {{{"name", "malformed.kopf.dev"},
           {"clientConfig", {{"url", "https://127.0.0.1:1/never"}}},
           {"rules",
            {{{"apiGroups", {"kopf.dev"}},
              {"apiVersions", {"v1"}},
              {"resources", {"kopfexamples"}},
              {"operations", {"CREATE"}}}}},
           {"objectSelector",
            {{"matchExpressions", {{{"key", "app"}, {"operator", "Sometimes"}}}}}},
           {"sideEffects", "None"},
           {"admissionReviewVersions", {"v1"}}}}}};
    const std::string refused = kubectl_create(malformed);
    EXPECT_NE(refused.find("ValidatingWebhookConfiguration \"malformed.kopf.dev\" is invalid: "
                           "webhooks[0].objectSelector"),
              std::string::npos)
        << refused;
    EXPECT_NE(refused.find("\"Sometimes\" is not a valid label selector operator"),
              std::string::npos)
        << refused;
    const std::string listed = kubectl("get validatingwebhookconfigurations");
    EXPECT_NE(listed.find("check.kopf.dev"), std::string::npos) << listed;
    EXPECT_EQ(listed.find("malformed"), std::string::npos) << listed;

    const std::string accepted = kubectl_create(example("kex-1", {{"field", "right"}}));
    EXPECT_NE(accepted.find("kopfexample.kopf.dev/kex-1 created"), std::string::npos) << accepted;
    const std::string denied = kubectl_create(example("kex-2", {{"field", "wrong"}}));
    EXPECT_NE(denied.find("denied the request: Meh! I don't like it."), std::string::npos)
        << denied;
}

TEST_F(AdmissionHandling, ServerSideDryRunsReachHandlersAndLeaveNothing) {
    auto dryruns = std::make_shared<Calls>();
    on::validate check(registry, "kopfexamples", {.id = "check"},
                       [dryruns](AdmissionContext& ctx) { dryruns->add("call", ctx.dryrun); });
    auto op = start();
    configure("ValidatingWebhookConfiguration", "check");

    const std::string output =
        kubectl_create(example("kex-dry", {{"field", "x"}}), "--dry-run=server");
    EXPECT_NE(output.find("created (server dry run)"), std::string::npos) << output;
    ASSERT_EQ(dryruns->count("call"), 1);
    EXPECT_EQ(dryruns->details("call")[0], true);
    EXPECT_FALSE(get("kex-dry").has_value());
}

TEST_F(AdmissionHandling, TheFailurePolicyDecidesWhenTheOperatorIsDown) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    auto op = start();
    const int port = webhooks->port();
    configure("ValidatingWebhookConfiguration", "check");
    EXPECT_EQ(op->stop(), "");
    op.reset();

    // Failing closed: nothing passes while the webhook is unreachable.
    try {
        create(example("kex-closed", {{"field", "right"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_NE(error.message().find("failed calling webhook"), std::string::npos)
            << error.message();
    }
    // Failing open (ignore_failures): everything passes, even what the handler would refuse.
    request("DELETE",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/check.kopf.dev");
    configure("ValidatingWebhookConfiguration", "check", "Ignore", port);
    create(example("kex-open", {{"field", "wrong"}}));
    EXPECT_TRUE(get("kex-open").has_value());
}

TEST_F(AdmissionHandling, AServerRequiringClientCertificatesRefusesApiServersWithoutThem) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    auto op = start({.verify_mode = VerifyMode::REQUIRED});
    configure("ValidatingWebhookConfiguration", "check");
    try {
        create(example("kex-1", {{"field", "x"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_NE(error.message().find("failed calling webhook"), std::string::npos)
            << error.message();
    }
}

const std::string kValidatingConfigs =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/";
const std::string kMutatingConfigs =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/";

std::vector<std::string> webhook_names(const json& configuration) {
    std::vector<std::string> names;
    for (const auto& webhook : configuration.value("webhooks", json::array()))
        names.push_back(webhook["name"]);
    return names;
}

TEST_F(AdmissionHandling, ManagedConfigurationsServeTheHandlersAndKeepOnlyPersistentOnes) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    on::validate audit(registry, "kopfexamples", {.id = "audit", .persistent = true},
                       [](AdmissionContext&) {});
    on::mutate defaults(registry, "kopfexamples", {.id = "defaults", .ignore_failures = true},
                        [](AdmissionContext& ctx) { ctx.patch.spec()["defaulted"] = true; });
    WebhookServerOptions options;
    options.addr = "127.0.0.1";
    webhooks = std::make_shared<WebhookServer>(options);
    OperatorSettings settings = fast_settings();
    settings.admission.server = webhooks;
    settings.admission.managed = "auto.kopf.dev";
    auto op = start_operator(registry, settings);

    json validating, mutating;
    ASSERT_TRUE(eventually([&] {
        try {
            validating = request("GET", kValidatingConfigs + "auto.kopf.dev");
            mutating = request("GET", kMutatingConfigs + "auto.kopf.dev");
        } catch (const ApiError&) {
            return false;
        }
        return webhook_names(validating).size() == 2 && webhook_names(mutating).size() == 1;
    })) << validating.dump(2);
    EXPECT_EQ(webhook_names(validating),
              (std::vector<std::string>{"check.auto.kopf.dev", "audit.auto.kopf.dev"}));
    EXPECT_EQ(webhook_names(mutating), std::vector<std::string>{"defaults.auto.kopf.dev"});
    const json& webhook = validating["webhooks"][0];
    EXPECT_EQ(webhook["clientConfig"]["url"],
              "https://127.0.0.1:" + std::to_string(webhooks->port()) + "/check");
    EXPECT_FALSE(webhook["clientConfig"].value("caBundle", "").empty());
    EXPECT_EQ(webhook["failurePolicy"], "Fail");
    EXPECT_EQ(mutating["webhooks"][0]["failurePolicy"], "Ignore");
    EXPECT_EQ(webhook["rules"][0]["resources"], json({"kopfexamples"}));
    EXPECT_EQ(webhook["rules"][0]["apiGroups"], json({"kopf.dev"}));

    // The API server reaches the handlers with what the configurations say.
    try {
        create(example("kex-wrong", {{"field", "wrong"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_NE(error.message().find("Meh!"), std::string::npos) << error.message();
    }
    EXPECT_EQ(create(example("kex-right", {{"field", "right"}}))["spec"]["defaulted"], true);

    // At the exit, only the persistent handlers' webhooks stay.
    EXPECT_EQ(op->stop(), "");
    EXPECT_EQ(webhook_names(request("GET", kValidatingConfigs + "auto.kopf.dev")),
              std::vector<std::string>{"audit.auto.kopf.dev"});
    EXPECT_TRUE(webhook_names(request("GET", kMutatingConfigs + "auto.kopf.dev")).empty());
}

TEST_F(AdmissionHandling, ManagedConfigurationsFollowTheHandlersOfTheNextRun) {
    on::validate first(registry, "kopfexamples", {.id = "first", .persistent = true},
                       [](AdmissionContext&) {});
    OperatorSettings settings = fast_settings();
    settings.admission.server =
        std::make_shared<WebhookServer>(WebhookServerOptions{.addr = "127.0.0.1"});
    settings.admission.managed = "auto.kopf.dev";
    start_operator(registry, settings)->stop();
    EXPECT_EQ(webhook_names(request("GET", kValidatingConfigs + "auto.kopf.dev")),
              std::vector<std::string>{"first.auto.kopf.dev"});

    Registry next;
    on::validate second(next, "kopfexamples", {.id = "second", .persistent = true},
                        [](AdmissionContext&) {});
    settings.admission.server =
        std::make_shared<WebhookServer>(WebhookServerOptions{.addr = "127.0.0.1"});
    start_operator(next, settings)->stop();
    EXPECT_EQ(webhook_names(request("GET", kValidatingConfigs + "auto.kopf.dev")),
              std::vector<std::string>{"second.auto.kopf.dev"});
}

// Writes a file as Kubernetes' secret volumes and cert-manager do: complete, then swapped in.
void replace_file(const std::filesystem::path& path, const std::string& text) {
    const auto fresh = path.string() + ".new";
    std::ofstream(fresh, std::ios::binary | std::ios::trunc) << text;
    std::filesystem::rename(fresh, path);
}

// A real TLS handshake and POST to the webhook server, verified with `ca` only.
bool reached_with(int port, const std::string& ca) {
    apiserver::WebhookCall call;
    call.url = "https://127.0.0.1:" + std::to_string(port) + "/check";
    call.ca_bundle_pem = ca;
    call.body = "{}";
    call.timeout = std::chrono::seconds(5);
    return apiserver::net::make_admission_transport()->post(call).reached;
}

// cert-manager rotates the certificate files in place: the running server serves the new
// certificate to new connections and the managed configurations get the new CA; a broken file
// is logged by name and the previous certificate kept.
TEST_F(AdmissionHandling, RotatedCertificateFilesAreServedWithoutARestart) {
    LogLines log({"kopf.kits.webhooks"});
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    const auto tls = workdir() / "tls";
    std::filesystem::create_directories(tls);
    const auto first = kits::generate_certificate({"127.0.0.1"});
    replace_file(tls / "tls.crt", first.cert_pem);
    replace_file(tls / "tls.key", first.key_pem);
    replace_file(tls / "ca.crt", first.ca_pem);
    WebhookServerOptions options;
    options.addr = "127.0.0.1";
    options.certfile = (tls / "tls.crt").string();
    options.pkeyfile = (tls / "tls.key").string();
    options.cafile = (tls / "ca.crt").string();
    options.reload_interval = 0.1;
    webhooks = std::make_shared<WebhookServer>(options);
    OperatorSettings settings = fast_settings();
    settings.admission.server = webhooks;
    settings.admission.managed = "auto.kopf.dev";
    auto op = start_operator(registry, settings);
    auto ca_bundle = [&]() -> std::string {
        try {
            const json configuration = request("GET", kValidatingConfigs + "auto.kopf.dev");
            // at(): before the operator has made it, the answer is a 404 Status without
            // "webhooks" (a const operator[] on a missing key aborts instead of throwing).
            return configuration.at("webhooks").at(0).at("clientConfig").value("caBundle", "");
        } catch (const std::exception&) {
            return "";
        }
    };
    ASSERT_TRUE(eventually([&] { return ca_bundle() == base64(first.ca_pem); }));
    EXPECT_TRUE(reached_with(webhooks->port(), first.ca_pem));

    // A broken certificate: logged with the file's name; the first one is still served.
    replace_file(tls / "tls.crt", "-----BEGIN CERTIFICATE-----\nbroken\n");
    ASSERT_TRUE(eventually([&] { return log.contains("new certificate is not used"); }))
        << log.text();
    EXPECT_TRUE(log.contains("the certificate file " + (tls / "tls.crt").string())) << log.text();
    EXPECT_TRUE(reached_with(webhooks->port(), first.ca_pem));

    // A new CA and certificate: new handshakes get the new one; the API server gets its CA.
    const auto second = kits::generate_certificate({"127.0.0.1"});
    replace_file(tls / "ca.crt", second.ca_pem);
    replace_file(tls / "tls.key", second.key_pem);
    replace_file(tls / "tls.crt", second.cert_pem);
    ASSERT_TRUE(eventually([&] { return reached_with(webhooks->port(), second.ca_pem); }))
        << log.text();
    EXPECT_FALSE(reached_with(webhooks->port(), first.ca_pem));
    EXPECT_TRUE(log.contains("certificate is reloaded from " + (tls / "tls.crt").string()))
        << log.text();
    ASSERT_TRUE(eventually([&] { return ca_bundle() == base64(second.ca_pem); }));
    try {
        create(example("kex-wrong", {{"field", "wrong"}}));
        FAIL() << "the object was created";
    } catch (const ApiError& error) {
        EXPECT_NE(error.message().find("Meh!"), std::string::npos) << error.message();
    }
    EXPECT_EQ(op->stop(), "");
}

// A CRD created after the operator's start (short name "lex"): as the watchers, the admission
// handlers start serving it, by short name, kind and plural, and the managed rules include it.
json late_crd() {
    json preserved = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    return {{"apiVersion", "apiextensions.k8s.io/v1"},
            {"kind", "CustomResourceDefinition"},
            {"metadata", {{"name", "lateexamples.kopf.dev"}}},
            {"spec",
             {{"scope", "Namespaced"},
              {"group", "kopf.dev"},
              {"names",
               {{"kind", "LateExample"},
                {"plural", "lateexamples"},
                {"singular", "lateexample"},
                {"shortNames", {"lex"}}}},
              {"versions",
               {{{"name", "v1"},
                 {"served", true},
                 {"storage", true},
                 {"schema",
                  {{"openAPIV3Schema",
                    {{"type", "object"}, {"properties", {{"spec", preserved}}}}}}}}}}}}};
}

json late_example(const std::string& name, const json& spec) {
    return {{"apiVersion", "kopf.dev/v1"},
            {"kind", "LateExample"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec", spec}};
}

const std::string kLateExamples = "/apis/kopf.dev/v1/namespaces/default/lateexamples";

TEST_F(AdmissionHandling, HandlersOfResourcesCreatedLaterServeThemOnceTheirCrdAppears) {
    on::validate by_short_name(registry, "lex", {.id = "short"}, reject_wrong);
    on::validate by_plural(registry, "lateexamples", {.id = "plural"}, [](AdmissionContext& ctx) {
        if (ctx.spec.value("field", "") == "plural") throw AdmissionError("No plural.", 422);
    });
    on::mutate by_kind(registry, "LateExample", {.id = "kind"},
                       [](AdmissionContext& ctx) { ctx.patch.spec()["defaulted"] = true; });
    WebhookServerOptions options;
    options.addr = "127.0.0.1";
    webhooks = std::make_shared<WebhookServer>(options);
    OperatorSettings settings = fast_settings();
    settings.admission.server = webhooks;
    settings.admission.managed = "auto.kopf.dev";
    auto op = start_operator(registry, settings);
    auto rules_of = [&](const std::string& path) -> json {
        try {
            const json configuration = request("GET", path);
            json rules = json::array();
            for (const auto& webhook : configuration.value("webhooks", json::array()))
                for (const auto& rule : webhook.value("rules", json::array()))
                    rules.push_back(rule["resources"]);
            return rules;
        } catch (const std::exception&) {
            return nullptr;
        }
    };
    ASSERT_TRUE(
        eventually([&] { return rules_of(kValidatingConfigs + "auto.kopf.dev").is_array(); }));
    EXPECT_EQ(rules_of(kValidatingConfigs + "auto.kopf.dev"), json::array());

    request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", late_crd());
    const json late = json::parse(R"([["lateexamples"]])");
    ASSERT_TRUE(eventually([&] {
        return rules_of(kValidatingConfigs + "auto.kopf.dev") == json({late[0], late[0]}) &&
               rules_of(kMutatingConfigs + "auto.kopf.dev") == late;
    })) << rules_of(kValidatingConfigs + "auto.kopf.dev").dump();

    for (const auto& [field, code] : {std::pair{"wrong", 400}, std::pair{"plural", 422}}) {
        try {
            request("POST", kLateExamples,
                    late_example("lex-" + std::string(field), {{"field", field}}));
            FAIL() << "the object was created with " << field;
        } catch (const ApiError& error) {
            EXPECT_EQ(error.code(), code) << error.message();
        }
    }
    const json created =
        request("POST", kLateExamples, late_example("lex-right", {{"field", "right"}}));
    EXPECT_EQ(created["spec"]["defaulted"], true);
    EXPECT_EQ(op->stop(), "");
}

// The API refuses the managed configurations (422, 500 after the client's own retries): the
// operator logs it, keeps running and serving, and retries until they are in place.
TEST_F(AdmissionHandling, RefusedManagedConfigurationsAreRetriedAfterAPause) {
    LogLines log({"kopf.engines.admission"});
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    on::mutate defaults(registry, "kopfexamples", {.id = "defaults"},
                        [](AdmissionContext& ctx) { ctx.patch.spec()["defaulted"] = true; });
    for (const auto& [status, count] : {std::pair{422, 3}, std::pair{500, 12}}) {
        SCOPED_TRACE(status);
        // The operator's first requests on the mutating configuration fail (this test reads
        // only the validating one while they are due).
        server->fail_next_requests(count, status, 0, "mutatingwebhookconfigurations");
        WebhookServerOptions options;
        options.addr = "127.0.0.1";
        webhooks = std::make_shared<WebhookServer>(options);
        OperatorSettings settings = fast_settings();
        settings.admission.server = webhooks;
        settings.admission.managed = "retried.kopf.dev";
        auto op = start_operator(registry, settings);
        ASSERT_TRUE(eventually([&] {
            return server->failing_requests_left() == 0 &&
                   log.count("Reconfiguring the mutating webhook retried.kopf.dev.") >= 2;
        })) << log.text();
        ASSERT_TRUE(eventually([&] {
            try {
                return webhook_names(request("GET", kMutatingConfigs + "retried.kopf.dev")) ==
                       std::vector<std::string>{"defaults.retried.kopf.dev"};
            } catch (const ApiError&) {
                return false;
            }
        })) << log.text();
        EXPECT_TRUE(
            log.contains("Configuring the webhook configurations retried.kopf.dev failed; "
                         "retrying in 0.1 seconds: POST /apis/admissionregistration.k8s.io/"
                         "v1/mutatingwebhookconfigurations?fieldManager=kopf -> " +
                         std::to_string(status)))
            << log.text();
        // Served all along, and now through the managed configurations.
        try {
            create(example("kex-wrong", {{"field", "wrong"}}));
            FAIL() << "the object was created";
        } catch (const ApiError& error) {
            EXPECT_EQ(error.code(), 400) << error.message();
        }
        EXPECT_EQ(create(example("kex-" + std::to_string(status), {}))["spec"]["defaulted"], true);
        EXPECT_EQ(op->stop(), "");
        request("DELETE", kValidatingConfigs + "retried.kopf.dev");
        request("DELETE", kMutatingConfigs + "retried.kopf.dev");
    }
}

// A server of one's own (the extension point of kopf/webhooks.hpp): requests are handed to the
// operator directly, and the webhooks say where a (fictional) proxy reaches it.
class InProcessServer : public WebhookServerBase {
  public:
    void on_cluster(const ClusterFacts& facts) override {
        std::lock_guard lock(mutex_);
        facts_ = facts;
    }
    ClusterFacts facts() {
        std::lock_guard lock(mutex_);
        return facts_;
    }
    void start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) override {
        {
            std::lock_guard lock(mutex_);
            fn_ = std::move(fn);
        }
        configured(WebhookClientConfig{.url = "https://proxy.example/hooks", .ca_bundle = "PEM"});
    }
    void stop() override {
        std::lock_guard lock(mutex_);
        fn_ = nullptr;
    }
    WebhookResponse call(WebhookRequest request) {
        auto answer = std::make_shared<std::promise<WebhookResponse>>();
        auto arrived = answer->get_future();
        {
            std::lock_guard lock(mutex_);
            fn_(std::move(request), [answer](WebhookResponse r) { answer->set_value(r); });
        }
        return arrived.get();
    }

  private:
    std::mutex mutex_;
    WebhookFn fn_;
    ClusterFacts facts_;
};

TEST_F(AdmissionHandling, ServersOfOnesOwnServeTheHandlersAndTheManagedWebhooks) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, reject_wrong);
    auto server = std::make_shared<InProcessServer>();
    OperatorSettings settings = fast_settings();
    settings.admission.server = server;
    settings.admission.managed = "own.kopf.dev";
    auto op = start_operator(registry, settings);

    json configuration;
    ASSERT_TRUE(eventually([&] {
        try {
            configuration = request("GET", kValidatingConfigs + "own.kopf.dev");
        } catch (const ApiError&) {
            return false;
        }
        return webhook_names(configuration).size() == 1;
    }));
    EXPECT_EQ(configuration["webhooks"][0]["clientConfig"]["url"],
              "https://proxy.example/hooks/check");
    EXPECT_EQ(configuration["webhooks"][0]["clientConfig"]["caBundle"], "UEVN");  // "PEM"

    WebhookRequest review;
    review.webhook = "check";
    review.body =
        json{{"apiVersion", "admission.k8s.io/v1"},
             {"kind", "AdmissionReview"},
             {"request",
              {{"uid", "u1"},
               {"kind", {{"group", "kopf.dev"}, {"version", "v1"}, {"kind", "KopfExample"}}},
               {"resource",
                {{"group", "kopf.dev"}, {"version", "v1"}, {"resource", "kopfexamples"}}},
               {"operation", "CREATE"},
               {"userInfo", {{"username", "someone"}}},
               {"object", example("kex-1", {{"field", "wrong"}})}}}}
            .dump();
    const WebhookResponse answer = server->call(review);
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body["response"]["uid"], "u1");
    EXPECT_EQ(answer.body["response"]["allowed"], false);
    EXPECT_EQ(answer.body["response"]["status"]["code"], 400);
}

TEST_F(AdmissionHandling, AdmissionHandlersWithoutAServerStopTheStart) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    const std::string failure = run_until_it_fails(registry, fast_settings());
    EXPECT_NE(failure.find("settings.admission.server"), std::string::npos) << failure;
}

// Before it starts, a server learns what the operator knows of the cluster (what lets
// kopf::WebhookAutoServer guess the host by which local clusters reach the operator).
TEST_F(AdmissionHandling, ServersLearnTheApiServersUrlCertificateAndVersion) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    auto server = std::make_shared<InProcessServer>();
    OperatorSettings settings = fast_settings();
    settings.admission.server = server;
    auto op = start_operator(registry, settings);
    const ClusterFacts facts = server->facts();
    EXPECT_EQ(facts.server, this->server->url());
    const json version = request("GET", "/version");
    EXPECT_EQ(version["gitVersion"], facts.git_version);
    // The embedded API server's own serving certificate, not its CA's.
    EXPECT_NE(facts.certificate_pem.find("-----BEGIN CERTIFICATE-----"), std::string::npos);
    EXPECT_NE(facts.certificate_pem, this->server->ca_cert_pem());
    EXPECT_EQ(guess_cluster_host(facts), std::nullopt);  // not a local cluster's
    EXPECT_EQ(op->stop(), "");
}

// Where Kopf's auto-tunnel would fall back to ngrok, the start stops, saying why.
TEST_F(AdmissionHandling, TheAutoTunnelOutsideLocalClustersStopsTheStartSayingWhy) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    OperatorSettings settings = fast_settings();
    settings.admission.server = std::make_shared<WebhookAutoTunnel>();
    const std::string failure = run_until_it_fails(registry, settings);
    EXPECT_NE(failure.find("found no local cluster"), std::string::npos) << failure;
}

// Kopf's ngrok tunnel needs a service on the internet: refused with a clear error, not faked.
TEST_F(AdmissionHandling, TheNgrokTunnelStopsTheStartSayingWhatToUseInstead) {
    on::validate check(registry, "kopfexamples", {.id = "check"}, [](AdmissionContext&) {});
    OperatorSettings settings = fast_settings();
    settings.admission.server =
        std::make_shared<WebhookNgrokTunnel>(WebhookNgrokTunnelOptions{.path = "/hooks"});
    const std::string failure = run_until_it_fails(registry, settings);
    EXPECT_NE(failure.find("WebhookNgrokTunnel is not available"), std::string::npos) << failure;
    EXPECT_NE(failure.find("kopf::WebhookServer"), std::string::npos) << failure;
}

}  // namespace
}  // namespace kopf::testing
