// The deployment manifests in deploy/ and an in-cluster run, simulated: the manifests are
// accepted by the API server (server-side dry run), the committed RBAC is what `kopf rbac`
// generates today, the image installs every library the package needs, and an operator that
// logs in as a pod does (service-account token and CA files, KUBERNETES_SERVICE_HOST/PORT)
// handles objects under exactly those rules on `kopf apiserver --tls` with RBAC.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "kopf/apiserver/server.hpp"
#include "support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

fs::path example() {
    return source_dir() / "examples/01-minimal/example.cpp";
}

std::vector<std::string> kopf_rbac_command() {
    return {kopf_binary().string(),
            "rbac",
            example().string(),
            "-n",
            "default",
            "--crd",
            (source_dir() / "examples/crd.yaml").string()};
}

std::pair<std::string, std::string> plugin_cache() {
    return {"KOPF_CACHE_DIR", (fs::temp_directory_path() / "kopf-e2e-cache").string()};
}

TEST(DeployManifests, TheCommittedRbacIsWhatKopfRbacGeneratesForTheExample) {
    auto generated = run(kopf_rbac_command(), {plugin_cache()});
    ASSERT_EQ(generated.exit_code, 0) << generated.output;
    EXPECT_EQ(generated.output, read_text(source_dir() / "deploy/rbac.yaml"))
        << "deploy/rbac.yaml is stale: regenerate it with kopf rbac "
           "examples/01-minimal/example.cpp -n default --crd examples/crd.yaml";
}

TEST(DeployManifests, TheImageInstallsEveryLibraryThePackageLinks) {
    auto fields = run({"sh", "-c",
                       "f=$(ls " + (source_dir() / "build").string() +
                           "/kopfpp_*.deb 2>/dev/null | head -n 1); [ -n \"$f\" ] && "
                           "dpkg-deb -f \"$f\" Depends"});
    if (fields.exit_code != 0) GTEST_SKIP() << "no package in build/ (scripts/install-package.sh)";
    // The runtime libraries among the package's dependencies, but those of every Debian base.
    std::set<std::string> needed;
    std::stringstream list(fields.output);
    for (std::string item; std::getline(list, item, ',');) {
        item.erase(0, item.find_first_not_of(' '));
        const std::string name = item.substr(0, item.find(' '));
        if (name.rfind("lib", 0) == 0 && name != "libc6" && name != "libgcc-s1" &&
            name != "libstdc++6")
            needed.insert(name);
    }
    ASSERT_FALSE(needed.empty()) << fields.output;
    const std::string dockerfile = read_text(source_dir() / "deploy/Dockerfile");
    for (const auto& name : needed)
        EXPECT_NE(dockerfile.find(" " + name), std::string::npos)
            << "deploy/Dockerfile does not install " << name;
}

class InCluster : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        char name[] = "/tmp/kopf-e2e-deploy-XXXXXX";
        dir_ = mkdtemp(name);
        cluster_ = rbac_cluster(dir_);
    }
    void TearDown() override {
        cluster_.reset();
        std::error_code ec;
        if (!dir_.empty()) fs::remove_all(dir_, ec);
    }
    CommandResult apply(const std::vector<std::string>& files, bool dry_run) {
        std::vector<std::string> args = {"apply"};
        if (dry_run) args.emplace_back("--dry-run=server");
        for (const auto& file : files) {
            args.emplace_back("-f");
            args.push_back((source_dir() / file).string());
        }
        return cluster_->kubectl(args);
    }

    fs::path dir_;
    std::unique_ptr<Cluster> cluster_;
};

TEST_F(InCluster, TheManifestsPassAServerSideDryRunAndLeaveNothingBehind) {
    auto crds = apply({"examples/crd.yaml", "deploy/peering.yaml"}, false);
    ASSERT_EQ(crds.exit_code, 0) << crds.output;
    auto dry = apply({"deploy/rbac.yaml", "deploy/operator.yaml"}, true);
    ASSERT_EQ(dry.exit_code, 0) << dry.output;
    for (const char* created :
         {"serviceaccount/kopf-operator created (server dry run)",
          "clusterrole.rbac.authorization.k8s.io/kopf-operator created (server dry run)",
          "role.rbac.authorization.k8s.io/kopf-operator created (server dry run)",
          "rolebinding.rbac.authorization.k8s.io/kopf-operator created (server dry run)",
          "deployment.apps/kopf-operator created (server dry run)"})
        EXPECT_NE(dry.output.find(created), std::string::npos) << created << "\n" << dry.output;
    EXPECT_TRUE(cluster_->get_json({"deployment", "kopf-operator", "-n", "default"}).is_null());
    EXPECT_TRUE(cluster_->get_json({"role", "kopf-operator", "-n", "default"}).is_null());
}

TEST_F(InCluster, AnOperatorLoggingInAsAPodHandlesObjectsUnderTheGeneratedRules) {
    auto applied = apply({"examples/crd.yaml", "deploy/peering.yaml", "deploy/rbac.yaml"}, false);
    ASSERT_EQ(applied.exit_code, 0) << applied.output;

    // What Kubernetes mounts into the pod: the token, the cluster's CA and the namespace.
    const YAML::Node config = YAML::LoadFile(cluster_->kubeconfig().string());
    const std::string server = config["clusters"][0]["cluster"]["server"].as<std::string>();
    const std::string port = server.substr(server.rfind(':') + 1);
    const fs::path mounted = dir_ / "serviceaccount";
    fs::create_directories(mounted);
    std::ofstream(mounted / "token") << kOperatorToken;
    std::ofstream(mounted / "namespace") << "default";
    std::ofstream(dir_ / "ca.b64")
        << config["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>();
    auto decoded =
        run({"sh", "-c",
             "base64 -d < " + (dir_ / "ca.b64").string() + " > " + (mounted / "ca.crt").string()});
    ASSERT_EQ(decoded.exit_code, 0) << decoded.output;

    OperatorProcess op(*cluster_,
                       Program{kopf_binary(),
                               {plugin_cache(),
                                {"KUBECONFIG", (dir_ / "no-kubeconfig").string()},
                                {"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
                                {"KUBERNETES_SERVICE_PORT", port},
                                {"KOPF_SERVICE_ACCOUNT_DIR", mounted.string()}}},
                       {"run", example().string(), "-n", "default", "--verbose"});
    ASSERT_TRUE(
        op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev", std::chrono::seconds(120)))
        << op.log();
    auto created =
        cluster_->kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op.wait_for_log("Handler 'create_fn' succeeded.", std::chrono::seconds(60)))
        << op.log();
    auto object = cluster_->get_json({"kex", "kopf-example-1", "-n", "default"});
    EXPECT_EQ(object["status"]["create_fn"]["message"], "hello world") << object.dump();
    EXPECT_EQ(op.log().find("HTTP 403"), std::string::npos) << op.log();
    EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();
}

}  // namespace
