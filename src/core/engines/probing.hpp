// The liveness endpoint of `kopf run --liveness http://HOST:PORT/PATH` (Kopf's "Health-checks"):
// GET PATH answers 200 with the probe handlers' results as a JSON object, keyed by their ids,
// while the operator runs; other paths answer 404.
#pragma once

#include <functional>
#include <kopf/index.hpp>
#include <kopf/json.hpp>
#include <kopf/task.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopf {
class Registry;
class Memo;
struct OperatorSettings;
struct ActivityHandler;
}  // namespace kopf

namespace boost::asio {
class io_context;
}

namespace kopf::runtime {

// The probe handlers (kopf::on::probe), run on request and their results cached for
// `max_age` seconds, as Kopf does: mass requests cost one run; concurrent requests share it.
class Probes {
  public:
    // The results by probe id, or the failure of a probe (then not cached).
    struct Report {
        json results = json::object();
        std::optional<std::string> failure;
    };

    Probes(Executor& loop, const Registry& registry, OperatorSettings& settings, Memo& memo,
           Indices indices, double max_age = 10.0);
    // Calls `report` on the loop with fresh or cached results.
    void collect(std::function<void(const Report&)> report);

  private:
    struct State;
    std::shared_ptr<State> state_;
};

class LivenessServer {
  public:
    // Parses the endpoint ("http://0.0.0.0:8080/healthz"); throws std::invalid_argument naming
    // it when it is not an http:// URL with a port, or std::runtime_error when it cannot listen.
    // `probes`: what the endpoint reports (an empty object without it).
    LivenessServer(boost::asio::io_context& io, const std::string& endpoint,
                   std::shared_ptr<Probes> probes = nullptr);
    ~LivenessServer();
    LivenessServer(const LivenessServer&) = delete;
    LivenessServer& operator=(const LivenessServer&) = delete;

    int port() const;  // the bound port (useful with port 0)
    void stop();

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::runtime
