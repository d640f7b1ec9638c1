#include "clients/api.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <ctime>

#include "clients/auth.hpp"
#include "clients/backoff.hpp"
#include "clients/events.hpp"
#include "clients/json_codec.hpp"
#include "clients/lines.hpp"
#include "clients/transport.hpp"

namespace kopf::clients {

namespace asio = boost::asio;
using asio::use_awaitable;
using structs::Resource;
using structs::VaultItem;

namespace {

// A MODIFIED event's line, told by its top-level type key, which Kubernetes writes first
// and a server with sorted keys writes last ("object" < "type").
bool is_modified_event(std::string_view line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' '))
        line.remove_suffix(1);
    return line.starts_with(R"({"type":"MODIFIED",)") || line.ends_with(R"(,"type":"MODIFIED"})");
}

// Carries an exception thrown by the caller's event callback through the watch loop untouched.
struct CallbackFailure {
    std::exception_ptr error;
};

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

json parse_body(const std::string& body, const std::string& what) {
    if (body.empty()) return nullptr;
    auto parsed = parse_json_or_discarded(body);
    if (parsed.is_discarded()) {
        throw ApiError(200, json::object(), what,
                       fmt::format("{}: the answer is not JSON: {}", what, body.substr(0, 200)));
    }
    return parsed;
}

const char* content_type_of(PatchType type) {
    switch (type) {
        case PatchType::Merge:
            return "application/merge-patch+json";
        case PatchType::Json:
            return "application/json-patch+json";
        case PatchType::StrategicMerge:
            return "application/strategic-merge-patch+json";
        case PatchType::Apply:
            return "application/apply-patch+yaml";
    }
    return "application/merge-patch+json";
}

}  // namespace

std::map<std::string, ConnectionInfo> default_login() {
    std::map<std::string, ConnectionInfo> result;
    if (auto info = login_with_service_account()) {
        result.emplace("login_with_service_account", *info);
    } else if (auto kubeconfig = login_with_kubeconfig()) {
        result.emplace("login_with_kubeconfig", *kubeconfig);
    }
    return result;
}

struct ApiClient::Impl {
    asio::any_io_executor executor;
    std::shared_ptr<structs::Vault> vault;
    ReloginFn relogin;
    ClientSettings settings;
    Transport transport;
    asio::thread_pool workers{1};
    bool relogin_running = false;
    std::vector<std::shared_ptr<asio::steady_timer>> relogin_waiters;
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();

    Impl(asio::any_io_executor ex, std::shared_ptr<structs::Vault> v, ReloginFn r, ClientSettings s)
        : executor(ex),
          vault(std::move(v)),
          relogin(std::move(r)),
          settings(std::move(s)),
          transport(ex, settings.pool_limit) {
        tokens = static_cast<double>(burst());
    }
    ~Impl() { workers.join(); }

    std::size_t burst() const {
        if (settings.burst > 0) return settings.burst;
        return std::max<std::size_t>(1, static_cast<std::size_t>(settings.qps));
    }

    Timeouts timeouts() const { return {settings.connect_timeout, settings.request_timeout}; }

