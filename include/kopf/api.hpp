// The Kubernetes API for operator code: the operator's own client, with its credentials, retries,
// rate limit and TLS settings, one handle per resource.
//
//     kopf::Task<kopf::json> create_fn(kopf::Context& ctx) {
//         auto configmaps = ctx.api("configmaps", ctx.namespace_);
//         kopf::json child = {{"metadata", {{"name", ctx.name + "-config"}}},
//                             {"data", {{"greeting", "hello"}}}};
//         kopf::adopt(child, ctx.body);
//         kopf::json created = co_await configmaps.create_or_get(child);
//         co_return kopf::json{{"child", created["metadata"]["name"]}};
//     }
//
// Every verb returns a `kopf::ApiCall`: `co_await` it in coroutines (async handlers, daemons),
// or call `.wait()` in synchronous handlers (they run on the worker pool). A `.wait()` on the
// operator's event loop is refused with std::logic_error: it would stop the loop that must
// answer it. Options are chained before the call is awaited:
//
//     json pods = co_await ctx.api("pods", "default").list().labels("app=web").limit(100);
//     ctx.api("deployments", ns).apply(manifest).field_manager("my-operator").force().wait();
//
// A body written in braces inside a `co_await` expression does not compile; name it first (see
// "Temporaries in co_await" in kopf/task.hpp). Failed calls throw kopf::ApiError (an HTTP error
// answer, see kopf/errors.hpp) or kopf::ApiConnectionError (no answer at all); a handler that lets
// them escape is retried as with any other error.
#pragma once

#include <coroutine>
#include <functional>
#include <kopf/connection.hpp>
#include <kopf/errors.hpp>
#include <kopf/json.hpp>
#include <kopf/resource.hpp>
#include <kopf/stopped.hpp>
#include <memory>
#include <optional>
#include <string>

namespace kopf {

class OperatorFlag;

namespace detail {
struct ClientCore;  // the client, its loop and its discovered resources
struct ApiRequest;  // one prepared call and, once done, its result
struct WatchQueue;  // the events of one WatchStream, waiting to be taken
}  // namespace detail

/// How a patch is interpreted (its Content-Type).
enum class PatchType {
    Merge,           ///< RFC 7386 JSON merge patch (the default)
    Json,            ///< RFC 6902 JSON patch: a list of operations
    StrategicMerge,  ///< Kubernetes' strategic merge patch (built-in resources only)
};

/// One change seen by `Api::watch`: "ADDED", "MODIFIED", "DELETED" or "BOOKMARK"-free events of
/// the stream; the initial listing arrives as "ADDED" events.
struct WatchEvent {
    std::string type;
    json object;
};

/// A prepared API call. Await it (`co_await`) or block on it (`.wait()`), once. The chained
/// options apply to some verbs only; a misplaced one throws std::invalid_argument at once.
template <class T>
class [[nodiscard]] ApiCall {
  public:
    ApiCall(std::shared_ptr<detail::ClientCore> core, std::shared_ptr<detail::ApiRequest> request);

    /// Writes (create, replace, patch, apply, delete): validate and answer, persist nothing.
    ApiCall dry_run() const;
    /// Writes: the field manager recorded in managedFields (apply: "kopf" unless given).
    ApiCall field_manager(std::string name) const;
    /// apply: take over the fields that other managers own instead of failing with 409.
    ApiCall force() const;
    /// list, delete_collection, watch: a label selector, e.g. "app=web,tier!=db".
    ApiCall labels(std::string selector) const;
    /// list, delete_collection, watch: a field selector, e.g. "metadata.name=web".
    ApiCall fields(std::string selector) const;
    /// list: one page of at most `count` items; its metadata.continue fetches the next one.
    ApiCall limit(long count) const;
    /// list: the page after the one that returned this metadata.continue token.
    ApiCall continue_from(std::string token) const;
    /// get, list, watch: the resourceVersion to read at (list, get) or to start from (watch).
    ApiCall resource_version(std::string version) const;
    /// delete: "Foreground", "Background" or "Orphan" handling of the dependents.
    ApiCall propagation(std::string policy) const;
    /// delete: seconds before the object is deleted (0: at once).
    ApiCall grace_period(long seconds) const;
    /// delete: delete only if the object still has this uid.
    ApiCall precondition_uid(std::string uid) const;
    /// delete: delete only if the object is still at this resourceVersion.
    ApiCall precondition_resource_version(std::string version) const;

