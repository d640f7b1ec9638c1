// Observation (Kopf's reactor/observation.py): what the operator serves. Discovery of the API's
// resources, resolving the handlers' selectors to them, the namespaces of the scope, and the
// CRD and namespace observers that revise both as resources and namespaces come and go. Every
// revision adjusts the watchers (core/reactor/orchestration).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <kopf/registry.hpp>
#include <kopf/task.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/reactor/namespaces.hpp"
#include "structs/references.hpp"

namespace boost::asio {
class io_context;
}

namespace kopf::clients {
class ApiClient;
class StopSignal;
}  // namespace kopf::clients

namespace kopf::engines {
class IndexingEngine;
}  // namespace kopf::engines

namespace kopf::runtime {

class Orchestration;

// What observation has found (Kopf's Insights).
struct Insights {
    std::optional<structs::Resource> crds;                 // if the API serves CRDs
    std::optional<structs::Resource> namespaces_resource;  // if the API serves namespaces
    std::map<std::string, structs::Resource> served;       // by name (Resource::to_string())
    std::set<std::string> namespaces;  // of the scope, for the namespaced resources
    // The peering resources the API serves (kopf.dev/v1 and zalando.org/v1, both scopes).
    std::vector<structs::Resource> peerings;
};

// The served resources for the handlers' selectors among the `found` ones. Throws on an
// ambiguous selector; warns about an unresolved one once (remembered in `warned`).
std::map<std::string, structs::Resource> resolve_resources(
    const Registry& registry, const std::vector<structs::Resource>& found,
    std::set<std::string>& warned);

class Observation {
  public:
    // `indexing` is null without index handlers.
    Observation(boost::asio::io_context& io, kopf::Executor& executor, clients::ApiClient& api,
                const Registry& registry, NamespaceScope scope, Orchestration& orchestration,
                engines::IndexingEngine* indexing);

    // The owner whose lifetime the observers extend (the serving this is a part of).
    void anchor(std::weak_ptr<void> owner) { this->owner = std::move(owner); }

    const Insights& insights() const { return insights_; }
    const NamespaceScope& scope() const { return scope_; }

    // Discovers the API's resources, resolves the selectors, adjusts the watchers.
    boost::asio::awaitable<void> rescan();

    // The namespaces of the scope: plain names at once, patterns followed by a namespace
    // observer. Once the watchers of the first ones are started, the indices learn it. Without
    // `scanning` (settings.scanning.disabled), as in Kopf, only the plain names are served,
    // taken literally, and patterns are warned about.
    void observe_namespaces(bool scanning = true);

    // CRDs created or deleted: rescan the API and start or stop the watchers.
    void start_crd_observer();

    // Called with all the resources found at each rescan (on the loop): for what serves
    // resources without watching them (the admission handlers).
    std::function<void(const std::vector<structs::Resource>&)> on_discovered;

    // Stops the observers; a pending rescan does not start.
    void stop();

  private:
    // This, keeping its owner alive (what shared_from_this() is to a class of its own).
    std::shared_ptr<Observation> anchored() { return {owner.lock(), this}; }

    void start_namespace_observer();
    void schedule_rescan();

    boost::asio::io_context& io;
    kopf::Executor& executor;
    clients::ApiClient& api;
    const Registry& registry;
    const NamespaceScope scope_;
    Orchestration& orchestration;
    engines::IndexingEngine* const indexing;
    std::weak_ptr<void> owner;
    Insights insights_;
    std::set<std::string> unresolved_warned;
    std::vector<std::shared_ptr<clients::StopSignal>> observers;
    bool rescan_pending = false;
    bool stopping = false;
};

}  // namespace kopf::runtime
