// The request core (Kopf's clients/api.py): the client object, credentials and the one
// re-login, the client-side rate limit, retries with backoffs, and raw requests. The verb
// families live in fetching, creating, patching, scanning, events and watching.cpp.
#include "clients/api.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "clients/api_impl.hpp"
#include "clients/auth.hpp"
#include "clients/backoff.hpp"
#include "clients/json_codec.hpp"
#include "clients/transport.hpp"
#include "structs/redaction.hpp"

namespace kopf::clients {

namespace asio = boost::asio;
using asio::use_awaitable;
using structs::VaultItem;

std::optional<double> retry_after_from_body(const std::string& body) {
    auto status = json::parse(body, nullptr, false);
    if (status.is_object() && status.contains("details") && status["details"].is_object()) {
        const auto& details = status["details"];
        if (auto it = details.find("retryAfterSeconds"); it != details.end() && it->is_number()) {
            return it->get<double>();
        }
    }
    return std::nullopt;
}

namespace {

// A plain coroutine, not a lambda: the login function is copied into its frame, where
// it lives until the login returns (see "Temporaries in co_await" in kopf/task.hpp).
Awaitable<std::map<std::string, ConnectionInfo>> login_once(ReloginFn login) {
    co_return login();
}

json parse_body(const std::string& body, const std::string& what) {
    if (body.empty()) return nullptr;
    auto parsed = parse_json_or_discarded(body);
    if (parsed.is_discarded()) {
        throw ApiError(200, json::object(), what,
                       fmt::format("{}: the answer is not JSON: {}", what, body.substr(0, 200)));
    }
    return parsed;
}

}  // namespace

bool tracing_api() {
    return spdlog::default_logger_raw()->should_log(spdlog::level::trace);
}

std::string excerpt(std::string_view body) {
    constexpr std::size_t kShown = 2000;
    if (body.size() <= kShown) return std::string(body);
    return fmt::format("{}... ({} bytes)", body.substr(0, kShown), body.size());
}

std::string traced_body(const std::string& target, std::string_view body) {
    const std::string_view path = std::string_view(target).substr(0, target.find('?'));
    const bool secrets =
        path.rfind("/api/v1/", 0) == 0 &&
        (path.ends_with("/secrets") || path.find("/secrets/") != std::string::npos);
    if (!secrets || body.empty()) return excerpt(body);
    json value = parse_json_or_discarded(body);
    if (value.is_discarded()) return fmt::format("<redacted: {} bytes>", body.size());
    if (value.is_object() && value.contains("items") && value["items"].is_array()) {
        for (auto& item : value["items"]) item = structs::redact_secret_values(item);
    } else if (value.is_object() && value.contains("object")) {  // a watch event
        value["object"] = structs::redact_secret_values(value["object"]);
    } else {
        value = structs::redact_secret_values(value);
    }
    return excerpt(dump_json(value));
}

std::map<std::string, ConnectionInfo> default_login() {
    std::map<std::string, ConnectionInfo> result;
    if (auto info = login_with_service_account()) {
        result.emplace("login_with_service_account", *info);
    } else if (auto kubeconfig = login_with_kubeconfig()) {
        result.emplace("login_with_kubeconfig", *kubeconfig);
    }
    return result;
}

ApiClient::Impl::Impl(asio::any_io_executor ex, std::shared_ptr<structs::Vault> v, ReloginFn r,
                      ClientSettings s)
    : executor(ex),
      vault(std::move(v)),
      relogin(std::move(r)),
      settings(std::move(s)),
      transport(ex, settings.pool_limit, settings.trust_env) {
    tokens = static_cast<double>(burst());
}

ApiClient::Impl::~Impl() {
    workers.join();
}

Awaitable<void> ApiClient::Impl::sleep(Seconds duration, StopSignal* stop) {
    if (stop && stop->stopped()) co_return;
    auto timer = std::make_shared<asio::steady_timer>(executor);
    timer->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration));
    std::weak_ptr<asio::steady_timer> weak = timer;
    StopCallback on_stop(stop, [weak, executor = executor] {
        asio::post(executor, [weak] {
            if (auto t = weak.lock()) t->cancel();
        });
    });
    co_await timer->async_wait(asio::as_tuple(use_awaitable));
}

