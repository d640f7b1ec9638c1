// Settings of the client layer, as plain structs. configs/client_settings maps Kopf's
// OperatorSettings (settings.networking.*, settings.watching.*) onto these.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kopf::clients {

using Seconds = std::chrono::duration<double>;

struct ClientSettings {
    // settings.networking.request_timeout / connect_timeout (Kopf: 5 min / none). Without a
    // connect timeout, a new connection (TCP and TLS) is bounded by the request timeout only.
    Seconds request_timeout{300.0};
    std::optional<Seconds> connect_timeout{};
    // settings.networking.error_backoffs: the pauses between retries of connection errors,
    // 5xx, 403 and 429; after the last one the error escalates. Each request starts anew.
    std::vector<double> error_backoffs{1, 1, 2, 3, 5, 8, 13, 21};
    // Use the server's Retry-After even when it is shorter than the current backoff.
    bool enforce_retry_after = false;
    // Keep-alive connections per server (in use at once); 0 means unlimited.
    std::size_t pool_limit = 0;
    // Client-side rate limit (token bucket); off when qps <= 0.
    double qps = 0;
    std::size_t burst = 0;  // 0 means max(1, qps)
    // ?fieldManager= on writes.
    std::string field_manager = "kopf";
    // settings.networking.trust_env: connect through the proxy that the environment names
    // (https_proxy / http_proxy / all_proxy, no_proxy; upper case too), tunnelled by CONNECT.
    bool trust_env = false;
};

struct WatchSettings {
    // ?timeoutSeconds= for the server to close the stream; none by default.
    std::optional<Seconds> server_timeout{};
    // The client closes the stream after this long (reconnecting); none by default.
    std::optional<Seconds> client_timeout{};
    // settings.watching.connect_timeout: for the stream's connection; none: the client's
    // connect timeout, else its request timeout (as Kopf).
    std::optional<Seconds> connect_timeout{};
    // Pause before reconnecting after a stream ended with an error.
    Seconds reconnect_backoff{0.1};
    // No event or bookmark for this long means a hung stream: reconnect.
    Seconds inactivity_timeout{70.0};
    // Page size for the initial listing (limit/continue).
    std::size_t list_page_size = 500;
};

}  // namespace kopf::clients
