// Forced exits of `kopf run`: a graceful stop waits for handlers still running; a second signal
// or settings.process.ultimate_exiting_timeout ends the process anyway.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

// A creation handler that keeps running far longer than any test: a graceful stop cannot end it.
const char* const blocking_handler = R"(
#include <chrono>
#include <kopf/kopf.hpp>
#include <thread>

void create_fn(kopf::Context& ctx) {
    ctx.logger.info("Blocking the shutdown.");
    std::this_thread::sleep_for(std::chrono::minutes(10));
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
)";

const char* const short_ultimate_timeout = R"(
void configure(kopf::ActivityContext& ctx) {
    ctx.settings.process.ultimate_exiting_timeout = 3;
}
KOPF_ON_STARTUP(configure, {});
)";

class Shutdown : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        cluster_ = std::make_unique<Cluster>();
        auto crd =
            cluster_->kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()});
        ASSERT_EQ(crd.exit_code, 0) << crd.output;
    }

    fs::path write_source(const std::string& name, const std::string& text) {
        const fs::path path = cluster_->workdir() / name;
        std::ofstream(path) << text;
        return path;
    }

    // Starts the operator and waits until its handler blocks.
    std::unique_ptr<OperatorProcess> start_blocked(const fs::path& source) {
        auto op = std::make_unique<OperatorProcess>(
            *cluster_, std::vector<std::string>{source.string(), "-n", "default", "--standalone"});
        EXPECT_TRUE(op->wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op->log();
        auto created =
            cluster_->kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
        EXPECT_EQ(created.exit_code, 0) << created.output;
        EXPECT_TRUE(op->wait_for_log("Blocking the shutdown.")) << op->log();
        return op;
    }

    std::unique_ptr<Cluster> cluster_;
};

}  // namespace

TEST_F(Shutdown, SecondSignalForcesTheExitWhileAHandlerStillRuns) {
    auto op = start_blocked(write_source("blocking.cpp", blocking_handler));
    op->stop(SIGINT, std::chrono::seconds(0));  // sends the signal, does not wait
    ASSERT_TRUE(op->wait_for_log("Waiting for 1 synchronous handler(s) still running."))
        << op->log();

    EXPECT_EQ(op->stop(SIGINT), 1) << op->log();
    EXPECT_NE(op->log().find("Signal SIGINT is received again. Exiting immediately."),
              std::string::npos)
        << op->log();
    EXPECT_EQ(op->log().find("Operator has stopped."), std::string::npos) << op->log();
}

TEST_F(Shutdown, SigtermAfterSigintAlsoForcesTheExit) {
    auto op = start_blocked(write_source("blocking.cpp", blocking_handler));
    op->stop(SIGINT, std::chrono::seconds(0));
    ASSERT_TRUE(op->wait_for_log("Waiting for 1 synchronous handler(s) still running."))
        << op->log();

    EXPECT_EQ(op->stop(SIGTERM), 1) << op->log();
    EXPECT_NE(op->log().find("Signal SIGTERM is received again."), std::string::npos) << op->log();
}

TEST_F(Shutdown, UltimateExitingTimeoutForcesTheExitAfterOneSignal) {
    auto op = start_blocked(
        write_source("ultimate.cpp", std::string(blocking_handler) + short_ultimate_timeout));
    op->stop(SIGTERM, std::chrono::seconds(0));

    EXPECT_EQ(op->wait_exit(std::chrono::seconds(120)), 1) << op->log();
    EXPECT_NE(op->log().find("The operator did not stop within 3s "
                             "(settings.process.ultimate_exiting_timeout). Exiting forcefully."),
              std::string::npos)
        << op->log();
}
