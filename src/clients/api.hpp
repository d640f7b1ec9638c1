// The client layer: the only code that talks HTTP to the Kubernetes API.
//
// Layers above (the handling core, the runtime) use `ApiClient` with plain JSON bodies and
// `structs::Resource` references; they never see HTTP. Everything here runs on one Asio
// io_context (the runtime's); the client is not thread-safe, call it from that loop's thread.
//
//   ApiClient api(io.get_executor(), vault, relogin, ClientSettings{});
//   json pod = co_await api.get(pods, "default", "my-pod");
//   co_await api.patch(pods, "default", "my-pod", PatchType::Merge, {{"metadata", ...}});
//   WatchRequest watch{.resource = pods, .on_event = on_event, .stop = &stop};
//   co_await api.watch_objs(std::move(watch));
//
// Authentication: every request takes the best credentials from the vault. On 401 the failing
// credentials are invalidated; when the vault runs empty, the `relogin` function runs once (on
// a worker thread, shared by every request waiting for it) and all requests and watches carry
// on with the new credentials.
// Arguments are taken by value: a coroutine may outlive the caller's temporaries (co_spawn).
// Retries: connection errors, 5xx, 403 and 429 are retried per ClientSettings::error_backoffs
// (Retry-After honoured); other 4xx raise typed errors (clients/errors.hpp) at once.
//
// The implementation is split by verb family as Kopf's kopf/_cogs/clients/ is: api.cpp (the
// request core), fetching.cpp, creating.cpp, patching.cpp, scanning.cpp, events.cpp and
// watching.cpp.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/errors.hpp"
#include "clients/metering.hpp"
#include "clients/settings.hpp"
#include "clients/stop.hpp"
#include "kopf/connection.hpp"
#include "structs/credentials.hpp"
#include "structs/references.hpp"

namespace kopf::clients {

using json = nlohmann::json;
template <class T>
using Awaitable = boost::asio::awaitable<T>;

// Produces fresh credentials by login key (the runtime plugs Kopf's login handlers in).
// Runs on a worker thread; may block (exec plugins). An empty result means "cannot log in".
using ReloginFn = std::function<std::map<std::string, ConnectionInfo>()>;

// The default login: in-cluster service account if present, else the kubeconfig.
std::map<std::string, ConnectionInfo> default_login();

enum class PatchType {
    Merge,           // application/merge-patch+json
    Json,            // application/json-patch+json
    StrategicMerge,  // application/strategic-merge-patch+json
    Apply,           // application/apply-patch+yaml (server-side apply; JSON is valid YAML)
};
// The Content-Type of a patch of this type.
const char* content_type_of(PatchType type);

// The answer to ApiClient::patch_version().
struct PatchedVersion {
    std::optional<std::string> resource_version;  // of the patched object
    std::string object;                           // the patched object, as JSON text (unparsed)
};

struct ListOptions {
    std::string label_selector{};
    std::string field_selector{};
};

struct DeleteOptions {
    std::optional<std::string> propagation_policy{};  // Foreground, Background, Orphan
    std::optional<long> grace_period_seconds{};
};

// One event of a watch: ADDED/MODIFIED/DELETED from the stream, or an object from the initial
// listing (type empty, seen_by_listing true; Kopf's "type: None" used for the resume cause).
struct WatchEvent {
    std::string type{};
    json object;
    bool seen_by_listing = false;
};

// WatchRequest::take_unparsed: (the event's resourceVersion, its watch line) -> taken.
using TakeUnparsed = std::function<bool(const std::string& version, std::string_view line)>;

// What ApiClient::watch_objs watches and where its events go. Build it in a named variable with
// designated initialisers, then move it into the call (not inside the co_await expression: see
// include/kopf/task.hpp on temporaries in co_await).
struct WatchRequest {
    structs::Resource resource{};
    std::string namespace_{};  // empty: all namespaces, or a cluster-scoped resource
    WatchSettings settings{};
    ListOptions selectors{};  // label and field selectors, for the listing and the watch
    // Every listed object and every ADDED/MODIFIED/DELETED event. Its exceptions end the watch.
    std::function<void(WatchEvent&&)> on_event{};
    StopSignal* stop = nullptr;  // none: the watch ends only when on_event throws
    // After each complete (re)listing.
    std::function<void()> on_listed{};
    // If given, asked about each MODIFIED event whose line names its resourceVersion once (see
    // json_codec's sole_resource_version) before the line is parsed, with that version and the
    // line; if it answers true, the owner has taken the event unparsed (dropped it, or kept the
    // line to parse later), and the watch resumes after it.
    TakeUnparsed take_unparsed{};
    // If given, a 403 Forbidden ends the watch (no retries) and is reported here, as Kopf's
    // observers give up on APIForbiddenError: `listed` says whether the listing had passed and
    // only the watch was refused.
    std::function<void(bool listed)> on_forbidden{};
};

class ApiClient {
  public:
    ApiClient(boost::asio::any_io_executor executor, std::shared_ptr<structs::Vault> vault,
              ReloginFn relogin, ClientSettings settings = {});
    ~ApiClient();
    ApiClient(const ApiClient&) = delete;
    ApiClient& operator=(const ApiClient&) = delete;

