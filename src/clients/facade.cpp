// kopf::Client, kopf::Api and kopf::ApiCall: calls prepared on the caller's thread, performed
// on the client's loop (the ApiClient is not thread-safe), answered to an awaiting coroutine or a
// blocked thread.
#include "clients/facade.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <kopf/context.hpp>
#include <kopf/registry.hpp>
#include <kopf/run.hpp>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "structs/references.hpp"

namespace asio = boost::asio;

namespace kopf {
namespace detail {

enum class Verb {
    Get,
    List,
    Create,
    Replace,
    Patch,
    Apply,
    Delete,
    DeleteCollection,
    CreateOrGet,
    CreateOrPatch,
    DeleteIfExists,
    Watch,
    Raw,
};

const char* verb_name(Verb verb) {
    switch (verb) {
        case Verb::Get:
            return "get";
        case Verb::List:
            return "list";
        case Verb::Create:
            return "create";
        case Verb::Replace:
            return "replace";
        case Verb::Patch:
            return "patch";
        case Verb::Apply:
            return "apply";
        case Verb::Delete:
            return "delete_";
        case Verb::DeleteCollection:
            return "delete_collection";
        case Verb::CreateOrGet:
            return "create_or_get";
        case Verb::CreateOrPatch:
            return "create_or_patch";
        case Verb::DeleteIfExists:
            return "delete_if_exists";
        case Verb::Watch:
            return "watch";
        case Verb::Raw:
            return "request";
    }
    return "?";
}

// What to call; copied by every chained option, so a prepared call can be reused.
struct ApiRequest {
    Verb verb = Verb::Get;
    Selector resource{};
    std::string namespace_{};
    std::string name{};
    std::string subresource{};
    json body = nullptr;
    PatchType patch_type = PatchType::Merge;

    bool dry_run = false;
    bool force = false;
    std::optional<std::string> field_manager{};
    std::string label_selector{};
    std::string field_selector{};
    std::optional<long> limit{};
    std::string continue_token{};
    std::string resource_version{};
    std::optional<std::string> propagation{};
    std::optional<long> grace_period{};
    std::optional<std::string> precondition_uid{};
    std::optional<std::string> precondition_resource_version{};

    std::function<void(const WatchEvent&)> on_event{};
    OperatorFlag* stop = nullptr;
    std::string method{};  // Raw
    std::string path{};    // Raw

    // Once the call runs: its answer, for the awaiting coroutine or the blocked thread.
    struct Outcome {
        std::mutex mutex;
        std::condition_variable finished_cv;
        bool finished = false;
        json result;
        std::exception_ptr error;
        std::coroutine_handle<> awaiting{};
        std::function<void()> on_finished{};  // after the answer is set (streams)
        std::shared_ptr<const void> cause{};  // the awaiting handler's object (task.hpp)
    };
    std::shared_ptr<Outcome> outcome{};
};

// The events of one WatchStream: pushed on the client's loop, taken by one consumer (a
// coroutine, resumed on the loop, or a blocked thread).
struct WatchQueue {
    std::shared_ptr<ClientCore> core;
    OperatorFlag stop_flag;  // ends the watch

    std::mutex mutex;
    std::condition_variable changed;
    std::deque<WatchEvent> events;
    bool ended = false;
    std::exception_ptr error;
    std::coroutine_handle<> awaiting{};

    void push(WatchEvent event);
    // The end of the stream, by stop() or by the watch's end (with its error, if any).
    void end(std::exception_ptr failure);
};

// Joins the loop threads of clients whose last handle went on their own thread: those that have
// finished whenever another one comes, the rest when the process exits (this object's static
// destructor runs before OpenSSL's and LeakSanitizer's exit handlers, registered earlier).
namespace {

class EndingThreads {
  public:
    void adopt(std::thread thread, std::shared_ptr<std::atomic<bool>> finished) {
        std::vector<Ending> done;
        {
            std::lock_guard lock(mutex_);
            auto first_done = std::stable_partition(threads_.begin(), threads_.end(),
                                                    [](const Ending& t) { return !*t.finished; });
            std::move(first_done, threads_.end(), std::back_inserter(done));
            threads_.erase(first_done, threads_.end());
            threads_.push_back({std::move(thread), std::move(finished)});
        }
        for (auto& ending : done) ending.thread.join();
    }

    ~EndingThreads() {
        for (auto& ending : threads_) ending.thread.join();
    }

  private:
    struct Ending {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> finished;
    };
    std::mutex mutex_;
    std::vector<Ending> threads_;
};

void adopt_ending_thread(std::thread thread, std::shared_ptr<std::atomic<bool>> finished) {
    static EndingThreads ending;
    ending.adopt(std::move(thread), std::move(finished));
}

}  // namespace

struct ClientCore : std::enable_shared_from_this<ClientCore> {
    asio::io_context* io = nullptr;
    clients::ApiClient* api = nullptr;
    clients::WatchSettings watching{};