    Awaitable<void> sleep(Seconds duration, StopSignal* stop) {
        if (stop && stop->stopped()) co_return;
        auto timer = std::make_shared<asio::steady_timer>(executor);
        timer->expires_after(
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration));
        std::weak_ptr<asio::steady_timer> weak = timer;
        StopCallback on_stop(stop, [weak, executor = executor] {
            asio::post(executor, [weak] {
                if (auto t = weak.lock()) t->cancel();
            });
        });
        co_await timer->async_wait(asio::as_tuple(use_awaitable));
    }

    // Client-side rate limit: a token bucket of `burst` tokens refilled at `qps`.
    Awaitable<void> throttle() {
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

    // A plain coroutine, not a lambda: the login function is copied into its frame, where
    // it lives until the login returns (see clients/coroutines.hpp on lambdas in co_await).
    static Awaitable<std::map<std::string, ConnectionInfo>> login_once(ReloginFn login) {
        co_return login();
    }

    // The best credentials; when none are left, one re-login for all waiting requests.
    Awaitable<VaultItem> credentials() {
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
                throw structs::LoginError(
                    "Ran out of valid credentials and no login is configured.");
            relogin_running = true;
            std::exception_ptr failure;
            std::map<std::string, ConnectionInfo> fresh;
            spdlog::info("Re-authenticating: no valid credentials are left.");
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

    // One API call with authentication and retries; returns a 2xx/3xx answer or throws.
    Awaitable<HttpResponse> send(HttpRequest request) {
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
            try {
                response = co_await transport.request(*item.info, request, timeouts());
            } catch (const ConnectionError& e) {
                failure = e.what();
            }
            std::optional<double> pause;
            if (!response) {
                pause = backoff.next();
                if (!pause) {
                    spdlog::error("Request attempt #{}/{} failed; escalating: {}",
                                  backoff.attempts_failed() + 1, backoff.max_attempts(), failure);
                    throw ConnectionError(failure);
                }
            } else if (response->status < 400) {
                if (backoff.attempts_failed() > 0) {
                    spdlog::debug("Request attempt #{}/{} succeeded: {}",
                                  backoff.attempts_failed() + 1, backoff.max_attempts(), what());
                }
                co_return std::move(*response);
            } else if (response->status == 401) {
                vault->invalidate(item);
                if (++unauthorized > 2) {
                    throw_api_error(401, response->body, what(), std::nullopt);
                }
                spdlog::warn("{} -> 401 Unauthorized; re-authenticating.", what());
                continue;
            } else if (response->status >= 500 || response->status == 403 ||
                       response->status == 429) {
                auto retry_after = response->retry_after ? response->retry_after
                                                         : retry_after_from_body(response->body);
                pause = backoff.next(retry_after, settings.enforce_retry_after);
                if (!pause) throw_api_error(response->status, response->body, what(), retry_after);
                failure = fmt::format("HTTP {}", response->status);
            } else {
                throw_api_error(response->status, response->body, what(), response->retry_after);
            }
            spdlog::warn("Request attempt #{}/{} failed; will retry in {}s: {} -> {}",
                         backoff.attempts_failed(), backoff.max_attempts(), *pause, what(),
                         failure);
            co_await sleep(Seconds(*pause), nullptr);
        }
    }

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
                                     const std::optional<json>& body, std::string content_type) {
        auto sending = send(make_request(std::move(method), std::move(path),
                                         body ? &*body : nullptr, std::move(content_type)));
        auto response = co_await std::move(sending);
        co_return std::move(response.body);
    }

    Awaitable<json> call(std::string method, std::string path, std::optional<json> body,
                         std::string content_type) {
        const std::string what = method + " " + path;
        auto calling = call_text(std::move(method), std::move(path), body, std::move(content_type));
        const std::string text = co_await std::move(calling);
        co_return parse_body(text, what);
    }

    std::vector<std::pair<std::string, std::string>> write_params() const {
        if (settings.field_manager.empty()) return {};
        return {{"fieldManager", settings.field_manager}};
    }
};

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

Awaitable<void> ApiClient::sleep(Seconds duration, StopSignal* stop) {
    co_await impl_->sleep(duration, stop);
}

Awaitable<json> ApiClient::request(std::string method, std::string path, std::optional<json> body,
                                   std::string content_type) {
    co_return co_await impl_->call(method, path, body, content_type);
}

Awaitable<json> ApiClient::get(Resource resource, std::string namespace_, std::string name,
                               std::string subresource) {
    co_return co_await impl_->call("GET", resource.path(namespace_, name, subresource),
                                   std::nullopt, "");
}

Awaitable<std::string> ApiClient::list_pages(Resource resource, std::string namespace_,
                                             ListOptions options, std::size_t page_size,
                                             std::function<void(std::vector<json>&&)> on_page) {
    std::string continue_token;
    std::string resource_version;
    do {
        std::vector<std::pair<std::string, std::string>> params;
        if (page_size > 0) params.emplace_back("limit", std::to_string(page_size));
        if (!continue_token.empty()) params.emplace_back("continue", continue_token);
        if (!options.label_selector.empty())
            params.emplace_back("labelSelector", options.label_selector);
        if (!options.field_selector.empty())
            params.emplace_back("fieldSelector", options.field_selector);
        auto page = co_await impl_->call("GET", resource.path(namespace_, "", "", params),
                                         std::nullopt, "");
        if (!page.is_object() || !page.contains("items") || !page["items"].is_array()) {
            throw ApiError(
                200, json::object(), "GET " + resource.path(namespace_),
                fmt::format("Listing {} returned no 'items' array", resource.to_string()));
        }
        const json metadata = page.value("metadata", json::object());
        resource_version = metadata.value("resourceVersion", "");
        continue_token = metadata.value("continue", "");
        std::vector<json> items;
        items.reserve(page["items"].size());
        for (auto& item : page["items"]) items.push_back(std::move(item));
        page = nullptr;  // release the page before the caller works on the items
        on_page(std::move(items));
    } while (!continue_token.empty());
    co_return resource_version;
}

