// The liveness endpoint of `kopf run --liveness http://HOST:PORT/PATH` (Kopf's "Health-checks"):
// GET PATH answers 200 with the probe handlers' results as a JSON object, keyed by their ids,
// while the operator runs; other paths answer 404. The same server may also serve the
// operator's Prometheus metrics (`--metrics`, docs/metrics.md) on a path of its own.
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

namespace kopf::engines {
class Metrics;
}  // namespace kopf::engines

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

// Where an endpoint option ("http://0.0.0.0:8080/healthz") listens and what path it serves.
struct EndpointAddress {
    std::string host;  // an IP address ("localhost" becomes 127.0.0.1)
    int port = 0;
    std::string path;  // "/healthz"; empty for "http://HOST:PORT"
};
// Throws std::invalid_argument naming the option and the endpoint when it is not an http://
// URL with an IP address and a port.
EndpointAddress parse_endpoint(const std::string& endpoint, const std::string& option);

class LivenessServer {
  public:
    // Parses the endpoint ("http://0.0.0.0:8080/healthz"); throws std::invalid_argument naming
    // it when it is not an http:// URL with a port, or std::runtime_error when it cannot listen.
    // `probes`: what the endpoint reports (an empty object without it).
    LivenessServer(boost::asio::io_context& io, const std::string& endpoint,
                   std::shared_ptr<Probes> probes = nullptr);
    // A server of the metrics only (`--metrics` on an address of its own): its path (or "/")
    // answers with them; errors name the --metrics option.
    LivenessServer(boost::asio::io_context& io, const std::string& endpoint,
                   std::shared_ptr<engines::Metrics> metrics);
    // GET `path` answers with the metrics in Prometheus's text format (version 0.0.4).
    void serve_metrics(std::string path, std::shared_ptr<engines::Metrics> metrics);
    ~LivenessServer();
    LivenessServer(const LivenessServer&) = delete;
    LivenessServer& operator=(const LivenessServer&) = delete;

    int port() const;  // the bound port (useful with port 0)
    void stop();

  private:
    void listen(boost::asio::io_context& io, const std::string& endpoint, const std::string& option,
                std::shared_ptr<Probes> probes, bool serves_probes);
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::runtime
