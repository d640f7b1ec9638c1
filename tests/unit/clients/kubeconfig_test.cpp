// Kubeconfig loading as kubectl does it, and errors that name the file and the field.
#include "clients/kubeconfig.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "clients/auth.hpp"

namespace fs = std::filesystem;
using kopf::clients::connection_from_kubeconfig;
using kopf::clients::KubeconfigError;
using kopf::clients::load_kubeconfig;

namespace {

class KubeconfigTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kopf-kubeconfig-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path write(const std::string& name, const std::string& text, bool executable = false) {
        auto path = dir_ / name;
        std::ofstream(path) << text;
        if (executable) fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
        return path;
    }

    std::string error_of(const std::vector<fs::path>& paths,
                         std::optional<std::string> context = {}) {
        try {
            auto config = load_kubeconfig(paths);
            if (config) connection_from_kubeconfig(*config, context);
        } catch (const KubeconfigError& e) {
            return e.what();
        }
        return "";
    }

    fs::path dir_;
};

const char* kBasic = R"(
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: ca.pem
users:
- name: dev-user
  user:
    token: abc123
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: other
  context: {cluster: dev-cluster, user: basic-user}
)";

}  // namespace

TEST_F(KubeconfigTest, CurrentContextGivesServerTokenCaAndNamespace) {
    auto path = write("config", kBasic);
    auto info = connection_from_kubeconfig(*load_kubeconfig({path}));
    EXPECT_EQ(info.server, "https://127.0.0.1:6443");
    EXPECT_EQ(info.token, "abc123");
    EXPECT_EQ(info.scheme, "Bearer");
    EXPECT_EQ(info.ca_path, (dir_ / "ca.pem").string());  // relative to the kubeconfig's directory
    EXPECT_EQ(info.default_namespace, "team-a");
    EXPECT_FALSE(info.insecure);
}