Awaitable<json> ApiClient::list(Resource resource, std::string namespace_, ListOptions options) {
    json items = json::array();
    auto collect = [&](std::vector<json>&& page) {
        for (auto& item : page) items.push_back(std::move(item));
    };
    auto listing = list_pages(resource, namespace_, options, 500, std::move(collect));
    auto version = co_await std::move(listing);
    co_return json{{"apiVersion", resource.api_version()},
                   {"kind", resource.kind + "List"},
                   {"metadata", {{"resourceVersion", version}}},
                   {"items", std::move(items)}};
}

Awaitable<json> ApiClient::create(Resource resource, std::string namespace_, json body) {
    std::string ns = namespace_;
    if (ns.empty() && resource.namespaced && body.contains("metadata") &&
        body["metadata"].is_object()) {
        ns = body["metadata"].value("namespace", "");
    }
    co_return co_await impl_->call("POST", resource.path(ns, "", "", impl_->write_params()), body,
                                   "application/json");
}

Awaitable<json> ApiClient::update(Resource resource, std::string namespace_, std::string name,
                                  json body, std::string subresource) {
    co_return co_await impl_->call(
        "PUT", resource.path(namespace_, name, subresource, impl_->write_params()), body,
        "application/json");
}

Awaitable<json> ApiClient::patch(Resource resource, std::string namespace_, std::string name,
                                 PatchType type, json patch, std::string subresource, bool force) {
    auto params = impl_->write_params();
    if (type == PatchType::Apply) {
        if (params.empty()) params.emplace_back("fieldManager", "kopf");
        if (force) params.emplace_back("force", "true");
    }
    co_return co_await impl_->call("PATCH", resource.path(namespace_, name, subresource, params),
                                   patch, content_type_of(type));
}

namespace {
Awaitable<std::optional<std::string>> version_of(Awaitable<HttpResponse> answer) {
    const HttpResponse response = co_await std::move(answer);
    co_return find_resource_version(response.body);
}
}  // namespace

Awaitable<std::optional<std::string>> ApiClient::patch_version(const Resource& resource,
                                                               const std::string& namespace_,
                                                               const std::string& name,
                                                               PatchType type, const json& patch,
                                                               const std::string& subresource) {
    // Not a coroutine: the request is built now, so the patch is serialised, not copied.
    return version_of(impl_->send(Impl::make_request(
        "PATCH", resource.path(namespace_, name, subresource, impl_->write_params()), &patch,
        content_type_of(type))));
}

Awaitable<json> ApiClient::remove(Resource resource, std::string namespace_, std::string name,
                                  DeleteOptions options) {
    json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (options.propagation_policy) body["propagationPolicy"] = *options.propagation_policy;
    if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
    co_return co_await impl_->call("DELETE", resource.path(namespace_, name), body,
                                   "application/json");
}

Awaitable<json> ApiClient::post_event(json involved, std::string type, std::string reason,
                                      std::string message, std::string source_component) {
    EventIdentity identity;
    identity.reporting_component = source_component;
    auto post = build_event(involved, type, reason, message, identity);
    if (!post) {
        throw std::invalid_argument("No Events are posted about Events: they would loop.");
    }
    Resource events;
    events.version = "v1";
    events.plural = "events";
    events.kind = "Event";
    const std::string path = events.path(post->namespace_);
    co_return co_await impl_->call("POST", path, post->body, "application/json");
}

Awaitable<json> ApiClient::read_version() {
    co_return co_await impl_->call("GET", "/version", std::nullopt, "");
}

