// HTTP/1.1 over TCP or TLS to the Kubernetes API (Beast + Asio + OpenSSL live in transport.cpp
// only). One Transport per event loop; not thread-safe: use it from its executor's thread.
//
// - request(): one request on a keep-alive connection from a per-server pool (limited when
//   pool_limit > 0), with connect and request timeouts. Any HTTP status is returned as is;
//   only failures without an HTTP answer throw (ConnectionError).
// - stream(): a GET on a dedicated connection whose body is handed over chunk by chunk as it
//   arrives (chunked watch streams), with an inactivity timeout per read.
// TLS: verified against the credentials' CA (file or PEM data) unless `insecure`; SNI and
// host-name verification; client certificates from files or PEM data.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "clients/errors.hpp"
#include "clients/settings.hpp"
#include "clients/stop.hpp"
#include "kopf/connection.hpp"

namespace kopf::clients {

struct HttpRequest {
    std::string method = "GET";
    std::string target;  // path and query, relative to the server's URL (which may have a prefix)
    std::string body;
    std::string content_type;  // for bodies
    std::string accept = "application/json";
    std::string authorization;  // the whole header value; empty for none
};

struct HttpResponse {
    int status = 0;
    std::string body;  // for stream(): only for non-2xx answers
    std::optional<double> retry_after;
};

struct Timeouts {
    std::optional<Seconds> connect{};  // none: the request timeout bounds the connecting too
    Seconds request{300.0};
    Seconds connecting() const { return connect.value_or(request); }
};

// A stream went silent for longer than the inactivity timeout.
class InactivityTimeout : public ConnectionError {
  public:
    using ConnectionError::ConnectionError;
};

class Transport {
  public:
    // `trust_env`: connect through the proxy named by the environment (see ClientSettings).
    Transport(boost::asio::any_io_executor executor, std::size_t pool_limit,
              bool trust_env = false);
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    boost::asio::awaitable<HttpResponse> request(const ConnectionInfo& credentials,
                                                 const HttpRequest& request, Timeouts timeouts);

    // Stream the body of a GET. For a 2xx answer, `on_chunk` receives the body bytes as they
    // arrive and the call returns when the server ends the stream, the `deadline` passes, or
    // `stop` is signalled. Non-2xx answers are returned whole. Throws InactivityTimeout when
    // no byte arrives within `inactivity`, ConnectionError for transport failures, and
    // whatever `on_chunk` throws (the connection is closed then).
    boost::asio::awaitable<HttpResponse> stream(
        const ConnectionInfo& credentials, const HttpRequest& request, Timeouts timeouts,
        Seconds inactivity, std::optional<std::chrono::steady_clock::time_point> deadline,
        std::function<void(std::string_view)> on_chunk, StopSignal* stop);

    // The server's own TLS certificate (PEM), as presented in a handshake on a connection of
    // its own (closed at once); empty for a plain-HTTP server. Throws ConnectionError.
    boost::asio::awaitable<std::string> server_certificate(const ConnectionInfo& credentials,
                                                           Timeouts timeouts);

    // Drop idle keep-alive connections (e.g. after credentials changed).
    void close_idle();

    boost::asio::any_io_executor executor() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kopf::clients