    const ClientSettings& settings() const;
    structs::Vault& vault();
    // Reports requests, retries, re-logins and watches to `meter` (none: not reported); set
    // before the first request. It must outlive the client's calls.
    void set_meter(ApiMeter* meter);

    // Any API path ("/version", "/apis/...?...") with retries and auth; the JSON answer.
    Awaitable<json> request(std::string method, std::string path,
                            std::optional<json> body = std::nullopt,
                            std::string content_type = "application/json");

    Awaitable<json> get(structs::Resource resource, std::string namespace_, std::string name,
                        std::string subresource = "");
    // The whole list (all pages joined) as a *List object with "items".
    Awaitable<json> list(structs::Resource resource, std::string namespace_,
                         ListOptions options = {});
    // Page by page (limit/continue): `on_page` gets each page's items; returns the list's
    // resourceVersion. Only one page is held in memory at a time.
    Awaitable<std::string> list_pages(structs::Resource resource, std::string namespace_,
                                      ListOptions options, std::size_t page_size,
                                      std::function<void(std::vector<json>&&)> on_page);
    Awaitable<json> create(structs::Resource resource, std::string namespace_, json body);
    // PUT (a full replacement; the body carries metadata.resourceVersion for optimistic locking).
    Awaitable<json> update(structs::Resource resource, std::string namespace_, std::string name,
                           json body, std::string subresource = "");
    Awaitable<json> patch(structs::Resource resource, std::string namespace_, std::string name,
                          PatchType type, json patch, std::string subresource = "",
                          bool force = false);
    // As patch() (not for server-side apply), but the patched object is not parsed: only its
    // metadata.resourceVersion is found in the answer's text (the operator needs only that,
    // and the object itself only if the watch stream's echo of it comes too late). The
    // request is built before this returns: the arguments need not outlive the call.
    Awaitable<PatchedVersion> patch_version(const structs::Resource& resource,
                                            const std::string& namespace_, const std::string& name,
                                            PatchType type, const json& patch,
                                            const std::string& subresource = "");
    Awaitable<json> remove(structs::Resource resource, std::string namespace_, std::string name,
                           DeleteOptions options = {});
    // A core v1 Event about `involved` (an object body or an ObjectReference); type is
    // "Normal" or "Warning". The message is cut to 1024 characters, as in Kopf.
    Awaitable<json> post_event(json involved, std::string type, std::string reason,
                               std::string message, std::string source_component = "kopf");

    Awaitable<json> read_version();
    // The API server's TLS certificate (PEM; empty over plain HTTP), read in a handshake of
    // its own with the current credentials: what tells local clusters apart (K3s, Minikube).
    Awaitable<std::string> read_server_certificate();
    // Scan /api and /apis into resources (preferred versions marked). A 404 on a group
    // version is skipped.
    Awaitable<std::vector<structs::Resource>> discover();

    // List, then watch from the list's resourceVersion with bookmarks, forever until the
    // request's stop: resumes from the last seen resourceVersion after disconnects, relists on
    // 410 Gone, reconnects after `inactivity_timeout` of silence, restarts on a malformed line.
    // Every end of a stream is logged. Exceptions from `on_event` propagate (the watch ends).
    Awaitable<void> watch_objs(WatchRequest request);

    // Cancellable pause on the client's loop (returns early on stop).
    Awaitable<void> sleep(Seconds duration, StopSignal* stop = nullptr);

  private:
    struct Impl;     // the request core (clients/api_impl.hpp)
    struct Watcher;  // one watch's state between its streams (clients/watching.cpp)
    std::unique_ptr<Impl> impl_;
};

}  // namespace kopf::clients