Awaitable<void> ApiClient::Impl::throttle() {
    if (settings.qps <= 0) co_return;
    while (true) {
        auto now = std::chrono::steady_clock::now();
        double elapsed = std::chrono::duration<double>(now - refilled).count();
        refilled = now;
        tokens = std::min(static_cast<double>(burst()), tokens + elapsed * settings.qps);
        if (tokens >= 1.0) {
            tokens -= 1.0;
            co_return;
        }
        co_await sleep(Seconds((1.0 - tokens) / settings.qps), nullptr);
    }
}

Awaitable<VaultItem> ApiClient::Impl::credentials() {
    while (true) {
        if (auto item = vault->select()) co_return *item;
        if (relogin_running) {
            auto waiter = std::make_shared<asio::steady_timer>(
                executor, asio::steady_timer::time_point::max());
            relogin_waiters.push_back(waiter);
            co_await waiter->async_wait(asio::as_tuple(use_awaitable));
            continue;
        }
        if (!relogin)
            throw structs::LoginError("Ran out of valid credentials and no login is configured.");
        relogin_running = true;
        std::exception_ptr failure;
        std::map<std::string, ConnectionInfo> fresh;
        spdlog::info("Re-authenticating: no valid credentials are left.");
        if (meter) meter->relogged_in();
        try {
            // The login runs on its own thread: it may block (token files, exec plugins).
            auto logging_in =
                asio::co_spawn(workers.get_executor(), login_once(relogin), use_awaitable);
            fresh = co_await std::move(logging_in);
        } catch (...) {
            failure = std::current_exception();
        }
        relogin_running = false;
        for (auto& waiter : relogin_waiters) waiter->cancel();
        relogin_waiters.clear();
        if (failure) std::rethrow_exception(failure);
        if (fresh.empty()) {
            throw structs::LoginError("Ran out of valid credentials: the login produced none.");
        }
        vault->populate(std::move(fresh));
        transport.close_idle();
        if (!vault->select()) {
            throw structs::LoginError(
                "Ran out of valid credentials: the login produced only expired ones.");
        }
    }
}

