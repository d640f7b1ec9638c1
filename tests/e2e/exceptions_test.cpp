// examples/03-exceptions end to end: a temporary error is retried after its delay, an arbitrary
// exception after the backoff, and a permanent error ends the handler as failed, once each.
#include <gtest/gtest.h>

#include <csignal>

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

}  // namespace

TEST_F(Exceptions, TemporaryThenArbitraryThenPermanentFailureEndsTheHandler) {
    OperatorProcess op(*cluster_, {(source_dir() / "examples/03-exceptions/example.cpp").string(),
                                   "-n", "default", "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op.log();

    auto created =
        cluster_->kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op.wait_for_log("Creation is processed: 0 succeeded; 1 failed.")) << op.log();

    const std::string log = op.log();
    const auto temporary = log.find("Handler 'create_fn' failed temporarily: First failure.");
    const auto arbitrary = log.find(
        "Handler 'create_fn' failed with an exception and will try again in 1 seconds: Second "
        "failure.");
    const auto permanent =
        log.find("Handler 'create_fn' failed permanently: Third failure, the final one.");
    ASSERT_NE(temporary, std::string::npos) << log;
    ASSERT_NE(arbitrary, std::string::npos) << log;
    ASSERT_NE(permanent, std::string::npos) << log;
    EXPECT_LT(temporary, arbitrary);
    EXPECT_LT(arbitrary, permanent);

    // The object counts as handled: its diff base is stored, so no creation cycle repeats.
    auto object = cluster_->get_json({"kex", "kopf-example-1", "-n", "default"});
    ASSERT_TRUE(object.is_object());
    EXPECT_TRUE(
        object["metadata"]["annotations"].contains("kopf.zalando.org/last-handled-configuration"))
        << object.dump();
    EXPECT_FALSE(object["metadata"].contains("finalizers")) << object.dump();

    auto deleted =
        cluster_->kubectl({"delete", "kex", "kopf-example-1", "-n", "default", "--timeout=60s"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(op.wait_for_log("Deleted, really deleted, and we are notified.")) << op.log();

    EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();
    EXPECT_EQ(op.count_in_log("failed temporarily"), 1) << op.log();
    EXPECT_EQ(op.count_in_log("failed with an exception"), 1) << op.log();
    EXPECT_EQ(op.count_in_log("failed permanently"), 1) << op.log();
    EXPECT_EQ(op.count_in_log("Handler 'create_fn' succeeded."), 0) << op.log();
}