Awaitable<std::vector<Resource>> ApiClient::discover() {
    std::vector<Resource> resources;
    auto scan = [&](std::string path, const std::string& group, const std::string& version,
                    bool preferred) -> Awaitable<void> {
        try {
            auto list = co_await impl_->call("GET", path, std::nullopt, "");
            auto found = structs::parse_api_resource_list(list, group, version, preferred);
            resources.insert(resources.end(), found.begin(), found.end());
        } catch (const NotFoundError&) {
            spdlog::debug("Discovery: {} is not served (404); skipped.", path);
        }
    };
    auto core = co_await impl_->call("GET", "/api", std::nullopt, "");
    if (core.is_object() && core.contains("versions") && core["versions"].is_array()) {
        bool first = true;
        for (const auto& version : core["versions"]) {
            if (!version.is_string()) continue;
            co_await scan("/api/" + version.get<std::string>(), "", version.get<std::string>(),
                          first);
            first = false;
        }
    }
    auto groups = co_await impl_->call("GET", "/apis", std::nullopt, "");
    if (groups.is_object() && groups.contains("groups") && groups["groups"].is_array()) {
        for (const auto& group : groups["groups"]) {
            std::string name = group.value("name", "");
            std::string preferred =
                group.value("preferredVersion", json::object()).value("version", "");
            for (const auto& version : group.value("versions", json::array())) {
                std::string v = version.value("version", "");
                if (name.empty() || v.empty()) continue;
                co_await scan("/apis/" + name + "/" + v, name, v,
                              preferred.empty() || v == preferred);
            }
        }
    }
    co_return resources;
}

