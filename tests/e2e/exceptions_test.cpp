// examples/03-exceptions end to end, with the assertions Kopf's tests/e2e/test_examples.py
// makes of it: the one handler that eventually succeeds succeeds once, and each of the three
// that fail (permanently, after its retries, at once with errors=PERMANENT) fails once; no
// handler runs again after its end, and the operator exits cleanly.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <regex>
#include <string>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;

namespace {

class Exceptions : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        cluster_ = std::make_unique<Cluster>();
        auto crd =
            cluster_->kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()});
        ASSERT_EQ(crd.exit_code, 0) << crd.output;
    }
    std::unique_ptr<Cluster> cluster_;
};

// How often each handler name appears in the log lines matching `pattern` (group 1: the name).
// Kopf's test searches its whole output; the patterns here are anchored at the start of a log
// message ("] Handler '…"), as the verbose "in progress" lines show bodies whose annotations
// quote the stored messages (Kopf's show them as Python reprs, where the quotes are escaped and
// its names do not match).
std::map<std::string, int> counts(const std::string& log, const std::string& pattern) {
    std::map<std::string, int> found;
    const std::regex line(pattern);
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
         ++it)
        ++found[(*it)[1]];
    return found;
}

}  // namespace

TEST_F(Exceptions, EachHandlerEndsOnceAsItsErrorsDecide) {
    OperatorProcess op(*cluster_, {(source_dir() / "examples/03-exceptions/example.cpp").string(),
                                   "--all-namespaces", "--standalone", "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op.log();

    auto created =
        cluster_->kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op.wait_for_log("Creation is processed: 1 succeeded; 3 failed.")) << op.log();
    ASSERT_TRUE(op.wait_for_log("Something has changed,")) << op.log();  // Kopf's stop-word

    auto deleted =
        cluster_->kubectl({"delete", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(op.wait_for_log("Deleted, really deleted, and we are notified.")) << op.log();
    EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();

    const std::string log = op.log();
    EXPECT_NE(log.find("[default/kopf-example-1] Creation is in progress:"), std::string::npos)
        << log;
    EXPECT_EQ(counts(log, "\\] Handler '(.+?)' succeeded"),
              (std::map<std::string, int>{{"eventual_success_with_a_few_messages", 1}}))
        << log;
    EXPECT_EQ(
        counts(log, "\\] Handler '(.+?)' failed (?:permanently|with an exception and will stop)"),
        (std::map<std::string, int>{{"eventual_failure_with_tracebacks", 1},
                                    {"instant_failure_with_traceback", 1},
                                    {"instant_failure_with_only_a_message", 1}}))
        << log;
    // The messages as Kopf logs them.
    EXPECT_NE(log.find("Handler 'instant_failure_with_only_a_message' failed permanently: Fail "
                       "once and for all."),
              std::string::npos);
    EXPECT_EQ(op.count_in_log("Handler 'eventual_success_with_a_few_messages' failed "
                              "temporarily: Expected recoverable error."),
              3);
    EXPECT_NE(log.find("Handler 'eventual_failure_with_tracebacks' failed with an exception and "
                       "will stop now (it would exceed 3 retries on the next attempt): An error "
                       "that is supposed to be recoverable."),
              std::string::npos);
    EXPECT_NE(log.find("Handler 'instant_failure_with_traceback' failed with an exception and "
                       "will stop now: An error that is supposed to be recoverable."),
              std::string::npos);
}
