// The testing kit (kopf/testing.hpp): OperatorRunner runs the `kopf` command line in a thread
// against the embedded API server started by ApiServer, captures the log, and reports how the
// operator ended — a graceful stop, bad arguments, an operator that cannot start.
#include <gtest/gtest.h>

#include <chrono>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <kopf/settings.hpp>
#include <kopf/testing.hpp>
#include <kopf/vault.hpp>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

const std::string kSourceDir = KOPF_SOURCE_DIR;

kopf::testing::ApiServerOptions build_apiserver() {
    kopf::testing::ApiServerOptions options;
    options.kopf_binary = std::string(KOPF_BINARY_DIR) + "/bin/kopf";
    return options;
}

class TestingKit : public ::testing::Test {
  protected:
    void SetUp() override {
        cluster_ = std::make_unique<kopf::testing::ApiServer>(build_apiserver());
        auto crd = cluster_->kubectl({"apply", "-f", kSourceDir + "/examples/crd.yaml"});
        if (crd.exit_code == 127) GTEST_SKIP() << "kubectl is not installed";
        ASSERT_EQ(crd.exit_code, 0) << crd.output;
    }
    std::unique_ptr<kopf::testing::ApiServer> cluster_;
};

TEST_F(TestingKit, RunsTheRegistryInTheBackgroundAndStopsCleanly) {
    EXPECT_EQ(cluster_->url().rfind("http://127.0.0.1:", 0), 0U) << cluster_->url();
    kopf::Registry registry;
    int calls = 0;  // the handlers run in this process: the test sees what they do
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [&calls](kopf::Context& ctx) -> kopf::json {
                                      ++calls;
                                      ctx.logger.info("Created in a test.");
                                      return {{"message", "tested"}};
                                  });
    kopf::OperatorSettings settings;
    settings.watching.server_timeout = 10;
    kopf::testing::OperatorRunner runner(
        {"run", "--namespace", "default", "--standalone", "--verbose"},
        {.registry = &registry, .settings = &settings, .kubeconfig = cluster_->kubeconfig()});
    ASSERT_TRUE(runner.wait_ready(30s)) << runner.output();
    EXPECT_TRUE(runner.running());
    EXPECT_THROW(runner.exit_code(), std::logic_error);

    auto created = cluster_->kubectl({"apply", "-f", kSourceDir + "/examples/obj.yaml"});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(runner.wait_for_output("Handler 'create_fn' succeeded.", 30s)) << runner.output();
    EXPECT_FALSE(runner.wait_for_output("Never logged.", 100ms));
    auto status = cluster_->kubectl(
        {"get", "kex", "kopf-example-1", "-o", "jsonpath={.status.create_fn.message}"});
    EXPECT_EQ(status.output, "tested");

    runner.stop();
    runner.stop();  // idempotent
    EXPECT_FALSE(runner.running());
    EXPECT_EQ(runner.exit_code(), 0);
    EXPECT_EQ(runner.exception(), nullptr);
    EXPECT_EQ(calls, 1);
    const std::string output = runner.output();
    EXPECT_NE(output.find("[default/kopf-example-1] Created in a test."), std::string::npos)
        << output;
    EXPECT_NE(output.find("Operator has stopped."), std::string::npos) << output;
}

// Two creation handlers, and how many status patches their results take: one per handler when
// each cycle runs one (asap, one_by_one), one for both when a cycle runs all (all_at_once).
class Lifecycles : public TestingKit {
  protected:
    // The status patches of the object's handling, once it is created and handled.
    std::string status_patches(kopf::testing::RunnerOptions options) {
        kopf::Registry registry;
        kopf::on::create first(registry, kopf::Selector("kopfexamples"), {.id = "create_a"},
                               [](kopf::Context&) -> kopf::json { return 1; });
        kopf::on::create second(registry, kopf::Selector("kopfexamples"), {.id = "create_b"},
                                [](kopf::Context&) -> kopf::json { return 2; });
        options.registry = &registry;
        options.kubeconfig = cluster_->kubeconfig();
        kopf::testing::OperatorRunner runner({"run", "-n", "default", "--standalone", "--verbose"},
                                             options);
        EXPECT_TRUE(runner.wait_ready(30s)) << runner.output();
        auto created = cluster_->kubectl({"apply", "-f", kSourceDir + "/examples/obj.yaml"});
        EXPECT_EQ(created.exit_code, 0) << created.output;
        EXPECT_TRUE(runner.wait_for_output("Creation is processed: 2 succeeded; 0 failed.", 30s))
            << runner.output();
        runner.stop();
        std::string patches;
        const std::string output = runner.output();
        const std::string marker = "Patching the status with: ";
        for (auto at = output.find(marker); at != std::string::npos;
             at = output.find(marker, at + 1)) {
            patches +=
                output.substr(at + marker.size(), output.find('\n', at) - at - marker.size()) +
                "\n";
        }
        return patches;
    }
};

TEST_F(Lifecycles, AsapByDefaultRunsOneHandlerPerCycle) {
    EXPECT_EQ(kopf::get_default_lifecycle(), kopf::Lifecycle::ASAP);
    EXPECT_EQ(status_patches({}), "{\"status\":{\"create_a\":1}}\n{\"status\":{\"create_b\":2}}\n");
}

TEST_F(Lifecycles, TheOperatorsLifecycleWinsOverTheDefault) {
    kopf::testing::RunnerOptions options;
    options.lifecycle = kopf::Lifecycle::ALL_AT_ONCE;
    EXPECT_EQ(status_patches(options), "{\"status\":{\"create_a\":1,\"create_b\":2}}\n");
}

