// A scripted plain-HTTP peer for stream faults the real API server cannot produce (malformed
// lines, a stream cut in the middle of a chunk). It writes canned bytes; it parses nothing but
// the request line.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kopf::testing {

struct RawReply {
    std::string bytes;
    bool hold_open = false;  // keep the connection open after writing (a live stream)
    // Written one by one after `bytes`, `trickle_every` apart (a stream that keeps talking).
    std::vector<std::string> trickle{};
    std::chrono::milliseconds trickle_every{0};
};

class RawServer {
  public:
    // `script` gets the request line ("GET /api/v1/... HTTP/1.1") and returns the reply.
    explicit RawServer(std::function<RawReply(const std::string& request_line)> script);
    ~RawServer();

    std::string url() const;
    std::vector<std::string> requests() const;
    // Each request's whole head: the request line and headers, up to the blank line.
    std::vector<std::string> heads() const;

    static std::string json_response(const std::string& body);
    static std::string chunked_head();
    static std::string chunk(const std::string& data);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kopf::testing
