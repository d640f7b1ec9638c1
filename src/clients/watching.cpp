// Watching (Kopf's clients/watching.py): list, then watch from the list's resourceVersion with
// bookmarks, until stopped. A watch is an explicit state (ApiClient::Watcher: where to resume,
// the failures in a row) advanced by one step per stream (a (re)listing if needed, then one
// watch request read to its end); between the steps, watch_objs decides the pause.
#include <fmt/format.h>
#include <prometheus/counter.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clients/api.hpp"
#include "clients/api_impl.hpp"
#include "clients/auth.hpp"
#include "clients/json_codec.hpp"
#include "clients/lines.hpp"
#include "clients/transport.hpp"

namespace kopf::clients {

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

// How one stream ended.
struct StreamEnd {
    std::string reason;  // for the log
    bool error = true;
    bool received = false;   // any line at all: the server is alive
    bool forbidden = false;  // 403: see WatchRequest::on_forbidden
    std::optional<double> retry_after{};
};

}  // namespace

struct ApiClient::Watcher {
    ApiClient& api;
    WatchRequest request;
    std::string name;                               // for the log
    std::optional<std::string> resource_version{};  // where to resume; none: (re)list first
    // Failures in a row (no line received in between): each pause is the next of
    // settings.networking.error_backoffs (the last one repeats), as Kopf backs off its requests,
    // so that an API server that went away is not hammered by every watch at once.
    std::size_t failures_in_a_row = 0;
    WatchMeters meters{};         // none when metrics are off
    bool relist_pending = false;  // the next listing follows a 410 Gone
    bool listed = false;          // a listing has passed

    Watcher(ApiClient& api_, WatchRequest request_) : api(api_), request(std::move(request_)) {
        name = request.resource.to_string();
        if (!request.namespace_.empty()) name += " in " + request.namespace_;
        if (api.impl_->meter) meters = api.impl_->meter->watch(request.resource);
    }

    static void count(prometheus::Counter* counter) {
        if (counter) counter->Increment();
    }

    bool stopped() const { return request.stop && request.stop->stopped(); }

    // A stopped watch delivers nothing more, even what it had read already: its owner may have
    // dropped what it knew of the watched objects when stopping it (a paused standby does), and
    // an event arriving after that would bring back an object deleted meanwhile.
    void deliver(WatchEvent&& event) {
        if (stopped()) return;
        try {
            request.on_event(std::move(event));
        } catch (...) {
            throw CallbackFailure{std::current_exception()};
        }
    }

    // One line of the stream; `what` names the request for errors.
    void read_line(std::string_view line, const std::string& what) {
        if (request.take_unparsed && is_modified_event(line)) {
            if (const auto version = sole_resource_version(line)) {
                std::string text(*version);
                if (request.take_unparsed(text, line)) {
                    resource_version = std::move(text);
                    return;
                }
            }
        }
        WatchLine event = decode_watch_line(line, name);
        const std::string& type = event.type;
        json& object = event.object;
        const std::string& version = event.resource_version;
        if (type == "BOOKMARK") {
            count(meters.bookmarks);
            if (!version.empty()) resource_version = version;
        } else if (type == "ERROR") {
            const auto [code, text] = watch_error_status(object);
            if (code == 410)
                throw GoneError(410, object, what, fmt::format("{}: 410 Gone: {}", what, text));
            throw WatchingError(
                fmt::format("Error in the watch stream of {}: {}", name, object.dump()));
        } else if (type == "ADDED" || type == "MODIFIED" || type == "DELETED") {
            if (!version.empty()) resource_version = version;
            deliver(WatchEvent{type, std::move(object), false});
        } else {
            spdlog::warn("Ignoring an unsupported event type in the watch stream of {}: '{}'", name,
                         type);
        }
    }

