// `kopf apiserver` as a user runs it: flags, the start-up line, signals, the admin
// endpoint, TLS files, and restarts with --data-dir.
#include <gtest/gtest.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "integration/apiserver/support/harness.hpp"
#include "net/certificates.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

// A `kopf apiserver` subprocess; url() is read from its start-up line.
class CliServer {
  public:
    explicit CliServer(std::vector<std::string> args) {
        if (!std::filesystem::exists(kopf_binary())) {
            ADD_FAILURE() << kopf_binary() << " is missing: build the kopf_cli target first";
            process_ = std::make_unique<Process>(std::vector<std::string>{"true"});
            return;
        }
        std::vector<std::string> argv = {kopf_binary().string(), "apiserver"};
        argv.insert(argv.end(), args.begin(), args.end());
        process_ = std::make_unique<Process>(argv);
        static const std::regex url_pattern("serving on (https?://[0-9.]+:[0-9]+)");
        started_ = wait_for(
            [&] {
                std::smatch match;
                auto out = process_->out();
                if (!std::regex_search(out, match, url_pattern)) return !process_->running();
                url_ = match[1];
                return true;
            },
            30s);
    }

    Process& process() { return *process_; }
    const std::string& url() const { return url_; }
    bool started() const { return started_ && !url_.empty(); }

    CommandResult stop(int signal_number = SIGTERM) {
        process_->signal(signal_number);
        return process_->wait(30s);
    }

  private:
    std::unique_ptr<Process> process_;
    std::string url_;
    bool started_ = false;
};

std::string config_map(const std::string& name) {
    return json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}}.dump();
}

