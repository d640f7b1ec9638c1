// The webhook server (kopf::WebhookServer) on the loopback, called as the API server calls it
// (the embedded API server's HTTPS client): the generated CA and certificate, given certificate
// files with a password, the URL it reports, the handler id from the path, plain HTTP, and the
// refusal of wrong paths, methods and oversized bodies.
#include "kopf/webhooks.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>

#include "kits/certificates.hpp"
#include "net/admission_client.hpp"
#include "support/log_lines.hpp"

namespace kopf::testing {
namespace {

namespace fs = std::filesystem;

// A shell command's output (stdout and stderr), or nullopt when it fails.
std::optional<std::string> shell(const std::string& command) {
    std::string output;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return std::nullopt;
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    if (::pclose(pipe) != 0) return std::nullopt;
    return output;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// Records the requests and answers each with its own id and body.
struct Recorder {
    std::mutex mutex;
    std::vector<WebhookRequest> requests;
    WebhookFn fn() {
        return [this](WebhookRequest request, std::function<void(WebhookResponse)> reply) {
            json echo = {{"webhook", request.webhook}, {"body", request.body}};
            if (!request.sslpeer.empty()) echo["sslpeer"] = request.sslpeer;
            {
                std::lock_guard lock(mutex);
                requests.push_back(std::move(request));
            }
            reply(WebhookResponse{200, echo});
        };
    }
};

class Webhooks : public ::testing::Test {
  protected:
    fs::path dir;
    Recorder recorder;
    std::optional<WebhookClientConfig> config;

    void SetUp() override {
        dir = fs::temp_directory_path() /
              ("kopf-webhooks-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir);
    }
    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }

    void start(WebhookServer& server) {
        server.start(recorder.fn(), [this](WebhookClientConfig c) { config = std::move(c); });
        ASSERT_TRUE(config.has_value());
    }

    static apiserver::WebhookReply post(const std::string& url, const std::string& ca,
                                        const std::string& body = "{}") {
        apiserver::WebhookCall call;
        call.url = url;
        call.ca_bundle_pem = ca;
        call.body = body;
        call.timeout = std::chrono::seconds(10);
        return apiserver::net::make_admission_transport()->post(call);
    }
};

TEST_F(Webhooks, AGeneratedCaIsTheBundleAndVerifiesTheServerByIpAndExtraNames) {
    WebhookServer server({.addr = "127.0.0.1",
                          .path = "/hooks",
                          .cadump = (dir / "ca.pem").string(),
                          .extra_sans = {"localhost"}});
    start(server);
    const std::string port = std::to_string(server.port());
    EXPECT_EQ(config->url, "https://127.0.0.1:" + port + "/hooks");
    EXPECT_NE(config->ca_bundle.find("BEGIN CERTIFICATE"), std::string::npos);
    EXPECT_EQ(read_text(dir / "ca.pem"), config->ca_bundle);

    auto reply = post(*config->url + "/check", config->ca_bundle, R"({"a": 1})");
    ASSERT_TRUE(reply.reached) << reply.error;
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(json::parse(reply.body), json({{"webhook", "check"}, {"body", R"({"a": 1})"}}));

    auto by_name = post("https://localhost:" + port + "/hooks/check", config->ca_bundle);
    EXPECT_TRUE(by_name.reached) << by_name.error;
    EXPECT_EQ(by_name.status, 200);
}

TEST_F(Webhooks, HandlerIdsArePercentDecodedAndQueriesIgnored) {
    WebhookServer server({.addr = "127.0.0.1"});
    start(server);
    auto reply = post(*config->url + "/parent%2Fchild?timeout=10s", config->ca_bundle);
    ASSERT_TRUE(reply.reached) << reply.error;
    EXPECT_EQ(json::parse(reply.body)["webhook"], "parent/child");
    ASSERT_EQ(recorder.requests.size(), 1u);
    EXPECT_EQ(recorder.requests[0].headers["Content-Type"], "application/json");
}

TEST_F(Webhooks, AnotherCaDoesNotVerifyTheServer) {
    WebhookServer server({.addr = "127.0.0.1"});
    start(server);
    const auto stranger = kits::generate_certificate({"127.0.0.1"});
    auto reply = post(*config->url + "/check", stranger.ca_pem);
    EXPECT_FALSE(reply.reached);
}

TEST_F(Webhooks, TheHostIsInTheUrlAndTheListeningAddressInTheCertificate) {
    WebhookServer server({.addr = "127.0.0.1", .host = "webhooks.example"});
    start(server);
    EXPECT_EQ(config->url, "https://webhooks.example:" + std::to_string(server.port()));
    auto reply =
        post("https://127.0.0.1:" + std::to_string(server.port()) + "/x", config->ca_bundle);
    EXPECT_TRUE(reply.reached) << reply.error;
    // Not for other names.
    auto by_name =
        post("https://localhost:" + std::to_string(server.port()) + "/x", config->ca_bundle);
    EXPECT_FALSE(by_name.reached);
}

TEST_F(Webhooks, GivenCertificateFilesWithAPasswordAreServed) {
    const auto generated = kits::generate_certificate({"127.0.0.1", "localhost"}, "secret");
    std::ofstream(dir / "cert.pem") << generated.cert_pem;
    std::ofstream(dir / "key.pem") << generated.key_pem;
    EXPECT_NE(generated.key_pem.find("ENCRYPTED"), std::string::npos);
    WebhookServer server({.addr = "127.0.0.1",
                          .certfile = (dir / "cert.pem").string(),
                          .pkeyfile = (dir / "key.pem").string(),
                          .password = "secret"});
    start(server);
    EXPECT_EQ(config->ca_bundle, generated.cert_pem);  // no CA given: the certificate itself
    auto reply = post(*config->url + "/check", generated.ca_pem);
    EXPECT_TRUE(reply.reached) << reply.error;
    EXPECT_EQ(reply.status, 200);
}

TEST_F(Webhooks, AWrongPasswordFailsTheStartNamingTheProblem) {
    const auto generated = kits::generate_certificate({"127.0.0.1"}, "secret");
    std::ofstream(dir / "cert.pem") << generated.cert_pem;
    std::ofstream(dir / "key.pem") << generated.key_pem;
    WebhookServer server({.addr = "127.0.0.1",
                          .certfile = (dir / "cert.pem").string(),
                          .pkeyfile = (dir / "key.pem").string(),
                          .password = "wrong"});
    try {
        start(server);
        FAIL() << "the server started";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("TLS setup failed"), std::string::npos)
            << error.what();
    }
}

TEST_F(Webhooks, InsecureServersSpeakPlainHttp) {
    WebhookServer server({.addr = "127.0.0.1", .insecure = true});
    start(server);
    EXPECT_EQ(config->url, "http://127.0.0.1:" + std::to_string(server.port()));
    EXPECT_TRUE(config->ca_bundle.empty());
    // An HTTPS client gets no TLS handshake from it.
    auto reply = post("https://127.0.0.1:" + std::to_string(server.port()) + "/x", "");
    EXPECT_FALSE(reply.reached);
}

TEST_F(Webhooks, WrongPathsAndMethodsAreRefused) {
    WebhookServer server({.addr = "127.0.0.1", .path = "/hooks"});
    start(server);
    auto elsewhere =
        post("https://127.0.0.1:" + std::to_string(server.port()) + "/other/x", config->ca_bundle);
    ASSERT_TRUE(elsewhere.reached) << elsewhere.error;
    EXPECT_EQ(elsewhere.status, 404);
    EXPECT_TRUE(recorder.requests.empty());
}

TEST_F(Webhooks, OversizedBodiesAreRefusedWith413AndLogged) {
    LogLines log({"kopf.kits.webhooks"});
    WebhookServer server({.addr = "127.0.0.1"});
    start(server);
    auto reply = post(*config->url + "/x", config->ca_bundle, std::string(9 * 1024 * 1024, ' '));
    ASSERT_TRUE(reply.reached) << reply.error;
    EXPECT_EQ(reply.status, 413);
    EXPECT_EQ(json::parse(reply.body)["message"], "The request body is too large.");
    EXPECT_TRUE(recorder.requests.empty());
    EXPECT_TRUE(log.contains("is refused: its body exceeds 8388608 bytes.")) << log.text();
    // The server goes on serving.
    EXPECT_EQ(post(*config->url + "/x", config->ca_bundle).status, 200);
}

TEST_F(Webhooks, HandshakesWithoutARequiredClientCertificateFailAndAreLogged) {
    if (!shell("command -v openssl curl")) GTEST_SKIP() << "openssl or curl is not installed";
    LogLines log({"kopf.kits.webhooks"});
    const std::string key = (dir / "client-key.pem").string();
    const std::string cert = (dir / "client-cert.pem").string();
    ASSERT_TRUE(
        shell("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
              "-days 1 -keyout " +
              key + " -out " + cert + " -subj '/CN=apiserver'"));
    WebhookServer server({.addr = "127.0.0.1",
                          .cadump = (dir / "ca.pem").string(),
                          .verify_mode = VerifyMode::REQUIRED,
                          .verify_cafile = cert});
    start(server);
    const std::string curl = "curl -sS --cacert " + (dir / "ca.pem").string() + " -d '{}' ";
    EXPECT_FALSE(shell(curl + *config->url + "/x"));  // the TLS alert: no HTTP answer
    EXPECT_TRUE(recorder.requests.empty());
    ASSERT_TRUE(shell("sleep 0.2"));  // the server logs after the client has seen the alert
    EXPECT_TRUE(log.contains("A TLS handshake from 127.0.0.1:")) << log.text();
    EXPECT_TRUE(log.contains("certificate")) << log.text();
    // With one: served.
    const auto answer =
        shell(curl + "--cert " + cert + " --key " + key + " " + *config->url + "/x");
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(json::parse(*answer)["webhook"], "x");
}

TEST_F(Webhooks, CertificatesWithoutKeysAndBadAddressesAreRefused) {
    WebhookServer half({.addr = "127.0.0.1", .certfile = (dir / "cert.pem").string()});
    EXPECT_THROW(half.start(recorder.fn(), {}), std::invalid_argument);
    WebhookServer named({.addr = "not-an-ip"});
    EXPECT_THROW(named.start(recorder.fn(), {}), std::invalid_argument);
}

TEST_F(Webhooks, ClientCertificatesReachTheHandlersAsKopfsSslpeer) {
    if (!shell("command -v openssl curl")) GTEST_SKIP() << "openssl or curl is not installed";
    const std::string key = (dir / "client-key.pem").string();
    const std::string cert = (dir / "client-cert.pem").string();
    ASSERT_TRUE(shell(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-days 1 -keyout " +
        key + " -out " + cert + " -subj '/CN=Example Common Name/emailAddress=example@kopf.dev'"));
    WebhookServer server(
        {.addr = "127.0.0.1", .cadump = (dir / "ca.pem").string(), .verify_cafile = cert});
    start(server);
    const auto answer = shell("curl -sf --cacert " + (dir / "ca.pem").string() + " --cert " + cert +
                              " --key " + key + " -d '{}' " + *config->url + "/x");
    ASSERT_TRUE(answer.has_value());
    const json peer = json::parse(*answer)["sslpeer"];
    EXPECT_EQ(peer["subject"], json::parse(R"([[["commonName", "Example Common Name"]],
                                                [["emailAddress", "example@kopf.dev"]]])"));
    EXPECT_EQ(peer["issuer"], peer["subject"]);
    EXPECT_EQ(peer["version"], 3);
    EXPECT_FALSE(peer.value("serialNumber", "").empty());
    EXPECT_NE(peer.value("notAfter", "").find("GMT"), std::string::npos) << peer.dump();

    // Without a certificate (optional verification): no peer.
    const auto anonymous =
        shell("curl -sf --cacert " + (dir / "ca.pem").string() + " -d '{}' " + *config->url + "/x");
    ASSERT_TRUE(anonymous.has_value());
    EXPECT_FALSE(json::parse(*anonymous).contains("sslpeer"));
}

TEST_F(Webhooks, StoppedServersCloseTheirPort) {
    WebhookServer server({.addr = "127.0.0.1"});
    start(server);
    const std::string url = *config->url + "/x";
    server.stop();
    EXPECT_FALSE(post(url, config->ca_bundle).reached);
}

// A self-signed certificate made by the openssl command, as local clusters' API servers have.
std::string certificate(const fs::path& dir, const std::string& subject,
                        const std::string& dns_names = "") {
    const fs::path path = dir / "cluster.pem";
    std::string command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-days 1 -keyout " +
        (dir / "cluster.key").string() + " -out " + path.string() + " -subj '" + subject + "'";
    if (!dns_names.empty()) command += " -addext 'subjectAltName=" + dns_names + "'";
    if (!shell(command)) return "";
    return read_text(path);
}

TEST_F(Webhooks, LocalClustersAreRecognisedByTheirApiServersCertificateAndVersion) {
    const auto guess = [](std::string pem, std::string version = "") {
        return guess_cluster_host({.server = "https://127.0.0.1:6443",
                                   .certificate_pem = std::move(pem),
                                   .git_version = std::move(version)});
    };
    EXPECT_EQ(guess(certificate(dir, "/CN=k3s/O=k3s")), "host.k3d.internal");
    EXPECT_EQ(guess(certificate(dir, "/CN=k3s-server-ca@1700000000")), "host.k3d.internal");
    EXPECT_EQ(guess(certificate(dir, "/CN=minikube")), "host.minikube.internal");
    EXPECT_EQ(guess(certificate(dir, "/CN=minikubeCA")), "host.minikube.internal");
    EXPECT_EQ(guess(certificate(dir, "/CN=kube-apiserver", "DNS:docker-for-desktop,DNS:localhost")),
              "host.docker.internal");
    // Other clusters: by the version only, and K3s only.
    const std::string other = certificate(dir, "/CN=kube-apiserver", "DNS:kubernetes");
    ASSERT_FALSE(other.empty());
    EXPECT_EQ(guess(other, "v1.31.2+k3s1"), "host.k3d.internal");
    EXPECT_EQ(guess(other, "v1.31.2"), std::nullopt);
    EXPECT_EQ(guess("not a certificate", "v1.31.2"), std::nullopt);
    EXPECT_EQ(guess(""), std::nullopt);
}

TEST_F(Webhooks, TheAutoServerTakesTheGuessedHostAndIsPlainElsewhere) {
    WebhookAutoServer minikube({.addr = "127.0.0.1"});
    minikube.on_cluster({.certificate_pem = certificate(dir, "/CN=minikubeCA")});
    start(minikube);
    EXPECT_EQ(minikube.guessed_host(), "host.minikube.internal");
    EXPECT_EQ(config->url, "https://host.minikube.internal:" + std::to_string(minikube.port()));
    minikube.stop();

    config.reset();
    WebhookAutoServer elsewhere({.addr = "127.0.0.1"});
    elsewhere.on_cluster({.certificate_pem = certificate(dir, "/CN=kube-apiserver")});
    start(elsewhere);
    EXPECT_EQ(elsewhere.guessed_host(), std::nullopt);
    EXPECT_EQ(config->url, "https://127.0.0.1:" + std::to_string(elsewhere.port()));
    auto reply = post(*config->url + "/check", config->ca_bundle);
    EXPECT_TRUE(reply.reached) << reply.error;
    elsewhere.stop();
}

TEST_F(Webhooks, TheAutoTunnelServesLocalClustersAndRefusesOthersSayingWhy) {
    WebhookAutoTunnel k3d({.addr = "127.0.0.1"});
    k3d.on_cluster({.git_version = "v1.31.2+k3s1"});
    k3d.start(recorder.fn(), [this](WebhookClientConfig c) { config = std::move(c); });
    ASSERT_TRUE(config.has_value());
    EXPECT_TRUE(config->url->starts_with("https://host.k3d.internal:")) << *config->url;
    k3d.stop();

    WebhookAutoTunnel elsewhere;
    elsewhere.on_cluster({.git_version = "v1.31.2"});
    try {
        elsewhere.start(recorder.fn(), [](WebhookClientConfig) {});
        ADD_FAILURE() << "started without a tunnel";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("found no local cluster"), std::string::npos)
            << error.what();
    }
}

}  // namespace
}  // namespace kopf::testing
