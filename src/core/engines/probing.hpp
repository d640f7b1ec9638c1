// The liveness endpoint of `kopf run --liveness http://HOST:PORT/PATH` (Kopf's "Health-checks"):
// GET PATH answers 200 with a JSON object while the operator runs; other paths answer 404.
#pragma once

#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace kopf::runtime {

class LivenessServer {
  public:
    // Parses the endpoint ("http://0.0.0.0:8080/healthz"); throws std::invalid_argument naming
    // it when it is not an http:// URL with a port, or std::runtime_error when it cannot listen.
    LivenessServer(boost::asio::io_context& io, const std::string& endpoint);
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