    // A client of its own: its loop and ApiClient, shared with the thread running the loop (which
    // destroys them after the loop ends, when the last handle went away on that very thread).
    struct OwnLoop {
        // An io_context whose pending handlers can be destroyed before it is.
        struct Context : asio::io_context {
            using asio::execution_context::shutdown;
            using asio::io_context::io_context;
        };
        Context io{1};
        std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{};
        std::unique_ptr<clients::ApiClient> api{};

        // The handlers still pending when the loop stopped (suspended calls, a watch's reads,
        // idle connections' reads) refer to the ApiClient: they are destroyed while it exists,
        // its sockets after them (the services shut down but not yet gone), the services last.
        ~OwnLoop() {
            work.reset();
            io.shutdown();
            api.reset();
        }
    };
    std::shared_ptr<OwnLoop> own{};
    std::thread own_thread{};
    std::shared_ptr<std::atomic<bool>> own_thread_finished{};

    std::mutex mutex;  // guards `closed` and `pending`: calls start on any thread
    bool closed = false;
    std::set<std::shared_ptr<ApiRequest::Outcome>> pending{};

    // Loop thread only.
    std::optional<std::vector<structs::Resource>> discovered{};
    std::set<std::shared_ptr<clients::StopSignal>> watches{};

    // The thread that runs the loop: compared by id, without touching the loop, which may be
    // gone already when an application thread calls after the operator's exit.
    std::thread::id loop_thread{};
    bool on_loop_thread() const { return std::this_thread::get_id() == loop_thread; }

    // The last handle of a client of its own (Client, Api, WatchStream, ApiCall) has gone: the
    // client closes and its loop thread ends now, not when its last watch happens to end, which
    // could be after the process began to exit.
    void release_own_loop() {
        auto keep = own;  // the loop outlives the thread and the handlers it still holds
        if (own_thread.get_id() == std::this_thread::get_id()) {
            // The last handle went on the loop's own thread (an event callback held it): the
            // thread cannot join itself, so it is joined later, at the latest when the process
            // exits (a detached one could still be freeing its TLS state then).
            close();
            own->io.stop();
            adopt_ending_thread(std::move(own_thread), own_thread_finished);
            return;
        }
        asio::post(own->io, [this] {
            close();
            own->io.stop();
        });
        own_thread.join();
        // The handlers still queued (a stopped watch's read) hold this core: they go now, while
        // the ApiClient they refer to exists.
        keep->work.reset();
        keep->io.shutdown();
    }

    void close();
};

namespace {

std::exception_ptr closed_error() {
    return std::make_exception_ptr(ApiConnectionError(
        "The Kubernetes API client is closed: the operator has exited or the client is gone."));
}

// Delivers the answer once: resumes the awaiting coroutine (on the loop's thread) or wakes the
// blocked thread.
void finish(ClientCore& core, const std::shared_ptr<ApiRequest::Outcome>& outcome, json result,
            std::exception_ptr error) {
    std::coroutine_handle<> awaiting;
    {
        std::lock_guard lock(outcome->mutex);
        if (outcome->finished) return;
        outcome->finished = true;
        outcome->result = std::move(result);
        outcome->error = std::move(error);
        awaiting = outcome->awaiting;
    }
    {
        std::lock_guard lock(core.mutex);
        core.pending.erase(outcome);
    }
    outcome->finished_cv.notify_all();
    if (outcome->on_finished) outcome->on_finished();
    if (awaiting) awaiting.resume();
}

}  // namespace

void ClientCore::close() {
    std::set<std::shared_ptr<ApiRequest::Outcome>> waiting;
    {
        std::lock_guard lock(mutex);
        if (closed) return;
        closed = true;
        waiting.swap(pending);
    }
    for (const auto& signal : watches) signal->stop();
    watches.clear();
    for (const auto& outcome : waiting) finish(*this, outcome, nullptr, closed_error());
}

namespace {

// A coroutine waiting for the queue continues on the client's loop, not inside the watch's
// callback. On the loop, the loop is there; from other threads, only until the client closes.
void resume_on_loop(ClientCore& core, std::coroutine_handle<> awaiting) {
    if (core.on_loop_thread()) {
        asio::post(*core.io, [awaiting] { awaiting.resume(); });
        return;
    }
    std::lock_guard lock(core.mutex);
    if (core.closed) return;  // no loop to resume on: its owner destroys it at the exit
    asio::post(*core.io, [awaiting] { awaiting.resume(); });
}

}  // namespace

void WatchQueue::push(WatchEvent event) {
    std::coroutine_handle<> waiting;
    {
        std::lock_guard lock(mutex);
        if (ended) return;
        events.push_back(std::move(event));
        waiting = std::exchange(awaiting, nullptr);
    }
    changed.notify_all();
    if (waiting) resume_on_loop(*core, waiting);
}

void WatchQueue::end(std::exception_ptr failure) {
    std::coroutine_handle<> waiting;
    {
        std::lock_guard lock(mutex);
        if (ended) return;
        ended = true;
        error = std::move(failure);
        waiting = std::exchange(awaiting, nullptr);
    }
    changed.notify_all();
    stop_flag.set();
    if (waiting) resume_on_loop(*core, waiting);
}

}  // namespace detail

namespace {

using detail::ApiRequest;
using detail::ClientCore;
using detail::Verb;
template <class T>
using Awaitable = asio::awaitable<T>;

std::string body_string(const json& body, const char* section, const char* key) {
    if (!body.is_object()) return {};
    const auto meta = body.find(section);
    if (meta == body.end() || !meta->is_object()) return {};
    const auto value = meta->find(key);
    return value != meta->end() && value->is_string() ? value->get<std::string>() : std::string();
}

// One resource: EVERYTHING and categories name no single one.
structs::Selector to_structs(const Selector& selector) {
    if (selector.everything) {
        throw std::invalid_argument(
            "kopf::Api needs one resource, not EVERYTHING: name it, e.g. \"configmaps\".");
    }
    return structs::from_public(selector);
}

Awaitable<structs::Resource> resolve(std::shared_ptr<ClientCore> core, Selector selector) {
    const structs::Selector wanted = to_structs(selector);
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!core->discovered || attempt > 0) core->discovered = co_await core->api->discover();
        if (auto found = wanted.select_one(*core->discovered)) co_return *found;
    }
    throw std::invalid_argument(fmt::format(
        "The cluster serves no resource {}: is its CRD installed, or is the name mistyped?",
        selector.repr()));
}

