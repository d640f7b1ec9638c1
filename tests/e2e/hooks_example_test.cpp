// examples/13-hooks end to end, as Kopf's tests/e2e/test_examples.py runs it: the operator in
// the background with the testing kit (kopf::testing::OperatorRunner, Kopf's KopfRunner, with
// its shortened settings), the embedded API server and kubectl; the example's stop words
// (E2E_STARTUP_STOP_WORDS, E2E_CLEANUP_STOP_WORDS) and success counts (E2E_SUCCESS_COUNTS).
// Kopf's test finds pods in its real cluster; here a pod is created for the event handler.
// One example per test program: its handlers register when its file is loaded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <kopf/settings.hpp>
#include <kopf/testing.hpp>
#include <map>
#include <string>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using namespace std::chrono_literals;

namespace {

class HooksExample : public ExamplesTest {
  protected:
    void SetUp() override {
        ExamplesTest::SetUp();
        ::setenv("KOPF_CACHE_DIR",
                 (std::filesystem::temp_directory_path() / "kopf-e2e-cache").c_str(), 1);
        // To prevent lengthy sleeps on the simulated retries, and lengthy watch requests at exit.
        settings_.execution.default_backoff = 1;
        settings_.watching.server_timeout = 10;
    }

    void create_pod(const std::string& name) const {
        const auto path = cluster_->workdir() / (name + ".yaml");
        std::ofstream(path) << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " << name
                            << "\n  namespace: default\nspec:\n  containers:\n  - name: main\n"
                               "    image: busybox\n";
        auto created = kubectl({"apply", "-f", path.string()});
        ASSERT_EQ(created.exit_code, 0) << created.output;
    }

    kopf::OperatorSettings settings_;
};

TEST_F(HooksExample, StartsRetriedServesPodsAndCleansUp) {
    kopf::testing::OperatorRunner runner(
        {"run", "--all-namespaces", "--standalone", "--verbose", example("13-hooks")},
        {.settings = &settings_, .kubeconfig = cluster_->kubeconfig(), .timeout = 60s});
    // The first run compiles the example (cached afterwards); the login takes 2 s, the retried
    // startup handler 3 more.
    ASSERT_TRUE(runner.wait_ready(180s)) << runner.output();

    // E2E_STARTUP_STOP_WORDS: a pod's background task serves it (after 1-10 s).
    create_pod("kopf-example-pod");
    EXPECT_TRUE(runner.wait_for_output("Served by the background task.", 20s)) << runner.output();

    // The example object: no handlers of it here, as in Kopf's test.
    create_object();
    delete_object();

    runner.stop();
    const std::string output = runner.output();
    // E2E_CLEANUP_STOP_WORDS.
    EXPECT_NE(output.find("Hung tasks"), std::string::npos) << output;

    // Verify that the operator did not die on start, or during the operation.
    EXPECT_EQ(runner.exception(), nullptr);
    EXPECT_EQ(runner.exit_code(), 0);

    // E2E_SUCCESS_COUNTS: once a handler succeeds, it is never re-executed again.
    auto counts = successes_in(output);
    std::map<std::string, int> checked;
    for (const auto& name : {"startup_fn_simple", "startup_fn_retried", "cleanup_fn"}) {
        if (counts.count(name)) checked[name] = counts[name];
    }
    EXPECT_EQ(checked, (std::map<std::string, int>{
                           {"startup_fn_simple", 1}, {"startup_fn_retried", 1}, {"cleanup_fn", 1}}))
        << output;
    // Nothing failed for good.
    EXPECT_TRUE(final_failures_in(output).empty()) << output;

    // What the example shows beyond Kopf's checks: the retried startup handler failed 3 times
    // (1 s apart) before it succeeded, the pod was monitored, and the cleanup stopped its task.
    EXPECT_EQ(count_handlers(output, R"(Activity '(startup_fn_retried)' failed temporarily: )"
                                     R"(Going to succeed in \ds)")["startup_fn_retried"],
              3)
        << output;
    EXPECT_LT(output.find("Going to succeed in 1s"), output.find("Starting retried..."));
    EXPECT_NE(output.find("Initialising the task-lock..."), std::string::npos);
    EXPECT_NE(output.find("[default/kopf-example-pod] Served by the background task."),
              std::string::npos)
        << output;
    EXPECT_LT(output.find("Cleaning up..."), output.find("All pod-tasks are requested to stop..."));
}

}  // namespace
