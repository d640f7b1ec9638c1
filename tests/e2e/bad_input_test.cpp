// `kopf run` with bad input: one-paragraph errors and a non-zero exit code.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

CommandResult kopf_run(const std::vector<std::string>& args,
                       std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> argv = {kopf_binary().string(), "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace_back("KOPF_CACHE_DIR", (fs::temp_directory_path() / "kopf-e2e-cache").string());
    return run(argv, env);
}

fs::path write_temp(const std::string& name, const std::string& text) {
    const fs::path path =
        fs::temp_directory_path() / ("kopf-e2e-" + std::to_string(getpid()) + "-" + name);
    std::ofstream(path) << text;
    return path;
}

std::string minimal() {
    return (source_dir() / "examples/01-minimal/example.cpp").string();
}

}  // namespace

// As Kopf: a warning, then the whole cluster is served.
TEST(BadInput, NeitherNamespaceNorAllNamespacesWarnsAndServesTheCluster) {
    if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
    Cluster cluster;
    auto crd = cluster.kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()});
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    OperatorProcess op(cluster, {minimal(), "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev.")) << op.log();
    EXPECT_TRUE(op.wait_for_log("Watching kopfexamples.v1.kopf.dev cluster-wide.")) << op.log();
    EXPECT_NE(op.log().find("switching to the cluster-wide mode"), std::string::npos) << op.log();
    EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
}

TEST(BadInput, InvalidNamespacePatternIsNamed) {
    auto result = kopf_run({minimal(), "-n", "Not_A_Namespace"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("Not_A_Namespace"), std::string::npos) << result.output;
}

TEST(BadInput, SourceThatDoesNotCompileShowsTheCompilerErrors) {
    auto source =
        write_temp("broken.cpp", "#include <kopf/kopf.hpp>\nint broken() { return nope; }\n");
    auto result = kopf_run({source.string(), "-n", "default"});
    fs::remove(source);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("nope"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("was not declared"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("did not compile"), std::string::npos) << result.output;
}

TEST(BadInput, SourceWithoutHandlersIsAnError) {
    auto source =
        write_temp("empty.cpp", "#include <kopf/kopf.hpp>\nint unused_function() { return 0; }\n");
    auto result = kopf_run({source.string(), "-n", "default"});
    fs::remove(source);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("registers no handlers"), std::string::npos) << result.output;
}

TEST(BadInput, MissingKubeconfigIsExplained) {
    auto result = kopf_run({minimal(), "-n", "default"},
                           {{"KUBECONFIG", "/nonexistent/kubeconfig"}, {"HOME", "/nonexistent"}});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("no kubeconfig was found"), std::string::npos) << result.output;
}

TEST(BadInput, UnreachableApiServerIsExplained) {
    auto kubeconfig = write_temp("kubeconfig.yaml",
                                 "apiVersion: v1\nkind: Config\n"
                                 "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
                                 "users: [{name: u, user: {token: t}}]\n"
                                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                 "current-context: x\n");
    // As an operator pod starting before its cluster answers: each attempt is explained and
    // retried per settings.networking.error_backoffs (1, 1, 2, ... s), until a signal stops it.
    OperatorProcess op(kubeconfig, {minimal(), "-n", "default"});
    EXPECT_TRUE(op.wait_for_log("Retrying in 1 seconds.", std::chrono::seconds(60))) << op.log();
    EXPECT_TRUE(op.wait_for_log("Retrying in 2 seconds.", std::chrono::seconds(60))) << op.log();
    EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
    fs::remove(kubeconfig);
    const std::string log = op.log();
    EXPECT_NE(log.find("The API server is unreachable"), std::string::npos) << log;
    EXPECT_NE(log.find("127.0.0.1:1"), std::string::npos) << log;  // names the address
    EXPECT_NE(log.find("Operator has stopped."), std::string::npos) << log;
}

TEST(BadInput, PythonModulesAreNotApplicable) {
    auto result = kopf_run({"-m", "mymodule", "-n", "default"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("-m/--module"), std::string::npos) << result.output;
}

namespace {

// The same kind of custom resource in another API group.
std::string widget_crd(const std::string& group) {
    return "apiVersion: apiextensions.k8s.io/v1\n"
           "kind: CustomResourceDefinition\n"
           "metadata: {name: widgets." +
           group +
           "}\n"
           "spec:\n"
           "  scope: Namespaced\n"
           "  group: " +
           group +
           "\n"
           "  names: {kind: Widget, plural: widgets, singular: widget}\n"
           "  versions:\n"
           "  - name: v1\n"
           "    served: true\n"
           "    storage: true\n"
           "    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: "
           "true}}\n";
}

std::string handler_on(const std::string& resource) {
    return "#include <kopf/kopf.hpp>\n"
           "void create_fn(kopf::Context& ctx) { ctx.logger.info(\"Created.\"); }\n"
           "KOPF_ON_CREATE(create_fn, \"" +
           resource + "\");\n";
}

class BadResources : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        cluster_ = std::make_unique<Cluster>();
    }
    fs::path write(const std::string& name, const std::string& text) {
        const fs::path path = cluster_->workdir() / name;
        std::ofstream(path) << text;
        return path;
    }
    void apply(const std::string& name, const std::string& text) {
        auto applied = cluster_->kubectl({"apply", "-f", write(name, text).string()});
        ASSERT_EQ(applied.exit_code, 0) << applied.output;
    }
    std::unique_ptr<Cluster> cluster_;
};

}  // namespace