// The client layer's patch type of a public one (the Content-Type comes from there).
clients::PatchType to_clients(PatchType type) {
    switch (type) {
        case PatchType::Json:
            return clients::PatchType::Json;
        case PatchType::StrategicMerge:
            return clients::PatchType::StrategicMerge;
        case PatchType::Merge:
            break;
    }
    return clients::PatchType::Merge;
}

using Params = std::vector<std::pair<std::string, std::string>>;

Params write_params(const ApiRequest& request, const clients::ApiClient& api) {
    Params params;
    if (request.dry_run) params.emplace_back("dryRun", "All");
    const std::string manager = request.field_manager.value_or(api.settings().field_manager);
    if (!manager.empty()) params.emplace_back("fieldManager", manager);
    return params;
}

json delete_options(const ApiRequest& request) {
    json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (request.propagation) body["propagationPolicy"] = *request.propagation;
    if (request.grace_period) body["gracePeriodSeconds"] = *request.grace_period;
    if (request.dry_run) body["dryRun"] = json::array({"All"});
    if (request.precondition_uid) body["preconditions"]["uid"] = *request.precondition_uid;
    if (request.precondition_resource_version) {
        body["preconditions"]["resourceVersion"] = *request.precondition_resource_version;
    }
    return body;
}

Params selector_params(const ApiRequest& request) {
    Params params;
    if (!request.label_selector.empty())
        params.emplace_back("labelSelector", request.label_selector);
    if (!request.field_selector.empty())
        params.emplace_back("fieldSelector", request.field_selector);
    return params;
}

// Where an object goes: the handle's namespace, else the body's; none for cluster-scoped ones.
std::string namespace_for(const structs::Resource& resource, const ApiRequest& request) {
    if (!resource.namespaced) return {};
    if (!request.namespace_.empty()) return request.namespace_;
    return body_string(request.body, "metadata", "namespace");
}

std::string name_for(const ApiRequest& request) {
    std::string name =
        request.name.empty() ? body_string(request.body, "metadata", "name") : request.name;
    if (name.empty()) {
        throw std::invalid_argument(fmt::format("kopf::Api::{} of {} needs an object name.",
                                                detail::verb_name(request.verb),
                                                request.resource.repr()));
    }
    return name;
}

Awaitable<json> list_objects(clients::ApiClient& api, structs::Resource resource, std::string ns,
                             const ApiRequest& request) {
    Params params = selector_params(request);
    if (!request.resource_version.empty())
        params.emplace_back("resourceVersion", request.resource_version);
    if (request.limit) {
        params.emplace_back("limit", std::to_string(*request.limit));
        if (!request.continue_token.empty())
            params.emplace_back("continue", request.continue_token);
        co_return co_await api.request("GET", resource.path(ns, "", "", params));
    }
    // All pages, joined: the first page's envelope with every page's items.
    json joined;
    std::string token;
    do {
        Params page_params = params;
        page_params.emplace_back("limit", "500");
        if (!token.empty()) page_params.emplace_back("continue", token);
        json page = co_await api.request("GET", resource.path(ns, "", "", page_params));
        token = body_string(page, "metadata", "continue");
        if (joined.is_null()) {
            joined = std::move(page);
        } else if (page.contains("items") && page["items"].is_array()) {
            for (auto& item : page["items"]) joined["items"].push_back(std::move(item));
            joined["metadata"]["resourceVersion"] = page["metadata"]["resourceVersion"];
        }
    } while (!token.empty());
    if (joined.is_object() && joined.contains("metadata") && joined["metadata"].is_object()) {
        joined["metadata"].erase("continue");
        joined["metadata"].erase("remainingItemCount");
    }
    co_return joined;
}

