// examples/12-embedded end to end: the application (its own program, examples_12_embedded)
// starts the operator in a side thread, creates and deletes three objects in its main thread
// while the handlers print the memo's templates, then stops the operator with its stop flag and
// exits 0. Kopf has no automatic test of this example (its test_nothing.py only disables the
// implicit one); the checks here are what its README shows.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using namespace std::chrono_literals;

namespace {

const Program kApplication{kopf_binary().parent_path() / "examples_12_embedded"};

class EmbeddedExample : public ExamplesTest {};

// Each line of `lines` occurs in `log`, in this order.
::testing::AssertionResult in_order(const std::string& log, const std::vector<std::string>& lines) {
    std::size_t at = 0;
    for (const auto& line : lines) {
        const auto found = log.find(line, at);
        if (found == std::string::npos) {
            return ::testing::AssertionFailure()
                   << "'" << line << "' is missing after offset " << at << " in:\n"
                   << log;
        }
        at = found + line.size();
    }
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST_F(EmbeddedExample, TheApplicationRunsTheOperatorInAThreadAndStopsIt) {
    OperatorProcess app(*cluster_, kApplication, {});
    ASSERT_EQ(app.wait_exit(60s), 0) << app.log();
    const std::string log = app.log();

    EXPECT_TRUE(in_order(
        log, {"Starting the main app.", "Do the main app activity here. Step 1/3.",
              "Hello, kopf-example-0!", "Good bye, kopf-example-0!",
              "Do the main app activity here. Step 2/3.", "Hello, kopf-example-1!",
              "Good bye, kopf-example-1!", "Do the main app activity here. Step 3/3.",
              "Hello, kopf-example-2!", "Good bye, kopf-example-2!", "Exiting the main app.",
              "Stop-flag is set. Operator is stopping.", "Operator has stopped."}));
    // kopf::configure({.verbose = true}): the debug lines of the handling are there.
    for (const std::string name : {"kopf-example-0", "kopf-example-1", "kopf-example-2"}) {
        EXPECT_NE(log.find("[default/" + name + "] Creation is in progress:"), std::string::npos)
            << log;
        EXPECT_NE(log.find("[default/" + name + "] Deletion is in progress:"), std::string::npos)
            << log;
    }
    // The objects are gone: the deletion handler released each of them.
    auto left = kubectl({"get", "kex", "-n", "default", "-o", "name"});
    EXPECT_EQ(left.exit_code, 0) << left.output;
    EXPECT_EQ(left.output, "") << left.output;
}

TEST_F(EmbeddedExample, TheApplicationSaysWhyTheOperatorCannotStart) {
    const auto absent = (cluster_->workdir() / "absent-kubeconfig").string();
    OperatorProcess app(*cluster_, Program{kApplication.path, {{"KUBECONFIG", absent}}}, {});
    EXPECT_EQ(app.wait_exit(60s), 1) << app.log();
    EXPECT_NE(app.log().find("The operator could not start: Ran out of valid credentials"),
              std::string::npos)
        << app.log();
    EXPECT_EQ(app.log().find("Do the main app activity here."), std::string::npos) << app.log();
}
