// Shared by the handling integration tests: an embedded API server over HTTPS with the
// KopfExample CRD, a synchronous reader/writer (the client layer on its own thread) for what a
// user would see on the objects, and an in-process operator (kopf::operator_) that can be
// started, stopped and restarted with its own registry and settings.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <kopf/apiserver/server.hpp>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kopf::clients {
class ApiClient;
}

namespace kopf::testing {

// Thread-safe record of handler calls (handlers run on the operator's worker threads).
class Calls {
  public:
    // Counts a call of `key` and returns how many calls it has had, this one included.
    int add(const std::string& key, json detail = nullptr) {
        std::lock_guard lock(mutex_);
        details_[key].push_back(std::move(detail));
        return static_cast<int>(details_[key].size());
    }
    int count(const std::string& key) const {
        std::lock_guard lock(mutex_);
        auto found = details_.find(key);
        return found == details_.end() ? 0 : static_cast<int>(found->second.size());
    }
    // The details given with each call of `key`, in call order.
    std::vector<json> details(const std::string& key) const {
        std::lock_guard lock(mutex_);
        auto found = details_.find(key);
        return found == details_.end() ? std::vector<json>{} : found->second;
    }

  private:
    mutable std::mutex mutex_;
    std::map<std::string, std::vector<json>> details_;
};

// One operator run in a background thread; stops gracefully when destroyed.
class OperatorThread {
  public:
    // `customize`: changes to the run options (e.g. a liveness endpoint).
    OperatorThread(Registry& registry, const OperatorSettings& settings,
                   std::function<void(RunOptions&)> customize = {});
    ~OperatorThread();
    OperatorThread(const OperatorThread&) = delete;
    OperatorThread& operator=(const OperatorThread&) = delete;

    // Stops the operator and waits for its thread; the startup/run error, if any, is returned.
    std::string stop();

  private:
    OperatorSettings settings_;
    OperatorFlag stop_, ready_;
    std::string failure_;
    std::thread thread_;
};

// A port free on loopback now (for endpoints the operator serves).
int free_port();
// A plain HTTP/1.0 GET on loopback: the whole answer (status line, headers, body), or "" when
// nothing listens.
std::string http_get(int port, const std::string& path);
// The body of an HTTP answer (what follows the headers), or "" without one.
std::string http_body(const std::string& answer);
// The value of the Prometheus sample `series` ("name{label=\"v\",...}" exactly as exposed,
// labels in prometheus-cpp's sorted order) in a scrape's `text`, or -1 when it is not there.
double metric_sample(const std::string& text, const std::string& series);

class HandlingTest : public ::testing::Test {
  protected:
    void SetUp() override;
    void TearDown() override;

    // Settings with short API retry backoffs for tests (the handler backoffs are per handler).
    static OperatorSettings fast_settings();
    std::unique_ptr<OperatorThread> start_operator(Registry& registry,
                                                   const OperatorSettings& settings,
                                                   std::function<void(RunOptions&)> customize = {});
    std::unique_ptr<OperatorThread> start_operator(Registry& registry) {
        return start_operator(registry, fast_settings());
    }
    // Runs the operator in this thread until it returns by itself (for operators that must not
    // start): its startup failure, or "no failure".
    // `customize`: changes to the run options (e.g. a bad endpoint).
    static std::string run_until_it_fails(Registry& registry, const OperatorSettings& settings,
                                          const std::function<void(RunOptions&)>& customize = {});

    // A KopfExample body named `name` in "default" with the given spec (and metadata merged).
    static json example(const std::string& name, const json& spec,
                        const json& metadata = json::object());
    // Synchronous API calls on kopfexamples in "default" (retried by the client layer).
    json create(const json& body);
    std::optional<json> get(const std::string& name);  // nullopt when the object is gone
    json patch(const std::string& name, const json& merge_patch);
    void remove(const std::string& name);
    // Any API call ("POST", "/apis/...", body) as the cluster's admin; the JSON answer.
    json request(const std::string& method, const std::string& path, const json& body = nullptr,
                 const std::string& content_type = "application/json");
    // The directory of this test's files (the kubeconfig is kubeconfig.yaml in it).
    const std::filesystem::path& workdir() const { return dir_; }

    // A Kopf annotation of the object ("kopf.zalando.org/<key>"), parsed as JSON (the diff base
    // and progress records are JSON), or nullopt when absent.
    std::optional<json> kopf_annotation(const std::string& name, const std::string& key);

    // Polls `condition` (every 50 ms, up to `limit`) until true; false on the limit.
    static bool eventually(const std::function<bool()>& condition,
                           std::chrono::seconds limit = std::chrono::seconds(60));

    std::unique_ptr<apiserver::Server> server;

  private:
    std::filesystem::path dir_;
    struct Client;
    std::shared_ptr<Client> client_;
};

}  // namespace kopf::testing