    /// Blocks the calling thread until the answer. Not on the operator's event loop.
    T wait() const;

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> awaiting) const;
    T await_resume() const;

  private:
    ApiCall with(const std::function<void(detail::ApiRequest&)>& change) const;

    std::shared_ptr<detail::ClientCore> core_;
    std::shared_ptr<detail::ApiRequest> request_;
};

/// A watch read one event at a time (`Api::stream()`), for daemons and background tasks:
///
///     kopf::Task<void> follow_pods(kopf::Context& ctx) {   // a coroutine daemon
///         auto events = ctx.api("pods", ctx.namespace_).stream(ctx.stopped);
///         while (auto event = co_await events.next()) {
///             ctx.logger.info("{} {}", event->type, event->object["metadata"]["name"]);
///         }
///     }
///
/// It lists first (the listing arrives as "ADDED" events), then follows the changes: resumes
/// after dropped streams, relists after 410 Gone (bookmarks keep its place), re-logs in on 401.
/// Events wait in the stream until taken. It ends when stopped (stop(), its destruction, the
/// daemon's stop flag given to `stream()`) or when the operator exits: next() then gives
/// std::nullopt. A watch that fails for good (e.g. 403 Forbidden) throws its kopf::ApiError
/// from next(). Move-only.
class WatchStream {
  public:
    /// The awaited or blocking result of next().
    class [[nodiscard]] Next {
      public:
        bool await_ready() const;
        bool await_suspend(std::coroutine_handle<> awaiting) const;
        std::optional<WatchEvent> await_resume() const;
        /// Blocks the calling thread until an event or the end (synchronous daemons); not on
        /// the operator's event loop.
        std::optional<WatchEvent> wait() const;

      private:
        friend class WatchStream;
        explicit Next(std::shared_ptr<detail::WatchQueue> queue) : queue_(std::move(queue)) {}
        std::shared_ptr<detail::WatchQueue> queue_;
    };

    WatchStream() = default;
    /// The stream of a watch started by a client, which it keeps open while it exists.
    WatchStream(std::shared_ptr<detail::WatchQueue> queue, std::shared_ptr<const void> client)
        : queue_(std::move(queue)), client_(std::move(client)) {}
    WatchStream(WatchStream&&) noexcept = default;
    WatchStream& operator=(WatchStream&& other) noexcept;
    WatchStream(const WatchStream&) = delete;
    WatchStream& operator=(const WatchStream&) = delete;
    ~WatchStream();

    /// The next event, or std::nullopt once the stream has ended.
    Next next() const;
    /// Ends the stream (from any thread): a pending next() gives std::nullopt.
    void stop() const;

  private:
    std::shared_ptr<detail::WatchQueue> queue_;
    std::shared_ptr<const void> client_;
};

/// The API of one resource, cluster-wide or in one namespace. Cheap to copy; valid while its
/// client is (the operator's client closes when the operator exits: calls then throw).
/// The resource is any of Kopf's resource specifications; it is resolved against the cluster's
/// discovery on the first call (rediscovered once when the cluster does not serve it yet).
class Api {
  public:
    Api(std::shared_ptr<detail::ClientCore> core, Selector resource, std::string namespace_);

    const Selector& resource() const { return resource_; }
    /// "" for cluster-scoped resources or all namespaces.
    const std::string& namespace_() const { return namespace_name_; }
    /// The same resource in another namespace.
    Api in_namespace(std::string namespace_) const;

