// Shared by the tests of Kopf's ported examples, in the style of Kopf's tests/e2e/test_examples.py:
// the embedded API server with the examples' CRD, `kopf run EXAMPLE` as Kopf's tests run it,
// kubectl on the example object, and Kopf's log-based counts of successes and final failures.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "e2e/support/e2e.hpp"

namespace kopf::e2e {

inline const std::string kObjectName = "kopf-example-1";
inline const std::string kObjectPrefix = "[default/kopf-example-1] ";
inline const std::string kFinalizer = "kopf.zalando.org/KopfFinalizerMarker";

inline std::string example(const std::string& name) {
    return (source_dir() / "examples" / name / "example.cpp").string();
}
inline std::string object_yaml() {
    return (source_dir() / "examples/obj.yaml").string();
}

// How many times each handler id appears in a log line matched by `pattern` (group 1 = the id).
inline std::map<std::string, int> count_handlers(const std::string& log,
                                                 const std::string& pattern) {
    std::map<std::string, int> counts;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        ++counts[(*it)[1].str()];
    }
    return counts;
}
// Kopf's test counts `'(.+?)' succeeded`: the lines of handlers, daemons and timers alike.
inline std::map<std::string, int> successes(const OperatorProcess& op) {
    return count_handlers(op.log(), R"((?:Handler|Daemon|Timer) '([^']+)' succeeded\.)");
}
inline std::map<std::string, int> final_failures(const OperatorProcess& op) {
    return count_handlers(op.log(), R"((?:Handler|Daemon|Timer) '([^']+)' failed )"
                                    R"((?:permanently|with an exception and will stop))");
}

// The same counts in a captured log, activities included (for the examples with startup and
// cleanup handlers, whose Kopf test counts those too).
inline std::map<std::string, int> successes_in(const std::string& log) {
    return count_handlers(log, R"((?:Handler|Activity|Daemon|Timer) '([^']+)' succeeded\.)");
}
inline std::map<std::string, int> final_failures_in(const std::string& log) {
    return count_handlers(log, R"((?:Handler|Activity|Daemon|Timer) '([^']+)' failed )"
                               R"((?:permanently|with an exception and will stop))");
}

// Polls `probe` until it returns true or the timeout passes.
template <class F>
bool eventually(F probe, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (probe()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return probe();
}

class ExamplesTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        cluster_ = std::make_unique<Cluster>();
        auto crd = kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()});
        ASSERT_EQ(crd.exit_code, 0) << crd.output;
    }

    CommandResult kubectl(const std::vector<std::string>& args) const {
        return cluster_->kubectl(args);
    }

    // `kopf run EXAMPLE --all-namespaces --standalone --verbose`, as Kopf's e2e tests run them;
    // returns once the operator serves `resource` (a failure of the test if it does not).
    std::unique_ptr<OperatorProcess> start(
        const std::string& name, const std::string& resource = "kopfexamples.v1.kopf.dev") {
        auto op = std::make_unique<OperatorProcess>(
            *cluster_, std::vector<std::string>{example(name), "--all-namespaces", "--standalone",
                                                "--verbose"});
        EXPECT_TRUE(op->wait_for_log("Serving resource " + resource + ".")) << op->log();
        return op;
    }

    nlohmann::json get_object() const {
        return cluster_->get_json({"kex", kObjectName, "-n", "default"});
    }

    void create_object() const {
        auto created = kubectl({"apply", "-f", object_yaml()});
        ASSERT_EQ(created.exit_code, 0) << created.output;
    }

    // `kubectl delete` waits until the object is gone, i.e. until all finalizers are removed.
    void delete_object() const {
        auto deleted = kubectl({"delete", "-f", object_yaml(), "--timeout=60s"});
        ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
        EXPECT_TRUE(get_object().is_null());
    }

    // SIGTERM ends the operator gracefully with exit code 0.
    static void stop_cleanly(OperatorProcess& op) {
        EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();
        EXPECT_NE(op.log().find("Operator has stopped."), std::string::npos) << op.log();
    }

    std::unique_ptr<Cluster> cluster_;
};

}  // namespace kopf::e2e