TEST(Cli, PrintsTheUrlAndKubeconfigPathAndStopsCleanlyOnSigterm) {
    TempDir dir;
    CliServer server({"--port", "0", "--kubeconfig-out", (dir / "kubeconfig").string()});
    ASSERT_TRUE(server.started()) << server.process().out() << server.process().err();
    EXPECT_NE(server.process().out().find((dir / "kubeconfig").string()), std::string::npos);
    EXPECT_EQ(curl_request(server.url(), "GET", "/version").status, 200);
    auto config = YAML::LoadFile((dir / "kubeconfig").string());
    EXPECT_EQ(config["clusters"][0]["cluster"]["server"].as<std::string>(), server.url());
    auto result = server.stop(SIGTERM);
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST(Cli, StopsCleanlyOnSigint) {
    CliServer server({"--port", "0"});
    ASSERT_TRUE(server.started()) << server.process().err();
    auto result = server.stop(SIGINT);
    EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST(Cli, HelpListsTheFlags) {
    auto result = run_command({kopf_binary().string(), "apiserver", "--help"});
    EXPECT_EQ(result.exit_code, 0);
    for (const char* flag :
         {"--bind-address", "--port", "--tls", "--tls-cert-file", "--tls-private-key-file",
          "--client-ca-file", "--token-auth-file", "--kubeconfig-out", "--data-dir",
          "--max-requests-inflight", "--bookmark-interval"}) {
        EXPECT_NE(result.out.find(flag), std::string::npos) << flag;
    }
}

TEST(Cli, AnUnknownFlagFailsNamingIt) {
    auto result = run_command({kopf_binary().string(), "apiserver", "--no-such-flag"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE((result.out + result.err).find("--no-such-flag"), std::string::npos) << result.err;
}

TEST(Cli, AnInvalidPortFailsNamingIt) {
    auto result = run_command({kopf_binary().string(), "apiserver", "--port", "70000"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE((result.out + result.err).find("--port"), std::string::npos) << result.err;
}

TEST(Cli, AnInvalidBindAddressFailsNamingIt) {
    auto result =
        run_command({kopf_binary().string(), "apiserver", "--bind-address", "not-an-address"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("not-an-address"), std::string::npos) << result.err;
}

TEST(Cli, ABusyPortFailsWithAClearError) {
    CliServer first({"--port", "0"});
    ASSERT_TRUE(first.started());
    auto port = first.url().substr(first.url().rfind(':') + 1);
    auto result = run_command({kopf_binary().string(), "apiserver", "--port", port});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("cannot listen"), std::string::npos) << result.err;
}

TEST(Cli, TlsWithGivenCertificateFilesServesThem) {
    TempDir dir;
    auto ca = net::generate_ca("my-ca");
    auto serving = net::issue_certificate(ca, "my-server", {}, {"localhost"}, {"127.0.0.1"}, true);
    write_file(dir / "ca.crt", ca.cert_pem);
    write_file(dir / "tls.crt", serving.cert_pem);
    write_file(dir / "tls.key", serving.key_pem);
    write_file(dir / "tokens.csv", "secret-token,alice,1,admins\n");
    CliServer server({"--port", "0", "--tls-cert-file", (dir / "tls.crt").string(),
                      "--tls-private-key-file", (dir / "tls.key").string(), "--token-auth-file",
                      (dir / "tokens.csv").string()});
    ASSERT_TRUE(server.started()) << server.process().err();
    EXPECT_EQ(server.url().rfind("https://", 0), 0u);
    auto ok = curl_request(
        server.url(), "GET", "/api", "", "",
        {"--cacert", (dir / "ca.crt").string(), "-H", "Authorization: Bearer secret-token"});
    EXPECT_EQ(ok.status, 200) << ok.body;
    auto anonymous =
        curl_request(server.url(), "GET", "/api", "", "", {"--cacert", (dir / "ca.crt").string()});
    EXPECT_EQ(anonymous.status, 401);
}

TEST(Cli, AdminEndpointInjectsFaultsIntoTheRunningServer) {
    CliServer server({"--port", "0"});
    ASSERT_TRUE(server.started());
    auto set = curl_request(server.url(), "POST", "/_kopf/faults",
                            R"({"failNext":{"count":1,"status":500}})", "application/json");
    ASSERT_EQ(set.status, 200) << set.body;
    EXPECT_EQ(curl_request(server.url(), "GET", "/api").status, 500);
    EXPECT_EQ(curl_request(server.url(), "GET", "/api").status, 200);
}

TEST(Cli, RestartWithTheSameDataDirKeepsObjectsAndResourceVersions) {
    TempDir dir;
    const std::string path = "/api/v1/namespaces/default/configmaps";
    std::string rv;
    {
        CliServer server({"--port", "0", "--data-dir", (dir / "data").string()});
        ASSERT_TRUE(server.started()) << server.process().err();
        auto created =
            curl_request(server.url(), "POST", path, config_map("kept"), "application/json");
        ASSERT_EQ(created.status, 201) << created.body;
        rv = json::parse(created.body)["metadata"]["resourceVersion"];
        EXPECT_EQ(server.stop(SIGTERM).exit_code, 0);
    }
    CliServer server({"--port", "0", "--data-dir", (dir / "data").string()});
    ASSERT_TRUE(server.started()) << server.process().err();
    auto got = curl_request(server.url(), "GET", path + "/kept");
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(json::parse(got.body)["metadata"]["resourceVersion"], rv);
    auto next = curl_request(server.url(), "POST", path, config_map("later"), "application/json");
    ASSERT_EQ(next.status, 201) << next.body;
    std::string next_rv = json::parse(next.body)["metadata"]["resourceVersion"];
    EXPECT_GT(std::stoll(next_rv), std::stoll(rv));
}

TEST(Cli, AKilledServerKeepsAcknowledgedWrites) {
    TempDir dir;
    const std::string path = "/api/v1/namespaces/default/configmaps";
    {
        CliServer server({"--port", "0", "--data-dir", (dir / "data").string()});
        ASSERT_TRUE(server.started()) << server.process().err();
        ASSERT_EQ(
            curl_request(server.url(), "POST", path, config_map("durable"), "application/json")
                .status,
            201);
        server.stop(SIGKILL);
    }
    CliServer server({"--port", "0", "--data-dir", (dir / "data").string()});
    ASSERT_TRUE(server.started()) << server.process().err();
    EXPECT_EQ(curl_request(server.url(), "GET", path + "/durable").status, 200);
}

}  // namespace
}  // namespace kopf::apiserver::testing
