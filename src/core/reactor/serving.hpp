// Serving the resources (running.cpp starts it once the operator has logged in): the
// composition of the reactor's parts for one operator, and its lifetime (reaching the API,
// starting, stopping). Observation finds what to serve, orchestration watches it, the
// per-object queues call the processing, whose patches and touch-dummies are applied with the
// API client (application); daemons and indices run beside them; the operator's Events are
// posted from here.
#pragma once

#include <exception>
#include <functional>
#include <kopf/api.hpp>
#include <kopf/connection.hpp>
#include <kopf/registry.hpp>
#include <kopf/settings.hpp>
#include <kopf/task.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/actions/lifecycles.hpp"
#include "core/reactor/namespaces.hpp"

namespace boost::asio {
class io_context;
}

namespace kopf::clients {
class ApiClient;
}  // namespace kopf::clients

namespace kopf::structs {
class Vault;
}  // namespace kopf::structs

namespace kopf::runtime {

class PostingContext;
}  // namespace kopf::runtime

namespace kopf::detail {
struct IndicesData;  // core/engines/indexing.hpp
}  // namespace kopf::detail

namespace kopf::engines {
class Metrics;  // core/engines/metrics.hpp
}  // namespace kopf::engines

namespace kopf::runtime {

class ResourceServing {
  public:
    // `vault`: the credentials by login handler id (the highest priority is used first; on a
    // 401, the next), shared with the operator's caller. `login` produces fresh credentials
    // when none is left.
    // `posting`: the operator's own Events (queue, identity, object-log hook) to post.
    // `metrics`: where the API traffic, watches, queues, handlers, daemons and indices are
    // counted; none when metrics are off.
    // `identity`: the operator's in the peerings (Kopf's format, detected when empty).
    ResourceServing(boost::asio::io_context& io, kopf::Executor& executor, const Registry& registry,
                    const OperatorSettings& settings, std::shared_ptr<PostingContext> posting,
                    NamespaceScope scope, std::shared_ptr<structs::Vault> vault,
                    std::function<std::map<std::string, ConnectionInfo>()> login,
                    std::shared_ptr<kopf::detail::IndicesData> indices = nullptr,
                    std::shared_ptr<Memo> memo = nullptr,
                    std::shared_ptr<engines::Metrics> metrics = nullptr, std::string identity = "");
    ~ResourceServing();
    ResourceServing(const ResourceServing&) = delete;
    ResourceServing& operator=(const ResourceServing&) = delete;

    // Starts serving on the loop. `on_ready` runs once the resources are resolved and watched;
    // `on_failure` if the API server cannot be reached or the selectors cannot be resolved.
    void start(std::function<void()> on_ready, std::function<void(std::exception_ptr)> on_failure);

    // Stops the watchers, lets the busy object workers finish (settings.queueing.exit_timeout),
    // posts the pending Events, then calls `finished`.
    void stop(std::function<void()> finished);

    // The operator's API client for handlers (kopf/api.hpp), on this serving's ApiClient.
    const kopf::Client& client() const;
    // Which due handlers run per processing cycle (asap unless told): call it before the loop
    // runs, as it is read by every processing cycle on the loop.
    void use_lifecycle(actions::Lifecycle lifecycle);
    // Called with the public view of all resources found at each discovery of the API (at the
    // start, and when CRDs are created or deleted); set before `start`.
    void on_discovered(std::function<void(const std::vector<Resource>&)> fn);
    // The operator's ApiClient (the managed webhook configurations use it).
    clients::ApiClient& api();
    // Ends the client's calls (at the operator's exit, on the loop, before it is destroyed).
    void close_client();

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::runtime