Awaitable<HttpResponse> ApiClient::Impl::send(HttpRequest request) {
    // Named only in messages, which the successful requests never write.
    const auto what = [&request] { return request.method + " " + request.target; };
    BackoffSequence backoff(settings.error_backoffs);
    int unauthorized = 0;
    while (true) {
        // The common cases without a coroutine frame each: no rate limit, and credentials
        // at hand.
        if (settings.qps > 0) co_await throttle();
        std::optional<VaultItem> selected = vault->select();
        if (!selected) {
            // Named first: g++ 12 destroys argument temporaries of a co_await twice.
            auto relogging = credentials();
            selected = co_await std::move(relogging);
        }
        const VaultItem& item = *selected;
        try {
            request.authorization = authorization_header(*item.info);
        } catch (const std::runtime_error& e) {
            throw structs::LoginError(e.what());
        }
        std::optional<HttpResponse> response;
        std::string failure;
        const bool tracing = tracing_api();
        if (tracing) {
            spdlog::trace("API request: {}{}{}", what(), request.body.empty() ? "" : " ",
                          traced_body(request.target, request.body));
        }
        const auto sent =
            meter ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
        try {
            response = co_await transport.request(*item.info, request, timeouts());
        } catch (const ConnectionError& e) {
            failure = e.what();
        }
        if (meter) {
            meter->request(
                request.method, request.target, response ? response->status : 0,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count());
        }
        if (tracing) {
            if (response) {
                spdlog::trace("API response: {} -> {}{}{}", what(), response->status,
                              response->body.empty() ? "" : " ",
                              traced_body(request.target, response->body));
            } else {
                spdlog::trace("API request failed: {}: {}", what(), failure);
            }
        }
        std::optional<double> pause;
        std::optional<double> retry_after;
        if (!response) {
            pause = backoff.next();
            if (!pause) {
                spdlog::error("Request attempt #{}/{} failed; escalating: {}",
                              backoff.attempts_failed() + 1, backoff.max_attempts(), failure);
                throw ConnectionError(failure);
            }
        } else if (response->status < 400) {
            if (backoff.attempts_failed() > 0) {
                spdlog::debug("Request attempt #{}/{} succeeded: {}", backoff.attempts_failed() + 1,
                              backoff.max_attempts(), what());
            }
            co_return std::move(*response);
        } else if (response->status == 401) {
            vault->invalidate(item);
            if (++unauthorized > 2) {
                throw_api_error(401, response->body, what(), std::nullopt);
            }
            spdlog::warn("{} -> 401 Unauthorized; re-authenticating.", what());
            continue;
        } else if (response->status >= 500 || response->status == 403 || response->status == 429) {
            retry_after = response->retry_after ? response->retry_after
                                                : retry_after_from_body(response->body);
            pause = backoff.next(retry_after, settings.enforce_retry_after);
            if (!pause) throw_api_error(response->status, response->body, what(), retry_after);
            // The server's words say which permission or limit it was (e.g. a missing RBAC rule).
            const auto status = json::parse(response->body, nullptr, false);
            const std::string message =
                status.is_object() && status.contains("message") && status["message"].is_string()
                    ? status["message"].get<std::string>()
                    : std::string();
            failure = message.empty() ? fmt::format("HTTP {}", response->status)
                                      : fmt::format("HTTP {}: {}", response->status, message);
        } else {
            throw_api_error(response->status, response->body, what(), response->retry_after);
        }
        if (meter) meter->retried(response ? response->status : 0, *pause, retry_after);
        spdlog::warn("Request attempt #{}/{} failed; will retry in {}s: {} -> {}",
                     backoff.attempts_failed(), backoff.max_attempts(), *pause, what(), failure);
        co_await sleep(Seconds(*pause), nullptr);
    }
}

Awaitable<std::string> ApiClient::Impl::call_text(std::string method, std::string path,
                                                  const std::optional<json>& body,
                                                  std::string content_type) {
    auto sending = send(make_request(std::move(method), std::move(path), body ? &*body : nullptr,
                                     std::move(content_type)));
    auto response = co_await std::move(sending);
    co_return std::move(response.body);
}

Awaitable<json> ApiClient::Impl::call(std::string method, std::string path,
                                      std::optional<json> body, std::string content_type) {
    const std::string what = method + " " + path;
    auto calling = call_text(std::move(method), std::move(path), body, std::move(content_type));
    const std::string text = co_await std::move(calling);
    co_return parse_body(text, what);
}

ApiClient::ApiClient(asio::any_io_executor executor, std::shared_ptr<structs::Vault> vault,
                     ReloginFn relogin, ClientSettings settings)
    : impl_(std::make_unique<Impl>(std::move(executor), std::move(vault), std::move(relogin),
                                   std::move(settings))) {}

ApiClient::~ApiClient() = default;

const ClientSettings& ApiClient::settings() const {
    return impl_->settings;
}
structs::Vault& ApiClient::vault() {
    return *impl_->vault;
}
void ApiClient::set_meter(ApiMeter* meter) {
    impl_->meter = meter;
}

Awaitable<void> ApiClient::sleep(Seconds duration, StopSignal* stop) {
    co_await impl_->sleep(duration, stop);
}

Awaitable<json> ApiClient::request(std::string method, std::string path, std::optional<json> body,
                                   std::string content_type) {
    co_return co_await impl_->call(method, path, body, content_type);
}

}  // namespace kopf::clients