Awaitable<json> watch_objects(std::shared_ptr<ClientCore> core, structs::Resource resource,
                              std::string ns, std::shared_ptr<const ApiRequest> request) {
    auto signal = std::make_shared<clients::StopSignal>();
    core->watches.insert(signal);
    if (request->stop) {
        // The flag may be set from any thread, also after this watch and its client are gone.
        request->stop->on_set([weak_signal = std::weak_ptr<clients::StopSignal>(signal)] {
            if (auto signal = weak_signal.lock()) signal->stop();
        });
    }
    auto on_event = [request](clients::WatchEvent&& event) {
        WatchEvent out{event.type.empty() ? "ADDED" : std::move(event.type),
                       std::move(event.object)};
        request->on_event(out);
    };
    clients::WatchRequest watch{
        .resource = std::move(resource),
        .namespace_ = std::move(ns),
        .settings = core->watching,
        .selectors = {request->label_selector, request->field_selector},
        .on_event = std::move(on_event),
        .stop = signal.get(),
    };
    std::exception_ptr error;
    try {
        co_await core->api->watch_objs(std::move(watch));
    } catch (...) {
        error = std::current_exception();
    }
    core->watches.erase(signal);
    if (error) std::rethrow_exception(error);
    co_return nullptr;
}

Awaitable<json> perform(std::shared_ptr<ClientCore> core, std::shared_ptr<const ApiRequest> r) {
    clients::ApiClient& api = *core->api;
    const ApiRequest& request = *r;
    if (request.verb == Verb::Raw) {
        std::optional<json> body;
        if (!request.body.is_null()) body = request.body;
        co_return co_await api.request(request.method, request.path, body);
    }
    const structs::Resource resource = co_await resolve(core, request.resource);
    const std::string ns = namespace_for(resource, request);
    switch (request.verb) {
        case Verb::Get: {
            Params params;
            if (!request.resource_version.empty())
                params.emplace_back("resourceVersion", request.resource_version);
            co_return co_await api.request(
                "GET", resource.path(ns, name_for(request), request.subresource, params));
        }
        case Verb::List:
            co_return co_await list_objects(api, resource, ns, request);
        case Verb::Create:
            co_return co_await api.request(
                "POST", resource.path(ns, "", "", write_params(request, api)), request.body);
        case Verb::Replace:
            co_return co_await api.request("PUT",
                                           resource.path(ns, name_for(request), request.subresource,
                                                         write_params(request, api)),
                                           request.body);
        case Verb::Patch:
            co_return co_await api.request(
                "PATCH",
                resource.path(ns, name_for(request), request.subresource,
                              write_params(request, api)),
                request.body, clients::content_type_of(to_clients(request.patch_type)));
        case Verb::Apply: {
            Params params = write_params(request, api);
            if (!request.field_manager && api.settings().field_manager.empty())
                params.emplace_back("fieldManager", "kopf");
            if (request.force) params.emplace_back("force", "true");
            co_return co_await api.request(
                "PATCH", resource.path(ns, name_for(request), request.subresource, params),
                request.body, clients::content_type_of(clients::PatchType::Apply));
        }
        case Verb::Delete:
            co_return co_await api.request("DELETE", resource.path(ns, name_for(request)),
                                           delete_options(request));
        case Verb::DeleteCollection: {
            Params params = selector_params(request);
            co_return co_await api.request("DELETE", resource.path(ns, "", "", params),
                                           delete_options(request));
        }
        case Verb::CreateOrGet:
        case Verb::CreateOrPatch: {
            const std::string name = name_for(request);
            try {
                co_return co_await api.request(
                    "POST", resource.path(ns, "", "", write_params(request, api)), request.body);
            } catch (const ApiError& error) {
                if (!error.already_exists()) throw;
            }
            if (request.verb == Verb::CreateOrGet) {
                co_return co_await api.request("GET", resource.path(ns, name));
            }
            co_return co_await api.request(
                "PATCH", resource.path(ns, name, "", write_params(request, api)), request.body,
                clients::content_type_of(clients::PatchType::Merge));
        }
        case Verb::DeleteIfExists:
            try {
                co_await api.request("DELETE", resource.path(ns, name_for(request)),
                                     delete_options(request));
                co_return true;
            } catch (const ApiError& error) {
                if (!error.not_found()) throw;
            }
            co_return false;
        case Verb::Watch:
            co_return co_await watch_objects(core, resource, ns, r);
        case Verb::Raw:
            break;
    }
    co_return nullptr;
}

