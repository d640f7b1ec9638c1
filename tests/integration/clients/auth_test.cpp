// Every authentication method reaches the embedded API server over verified TLS.
#include <gtest/gtest.h>

#include <fstream>

#include "clients/kubeconfig.hpp"
#include "support/fixture.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

// The server also accepts two static tokens ("token-a", "token-b") from a token file.
class Auth : public ClientTest {
  protected:
    void configure(apiserver::ServerOptions& options) override {
        options.token_auth_file = write_file(
            "tokens.csv",
            "token-a,alice,uid-a,\"system:masters\"\ntoken-b,bob,uid-b,\"system:masters\"\n");
    }
    ConnectionInfo with_token(const std::string& token) const {
        auto info = admin();
        info.token = token;
        return info;
    }
};

TEST_F(Auth, BearerTokenIsAccepted) {
    auto api = make_client(with_token("token-a"));
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
    EXPECT_EQ(relogins, 0);
}

TEST_F(Auth, RejectedTokenEndsInUnauthorizedWhenReloginCannotHelp) {
    relogin_result = [this] {
        return std::map<std::string, ConnectionInfo>{{"bad", with_token("bad")}};
    };
    auto api = make_client(with_token("wrong"));
    EXPECT_THROW(run(api->list(configmaps(), "default")), UnauthorizedError);
    EXPECT_GE(relogins, 1);
}

TEST_F(Auth, RejectedTokenIsReplacedByReloginAndTheRequestSucceeds) {
    auto api = make_client(with_token("wrong"));
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
    EXPECT_EQ(relogins, 1);
}

TEST_F(Auth, EmptyLoginIsALoginError) {
    relogin_result = [] { return std::map<std::string, ConnectionInfo>{}; };
    auto api = make_client();
    EXPECT_THROW(run(api->list(configmaps(), "default")), structs::LoginError);
}

TEST_F(Auth, TokenFileIsReReadAfterRotation) {
    auto token_file = write_file("token", "token-a\n");
    auto info = admin();
    info.token.reset();
    info.token_path = token_file.string();
    relogin_result = [info] { return std::map<std::string, ConnectionInfo>{{"file", info}}; };
    auto api = make_client(info);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
    write_file("token", "revoked\n");
    EXPECT_THROW(run(api->list(configmaps(), "default")), UnauthorizedError);
    write_file("token", "token-b-rotated\n");
    EXPECT_THROW(run(api->list(configmaps(), "default")), UnauthorizedError);
    write_file("token", "token-b\n");
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Auth, ClientCertificateFromData) {
    auto [cert, key] = server->issue_client_certificate("carol", "system:masters");
    auto info = admin();
    info.token.reset();
    info.certificate_data = cert;
    info.private_key_data = key;
    auto api = make_client(info);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Auth, ClientCertificateAndCaFromFiles) {
    auto [cert, key] = server->issue_client_certificate("carol", "system:masters");
    auto info = admin();
    info.token.reset();
    info.ca_data.reset();
    info.ca_path = write_file("ca.pem", server->ca_cert_pem()).string();
    info.certificate_path = write_file("client.pem", cert).string();
    info.private_key_path = write_file("client.key", key).string();
    auto api = make_client(info);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Auth, MissingClientKeyFileIsAClearError) {
    auto info = admin();
    info.certificate_path = (temp_dir() / "missing.pem").string();
    auto api = make_client(info);
    try {
        run(api->list(configmaps(), "default"));
        FAIL() << "no error";
    } catch (const ConnectionError& e) {
        EXPECT_NE(std::string(e.what()).find("missing.pem"), std::string::npos) << e.what();
    }
}

TEST_F(Auth, UnknownCaIsRejectedUnlessInsecure) {
    auto untrusted = admin();
    untrusted.ca_data.reset();
    auto settings = fast_settings();
    settings.error_backoffs = {};
    relogin_result = [untrusted] {
        return std::map<std::string, ConnectionInfo>{{"u", untrusted}};
    };
    auto api = make_client(untrusted, settings);
    EXPECT_THROW(run(api->list(configmaps(), "default")), ConnectionError);

    auto insecure = untrusted;
    insecure.insecure = true;
    vault->populate({{"insecure", insecure}});
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Auth, KubeconfigWrittenByTheServerLogsIn) {
    auto path = write_file("kubeconfig", server->kubeconfig_yaml());
    auto info = login_with_kubeconfig_files({path});
    ASSERT_TRUE(info.has_value());
    auto api = make_client(*info);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Auth, ExecPluginCredentialsAreCachedUntilTheyExpire) {
    auto counter = temp_dir() / "runs";
    write_file(
        "plugin.sh",
        "#!/bin/sh\n"
        "echo run >> '" +
            counter.string() +
            "'\n"
            "exp=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)\n"
            "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
            "\"status\":{\"token\":\"token-a\",\"expirationTimestamp\":\"'$exp'\"}}'\n",
        true);
    auto kubeconfig = write_file("kubeconfig",
                                 "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                 "clusters:\n- name: k\n  cluster:\n    server: " +
                                     server->url() +
                                     "\n    certificate-authority: ca.pem\n"
                                     "users:\n- name: u\n  user:\n    exec:\n      apiVersion: "
                                     "client.authentication.k8s.io/v1\n"
                                     "      command: ./plugin.sh\n      interactiveMode: Never\n"
                                     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n");
    write_file("ca.pem", server->ca_cert_pem());
    auto runs = [&] {
        std::ifstream in(counter);
        int lines = 0;
        for (std::string line; std::getline(in, line);) ++lines;
        return lines;
    };
    relogin_result = [kubeconfig] {
        return std::map<std::string, ConnectionInfo>{
            {"kubeconfig", *login_with_kubeconfig_files({kubeconfig})}};
    };
    auto api = make_client();
    run(api->list(configmaps(), "default"));
    run(api->list(configmaps(), "default"));
    EXPECT_EQ(runs(), 1);  // cached while valid
    run(api->sleep(Seconds(2.5)));
    run(api->list(configmaps(), "default"));
    EXPECT_EQ(runs(), 2);  // expired: the plugin ran again
}

TEST_F(Auth, ServiceAccountFilesUnderAFakeRoot) {
    auto root = temp_dir() / "serviceaccount";
    std::filesystem::create_directories(root);
    std::ofstream(root / "token") << "token-b";
    std::ofstream(root / "ca.crt") << server->ca_cert_pem();
    std::ofstream(root / "namespace") << "default";
    ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    ::setenv("KUBERNETES_SERVICE_PORT", std::to_string(server->port()).c_str(), 1);
    auto info = login_with_service_account(root);
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->default_namespace, "default");
    auto api = make_client(*info);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

}  // namespace
}  // namespace kopf::testing
