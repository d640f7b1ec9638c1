// examples/99-all-at-once end to end, as Kopf's tests/e2e/test_examples.py runs it: the operator
// in the background with the testing kit (kopf::testing::OperatorRunner, Kopf's KopfRunner, with
// its shortened settings: create_2's retry comes after 1 s, not 60), the embedded API server and
// kubectl; the example's stop words (E2E_CREATION_STOP_WORDS, E2E_DELETION_STOP_WORDS) and
// success counts (E2E_SUCCESS_COUNTS), and the log lines of an example with a mandatory
// deletion handler. One example per test program: its handlers register when its file is
// loaded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <kopf/settings.hpp>
#include <kopf/testing.hpp>
#include <map>
#include <string>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

class AllAtOnceExample : public ExamplesTest {
  protected:
    void SetUp() override {
        ExamplesTest::SetUp();
        ::setenv("KOPF_CACHE_DIR",
                 (std::filesystem::temp_directory_path() / "kopf-e2e-cache").c_str(), 1);
        // To prevent lengthy sleeps on the simulated retries, and lengthy watch requests at exit.
        settings_.execution.default_backoff = 1;
        settings_.watching.server_timeout = 10;
    }
    kopf::OperatorSettings settings_;
};

TEST_F(AllAtOnceExample, HandlesTheObjectAndItsPodOnceEach) {
    kopf::testing::OperatorRunner runner(
        {"run", "--all-namespaces", "--standalone", "--verbose", example("99-all-at-once")},
        {.settings = &settings_, .kubeconfig = cluster_->kubeconfig(), .timeout = 60s});
    // The first run compiles the example (cached afterwards).
    ASSERT_TRUE(runner.wait_ready(180s)) << runner.output();

    create_object();
    EXPECT_TRUE(runner.wait_for_output("Creation is processed:", 30s)) << runner.output();

    // Beyond Kopf's checks: the results in the status, the adopted and labelled pod that the
    // pods' event handler recognises, and the Events of create_1.
    const json object = get_object();
    ASSERT_TRUE(object.is_object());
    EXPECT_EQ(object["status"].value("create_1", json()), (json{{"job1-status", 100}}))
        << object.dump(2);
    EXPECT_EQ(object["status"].value("create_2", json()), (json{{"job2-status", 100}}))
        << object.dump(2);
    const json pods =
        cluster_->get_json({"pods", "-n", "default", "-l", "application=kopf-example-10"});
    ASSERT_TRUE(pods.is_object());
    ASSERT_EQ(pods["items"].size(), 1U) << pods.dump(2);
    const json& pod = pods["items"][0];
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0].value("name", ""), kObjectName) << pod.dump(2);
    EXPECT_EQ(pod["metadata"]["labels"].value("somelabel", ""), "somevalue") << pod.dump(2);
    const std::string pod_prefix =
        "[default/" + pod["metadata"].value("name", "") + "] This pod is special for us.";
    EXPECT_TRUE(runner.wait_for_output(pod_prefix, 10s)) << runner.output();
    EXPECT_TRUE(eventually(
        [&] {
            const json events = cluster_->get_json({"events", "-n", "default"});
            if (!events.is_object()) return false;
            bool normal = false;
            bool warning = false;
            for (const auto& event : events["items"]) {
                if (event["involvedObject"].value("name", "") != kObjectName) continue;
                normal |=
                    event.value("reason", "") == "AnyReason" && event.value("type", "") == "Normal";
                warning |= event.value("reason", "") == "SomeReason" &&
                           event.value("type", "") == "Warning" &&
                           event.value("message", "") == "Cannot do something";
            }
            return normal && warning;
        },
        20s));

    delete_object();
    EXPECT_TRUE(runner.wait_for_output("Deleted, really deleted", 30s)) << runner.output();

    runner.stop();  // cleanup_fn takes 3 s
    const std::string output = runner.output();

    // Verify that the operator did not die on start, or during the operation.
    EXPECT_EQ(runner.exception(), nullptr);
    EXPECT_EQ(runner.exit_code(), 0);

    // The lines of an example with creation and mandatory deletion handlers.
    EXPECT_NE(output.find(kObjectPrefix + "Adding the finalizer"), std::string::npos) << output;
    EXPECT_NE(output.find(kObjectPrefix + "Creation is in progress:"), std::string::npos) << output;
    EXPECT_NE(output.find(kObjectPrefix + "Deletion is in progress:"), std::string::npos) << output;
    EXPECT_NE(output.find(kObjectPrefix + "Deleted, really deleted"), std::string::npos) << output;

    // E2E_SUCCESS_COUNTS: once a handler succeeds, it is never re-executed again.
    auto counts = successes_in(output);
    const std::map<std::string, int> expected = {
        {"create_1", 1},          {"create_2", 1},           {"create_pod", 1}, {"delete", 1},
        {"startup_fn_simple", 1}, {"startup_fn_retried", 1}, {"cleanup_fn", 1}};
    std::map<std::string, int> checked;
    for (const auto& [name, count] : expected) {
        if (counts.count(name)) checked[name] = counts[name];
    }
    EXPECT_EQ(checked, expected) << output;
    // Nothing failed for good; create_2 failed once ("Whoops!") and was retried.
    EXPECT_TRUE(final_failures_in(output).empty()) << output;
    EXPECT_NE(output.find("Handler 'create_2' failed with an exception and will try again in 1 "
                          "seconds: Whoops!"),
              std::string::npos)
        << output;
}

}  // namespace