// Starts the call on the loop; its answer goes to `outcome`. False when the client is closed:
// `outcome` then holds the error already, and nothing is resumed.
bool begin(const std::shared_ptr<ClientCore>& core, std::shared_ptr<const ApiRequest> request,
           const std::shared_ptr<ApiRequest::Outcome>& outcome) {
    if (!core) {
        throw std::logic_error("kopf::Api: this handle has no client (a default-constructed one).");
    }
    // Posted under the lock: the loop outlives the core's closing, not necessarily more.
    std::lock_guard lock(core->mutex);
    if (core->closed) {
        outcome->finished = true;
        outcome->error = detail::closed_error();
        return false;
    }
    core->pending.insert(outcome);
    // The loop's side holds the core itself, not the caller's handle, which keeps the client open.
    asio::post(*core->io,
               [core = core->shared_from_this(), request = std::move(request), outcome]() mutable {
                   {
                       std::lock_guard lock(core->mutex);
                       if (core->closed) return;  // the closing has answered it
                   }
                   auto work = perform(core, std::move(request));
                   asio::co_spawn(*core->io, std::move(work),
                                  [core, outcome](std::exception_ptr error, json result) {
                                      detail::finish(*core, outcome, std::move(result), error);
                                  });
               });
    return true;
}

template <class T>
T take(const ApiRequest::Outcome& outcome) {
    if (outcome.error) std::rethrow_exception(outcome.error);
    if constexpr (std::is_same_v<T, bool>) {
        return outcome.result.is_boolean() && outcome.result.get<bool>();
    } else {
        return outcome.result;
    }
}

void require(bool applies, const ApiRequest& request, const char* option) {
    if (applies) return;
    throw std::invalid_argument(fmt::format("kopf::ApiCall::{}() does not apply to {}().", option,
                                            detail::verb_name(request.verb)));
}

bool is_write(Verb verb) {
    return verb == Verb::Create || verb == Verb::Replace || verb == Verb::Patch ||
           verb == Verb::Apply || verb == Verb::CreateOrGet || verb == Verb::CreateOrPatch;
}
bool is_delete(Verb verb) {
    return verb == Verb::Delete || verb == Verb::DeleteCollection || verb == Verb::DeleteIfExists;
}
bool is_selecting(Verb verb) {
    return verb == Verb::List || verb == Verb::DeleteCollection || verb == Verb::Watch;
}

std::shared_ptr<ApiRequest> prepare(Verb verb, const Selector& resource, const std::string& ns,
                                    std::string name, json body) {
    auto request = std::make_shared<ApiRequest>();
    request->verb = verb;
    request->resource = resource;
    request->namespace_ = ns;
    request->name = std::move(name);
    request->body = std::move(body);
    return request;
}

}  // namespace

// ---- ApiCall ---------------------------------------------------------------------------------

template <class T>
ApiCall<T>::ApiCall(std::shared_ptr<detail::ClientCore> core,
                    std::shared_ptr<detail::ApiRequest> request)
    : core_(std::move(core)), request_(std::move(request)) {}

template <class T>
ApiCall<T> ApiCall<T>::with(const std::function<void(detail::ApiRequest&)>& change) const {
    auto copy = std::make_shared<ApiRequest>(*request_);
    copy->outcome.reset();
    change(*copy);
    return ApiCall<T>(core_, std::move(copy));
}

