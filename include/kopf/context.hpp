// The one argument of every resource handler: Kopf's keyword arguments as members.
#pragma once

#include <chrono>
#include <kopf/api.hpp>
#include <kopf/diff.hpp>
#include <kopf/index.hpp>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <kopf/memo.hpp>
#include <kopf/patch.hpp>
#include <kopf/resource.hpp>
#include <kopf/stopped.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace kopf {

struct OperatorSettings;
struct HandlerScope;  // the library's per-invocation state (sub-handlers)

/// What a handler receives. Body views are read-only references into the current body;
/// `patch` is the way to change the object.
///
///     kopf::json create_fn(kopf::Context& ctx) {
///         ctx.logger.info("Creating {} with spec {}", ctx.name, ctx.spec.dump());
///         ctx.patch.status()["phase"] = "Created";
///         return {{"message", "hello world"}};   // -> status.create_fn.message
///     }
struct Context {
    using Clock = std::chrono::system_clock;

    const json& body;         ///< the whole object
    const json& meta;         ///< body.metadata ({} if absent)
    const json& spec;         ///< body.spec ({} if absent)
    const json& status;       ///< body.status ({} if absent)
    const json& labels;       ///< metadata.labels ({} if absent)
    const json& annotations;  ///< metadata.annotations ({} if absent)
    std::string name{};
    std::string namespace_{};  ///< "" for cluster-scoped objects
    std::string uid{};
    Patch& patch;
    Logger& logger;
    Memo& memo;
    const Resource& resource;
    const OperatorSettings& settings;

    std::string reason{};  ///< "create", "update", "delete", "resume" (empty for event handlers)
    /// The old and new essences and their diff (for field handlers: the field's old and new
    /// values and the diff relative to the field); null and empty where there are none.
    /// Read-only views, valid while the handler runs.
    const json& old;
    const json& new_;
    const Diff& diff;

    int retry = 0;                            ///< attempts made before this one
    Clock::time_point started{};              ///< when the handler was first tried
    std::chrono::duration<double> runtime{};  ///< now - started
    json param{};                             ///< the `param=` option

    std::string type{};  ///< event handlers: "ADDED", "MODIFIED", "DELETED" or "" (listing)
    json event{};        ///< event handlers: the raw event

    HandlerScope* scope = nullptr;   ///< internal: sub-handler registration
    const Client* client = nullptr;  ///< the operator's API client (see api())
    /// Daemons and timers: the stop flag (kopf/stopped.hpp); never set in other handlers.
    DaemonStopped stopped{};
    Indices indices{};  ///< the operator's in-memory indices (kopf/index.hpp)
    /// `logger`, shared: for work that outlives the handler, such as a background task
    /// (kopf::spawn) that logs about the object later. Never null in the operator's handlers.
    std::shared_ptr<Logger> logger_ptr{};

    /// The Kubernetes API of one resource with the operator's credentials (kopf/api.hpp):
    /// `co_await ctx.api("configmaps", ctx.namespace_).create(body)`.
    Api api(Selector resource, std::string namespace_ = "") const;

    /// The index made by the index handler with this id (Kopf's index kwargs); throws
    /// std::out_of_range naming the known indices.
    Index index(const std::string& name) const { return indices.get(name); }
    /// The same, its values read as T: `ctx.index<bool>("is_running").get(key)`.
    template <class T>
    TypedIndex<T> index(const std::string& name) const {
        return TypedIndex<T>(indices.get(name));
    }

    /// The memo as a custom memo type (see kopf::Memo).
    template <class M>
    M& memo_as() {
        auto* m = dynamic_cast<M*>(&memo);
        if (!m) throw std::bad_cast();
        return *m;
    }
};

}  // namespace kopf