TEST_F(KubeconfigTest, AnExecEnvItemThatIsNotAMappingIsAnErrorNamingTheFileAndTheItem) {
    // Found by the kubeconfig fuzzer: yaml-cpp's BadSubscript escaped instead.
    auto path = write("config", R"(
apiVersion: v1
kind: Config
current-context: ctx
clusters:
- {name: c, cluster: {server: "https://127.0.0.1:6443"}}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./get-token
      env: [not-a-mapping]
contexts:
- {name: ctx, context: {cluster: c, user: u}}
)");
    const auto error = error_of({path});
    EXPECT_NE(error.find(path.string()), std::string::npos) << error;
    EXPECT_NE(error.find("env[0]"), std::string::npos) << error;
    EXPECT_NE(error.find("must be a mapping"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, FilesAreMergedFirstDefinitionWins) {
    auto first = write("first", R"(
current-context: other
users:
- name: basic-user
  user: {username: alice, password: secret}
- name: dev-user
  user: {token: from-first}
)");
    auto second = write("second", kBasic);
    auto config = load_kubeconfig({dir_ / "missing", first, second});
    ASSERT_TRUE(config.has_value());
    EXPECT_EQ(config->files.size(), 2u);  // the missing file is skipped, as kubectl does
    auto other = connection_from_kubeconfig(*config);
    EXPECT_EQ(other.username, "alice");
    EXPECT_EQ(other.password, "secret");
    auto dev = connection_from_kubeconfig(*config, "dev");
    EXPECT_EQ(dev.token, "from-first");
}

TEST_F(KubeconfigTest, KubeconfigEnvironmentListsSeveralFiles) {
    auto a = write("a", "current-context: dev\n");
    auto b = write("b", kBasic);
    ::setenv("KUBECONFIG", (a.string() + "::" + b.string()).c_str(), 1);
    auto paths = kopf::clients::default_kubeconfig_paths();
    ::unsetenv("KUBECONFIG");
    EXPECT_EQ(paths, (std::vector<fs::path>{a, b}));
}

TEST_F(KubeconfigTest, NoFilesMeansNoKubeconfig) {
    EXPECT_FALSE(load_kubeconfig({dir_ / "nope"}).has_value());
}

TEST_F(KubeconfigTest, InlineDataIsBase64Decoded) {
    auto path = write("config", R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://h:1", certificate-authority-data: "Q0EtUEVN", insecure-skip-tls-verify: true}
users:
- name: u
  user: {client-certificate-data: "Q0VSVA==", client-key-data: "S0VZ"}
contexts:
- name: c
  context: {cluster: k, user: u}
)");
    auto info = connection_from_kubeconfig(*load_kubeconfig({path}));
    EXPECT_EQ(info.ca_data, "CA-PEM");
    EXPECT_EQ(info.certificate_data, "CERT");
    EXPECT_EQ(info.private_key_data, "KEY");
    EXPECT_TRUE(info.insecure);
    EXPECT_FALSE(info.token.has_value());
}

TEST_F(KubeconfigTest, BrokenYamlNamesTheFile) {
    auto path = write("config", "clusters: [\n");
    auto error = error_of({path});
    EXPECT_NE(error.find(path.string()), std::string::npos) << error;
    EXPECT_NE(error.find("not valid YAML"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, MissingServerNamesTheFileAndField) {
    auto path =
        write("config", "clusters:\n- name: k\n  cluster: {insecure-skip-tls-verify: true}\n");
    auto error = error_of({path});
    EXPECT_NE(error.find(path.string()), std::string::npos) << error;
    EXPECT_NE(error.find("clusters[0].cluster.server"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, WrongTypeNamesTheField) {
    auto path = write("config", "users:\n- name: u\n  user: {token: [1, 2]}\n");
    auto error = error_of({path});
    EXPECT_NE(error.find("users[0].user.token"), std::string::npos) << error;
    EXPECT_NE(error.find("must be a string"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, BadBase64NamesTheField) {
    auto path = write("config",
                      "clusters:\n- name: k\n  cluster: {server: 'https://h', "
                      "certificate-authority-data: '!!!'}\n");
    auto error = error_of({path});
    EXPECT_NE(error.find("clusters[0].cluster.certificate-authority-data"), std::string::npos)
        << error;
}

TEST_F(KubeconfigTest, UnknownClusterReferenceNamesTheContext) {
    auto path =
        write("config", "current-context: c\ncontexts:\n- name: c\n  context: {cluster: ghost}\n");
    auto error = error_of({path});
    EXPECT_NE(error.find("contexts[c].context.cluster"), std::string::npos) << error;
    EXPECT_NE(error.find("ghost"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, UnknownExplicitContextIsAnError) {
    auto path = write("config", kBasic);
    auto error = error_of({path}, "prod");
    EXPECT_NE(error.find("context 'prod' is not defined"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, NoCurrentContextIsAnError) {
    auto path = write("config", "clusters: []\n");
    auto error = error_of({path});
    EXPECT_NE(error.find("current-context"), std::string::npos) << error;
}

TEST_F(KubeconfigTest, TokenFileIsReadAndReReadWhenItChanges) {
    auto token = write("token", "first-token\n");
    auto path = write("config",
                      "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://h'}\n"
                      "users:\n- name: u\n  user: {tokenFile: token}\n"
                      "contexts:\n- name: c\n  context: {cluster: k, user: u}\n");
    auto info = connection_from_kubeconfig(*load_kubeconfig({path}));
    EXPECT_EQ(info.token_path, token.string());
    EXPECT_EQ(kopf::clients::authorization_header(info), "Bearer first-token");
    std::ofstream(token) << "second-token-which-is-longer";
    EXPECT_EQ(kopf::clients::authorization_header(info), "Bearer second-token-which-is-longer");
}

TEST_F(KubeconfigTest, BasicAuthHeader) {
    kopf::ConnectionInfo info;
    info.username = "alice";
    info.password = "secret";
    EXPECT_EQ(kopf::clients::authorization_header(info), "Basic YWxpY2U6c2VjcmV0");
}

TEST_F(KubeconfigTest, ExecPluginTokenAndExpirationAreUsed) {
    write("plugin.sh",
          "#!/bin/sh\n"
          "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
          "\"status\":{\"token\":\"'$MY_TOKEN'\",\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}"
          "'\n",
          true);
    auto path = write("config", R"(
current-context: c
clusters:
- name: k
  cluster: {server: 'https://h'}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      env: [{name: MY_TOKEN, value: exec-token}]
      interactiveMode: IfAvailable
contexts:
- name: c
  context: {cluster: k, user: u}
)");
    auto info = connection_from_kubeconfig(*load_kubeconfig({path}));
    EXPECT_EQ(info.token, "exec-token");
    ASSERT_TRUE(info.expiration.has_value());
    EXPECT_EQ(std::chrono::system_clock::to_time_t(*info.expiration), 1893553445);
}

TEST_F(KubeconfigTest, InteractiveExecPluginIsRefusedClearly) {
    kopf::clients::ExecConfig exec;
    exec.command = "true";
    exec.interactive_mode = "Always";
    exec.source = "/some/kubeconfig";
    try {
        kopf::clients::run_exec_plugin(exec);
        FAIL() << "no error";
    } catch (const KubeconfigError& e) {
        EXPECT_NE(std::string(e.what()).find("interactiveMode: Always"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("/some/kubeconfig"), std::string::npos) << e.what();
    }
}

TEST_F(KubeconfigTest, FailingExecPluginReportsItsStderrAndHint) {
    kopf::clients::ExecConfig exec;
    exec.command = "sh";
    exec.args = {"-c", "echo boom >&2; exit 3"};
    exec.install_hint = "install the plugin";
    try {
        kopf::clients::run_exec_plugin(exec);
        FAIL() << "no error";
    } catch (const KubeconfigError& e) {
        std::string text = e.what();
        EXPECT_NE(text.find("exit status 3"), std::string::npos) << text;
        EXPECT_NE(text.find("boom"), std::string::npos) << text;
        EXPECT_NE(text.find("install the plugin"), std::string::npos) << text;
    }
}

TEST_F(KubeconfigTest, ExecPluginPrintingGarbageIsAnError) {
    kopf::clients::ExecConfig exec;
    exec.command = "echo";
    exec.args = {"not json"};
    EXPECT_THROW(kopf::clients::run_exec_plugin(exec), KubeconfigError);
}

TEST_F(KubeconfigTest, ServiceAccountFilesUnderAFakeRoot) {
    write("token", "sa-token\n");
    write("ca.crt", "CA");
    write("namespace", "operators\n");
    ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    ::setenv("KUBERNETES_SERVICE_PORT", "8443", 1);
    auto info = kopf::login_with_service_account(dir_);
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->server, "https://10.0.0.1:8443");
    EXPECT_EQ(info->ca_path, (dir_ / "ca.crt").string());
    EXPECT_EQ(info->default_namespace, "operators");
    EXPECT_EQ(kopf::clients::authorization_header(*info), "Bearer sa-token");
}

TEST_F(KubeconfigTest, NoServiceAccountOutsideACluster) {
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    EXPECT_FALSE(kopf::login_with_service_account(dir_).has_value());
}

TEST(Rfc3339, OffsetsAndFractionsAreParsed) {
    using kopf::clients::parse_rfc3339;
    EXPECT_EQ(parse_rfc3339("2030-01-02T03:04:05.123456Z"), parse_rfc3339("2030-01-02T03:04:05Z"));
    EXPECT_EQ(parse_rfc3339("2030-01-02T05:04:05+02:00"), parse_rfc3339("2030-01-02T03:04:05Z"));
    EXPECT_THROW(parse_rfc3339("yesterday"), std::invalid_argument);
}

// The clock counts nanoseconds in 64 bits: a later year would overflow it (found by fuzzing).
TEST(Rfc3339, TimesBeyondTheClocksRangeAreRefused) {
    using kopf::clients::parse_rfc3339;
    EXPECT_THROW(parse_rfc3339("2426-01-02T03:04:05.123456+01:00"), std::invalid_argument);
    EXPECT_THROW(parse_rfc3339("1600-01-02T03:04:05Z"), std::invalid_argument);
    EXPECT_NO_THROW(parse_rfc3339("2261-12-31T23:59:59Z"));
}