template <class T>
ApiCall<T> ApiCall<T>::dry_run() const {
    require(is_write(request_->verb) || is_delete(request_->verb), *request_, "dry_run");
    return with([](ApiRequest& r) { r.dry_run = true; });
}
template <class T>
ApiCall<T> ApiCall<T>::field_manager(std::string name) const {
    require(is_write(request_->verb), *request_, "field_manager");
    return with([&name](ApiRequest& r) { r.field_manager = std::move(name); });
}
template <class T>
ApiCall<T> ApiCall<T>::force() const {
    require(request_->verb == Verb::Apply, *request_, "force");
    return with([](ApiRequest& r) { r.force = true; });
}
template <class T>
ApiCall<T> ApiCall<T>::labels(std::string selector) const {
    require(is_selecting(request_->verb), *request_, "labels");
    return with([&selector](ApiRequest& r) { r.label_selector = std::move(selector); });
}
template <class T>
ApiCall<T> ApiCall<T>::fields(std::string selector) const {
    require(is_selecting(request_->verb), *request_, "fields");
    return with([&selector](ApiRequest& r) { r.field_selector = std::move(selector); });
}
template <class T>
ApiCall<T> ApiCall<T>::limit(long count) const {
    require(request_->verb == Verb::List, *request_, "limit");
    if (count <= 0) throw std::invalid_argument("kopf::ApiCall::limit() must be positive.");
    return with([count](ApiRequest& r) { r.limit = count; });
}
template <class T>
ApiCall<T> ApiCall<T>::continue_from(std::string token) const {
    require(request_->verb == Verb::List, *request_, "continue_from");
    return with([&token](ApiRequest& r) {
        r.continue_token = std::move(token);
        if (!r.limit) r.limit = 500;  // a continued listing is paged
    });
}
template <class T>
ApiCall<T> ApiCall<T>::resource_version(std::string version) const {
    require(request_->verb == Verb::Get || request_->verb == Verb::List, *request_,
            "resource_version");
    return with([&version](ApiRequest& r) { r.resource_version = std::move(version); });
}
template <class T>
ApiCall<T> ApiCall<T>::propagation(std::string policy) const {
    require(is_delete(request_->verb), *request_, "propagation");
    if (policy != "Foreground" && policy != "Background" && policy != "Orphan") {
        throw std::invalid_argument(fmt::format(
            "kopf::ApiCall::propagation(\"{}\"): use Foreground, Background or Orphan.", policy));
    }
    return with([&policy](ApiRequest& r) { r.propagation = std::move(policy); });
}
template <class T>
ApiCall<T> ApiCall<T>::grace_period(long seconds) const {
    require(is_delete(request_->verb), *request_, "grace_period");
    return with([seconds](ApiRequest& r) { r.grace_period = seconds; });
}
template <class T>
ApiCall<T> ApiCall<T>::precondition_uid(std::string uid) const {
    require(is_delete(request_->verb), *request_, "precondition_uid");
    return with([&uid](ApiRequest& r) { r.precondition_uid = std::move(uid); });
}
template <class T>
ApiCall<T> ApiCall<T>::precondition_resource_version(std::string version) const {
    require(is_delete(request_->verb), *request_, "precondition_resource_version");
    return with(
        [&version](ApiRequest& r) { r.precondition_resource_version = std::move(version); });
}

template <class T>
T ApiCall<T>::wait() const {
    if (!core_) throw std::logic_error("kopf::Api: this handle has no client.");
    if (core_->on_loop_thread()) {
        throw std::logic_error(fmt::format(
            "kopf::ApiCall::wait() of {}() was called on the operator's event loop, which it "
            "would block while the loop must answer it: co_await the call in an async handler, "
            "or make the handler synchronous (it then runs on the worker pool).",
            detail::verb_name(request_->verb)));
    }
    auto outcome = std::make_shared<ApiRequest::Outcome>();
    begin(core_, request_, outcome);
    std::unique_lock lock(outcome->mutex);
    outcome->finished_cv.wait(lock, [&] { return outcome->finished; });
    return take<T>(*outcome);
}

template <class T>
bool ApiCall<T>::await_suspend(std::coroutine_handle<> awaiting) const {
    request_->outcome = std::make_shared<ApiRequest::Outcome>();
    request_->outcome->awaiting = awaiting;
    request_->outcome->cause = detail::current_cause();
    return begin(core_, request_, request_->outcome);
}

template <class T>
T ApiCall<T>::await_resume() const {
    if (request_->outcome) detail::set_current_cause(request_->outcome->cause);
    return take<T>(*request_->outcome);
}

template class ApiCall<json>;
template class ApiCall<bool>;

// ---- Api -------------------------------------------------------------------------------------

Api::Api(std::shared_ptr<detail::ClientCore> core, Selector resource, std::string namespace_)
    : core_(std::move(core)),
      resource_(std::move(resource)),
      namespace_name_(std::move(namespace_)) {
    to_structs(resource_);  // refuse EVERYTHING and empty selectors at once
}

Api Api::in_namespace(std::string namespace_) const {
    return Api(core_, resource_, std::move(namespace_));
}

ApiCall<json> Api::call(std::shared_ptr<detail::ApiRequest> request) const {
    return ApiCall<json>(core_, std::move(request));
}