TEST_F(Lifecycles, TheDefaultLifecycleCanBeSet) {
    kopf::set_default_lifecycle(kopf::Lifecycle::ALL_AT_ONCE);
    EXPECT_EQ(kopf::get_default_lifecycle(), kopf::Lifecycle::ALL_AT_ONCE);
    EXPECT_EQ(status_patches({}), "{\"status\":{\"create_a\":1,\"create_b\":2}}\n");
    kopf::set_default_lifecycle(kopf::Lifecycle::ASAP);
}

TEST_F(TestingKit, BadArgumentsEndWithAnErrorCodeAndTheMessage) {
    kopf::Registry registry;
    kopf::testing::OperatorRunner runner({"run", "--no-such-option"}, {.registry = &registry});
    EXPECT_FALSE(runner.wait_ready(30s));
    runner.stop();
    EXPECT_NE(runner.exit_code(), 0);
    EXPECT_NE(runner.exit_code(), 1);  // not an operator's failure: the command line's
    EXPECT_EQ(runner.exception(), nullptr);
    EXPECT_NE(runner.output().find("--no-such-option"), std::string::npos) << runner.output();
}

TEST_F(TestingKit, AnOperatorWithoutHandlersIsRefused) {
    kopf::Registry registry;
    kopf::testing::OperatorRunner runner({"run", "-A"}, {.registry = &registry});
    runner.stop();
    EXPECT_EQ(runner.exit_code(), 1);
    EXPECT_NE(runner.output().find("No handlers are registered"), std::string::npos)
        << runner.output();
}

TEST_F(TestingKit, AFailedStartIsRethrownByStopUnlessToldNotTo) {
    kopf::Registry registry;
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [](kopf::Context&) {});
    const std::string nowhere = (cluster_->kubeconfig().parent_path() / "absent").string();
    {
        kopf::testing::OperatorRunner runner({"run", "-A", "--standalone"},
                                             {.registry = &registry, .kubeconfig = nowhere});
        EXPECT_FALSE(runner.wait_ready(30s));
        EXPECT_THROW(runner.stop(), std::runtime_error);
        EXPECT_EQ(runner.exit_code(), 1);
    }
    kopf::testing::OperatorRunner runner(
        {"run", "-A", "--standalone"},
        {.registry = &registry, .kubeconfig = nowhere, .reraise = false});
    runner.stop();
    EXPECT_EQ(runner.exit_code(), 1);
    ASSERT_NE(runner.exception(), nullptr);
    try {
        std::rethrow_exception(runner.exception());
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("Ran out of valid credentials"), std::string::npos)
            << error.what();
    }
    EXPECT_NE(runner.output().find("Ran out of valid credentials"), std::string::npos)
        << runner.output();
}

// The same operator given a vault with the cluster's credentials needs no kubeconfig and no
// login: its login handler does not run while the vault holds usable credentials (as Kopf).
TEST_F(TestingKit, AGivenVaultIsUsedWithNoKubeconfigAndNoLogin) {
    kopf::Registry registry;
    auto handled = std::make_shared<std::vector<std::string>>();
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [handled](kopf::Context& ctx) -> kopf::json {
                                      handled->push_back(ctx.name);
                                      return {{"message", "with the vault"}};
                                  });
    auto logins = std::make_shared<int>(0);
    kopf::on::login login(registry, {.id = "login_fn"},
                          [logins](kopf::ActivityContext&) -> std::optional<kopf::ConnectionInfo> {
                              ++*logins;
                              return std::nullopt;
                          });
    kopf::ConnectionInfo info;
    info.server = cluster_->url();
    info.default_namespace = "default";
    auto vault = std::make_shared<kopf::Vault>(
        std::map<std::string, kopf::ConnectionInfo>{{"the-test", info}});
    const std::string nowhere = (cluster_->kubeconfig().parent_path() / "absent").string();
    kopf::testing::OperatorRunner runner(
        {"run", "-A", "--standalone"},
        {.registry = &registry, .kubeconfig = nowhere, .vault = vault});
    ASSERT_TRUE(runner.wait_ready(30s)) << runner.output();
    auto created = cluster_->kubectl({"apply", "-f", kSourceDir + "/examples/obj.yaml"});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(runner.wait_for_output("Handler 'create_fn' succeeded.", 30s)) << runner.output();
    runner.stop();
    EXPECT_EQ(runner.exit_code(), 0);
    EXPECT_EQ(*handled, std::vector<std::string>{"kopf-example-1"});
    EXPECT_EQ(*logins, 0);
    EXPECT_EQ(runner.output().find("Initial authentication"), std::string::npos) << runner.output();
    EXPECT_EQ(vault->current()->first, "the-test");
}

TEST(TestingKitApiServer, AMissingCommandIsAClearError) {
    kopf::testing::ApiServerOptions options;
    options.kopf_binary = "/nonexistent/kopf";
    try {
        kopf::testing::ApiServer server(options);
        FAIL() << "no error";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("/nonexistent/kopf apiserver"), std::string::npos)
            << error.what();
    }
}

TEST(TestingKitApiServer, BadArgumentsOfTheServerAreAClearError) {
    kopf::testing::ApiServerOptions options = build_apiserver();
    options.args = {"--authorization-mode", "Nonsense"};
    try {
        kopf::testing::ApiServer server(options);
        FAIL() << "no error";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("did not start serving (exit code"),
                  std::string::npos)
            << error.what();
        EXPECT_NE(std::string(error.what()).find("Nonsense"), std::string::npos) << error.what();
    }
}

}  // namespace
