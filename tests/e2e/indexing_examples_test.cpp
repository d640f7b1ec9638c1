// Kopf's indexing example end to end (16-indexing), in the style of Kopf's own
// tests/e2e/test_examples.py (the example marks no success counts: nothing may fail for good,
// and the operator exits cleanly), with what a user would look at: the pods in the indices,
// as the timer writes them into the object's status and the liveness endpoint reports them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

std::string pod_yaml(const std::string& dir, const std::string& name) {
    const auto path = std::filesystem::path(dir) / (name + ".yaml");
    std::ofstream(path) << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " << name
                        << "\n  namespace: default\n  labels:\n    app: demo\n    pod: " << name
                        << "\nspec:\n  containers:\n  - name: main\n    image: busybox\n";
    return path.string();
}

class IndexingExample : public ExamplesTest {};

TEST_F(IndexingExample, IndicesFeedTheTimerAndTheProbes) {
    if (!have_program("curl")) GTEST_SKIP() << "curl is not installed";
    const auto dir =
        std::filesystem::temp_directory_path() / ("kopf-e2e-pods-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (const auto* name : {"pod-a", "pod-b"}) {
        auto created = kubectl({"apply", "-f", pod_yaml(dir.string(), name)});
        ASSERT_EQ(created.exit_code, 0) << created.output;
    }
    OperatorProcess op(*cluster_, {example("16-indexing"), "--all-namespaces", "--standalone",
                                   "--verbose", "--liveness", "http://127.0.0.1:0/healthz"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev.")) << op.log();
    create_object();

    // The timer reads the index of pods and writes them into the object's status.
    json running;
    ASSERT_TRUE(eventually([&] {
        running = get_object().value("/status/running-pods"_json_pointer, json());
        return running == json::array({"default::pod-a", "default::pod-b"}) ||
               running == json::array({"default::pod-b", "default::pod-a"});
    })) << running
        << "\n"
        << op.log();
    // And prints the index by label (Kopf's pprint).
    EXPECT_TRUE(op.wait_for_log(R"("[\"app\",\"demo\"]")")) << op.log();

    // The probes report the index on the liveness endpoint.
    const std::string marker = "Serving health status at ";
    const std::string log = op.log();
    const auto at = log.find(marker);
    ASSERT_NE(at, std::string::npos) << log;
    const std::string url = log.substr(at + marker.size(), log.find('\n', at) - at - marker.size());
    auto health = run({"curl", "-sf", url});
    ASSERT_EQ(health.exit_code, 0) << url;
    const json report = json::parse(health.output);
    EXPECT_EQ(report["pod_count"], 2) << health.output;
    auto names = report["pod_names"];
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, json::array({"pod-a", "pod-b"})) << health.output;

    // A deleted pod leaves the index: the timer's next run shows it.
    auto deleted = kubectl({"delete", "pod", "pod-b", "-n", "default"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(eventually([&] {
        running = get_object().value("/status/running-pods"_json_pointer, json());
        return running == json::array({"default::pod-a"});
    })) << running
        << "\n"
        << op.log();

    delete_object();
    stop_cleanly(op);
    EXPECT_TRUE(final_failures(op).empty()) << op.log();
    EXPECT_EQ(op.log().find("Traceback"), std::string::npos);
    std::filesystem::remove_all(dir);
}

}  // namespace