    ApiCall<json> get(std::string name) const;
    /// A *List object; all pages joined, unless `.limit()` asks for one page.
    ApiCall<json> list() const;
    /// The namespace is the handle's, else the body's metadata.namespace.
    ApiCall<json> create(json body) const;
    /// A full replacement (PUT). With metadata.resourceVersion in the body, a concurrent change
    /// fails with 409 Conflict (optimistic concurrency).
    ApiCall<json> replace(std::string name, json body) const;
    ApiCall<json> patch(std::string name, json patch, PatchType type = PatchType::Merge) const;
    /// Server-side apply of a whole (partial) manifest; the name comes from the body. Field
    /// manager "kopf" unless `.field_manager()` is given; `.force()` takes over conflicts.
    ApiCall<json> apply(json body) const;
    /// The object as the answer has it (with deletionTimestamp while finalizers hold it), or a
    /// Status when it is gone at once.
    ApiCall<json> delete_(std::string name) const;
    /// Deletes every object that matches `.labels()` / `.fields()` (all when none); the Status
    /// or the list of deleted objects as the server answers.
    ApiCall<json> delete_collection() const;

    /// The status subresource (where the resource has one; else the main resource's status).
    ApiCall<json> get_status(std::string name) const;
    ApiCall<json> patch_status(std::string name, json patch,
                               PatchType type = PatchType::Merge) const;
    ApiCall<json> replace_status(std::string name, json body) const;
    /// The scale subresource: an autoscaling/v1 Scale.
    ApiCall<json> get_scale(std::string name) const;
    ApiCall<json> patch_scale(std::string name, json patch) const;

    /// Creates the object; if it exists already, returns the existing one unchanged.
    ApiCall<json> create_or_get(json body) const;
    /// Creates the object; if it exists already, merge-patches it with the body.
    ApiCall<json> create_or_patch(json body) const;
    /// Deletes the object; true if it was there, false if it was not (404 is success).
    ApiCall<bool> delete_if_exists(std::string name) const;

    /// Lists, then follows the changes until `stop` is set or the operator exits: resumes after
    /// dropped streams, relists after 410 Gone, re-logs in on 401. `on_event` runs on the
    /// operator's loop: keep it short. The watch ends with an exception from `on_event`.
    ApiCall<json> watch(std::function<void(const WatchEvent&)> on_event,
                        OperatorFlag* stop = nullptr) const;
    /// The same watch as a stream to pull events from (see kopf::WatchStream), started at
    /// once; it ends by itself when `until` (a daemon's `ctx.stopped`) is set. Label and field
    /// selectors as in list().
    WatchStream stream(DaemonStopped until = {}, std::string label_selector = "",
                       std::string field_selector = "") const;

  private:
    ApiCall<json> call(std::shared_ptr<detail::ApiRequest> request) const;

    std::shared_ptr<detail::ClientCore> core_;
    Selector resource_;
    std::string namespace_name_;
};

/// A Kubernetes API client. Handlers get the operator's own one through `ctx.api(...)`; code
/// outside an operator (tools, tests) creates its own, which runs its own loop thread. A client
/// of one's own stays open while any of its handles exists (copies, its Api handles, streams,
/// calls); with the last, its watches end and its thread is joined.
class Client {
  public:
    /// No client: every call throws std::logic_error (a placeholder to assign to).
    Client() = default;
    /// A client of its own, with these credentials (e.g. from kopf::login_with_kubeconfig()).
    explicit Client(ConnectionInfo credentials);
    /// The operator's client (from the library).
    explicit Client(std::shared_ptr<detail::ClientCore> core) : core_(std::move(core)) {}

    /// A handle for one resource: `client.api("pods", "default")`, `client.api("apps/v1",
    /// "deployments")` is written `client.api(kopf::Selector("apps/v1", "deployments"))`.
    Api api(Selector resource, std::string namespace_ = "") const;
    /// Any API path with the client's credentials and retries: `client.request("GET",
    /// "/version")`. The JSON answer.
    ApiCall<json> request(std::string method, std::string path, json body = nullptr) const;

  private:
    std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace kopf
