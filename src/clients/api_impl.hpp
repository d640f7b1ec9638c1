// Internal to the client layer: the request core that every verb family of ApiClient shares —
// credentials and the one re-login, the client-side rate limit, retries with backoffs, the
// transport. Its coroutines are defined in clients/api.cpp; the verb families (fetching,
// creating, patching, scanning, events, watching) build paths and bodies and call into it.
#pragma once

#include <algorithm>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clients/api.hpp"
#include "clients/json_codec.hpp"
#include "clients/transport.hpp"

namespace kopf::clients {

// The server's retryAfterSeconds from a Status body, if it names one.
std::optional<double> retry_after_from_body(const std::string& body);

// -d/--debug: the API traffic is logged at spdlog's trace level (Kopf's DEBUG); these say
// whether it is, and cut bodies to a readable length.
bool tracing_api();
std::string excerpt(std::string_view body);
// The body of a request to `target` or of its answer as the trace shows it: a Secret's values
// (core v1 secrets, one or a list of them) redacted, then cut by excerpt().
std::string traced_body(const std::string& target, std::string_view body);

struct ApiClient::Impl {
    boost::asio::any_io_executor executor;
    std::shared_ptr<structs::Vault> vault;
    ReloginFn relogin;
    ClientSettings settings;
    Transport transport;
    boost::asio::thread_pool workers{1};
    bool relogin_running = false;
    std::vector<std::shared_ptr<boost::asio::steady_timer>> relogin_waiters;
    ApiMeter* meter = nullptr;  // metrics; none when off
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();

    Impl(boost::asio::any_io_executor ex, std::shared_ptr<structs::Vault> v, ReloginFn r,
         ClientSettings s);
    ~Impl();

    std::size_t burst() const {
        if (settings.burst > 0) return settings.burst;
        return std::max<std::size_t>(1, static_cast<std::size_t>(settings.qps));
    }

    Timeouts timeouts() const { return {settings.connect_timeout, settings.request_timeout}; }

    Awaitable<void> sleep(Seconds duration, StopSignal* stop);

    // Client-side rate limit: a token bucket of `burst` tokens refilled at `qps`.
    Awaitable<void> throttle();

    // The best credentials; when none are left, one re-login for all waiting requests.
    Awaitable<structs::VaultItem> credentials();

    // One API call with authentication and retries; returns a 2xx/3xx answer or throws.
    Awaitable<HttpResponse> send(HttpRequest request);

    // A request with `body` serialised (the content type goes only with a body).
    static HttpRequest make_request(std::string method, std::string path, const json* body,
                                    std::string content_type) {
        HttpRequest request;
        request.method = std::move(method);
        request.target = std::move(path);
        if (body) {
            request.body = dump_json(*body);
            request.content_type = std::move(content_type);
        }
        return request;
    }

    // The answer's body text, unparsed.
    Awaitable<std::string> call_text(std::string method, std::string path,
                                     const std::optional<json>& body, std::string content_type);

    Awaitable<json> call(std::string method, std::string path, std::optional<json> body,
                         std::string content_type);

    std::vector<std::pair<std::string, std::string>> write_params() const {
        if (settings.field_manager.empty()) return {};
        return {{"fieldManager", settings.field_manager}};
    }
};

}  // namespace kopf::clients
