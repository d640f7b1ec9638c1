// An embedded API server with the example CRD for runtime tests, kubectl bound to it, and
// operators run by kopf::operator_() in threads of the test process.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <kopf/json.hpp>
#include <kopf/run.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kopf/apiserver/server.hpp"
#include "support/restartable_port.hpp"

namespace kopf::testing {

class EmbeddedCluster : public ::testing::Test {
  protected:
    void SetUp() override {
        if (shell("command -v kubectl").empty()) GTEST_SKIP() << "kubectl is not installed";
        char name[] = "/tmp/kopf-runtime-XXXXXX";
        dir_ = mkdtemp(name);
        server_options_.kubeconfig_out = dir_ / "kubeconfig.yaml";
        customize_server(server_options_);
        server_options_.port = restartable_port();  // a restart serves at the same address
        server_ = std::make_unique<kopf::apiserver::Server>(server_options_);
        server_->start();
        setenv("KUBECONFIG", server_options_.kubeconfig_out.c_str(), 1);
        kubectl("apply -f " + std::string(KOPF_SOURCE_DIR) + "/examples/crd.yaml");
    }
    void TearDown() override {
        if (server_) server_->stop();
        std::filesystem::remove_all(dir_);
    }

    // Changes to the server's options before its first start (e.g. a data_dir to keep the
    // objects across restart_server(), a token file).
    virtual void customize_server(kopf::apiserver::ServerOptions&) {}

    // Stops the server and starts another at the same address with these options (the same
    // ones when not given): its objects survive only with a data_dir.
    void restart_server(std::optional<kopf::apiserver::ServerOptions> options = std::nullopt) {
        if (options) {
            options->port = server_options_.port;
            server_options_ = std::move(*options);
        }
        server_->stop();
        server_.reset();
        server_ = std::make_unique<kopf::apiserver::Server>(server_options_);
        server_->start();
    }

    static std::string shell(const std::string& command) {
        std::string output;
        if (FILE* pipe = popen((command + " 2>&1").c_str(), "r")) {
            char buffer[4096];
            while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
            pclose(pipe);
        }
        return output;
    }
    std::string kubectl(const std::string& args) { return shell("kubectl " + args); }
    std::string apply_example(const std::string& namespace_ = "default") {
        return kubectl("apply -n " + namespace_ + " -f " + std::string(KOPF_SOURCE_DIR) +
                       "/examples/obj.yaml");
    }

    // Polls a kubectl command until its output contains `text`.
    bool eventually(const std::string& args, const std::string& text) {
        for (int i = 0; i < 300; ++i) {
            if (kubectl(args).find(text) != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return false;
    }

    // The Events in a namespace about the object with this name.
    json events_about(const std::string& name, const std::string& namespace_ = "default") {
        json events = json::array();
        const json list = json::parse(kubectl("get events -n " + namespace_ + " -o json"), nullptr,
                                      /*allow_exceptions=*/false);
        if (!list.is_object() || !list.contains("items")) return events;
        for (const auto& event : list["items"]) {
            if (event.value("/involvedObject/name"_json_pointer, "") == name) {
                events.push_back(event);
            }
        }
        return events;
    }

    std::filesystem::path dir_;
    kopf::apiserver::ServerOptions server_options_;
    std::unique_ptr<kopf::apiserver::Server> server_;
};

// kopf::operator_() in a thread: started and ready on construction, stopped by its stop flag.
class OperatorThread {
  public:
    explicit OperatorThread(kopf::RunOptions options) {
        options.stop_flag = &stop_;
        options.ready_flag = &ready_;
        thread_ = std::thread([this, options] {
            try {
                kopf::operator_(options);
            } catch (const std::exception& error) {
                std::lock_guard lock(mutex_);
                failure_ = error.what();
                ready_.set();
            }
        });
        ready_.wait_for(std::chrono::seconds(60));
    }
    ~OperatorThread() { stop(); }
    OperatorThread(const OperatorThread&) = delete;
    OperatorThread& operator=(const OperatorThread&) = delete;

    // Sets the stop flag and waits for the operator to return; its failure, if it failed.
    std::string stop() {
        stop_.set();
        if (thread_.joinable()) thread_.join();
        return failure();
    }
    bool ready() const { return ready_.is_set() && failure().empty(); }
    std::string failure() const {
        std::lock_guard lock(mutex_);
        return failure_;
    }

  private:
    kopf::OperatorFlag stop_, ready_;
    mutable std::mutex mutex_;
    std::string failure_;
    std::thread thread_;
};

}  // namespace kopf::testing