// As in Kopf: an unknown resource is a warning, not an error; the operator keeps running and
// serves the resource as soon as its CRD appears.
TEST_F(BadResources, UnknownResourceIsWarnedAboutAndServedOnceItsCrdAppears) {
    OperatorProcess op(*cluster_, {write("unknown.cpp", handler_on("widgets")).string(), "-n",
                                   "default", "--standalone"});
    ASSERT_TRUE(op.wait_for_log("Unresolved resources cannot be served (try creating their CRDs)"))
        << op.log();
    EXPECT_NE(op.log().find("widgets"), std::string::npos) << op.log();

    apply("crd.yaml", widget_crd("a.example.com"));
    ASSERT_TRUE(op.wait_for_log("Serving resource widgets.v1.a.example.com")) << op.log();
    apply("widget.yaml", "apiVersion: a.example.com/v1\nkind: Widget\nmetadata: {name: w1}\n");
    EXPECT_TRUE(op.wait_for_log("[default/w1] Created.")) << op.log();
    EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
}

// Kopf warns and leaves ambiguous resources unserved; Kopf++ stops with an error that names the
// candidates and how to choose one, as an operator serving nothing is rarely what was meant.
TEST_F(BadResources, AmbiguousResourceStopsTheOperatorNamingTheCandidates) {
    apply("crd-a.yaml", widget_crd("a.example.com"));
    apply("crd-b.yaml", widget_crd("b.example.com"));
    OperatorProcess op(*cluster_, {write("ambiguous.cpp", handler_on("widgets")).string(), "-n",
                                   "default", "--standalone"});
    EXPECT_NE(op.wait_exit(), 0) << op.log();
    const std::string log = op.log();
    EXPECT_NE(log.find("Ambiguous resource specification"), std::string::npos) << log;
    EXPECT_NE(log.find("widgets.v1.a.example.com"), std::string::npos) << log;
    EXPECT_NE(log.find("widgets.v1.b.example.com"), std::string::npos) << log;
    EXPECT_NE(log.find("Specify the group"), std::string::npos) << log;
}

// A diff base that is not JSON is not taken as "never handled" (that would run the creation
// handlers again): as in Kopf, the object's processing fails, naming the annotation, and no
// handler runs until the annotation is fixed or removed.
TEST_F(BadResources, CorruptDiffBaseIsNamedAndNoHandlerRunsUntilItIsRemoved) {
    auto crd = cluster_->kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()});
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    apply("corrupt.yaml", R"(apiVersion: kopf.dev/v1
kind: KopfExample
metadata:
  name: corrupt
  annotations:
    kopf.zalando.org/last-handled-configuration: '{"spec": {"field": "value"'
spec:
  field: value
  nested: {deeper: {deepest: [1, 2, {three: 3}]}}
)");
    OperatorProcess op(*cluster_, {minimal(), "-n", "default", "--standalone"});
    ASSERT_TRUE(op.wait_for_log("is not JSON")) << op.log();
    const std::string log = op.log();
    EXPECT_NE(log.find("[default/corrupt] Throttling for 1 seconds due to an unexpected error"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("'kopf.zalando.org/last-handled-configuration'"), std::string::npos) << log;
    EXPECT_EQ(log.find("And here we are! Creating"), std::string::npos) << log;

    // Removed, the object looks new: the creation handler runs, once.
    auto fixed = cluster_->kubectl(
        {"annotate", "kopfexample", "corrupt", "kopf.zalando.org/last-handled-configuration-"});
    ASSERT_EQ(fixed.exit_code, 0) << fixed.output;
    ASSERT_TRUE(op.wait_for_log("And here we are! Creating")) << op.log();
    ASSERT_TRUE(op.wait_for_log("Handler 'create_fn' succeeded.")) << op.log();
    EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
}

// Kopf prints a Secret's data in its debug lines ("Creation is in progress: …", the diff) and
// kubectl's last-applied-configuration copy of it; Kopf++ shows the keys, never the values.
TEST_F(BadResources, SecretValuesStayOutOfTheVerboseLog) {
    OperatorProcess op(*cluster_, {write("secrets.cpp", handler_on("v1/secrets")).string(), "-n",
                                   "default", "--standalone", "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Serving resource secrets.v1.")) << op.log();
    apply("secret.yaml", R"(apiVersion: v1
kind: Secret
metadata: {name: db}
type: Opaque
data: {password: aHVudGVyMi1wYXNzd29yZA==}
stringData: {token: plain-text-token-value}
)");
    ASSERT_TRUE(op.wait_for_log("[default/db] Created.")) << op.log();
    auto changed = cluster_->kubectl(
        {"patch", "secret", "db", "--type=merge", "-p", R"({"data":{"password":"Y2hhbmdlZA=="}})"});
    ASSERT_EQ(changed.exit_code, 0) << changed.output;
    ASSERT_TRUE(op.wait_for_log("Creation is in progress:")) << op.log();
    EXPECT_TRUE(op.wait_for_log("\"password\":\"<redacted>\"")) << op.log();
    EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
    const std::string log = op.log();
    for (const char* value : {"aHVudGVyMi1wYXNzd29yZA==", "plain-text-token-value", "Y2hhbmdlZA=="})
        EXPECT_EQ(log.find(value), std::string::npos) << value << " in the log:\n" << log;
}
