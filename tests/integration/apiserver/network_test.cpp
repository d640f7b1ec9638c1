// The API server's network layer seen from real HTTP clients (curl, raw sockets):
// keep-alive, authentication, body limits, malformed requests, kubeconfig.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "integration/apiserver/support/harness.hpp"
#include "net/certificates.hpp"
#include "support/restartable_port.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

const json kUnauthorized = json::parse(
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"Unauthorized","reason":"Unauthorized","code":401})");

TEST(Network, PortZeroPicksAFreePortAndTheUrlNamesIt) {
    TestServer test;
    EXPECT_GT(test.server().port(), 0);
    EXPECT_EQ(test.url(), "http://127.0.0.1:" + std::to_string(test.server().port()));
}

TEST(Network, PlainHttpServesVersionToAnonymousClients) {
    TestServer test;
    auto result = test.http("GET", "/version", "", "", {}, /*with_token=*/false);
    EXPECT_EQ(result.status, 200) << result.body;
    EXPECT_TRUE(json::parse(result.body).contains("gitVersion"));
}

TEST(Network, KeepAliveConnectionsServeSeveralRequests) {
    TestServer test;
    auto result = run_command({"curl", "-sS", "-v", test.url() + "/version",
                               test.url() + "/healthz", test.url() + "/api"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.err.find("Re-using existing connection"), std::string::npos) << result.err;
}

TEST(Network, PlainHttpRejectsAnInvalidBearerTokenWith401) {
    TestServer test;
    auto result = test.http("GET", "/api", "", "", {"-H", "Authorization: Bearer nope"}, false);
    EXPECT_EQ(result.status, 401);
    EXPECT_EQ(json::parse(result.body), kUnauthorized);
}

TEST(Network, PlainHttpAcceptsTheAdminToken) {
    TestServer test;
    auto result = test.http("GET", "/api");
    EXPECT_EQ(result.status, 200) << result.body;
}

TEST(Network, TlsWithoutCredentialsGets401StatusBody) {
    TestServer test(tls_options());
    auto result = test.http("GET", "/api", "", "", {}, /*with_token=*/false);
    EXPECT_EQ(result.status, 401);
    EXPECT_EQ(json::parse(result.body), kUnauthorized);
    EXPECT_EQ(result.header("WWW-Authenticate"), "");
}

TEST(Network, TlsWithAWrongTokenGets401) {
    TestServer test(tls_options());
    auto result = test.http("GET", "/api", "", "", {"-H", "Authorization: Bearer wrong"}, false);
    EXPECT_EQ(result.status, 401);
    EXPECT_EQ(json::parse(result.body), kUnauthorized);
}

TEST(Network, TlsAcceptsTheAdminTokenWithTheCaVerified) {
    TestServer test(tls_options());
    EXPECT_EQ(test.url().rfind("https://127.0.0.1:", 0), 0u);
    auto result = test.http("GET", "/version");
    EXPECT_EQ(result.status, 200) << result.body;
}

TEST(Network, TlsHealthEndpointsNeedNoCredentials) {
    TestServer test(tls_options());
    auto result = test.http("GET", "/healthz", "", "", {}, false);
    EXPECT_EQ(result.status, 200) << result.body;
}

TEST(Network, TlsAcceptsTokensFromTheTokenFile) {
    TempDir dir;
    write_file(dir / "tokens.csv",
               "# users\nalice-token,alice,1001,\"devs,ops\"\nbob-token,bob,1002\n");
    auto options = tls_options();
    options.token_auth_file = dir / "tokens.csv";
    TestServer test(options);
    for (const char* token : {"alice-token", "bob-token"}) {
        auto result = test.http("GET", "/api", "", "",
                                {"-H", std::string("Authorization: Bearer ") + token}, false);
        EXPECT_EQ(result.status, 200) << token << ": " << result.body;
    }
}

TEST(Network, AMalformedTokenFileFailsStartNamingTheFileAndLine) {
    TempDir dir;
    write_file(dir / "tokens.csv", "good,alice,1\nonly-a-token\n");
    auto options = tls_options();
    options.token_auth_file = dir / "tokens.csv";
    Server server(options);
    try {
        server.start();
        FAIL() << "start() accepted a malformed token file";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("tokens.csv line 2"), std::string::npos) << e.what();
    }
}

TEST(Network, TlsAcceptsClientCertificatesSignedByTheServerCa) {
    TestServer test(tls_options());
    auto [cert, key] = test.server().issue_client_certificate("carol", "system:masters");
    write_file(test.dir() / "client.crt", cert);
    write_file(test.dir() / "client.key", key);
    auto result = test.http("GET", "/api", "", "",
                            {"--cert", (test.dir() / "client.crt").string(), "--key",
                             (test.dir() / "client.key").string()},
                            false);
    EXPECT_EQ(result.status, 200) << result.body;
}

TEST(Network, TlsAcceptsClientCertificatesSignedByTheClientCaFile) {
    auto other_ca = net::generate_ca("other-ca");
    auto client = net::issue_certificate(other_ca, "dave", {"devs"}, {}, {}, false);
    TempDir dir;
    write_file(dir / "client-ca.crt", other_ca.cert_pem);
    write_file(dir / "client.crt", client.cert_pem);
    write_file(dir / "client.key", client.key_pem);
    auto options = tls_options();
    options.client_ca_file = dir / "client-ca.crt";
    TestServer test(options);
    auto result = test.http(
        "GET", "/api", "", "",
        {"--cert", (dir / "client.crt").string(), "--key", (dir / "client.key").string()}, false);
    EXPECT_EQ(result.status, 200) << result.body;
}

