// The test of example.cpp, as Kopf's examples/09-testing/test_example_09.py: the operator runs
// in the background (kopf::testing::OperatorRunner, Kopf's KopfRunner) while the test creates
// and deletes the example object with kubectl; then its exit code, exception and output are
// checked. The cluster is the embedded API server, started for the test on a free port
// (kopf::testing::ApiServer); Kopf's test uses the cluster of the current kubeconfig.
#include <gtest/gtest.h>

#include <filesystem>
#include <kopf/settings.hpp>
#include <kopf/testing.hpp>
#include <memory>
#include <string>

namespace {

// This directory: given by the build (EXAMPLE_DIR), else where this file was compiled from.
#ifdef EXAMPLE_DIR
const std::filesystem::path kHere = EXAMPLE_DIR;
#else
const std::filesystem::path kHere = std::filesystem::path(__FILE__).parent_path();
#endif
const std::string kCrdYaml = (kHere / ".." / "crd.yaml").string();
const std::string kObjYaml = (kHere / ".." / "obj.yaml").string();
const std::string kExampleCpp = (kHere / "example.cpp").string();

class ResourceLifecycle : public ::testing::Test {
  protected:
    void SetUp() override {
        cluster_ = std::make_unique<kopf::testing::ApiServer>();
        // Kopf's crd_exists fixture.
        auto crd = cluster_->kubectl({"apply", "-f", kCrdYaml});
        ASSERT_EQ(crd.exit_code, 0) << crd.output;
        // Kopf's obj_absent fixture: the operator is not running in fixtures, so the finalizers
        // are removed before the deletion (both fail harmlessly when there is no object).
        cluster_->kubectl({"patch", "-f", kObjYaml, "-p", R"({"metadata":{"finalizers":[]}})",
                           "--type", "merge"});
        cluster_->kubectl({"delete", "-f", kObjYaml});
    }
    std::unique_ptr<kopf::testing::ApiServer> cluster_;
};

TEST_F(ResourceLifecycle, IsHandledByTheOperator) {
    // To prevent lengthy threads in the loop executor when the process exits.
    kopf::OperatorSettings settings;
    settings.watching.server_timeout = 10;

    // Run an operator and simulate some activity with the operated resource.
    kopf::testing::OperatorRunner runner(
        {"run", "--all-namespaces", "--verbose", "--standalone", kExampleCpp},
        {.settings = &settings,
         .kubeconfig = cluster_->kubeconfig(),
         .timeout = std::chrono::seconds(60)});
    // The first run compiles example.cpp (cached afterwards).
    ASSERT_TRUE(runner.wait_ready(std::chrono::seconds(120))) << runner.output();

    auto created = cluster_->kubectl({"create", "-f", kObjYaml});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    // Give it some time to react (Kopf's test sleeps 5 s).
    EXPECT_TRUE(runner.wait_for_output("Handler 'create_fn' succeeded.")) << runner.output();
    auto deleted = cluster_->kubectl({"delete", "-f", kObjYaml});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    // Give it some time to react (Kopf's test sleeps 1 s).
    EXPECT_TRUE(runner.wait_for_output("Deleted, really deleted")) << runner.output();
    runner.stop();  // the end of Kopf's `with` block

    // Ensure that the operator did not die on start, or during the operation.
    EXPECT_EQ(runner.exception(), nullptr);
    EXPECT_EQ(runner.exit_code(), 0);

    // There are usually more than these messages, but we only check for the certain ones.
    const std::string output = runner.output();
    EXPECT_NE(output.find("[default/kopf-example-1] Creation is in progress:"), std::string::npos)
        << output;
    EXPECT_NE(output.find("[default/kopf-example-1] Something was logged here."), std::string::npos)
        << output;
}

}  // namespace
