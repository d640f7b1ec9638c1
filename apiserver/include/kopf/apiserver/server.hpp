// The embedded Kubernetes-compatible API server, as a library: tests and
// `kopf apiserver` start it in-process on a loopback port. This directory owns the
// public face of the server (ServerOptions, Server, `kopf apiserver`); the network
// layer behind it (HTTP/1.1 + TLS with Boost.Beast, authentication, overload, fault
// injection) lives in apiserver/src/net/, the request semantics in apiserver/src/core/.
//
//   kopf::apiserver::Server server({.port = 0});
//   server.start();
//   std::string url = server.url();   // http://127.0.0.1:PORT
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

namespace kopf::apiserver {

struct ServerOptions {
    std::string bind_address = "127.0.0.1";
    int port = 0;      // 0: pick a free port (see Server::port())
    bool tls = false;  // generate a CA and serving certificate unless tls_cert_file is given
    std::filesystem::path tls_cert_file;
    std::filesystem::path tls_private_key_file;
    std::filesystem::path client_ca_file;     // accept client certificates signed by this CA
    std::filesystem::path token_auth_file;    // kube-apiserver CSV: token,user,uid,"group1,group2"
    std::filesystem::path kubeconfig_out;     // write a ready-to-use kubeconfig here
    std::filesystem::path data_dir;           // empty: in memory
    std::size_t max_requests_inflight = 400;  // beyond: 429 with Retry-After
    std::size_t max_body_bytes = 3 * 1024 * 1024;
    // As kube-apiserver: a request head must arrive within header_timeout of its first byte (or
    // of the connection's start), and a keep-alive connection idle for idle_timeout is closed.
    std::chrono::milliseconds header_timeout{32'000};
    std::chrono::milliseconds idle_timeout{90'000};
    std::chrono::milliseconds bookmark_interval{60'000};
    std::size_t watch_history = 100'000;
    // The same history bounded by the size of its objects (serialised), so that large objects
    // cannot hold memory after they are gone: the oldest events go first.
    std::size_t watch_history_bytes = 256 * 1024 * 1024;
    int threads = 2;  // network threads
    // Threads for the work that may block or take long: requests that wait on SQLite or
    // webhooks, and the pieces of large list bodies. Other requests are handled on the
    // network threads. 0 does everything on the network threads.
    int handler_threads = 8;
    // Serve POST /_kopf/faults (JSON: failNext {count,status,retryAfterSeconds,pathContains},
    // delayMilliseconds, dropWatches, compactHistory, stallWatches) to the admin token, or
    // to loopback clients on plain HTTP. `kopf apiserver` turns it on.
    bool admin_endpoint = false;
    // "AlwaysAllow" (default) or "RBAC": as kube-apiserver's --authorization-mode, Roles,
    // ClusterRoles and their bindings decide what each user may do; denied requests get 403.
    // The admin token's user (group system:masters) may do everything.
    std::string authorization_mode = "AlwaysAllow";
};

class Server {
  public:
    explicit Server(ServerOptions options = {});
    ~Server();  // stops
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void start();  // binds and serves in background threads; throws on bind/TLS errors
    void stop();   // closes every connection and ends open watches; idempotent

    int port() const;
    std::string url() const;              // http(s)://127.0.0.1:PORT
    std::string ca_cert_pem() const;      // the serving CA when TLS is on
    std::string admin_token() const;      // a token accepted with full rights when TLS is on
    std::string kubeconfig_yaml() const;  // the same text --kubeconfig-out writes

    // Issue a client certificate signed by the server's CA (TLS mode): {cert_pem, key_pem}.
    std::pair<std::string, std::string> issue_client_certificate(const std::string& user,
                                                                 const std::string& group) const;

    // Fault injection for tests. fail_next_requests: the next `count` requests get
    // `status` with a Kubernetes Status body (500 InternalError, 503 ServiceUnavailable,
    // 429 TooManyRequests, 422 Invalid, ...) and a Retry-After header when
    // retry_after_seconds > 0; with `path_contains`, only the requests whose path contains it
    // (e.g. "webhookconfigurations") count and fail.
    // delay_responses: every request waits this long before it is handled (0: off).
    void drop_watches();
    void compact_history();
    void stall_watches(bool stalled);
    void fail_next_requests(int count, int status, int retry_after_seconds = 0,
                            const std::string& path_contains = "");
    // How many of the requests to fail are still to come (a test waits for its fault to land).
    int failing_requests_left() const;
    void delay_responses(std::chrono::milliseconds delay);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// `kopf apiserver ...`: argv[0] is "apiserver". Returns the process exit code.
int apiserver_command(int argc, char** argv);

}  // namespace kopf::apiserver