TEST(Network, TlsRefusesClientCertificatesOfAnUnknownCa) {
    auto stranger_ca = net::generate_ca("stranger");
    auto client = net::issue_certificate(stranger_ca, "eve", {}, {}, {}, false);
    TestServer test(tls_options());
    write_file(test.dir() / "client.crt", client.cert_pem);
    write_file(test.dir() / "client.key", client.key_pem);
    auto result = test.http("GET", "/api", "", "",
                            {"--cert", (test.dir() / "client.crt").string(), "--key",
                             (test.dir() / "client.key").string()},
                            false);
    EXPECT_NE(result.status, 200);
}

TEST(Network, GeneratedClientCertificatesCarryUserAndGroup) {
    TestServer test(tls_options());
    auto [cert, key] = test.server().issue_client_certificate("carol", "team-a");
    auto subject = net::certificate_subject(cert);
    EXPECT_EQ(subject.common_name, "carol");
    EXPECT_EQ(subject.organizations, std::vector<std::string>{"team-a"});
}

TEST(Network, PlainKubeconfigPointsAtTheServerWithACurrentContext) {
    TestServer test;
    auto config = YAML::LoadFile(test.kubeconfig().string());
    EXPECT_EQ(config["kind"].as<std::string>(), "Config");
    EXPECT_EQ(config["clusters"][0]["cluster"]["server"].as<std::string>(), test.url());
    EXPECT_FALSE(config["clusters"][0]["cluster"]["certificate-authority-data"]);
    auto current = config["current-context"].as<std::string>();
    EXPECT_EQ(config["contexts"][0]["name"].as<std::string>(), current);
    EXPECT_EQ(read_file(test.kubeconfig()), test.server().kubeconfig_yaml());
}

TEST(Network, TlsKubeconfigCarriesTheCaAndTheAdminToken) {
    TestServer test(tls_options());
    auto config = YAML::LoadFile(test.kubeconfig().string());
    EXPECT_EQ(config["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>(),
              net::base64_encode(test.server().ca_cert_pem()));
    EXPECT_EQ(config["users"][0]["user"]["token"].as<std::string>(), test.server().admin_token());
}

// A child process started while the server runs (an operator under test) does not inherit its
// listening socket, so the server restarts on the same port while the child lives on.
TEST(Network, RestartsOnItsPortWhileAChildStartedMeanwhileStillRuns) {
    ServerOptions options;
    options.port = kopf::testing::restartable_port();
    auto first = std::make_unique<Server>(options);
    first->start();
    EXPECT_EQ(curl_request(first->url(), "GET", "/version").status, 200);
    Process child({"sleep", "30"});
    first->stop();
    first.reset();
    // Under load, the port was seen still taken for a moment after the stop (1 run in ~300 in
    // parallel): a second is allowed for that. A child holding it would hold it for 30 s.
    std::unique_ptr<Server> second;
    std::string refusal;
    for (int attempt = 0; attempt < 20 && !second; ++attempt) {
        if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        second = std::make_unique<Server>(options);
        try {
            second->start();
        } catch (const std::runtime_error& error) {
            refusal = error.what();
            second.reset();
        }
    }
    ASSERT_TRUE(second) << refusal;
    EXPECT_EQ(curl_request(second->url(), "GET", "/version").status, 200);
}

TEST(Network, BodiesAboveTheLimitGet413WithAStatusBody) {
    ServerOptions options;
    options.max_body_bytes = 1024;
    TestServer test(options);
    std::string big(4096, 'x');
    auto result =
        test.http("POST", "/api/v1/namespaces/default/configmaps", big, "application/json");
    EXPECT_EQ(result.status, 413);
    auto status = json::parse(result.body);
    EXPECT_EQ(status["reason"], "RequestEntityTooLarge");
    EXPECT_EQ(status["code"], 413);
}

TEST(Network, ChunkedBodiesAboveTheLimitGet413) {
    ServerOptions options;
    options.max_body_bytes = 1024;
    TestServer test(options);
    std::string big(4096, 'x');
    auto result = test.http("POST", "/api/v1/namespaces/default/configmaps", big,
                            "application/json", {"-H", "Transfer-Encoding: chunked"});
    EXPECT_EQ(result.status, 413);
}

TEST(Network, MalformedHttpGets400AndTheServerKeepsServing) {
    TestServer test;
    for (const char* garbage :
         {"GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET /api HTTP/1.1\r\nHost x\r\n\r\n",
          "POST /api HTTP/1.1\r\nContent-Length: zzz\r\n\r\n", "\x01\x02\x03\r\n\r\n"}) {
        auto answer = raw_exchange(test.server().port(), garbage);
        EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << garbage << " -> " << answer;
    }
    auto result = test.http("GET", "/version");
    EXPECT_EQ(result.status, 200);
}

TEST(Network, TruncatedRequestsAndSilentDisconnectsDoNotDisturbOtherClients) {
    TestServer test;
    raw_exchange(test.server().port(), "", 100ms);
    raw_exchange(test.server().port(), "GET /version HTTP/1.1\r\nHost: x\r\n", 100ms);
    raw_exchange(test.server().port(),
                 "POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc", 100ms);
    EXPECT_EQ(test.http("GET", "/version").status, 200);
}

TEST(Network, AnInvalidRequestTargetGets400) {
    TestServer test;
    auto answer = raw_exchange(
        test.server().port(), "GET http://other/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
}

}  // namespace
}  // namespace kopf::apiserver::testing