ApiCall<json> Api::get(std::string name) const {
    return call(prepare(Verb::Get, resource_, namespace_name_, std::move(name), nullptr));
}
ApiCall<json> Api::list() const {
    return call(prepare(Verb::List, resource_, namespace_name_, "", nullptr));
}
ApiCall<json> Api::create(json body) const {
    return call(prepare(Verb::Create, resource_, namespace_name_, "", std::move(body)));
}
ApiCall<json> Api::replace(std::string name, json body) const {
    return call(
        prepare(Verb::Replace, resource_, namespace_name_, std::move(name), std::move(body)));
}
ApiCall<json> Api::patch(std::string name, json patch, PatchType type) const {
    auto request =
        prepare(Verb::Patch, resource_, namespace_name_, std::move(name), std::move(patch));
    request->patch_type = type;
    return call(std::move(request));
}
ApiCall<json> Api::apply(json body) const {
    return call(prepare(Verb::Apply, resource_, namespace_name_, "", std::move(body)));
}
ApiCall<json> Api::delete_(std::string name) const {
    return call(prepare(Verb::Delete, resource_, namespace_name_, std::move(name), nullptr));
}
ApiCall<json> Api::delete_collection() const {
    return call(prepare(Verb::DeleteCollection, resource_, namespace_name_, "", nullptr));
}
ApiCall<json> Api::get_status(std::string name) const {
    auto request = prepare(Verb::Get, resource_, namespace_name_, std::move(name), nullptr);
    request->subresource = "status";
    return call(std::move(request));
}
ApiCall<json> Api::patch_status(std::string name, json patch, PatchType type) const {
    auto request =
        prepare(Verb::Patch, resource_, namespace_name_, std::move(name), std::move(patch));
    request->subresource = "status";
    request->patch_type = type;
    return call(std::move(request));
}
ApiCall<json> Api::replace_status(std::string name, json body) const {
    auto request =
        prepare(Verb::Replace, resource_, namespace_name_, std::move(name), std::move(body));
    request->subresource = "status";
    return call(std::move(request));
}
ApiCall<json> Api::get_scale(std::string name) const {
    auto request = prepare(Verb::Get, resource_, namespace_name_, std::move(name), nullptr);
    request->subresource = "scale";
    return call(std::move(request));
}
ApiCall<json> Api::patch_scale(std::string name, json patch) const {
    auto request =
        prepare(Verb::Patch, resource_, namespace_name_, std::move(name), std::move(patch));
    request->subresource = "scale";
    return call(std::move(request));
}
ApiCall<json> Api::create_or_get(json body) const {
    return call(prepare(Verb::CreateOrGet, resource_, namespace_name_, "", std::move(body)));
}
ApiCall<json> Api::create_or_patch(json body) const {
    return call(prepare(Verb::CreateOrPatch, resource_, namespace_name_, "", std::move(body)));
}
ApiCall<bool> Api::delete_if_exists(std::string name) const {
    return ApiCall<bool>(
        core_, prepare(Verb::DeleteIfExists, resource_, namespace_name_, std::move(name), nullptr));
}
ApiCall<json> Api::watch(std::function<void(const WatchEvent&)> on_event,
                         OperatorFlag* stop) const {
    if (!on_event) throw std::invalid_argument("kopf::Api::watch() needs an event callback.");
    auto request = prepare(Verb::Watch, resource_, namespace_name_, "", nullptr);
    request->on_event = std::move(on_event);
    request->stop = stop;
    return call(std::move(request));
}

// ---- WatchStream -----------------------------------------------------------------------------

WatchStream Api::stream(DaemonStopped until, std::string label_selector,
                        std::string field_selector) const {
    if (!core_) {
        throw std::logic_error("kopf::Api: this handle has no client (a default-constructed one).");
    }
    auto queue = std::make_shared<detail::WatchQueue>();
    queue->core = core_->shared_from_this();  // the loop's side: it does not keep the client open
    auto request = prepare(Verb::Watch, resource_, namespace_name_, "", nullptr);
    request->label_selector = std::move(label_selector);
    request->field_selector = std::move(field_selector);
    request->stop = &queue->stop_flag;
    // The request keeps the queue (and so its flag) while the watch runs.
    request->on_event = [queue](const WatchEvent& event) { queue->push(event); };
    auto outcome = std::make_shared<ApiRequest::Outcome>();
    outcome->on_finished = [queue, weak_outcome = std::weak_ptr<ApiRequest::Outcome>(outcome)] {
        auto outcome = weak_outcome.lock();
        std::exception_ptr error = outcome ? outcome->error : nullptr;
        {
            std::lock_guard lock(queue->core->mutex);
            if (queue->core->closed) error = nullptr;  // the operator's exit: a normal end
        }
        queue->end(error);
    };
    if (!begin(core_, request, outcome)) queue->end(nullptr);  // closed: ended already
    until.on_set([weak = std::weak_ptr<detail::WatchQueue>(queue)] {
        if (auto queue = weak.lock()) queue->end(nullptr);
    });
    return WatchStream(std::move(queue), core_);
}

WatchStream& WatchStream::operator=(WatchStream&& other) noexcept {
    if (this != &other) {
        stop();
        queue_ = std::move(other.queue_);
        client_ = std::move(other.client_);
    }
    return *this;
}

WatchStream::~WatchStream() {
    stop();
}