    // The step: a (re)listing if there is no version to resume from, then one watch stream
    // read to its end. Every end but the caller's own exception is reported, not thrown.
    Awaitable<StreamEnd> step() {
        Impl& impl = *api.impl_;
        const WatchSettings& settings = request.settings;
        StreamEnd end;
        try {
            if (!resource_version) {
                if (relist_pending) count(meters.relists);
                relist_pending = false;
                auto deliver_listed = [this](std::vector<json>&& items) {
                    for (auto& item : items) deliver(WatchEvent{"", std::move(item), true});
                };
                auto listing =
                    api.list_pages(request.resource, request.namespace_, request.selectors,
                                   settings.list_page_size, std::move(deliver_listed));
                resource_version = co_await std::move(listing);
                listed = true;
                if (request.on_listed && !stopped()) request.on_listed();
            }
            std::vector<std::pair<std::string, std::string>> params{
                {"watch", "true"},
                {"allowWatchBookmarks", "true"},
                {"resourceVersion", *resource_version}};
            if (settings.server_timeout) {
                params.emplace_back("timeoutSeconds", std::to_string(static_cast<long>(std::max(
                                                          1.0, settings.server_timeout->count()))));
            }
            if (!request.selectors.label_selector.empty())
                params.emplace_back("labelSelector", request.selectors.label_selector);
            if (!request.selectors.field_selector.empty())
                params.emplace_back("fieldSelector", request.selectors.field_selector);
            HttpRequest http;
            http.target = request.resource.path(request.namespace_, "", "", params);
            const std::string what = "GET " + http.target;
            co_await impl.throttle();
            auto item = co_await impl.credentials();
            try {
                http.authorization = authorization_header(*item.info);
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
            auto on_line = [this, &end, &what](std::string_view line) {
                end.received = true;
                read_line(line, what);
            };
            auto feed = [&](std::string_view chunk) { lines.feed(chunk, on_line); };
            Timeouts timeouts = impl.timeouts();
            if (settings.connect_timeout) timeouts.connect = settings.connect_timeout;
            auto streaming =
                impl.transport.stream(*item.info, http, timeouts, settings.inactivity_timeout,
                                      deadline, feed, request.stop);
            count(meters.streams);
            if (tracing_api()) spdlog::trace("API watch: {}", what);
            auto response = co_await std::move(streaming);
            if (tracing_api()) {
                spdlog::trace("API watch ended: {} -> {}{}{}", what, response.status,
                              response.body.empty() ? "" : " ",
                              traced_body(http.target, response.body));
            }
            if (response.status == 401) {
                impl.vault->invalidate(item);
                throw_api_error(401, response.body, what, std::nullopt);
            }
            if (response.status >= 300) {
                const auto retry_after = response.retry_after
                                             ? response.retry_after
                                             : retry_after_from_body(response.body);
                if (impl.meter &&
                    (response.status == 429 || response.status == 403 || response.status >= 500))
                    impl.meter->watch_refused(response.status, retry_after);
                throw_api_error(response.status, response.body, what, retry_after);
            }
            if (!lines.tail().empty()) {
                throw ConnectionError(
                    fmt::format("The watch stream of {} ended in the middle of a line", name));
            }
            end.error = false;
            end.reason = "the stream was closed";
        } catch (const CallbackFailure& failure) {
            std::rethrow_exception(failure.error);
        } catch (const GoneError& e) {
            resource_version.reset();
            relist_pending = true;
            end.error = false;
            end.reason =
                fmt::format("the resource version is too old ({}); relisting", e.message());
        } catch (const UnauthorizedError&) {
            end.reason = "401 Unauthorized; re-authenticating";
        } catch (const InactivityTimeout& e) {
            count(meters.inactivity);
            end.reason = fmt::format("no events or bookmarks for {}s; reconnecting ({})",
                                     settings.inactivity_timeout.count(), e.what());
        } catch (const ForbiddenError& e) {
            end.forbidden = true;
            end.retry_after = e.retry_after();
            end.reason = e.what();
        } catch (const ApiError& e) {
            end.retry_after = e.retry_after();
            end.reason = e.what();
        } catch (const std::exception& e) {
            end.reason = e.what();
        }
        co_return end;
    }

    // The pause after a failed stream: the next error backoff, at least the reconnect pause,
    // longer if the server asked so.
    double pause_after(const StreamEnd& end) {
        if (end.received) failures_in_a_row = 0;
        const auto& backoffs = api.impl_->settings.error_backoffs;
        double pause = request.settings.reconnect_backoff.count();
        if (!backoffs.empty()) {
            pause = std::max(pause, backoffs[std::min(failures_in_a_row, backoffs.size() - 1)]);
        }
        ++failures_in_a_row;
        if (end.retry_after && *end.retry_after > pause) pause = *end.retry_after;
        return pause;
    }
};

Awaitable<void> ApiClient::watch_objs(WatchRequest request) {
    Watcher watcher(*this, std::move(request));
    while (!watcher.stopped()) {
        const StreamEnd end = co_await watcher.step();
        if (watcher.stopped()) break;
        if (end.forbidden && watcher.request.on_forbidden) {
            spdlog::debug("Watching {} is forbidden: {}.", watcher.name, end.reason);
            watcher.request.on_forbidden(watcher.listed);
            break;
        }
        if (end.error) {
            std::string resumption = " with a relisting";
            if (watcher.resource_version)
                resumption = " from resourceVersion " + *watcher.resource_version;
            const double pause = watcher.pause_after(end);
            spdlog::error("Watch stream of {} failed: {}; resuming{} in {}s.", watcher.name,
                          end.reason, resumption, pause);
            co_await impl_->sleep(Seconds(pause), watcher.request.stop);
        } else {
            watcher.failures_in_a_row = 0;
            spdlog::debug("Watch stream of {} ended: {}.", watcher.name, end.reason);
        }
    }
    spdlog::debug("Watching {} has stopped.", watcher.name);
}

}  // namespace kopf::clients
