// Watching (Kopf's clients/watching.py): list, then watch from the list's resourceVersion with
// bookmarks, until stopped.
#include <fmt/format.h>
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

}  // namespace

using structs::Resource;

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