WatchStream::Next WatchStream::next() const {
    if (!queue_) throw std::logic_error("kopf::WatchStream: this stream is empty (moved from?).");
    return Next(queue_);
}

void WatchStream::stop() const {
    if (queue_) queue_->end(nullptr);
}

bool WatchStream::Next::await_ready() const {
    std::lock_guard lock(queue_->mutex);
    return !queue_->events.empty() || queue_->ended;
}

bool WatchStream::Next::await_suspend(std::coroutine_handle<> awaiting) const {
    std::lock_guard lock(queue_->mutex);
    if (!queue_->events.empty() || queue_->ended) return false;
    if (queue_->awaiting) {
        throw std::logic_error("kopf::WatchStream::next() is awaited twice at once.");
    }
    queue_->awaiting = awaiting;
    return true;
}

std::optional<WatchEvent> WatchStream::Next::await_resume() const {
    std::lock_guard lock(queue_->mutex);
    if (!queue_->events.empty()) {
        WatchEvent event = std::move(queue_->events.front());
        queue_->events.pop_front();
        return event;
    }
    if (queue_->error) std::rethrow_exception(queue_->error);
    return std::nullopt;
}

std::optional<WatchEvent> WatchStream::Next::wait() const {
    if (queue_->core && queue_->core->on_loop_thread()) {
        throw std::logic_error(
            "kopf::WatchStream::next().wait() was called on the operator's event loop, which it "
            "would block while the loop must deliver the events: co_await it instead.");
    }
    std::unique_lock lock(queue_->mutex);
    queue_->changed.wait(lock, [this] { return !queue_->events.empty() || queue_->ended; });
    lock.unlock();
    return await_resume();
}

// ---- Client ----------------------------------------------------------------------------------

namespace {

// What a client of its own hands out as its handles: while one exists, the client is open.
struct OwnClientHandle {
    explicit OwnClientHandle(std::shared_ptr<detail::ClientCore> core) : core(std::move(core)) {}
    OwnClientHandle(const OwnClientHandle&) = delete;
    OwnClientHandle& operator=(const OwnClientHandle&) = delete;
    ~OwnClientHandle() { core->release_own_loop(); }
    std::shared_ptr<detail::ClientCore> core;
};

}  // namespace

Client::Client(ConnectionInfo credentials) {
    auto core = std::make_shared<detail::ClientCore>();
    auto vault = std::make_shared<structs::Vault>();
    vault->populate({{"kopf::Client", std::move(credentials)}});
    auto own = std::make_shared<detail::ClientCore::OwnLoop>();
    own->work.emplace(own->io.get_executor());
    own->api =
        std::make_unique<clients::ApiClient>(own->io.get_executor(), vault, clients::ReloginFn{});
    core->io = &own->io;
    core->api = own->api.get();
    core->own = own;
    core->own_thread_finished = std::make_shared<std::atomic<bool>>(false);
    core->own_thread = std::thread([own, finished = core->own_thread_finished]() mutable {
        own->io.run();
        own.reset();  // the loop and its ApiClient go here when the core went on this thread
        *finished = true;
    });
    core->loop_thread = core->own_thread.get_id();
    auto handle = std::make_shared<OwnClientHandle>(core);
    core_ = std::shared_ptr<detail::ClientCore>(handle, core.get());
}

Api Client::api(Selector resource, std::string namespace_) const {
    return Api(core_, std::move(resource), std::move(namespace_));
}

ApiCall<json> Client::request(std::string method, std::string path, json body) const {
    auto request = std::make_shared<ApiRequest>();
    request->verb = Verb::Raw;
    request->method = std::move(method);
    request->path = std::move(path);
    request->body = std::move(body);
    return ApiCall<json>(core_, std::move(request));
}

Api Context::api(Selector resource, std::string namespace_) const {
    if (!client) {
        throw std::logic_error(
            "This handler's context has no API client: it runs outside an operator (a test?).");
    }
    return client->api(std::move(resource), std::move(namespace_));
}

Api ActivityContext::api(Selector resource, std::string namespace_) const {
    if (!client) {
        throw std::logic_error(fmt::format(
            "The {} handlers run before the operator logs in: no API client yet. Use it in "
            "cleanup handlers, resource handlers, or a client of your own (kopf::Client).",
            activity));
    }
    return client->api(std::move(resource), std::move(namespace_));
}

}  // namespace kopf

namespace kopf::clients {

std::shared_ptr<detail::ClientCore> make_client_core(asio::io_context& io, ApiClient& api,
                                                     WatchSettings watching,
                                                     std::thread::id loop_thread) {
    auto core = std::make_shared<detail::ClientCore>();
    core->io = &io;
    core->loop_thread = loop_thread;
    core->api = &api;
    core->watching = std::move(watching);
    return core;
}

void close_client_core(detail::ClientCore& core) {
    core.close();
}

}  // namespace kopf::clients
