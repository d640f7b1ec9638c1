// examples/01-minimal end to end: `kopf run example.cpp` against the embedded API server.
#include <gtest/gtest.h>

#include <csignal>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;

namespace {

class Minimal : public ::testing::Test {
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

TEST_F(Minimal, CreationHandlerRunsOnceAndItsResultBecomesTheStatus) {
    OperatorProcess op(*cluster_, {(source_dir() / "examples/01-minimal/example.cpp").string(),
                                   "-n", "default", "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op.log();

    auto created =
        cluster_->kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op.wait_for_log("Handling cycle is finished, waiting for new changes."))
        << op.log();
    EXPECT_NE(op.log().find("[default/kopf-example-1] And here we are! Creating: "),
              std::string::npos);

    auto object = cluster_->get_json({"kex", "kopf-example-1", "-n", "default"});
    ASSERT_TRUE(object.is_object());
    EXPECT_EQ(object["status"]["create_fn"]["message"], "hello world");

    auto deleted =
        cluster_->kubectl({"delete", "kex", "kopf-example-1", "-n", "default", "--timeout=60s"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(op.wait_for_log("Deleted, really deleted, and we are notified.")) << op.log();
    EXPECT_TRUE(cluster_->get_json({"kex", "kopf-example-1", "-n", "default"}).is_null());

    EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();
    EXPECT_EQ(op.count_in_log("Handler 'create_fn' succeeded."), 1) << op.log();
    EXPECT_NE(op.log().find("Operator has stopped."), std::string::npos) << op.log();
}

TEST_F(Minimal, SigintStopsTheOperatorGracefully) {
    OperatorProcess op(
        *cluster_, {(source_dir() / "examples/01-minimal/example.cpp").string(), "-n", "default"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op.log();
    EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
    EXPECT_NE(op.log().find("Signal SIGINT is received. Operator is stopping."), std::string::npos);
}

TEST_F(Minimal, LivenessEndpointAnswersWhileRunning) {
    if (!have_program("curl")) GTEST_SKIP() << "curl is not installed";
    OperatorProcess op(
        *cluster_, {(source_dir() / "examples/01-minimal/example.cpp").string(), "-n", "default",
                    "--verbose", "--liveness", "http://127.0.0.1:0/healthz"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op.log();
    const std::string marker = "Serving health status at ";
    const std::string log = op.log();
    const auto at = log.find(marker);
    ASSERT_NE(at, std::string::npos) << log;
    const std::string url = log.substr(at + marker.size(), log.find('\n', at) - at - marker.size());
    auto healthy = run({"curl", "-sf", url});
    EXPECT_EQ(healthy.exit_code, 0) << url;
    EXPECT_EQ(healthy.output, "{}");
    auto other = run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                      url.substr(0, url.rfind('/')) + "/other"});
    EXPECT_EQ(other.output, "404");
    EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();
}
