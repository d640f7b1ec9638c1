// `kopf apiserver --authorization-mode=RBAC`: roles and bindings created with kubectl decide
// what a token's user may do, over HTTPS, and denials are kube-apiserver's 403 Statuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using json = nlohmann::json;

const char* kPolicy = R"(
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmap-reader, namespace: default}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: operator-reads-configmaps, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-reader}
subjects:
- {kind: ServiceAccount, name: operator, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: namespace-watcher}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: operator-watches-namespaces}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: namespace-watcher}
subjects:
- {kind: ServiceAccount, name: operator, namespace: default}
)";

class RbacServer : public ::testing::Test {
  protected:
    static ServerOptions options(const TempDir& dir) {
        write_file(dir / "tokens.csv",
                   "operator-token,system:serviceaccount:default:operator,1001,"
                   "\"system:serviceaccounts,system:serviceaccounts:default\"\n"
                   "nobody-token,nobody,1002\n");
        ServerOptions o = tls_options();
        o.token_auth_file = dir / "tokens.csv";
        o.authorization_mode = "RBAC";
        return o;
    }
    HttpResult as(const std::string& token, const std::string& method, const std::string& path,
                  const std::string& data = "") {
        return server.http(method, path, data, data.empty() ? "" : "application/json",
                           {"-H", "Authorization: Bearer " + token}, /*with_token=*/false);
    }

    TempDir tokens_dir;
    TestServer server{options(tokens_dir)};
};

TEST_F(RbacServer, AUserWithoutBindingsGetsKubeApiserversForbiddenStatus) {
    auto result = as("nobody-token", "GET", "/api/v1/namespaces/default/configmaps");
    ASSERT_EQ(result.status, 403) << result.body;
    auto status = json::parse(result.body);
    EXPECT_EQ(status["kind"], "Status");
    EXPECT_EQ(status["reason"], "Forbidden");
    EXPECT_EQ(status["code"], 403);
    EXPECT_EQ(status["message"],
              "configmaps is forbidden: User \"nobody\" cannot list resource \"configmaps\" in "
              "API group \"\" in the namespace \"default\"");
    EXPECT_EQ(status["details"]["kind"], "configmaps");
    // Discovery and version are every authenticated user's, as kube's bootstrap roles say.
    EXPECT_EQ(as("nobody-token", "GET", "/api").status, 200);
    EXPECT_EQ(as("nobody-token", "GET", "/apis").status, 200);
    EXPECT_EQ(as("nobody-token", "GET", "/version").status, 200);
    auto path = as("nobody-token", "GET", "/metrics");
    EXPECT_EQ(path.status, 403) << path.body;
    EXPECT_EQ(json::parse(path.body)["message"],
              "forbidden: User \"nobody\" cannot get path \"/metrics\"");
    // The admin token (system:masters) may do anything.
    EXPECT_EQ(server.http("GET", "/api/v1/namespaces/default/configmaps").status, 200);
}

TEST_F(RbacServer, RolesAndBindingsAppliedWithKubectlGrantExactlyTheirRules) {
    auto applied = server.kubectl({"apply", "-f", "-"}, kPolicy);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    server.kubectl({"create", "namespace", "other"});
    server.kubectl({"create", "configmap", "settings", "-n", "default"});
    server.kubectl({"create", "configmap", "settings", "-n", "other"});

    EXPECT_EQ(as("operator-token", "GET", "/api/v1/namespaces/default/configmaps").status, 200);
    EXPECT_EQ(as("operator-token", "GET", "/api/v1/namespaces/default/configmaps/settings").status,
              200);
    EXPECT_EQ(as("operator-token", "GET", "/api/v1/namespaces?watch=true&timeoutSeconds=1").status,
              200);
    // Not granted: another namespace, a write, another resource, all namespaces.
    auto elsewhere = as("operator-token", "GET", "/api/v1/namespaces/other/configmaps/settings");
    EXPECT_EQ(elsewhere.status, 403);
    EXPECT_EQ(
        json::parse(elsewhere.body)["message"],
        "configmaps \"settings\" is forbidden: User \"system:serviceaccount:default:operator\" "
        "cannot get resource \"configmaps\" in API group \"\" in the namespace \"other\"");
    EXPECT_EQ(as("operator-token", "PATCH", "/api/v1/namespaces/default/configmaps/settings",
                 R"({"data":{"a":"b"}})")
                  .status,
              403);
    EXPECT_EQ(as("operator-token", "GET", "/api/v1/namespaces/default/secrets").status, 403);
    EXPECT_EQ(as("operator-token", "GET", "/api/v1/configmaps").status, 403);

    // kubectl as that user shows the server's words.
    auto denied =
        server.kubectl({"--token=operator-token", "--user=", "get", "configmaps", "-n", "other"});
    EXPECT_NE(denied.exit_code, 0);
    EXPECT_NE(denied.err.find("Error from server (Forbidden): configmaps is forbidden: User "
                              "\"system:serviceaccount:default:operator\" cannot list resource "
                              "\"configmaps\" in API group \"\" in the namespace \"other\""),
              std::string::npos)
        << denied.err;

    // Removing the binding takes the access away at once.
    auto removed = server.kubectl({"delete", "rolebinding", "operator-reads-configmaps"});
    ASSERT_EQ(removed.exit_code, 0) << removed.err;
    EXPECT_EQ(as("operator-token", "GET", "/api/v1/namespaces/default/configmaps").status, 403);
}

TEST_F(RbacServer, UnauthenticatedClientsSeeOnlyHealthAndVersion) {
    auto anonymous = [&](const std::string& path) {
        return server.http("GET", path, "", "", {}, /*with_token=*/false).status;
    };
    EXPECT_EQ(anonymous("/healthz"), 200);
    EXPECT_EQ(anonymous("/api"), 401);  // TLS: no credentials at all is not a user
    EXPECT_EQ(server.kubectl({"get", "clusterroles", "cluster-admin", "-o", "name"}).out,
              "clusterrole.rbac.authorization.k8s.io/cluster-admin\n");
}

TEST(RbacOptions, AnUnknownAuthorizationModeIsRefusedByName) {
    ServerOptions options;
    options.authorization_mode = "Webhook";
    Server server(options);
    try {
        server.start();
        FAIL() << "start() accepted an unknown authorization mode";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("unknown authorization mode 'Webhook'"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace kopf::apiserver::testing