Awaitable<void> ApiClient::watch_objs(Resource resource, std::string namespace_,
                                      WatchSettings settings, ListOptions options,
                                      std::function<void(WatchEvent&&)> on_event, StopSignal* stop,
                                      std::function<void()> on_listed,
                                      std::function<bool(const std::string&)> drop_unparsed) {
    std::string name = resource.to_string();
    if (!namespace_.empty()) name += " in " + namespace_;
    std::optional<std::string> resource_version;  // where to resume; none: (re)list first
    auto deliver = [&](WatchEvent&& event) {
        try {
            on_event(std::move(event));
        } catch (...) {
            throw CallbackFailure{std::current_exception()};
        }
    };
    // Failures in a row (no line received in between): each pause is the next of
    // settings.networking.error_backoffs (the last one repeats), as Kopf backs off its requests,
    // so that an API server that went away is not hammered by every watch at once.
    std::size_t failures_in_a_row = 0;
    while (!(stop && stop->stopped())) {
        std::string ended;  // why the stream ended, for the log
        bool error = true;
        bool received = false;
        std::optional<double> retry_after;
        try {
            if (!resource_version) {
                auto deliver_listed = [&](std::vector<json>&& items) {
                    for (auto& item : items) deliver(WatchEvent{"", std::move(item), true});
                };
                auto listing = list_pages(resource, namespace_, options, settings.list_page_size,
                                          std::move(deliver_listed));
                resource_version = co_await std::move(listing);
                if (on_listed) on_listed();
            }
            std::vector<std::pair<std::string, std::string>> params{
                {"watch", "true"},
                {"allowWatchBookmarks", "true"},
                {"resourceVersion", *resource_version}};
            if (settings.server_timeout) {
                params.emplace_back("timeoutSeconds", std::to_string(static_cast<long>(std::max(
                                                          1.0, settings.server_timeout->count()))));
            }
            if (!options.label_selector.empty())
                params.emplace_back("labelSelector", options.label_selector);
            if (!options.field_selector.empty())
                params.emplace_back("fieldSelector", options.field_selector);
            HttpRequest request;
            request.target = resource.path(namespace_, "", "", params);
            const std::string what = "GET " + request.target;
            co_await impl_->throttle();
            auto item = co_await impl_->credentials();
            try {
                request.authorization = authorization_header(*item.info);
            } catch (const std::runtime_error& e) {
                throw structs::LoginError(e.what());
            }
            std::optional<std::chrono::steady_clock::time_point> deadline;
            if (settings.client_timeout) {
                deadline = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               *settings.client_timeout);
            }
            LineSplitter lines;
            auto on_line = [&](std::string_view line) {
                received = true;
                if (drop_unparsed && is_modified_event(line)) {
                    if (const auto version = sole_resource_version(line)) {
                        std::string text(*version);
                        if (drop_unparsed(text)) {
                            resource_version = std::move(text);
                            return;
                        }
                    }
                }
                auto event = parse_json_or_discarded(line);
                if (event.is_discarded() || !event.is_object() || !event.contains("object")) {
                    throw WatchingError(fmt::format("Malformed line in the watch stream of {}: {}",
                                                    name, std::string(line.substr(0, 200))));
                }
                std::string type = event.value("type", "");
                json& object = event["object"];
                std::string version;
                if (object.is_object() && object.contains("metadata") &&
                    object["metadata"].is_object()) {
                    version = object["metadata"].value("resourceVersion", "");
                }
                if (type == "BOOKMARK") {
                    if (!version.empty()) resource_version = version;
                } else if (type == "ERROR") {
                    int code = object.is_object() ? object.value("code", 0) : 0;
                    std::string text = object.is_object() ? object.value("message", "") : "";
                    if (code == 410)
                        throw GoneError(410, object, what,
                                        fmt::format("{}: 410 Gone: {}", what, text));
                    throw WatchingError(
                        fmt::format("Error in the watch stream of {}: {}", name, object.dump()));
                } else if (type == "ADDED" || type == "MODIFIED" || type == "DELETED") {
                    if (!version.empty()) resource_version = version;
                    deliver(WatchEvent{type, std::move(object), false});
                } else {
                    spdlog::warn(
                        "Ignoring an unsupported event type in the watch stream of {}: '{}'", name,
                        type);
                }
            };
            auto feed = [&](std::string_view chunk) { lines.feed(chunk, on_line); };
            auto streaming =
                impl_->transport.stream(*item.info, request, impl_->timeouts(),
                                        settings.inactivity_timeout, deadline, feed, stop);
            auto response = co_await std::move(streaming);
            if (response.status == 401) {
                impl_->vault->invalidate(item);
                throw_api_error(401, response.body, what, std::nullopt);
            }
            if (response.status >= 300) {
                throw_api_error(response.status, response.body, what,
                                response.retry_after ? response.retry_after
                                                     : retry_after_from_body(response.body));
            }
            if (!lines.tail().empty()) {
                throw ConnectionError(
                    fmt::format("The watch stream of {} ended in the middle of a line", name));
            }
            error = false;
            ended = "the stream was closed";
        } catch (const CallbackFailure& failure) {
            std::rethrow_exception(failure.error);
        } catch (const GoneError& e) {
            resource_version.reset();
            error = false;
            ended = fmt::format("the resource version is too old ({}); relisting", e.message());
        } catch (const UnauthorizedError&) {
            ended = "401 Unauthorized; re-authenticating";
        } catch (const InactivityTimeout& e) {
            ended = fmt::format("no events or bookmarks for {}s; reconnecting ({})",
                                settings.inactivity_timeout.count(), e.what());
        } catch (const ApiError& e) {
            retry_after = e.retry_after();
            ended = e.what();
        } catch (const std::exception& e) {
            ended = e.what();
        }
        if (stop && stop->stopped()) break;
        if (error) {
            std::string resumption = " with a relisting";
            if (resource_version) resumption = " from resourceVersion " + *resource_version;
            if (received) failures_in_a_row = 0;
            const auto& backoffs = impl_->settings.error_backoffs;
            double pause = settings.reconnect_backoff.count();
            if (!backoffs.empty()) {
                pause = std::max(pause, backoffs[std::min(failures_in_a_row, backoffs.size() - 1)]);
            }
            ++failures_in_a_row;
            if (retry_after && *retry_after > pause) pause = *retry_after;
            spdlog::error("Watch stream of {} failed: {}; resuming{} in {}s.", name, ended,
                          resumption, pause);
            co_await impl_->sleep(Seconds(pause), stop);
        } else {
            failures_in_a_row = 0;
            spdlog::debug("Watch stream of {} ended: {}.", name, ended);
        }
    }
    spdlog::debug("Watching {} has stopped.", name);
}

}  // namespace kopf::clients
