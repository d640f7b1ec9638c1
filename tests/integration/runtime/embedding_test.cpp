// Embedding (Kopf's "Embedding"): kopf::operator_() in a thread with its own registry, the
// ready and stop flags, and Kubernetes Events posted from a handler.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <memory>
#include <string>
#include <thread>

#include "kopf/apiserver/server.hpp"
#include "runtime/posting.hpp"

namespace fs = std::filesystem;

namespace {

std::string shell(const std::string& command) {
    std::string output;
    if (FILE* pipe = popen((command + " 2>&1").c_str(), "r")) {
        char buffer[4096];
        while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
        pclose(pipe);
    }
    return output;
}

class Embedding : public ::testing::Test {
  protected:
    void SetUp() override {
        if (shell("command -v kubectl").empty()) GTEST_SKIP() << "kubectl is not installed";
        char name[] = "/tmp/kopf-embedding-XXXXXX";
        dir_ = mkdtemp(name);
        kopf::apiserver::ServerOptions options;
        options.kubeconfig_out = dir_ / "kubeconfig.yaml";
        server_ = std::make_unique<kopf::apiserver::Server>(options);
        server_->start();
        setenv("KUBECONFIG", options.kubeconfig_out.c_str(), 1);
        kubectl("apply -f " + std::string(KOPF_SOURCE_DIR) + "/examples/crd.yaml");
    }
    void TearDown() override {
        if (server_) server_->stop();
        fs::remove_all(dir_);
    }
    std::string kubectl(const std::string& args) { return shell("kubectl " + args); }

    // Polls a kubectl command until its output contains `text`.
    bool eventually(const std::string& args, const std::string& text) {
        for (int i = 0; i < 300; ++i) {
            if (kubectl(args).find(text) != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return false;
    }

    fs::path dir_;
    std::unique_ptr<kopf::apiserver::Server> server_;
};

}  // namespace

TEST_F(Embedding, OperatorInAThreadServesItsRegistryUntilStopped) {
    kopf::Registry registry;
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [](kopf::Context& ctx) -> kopf::json {
                                      kopf::info(ctx.body, "SomeReason", "Some message");
                                      return {{"message", "embedded"}};
                                  });
    kopf::OperatorFlag stop, ready;
    std::string failure;
    std::thread thread([&] {
        kopf::RunOptions options;
        options.namespaces = {"default"};
        options.registry = &registry;
        options.stop_flag = &stop;
        options.ready_flag = &ready;
        try {
            kopf::operator_(options);
        } catch (const std::exception& error) {
            failure = error.what();
            ready.set();
        }
    });
    ASSERT_TRUE(ready.wait_for(std::chrono::seconds(60)));
    ASSERT_EQ(failure, "");

    kubectl("apply -f " + std::string(KOPF_SOURCE_DIR) + "/examples/obj.yaml");
    EXPECT_TRUE(
        eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.message}", "embedded"));
    EXPECT_TRUE(eventually("get events -n default -o jsonpath={.items[*].reason}", "SomeReason"));
    const std::string events = kubectl("get events -n default -o json");
    EXPECT_NE(events.find("\"kopf-example-1\""), std::string::npos) << events;
    EXPECT_NE(events.find("\"Some message\""), std::string::npos) << events;

    stop.set();
    thread.join();
    EXPECT_EQ(failure, "");
}

TEST_F(Embedding, StartupFailureIsThrownWithTheReason) {
    kopf::Registry registry;
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [](kopf::Context&) {});
    kopf::RunOptions options;  // neither namespaces nor clusterwide
    options.registry = &registry;
    try {
        kopf::operator_(options);
        FAIL() << "no error";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("--all-namespaces"), std::string::npos);
    }
}
