#include "core/reactor/observation.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <stdexcept>

#include "clients/api.hpp"
#include "clients/stop.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/indexing.hpp"
#include "core/reactor/orchestration.hpp"
#include "structs/bodies.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {

using structs::metadata_field;

std::map<std::string, structs::Resource> resolve_resources(
    const Registry& registry, const std::vector<structs::Resource>& found,
    std::set<std::string>& warned) {
    std::map<std::string, structs::Resource> served;
    for (const auto& selector : registry.selectors()) {
        // Preferred versions unless a version is named, no events for EVERYTHING, and core
        // v1 before other groups for specific names: structs::Selector::select, as in Kopf.
        const auto matching = structs::from_public(selector).select(found);
        std::set<std::string> groups;
        for (const auto& resource : matching) groups.insert(resource.group);
        const bool specific = !selector.everything && !selector.category;
        if (specific && groups.size() > 1) {
            std::vector<std::string> names;
            for (const auto& r : matching) names.push_back(r.to_string());
            throw std::runtime_error(
                fmt::format("Ambiguous resource specification '{}': it matches {}. Specify the "
                            "group, e.g. '{}.{}'.",
                            selector.repr(), fmt::join(names, ", "), matching.front().plural,
                            matching.front().group));
        }
        if (matching.empty()) {
            if (!warned.count(selector.repr())) {
                warned.insert(selector.repr());
                logger("kopf.reactor.observation")
                    ->warn(
                        "Unresolved resources cannot be served (try creating their CRDs): "
                        "{}",
                        selector.repr());
            }
            continue;
        }
        for (const auto& r : matching) served.emplace(r.to_string(), r);
    }
    return served;
}

Observation::Observation(asio::io_context& io, kopf::Executor& executor, clients::ApiClient& api,
                         const Registry& registry, NamespaceScope scope,
                         Orchestration& orchestration, engines::IndexingEngine* indexing)
    : io(io),
      executor(executor),
      api(api),
      registry(registry),
      scope_(std::move(scope)),
      orchestration(orchestration),
      indexing(indexing) {}

asio::awaitable<void> Observation::rescan() {
    auto found = co_await api.discover();
    for (const auto& r : found) {
        if (r.group == "apiextensions.k8s.io" && r.plural == "customresourcedefinitions" &&
            r.preferred) {
            insights_.crds = r;
        }
        if (r.group.empty() && r.plural == "namespaces") insights_.namespaces_resource = r;
    }
    insights_.peerings.clear();
    for (const auto& r : found) {
        if ((r.group == "kopf.dev" || r.group == "zalando.org") &&
            (r.plural == "kopfpeerings" || r.plural == "clusterkopfpeerings"))
            insights_.peerings.push_back(r);
    }
    auto now_served = resolve_resources(registry, found, unresolved_warned);
    for (const auto& [name, resource] : now_served) {
        if (!insights_.served.count(name)) {
            logger("kopf.reactor.observation")->info("Serving resource {}.", name);
        }
    }
    for (const auto& [name, resource] : insights_.served) {
        if (!now_served.count(name)) {
            logger("kopf.reactor.observation")
                ->info("Resource {} is gone (its CRD was deleted): no longer served.", name);
        }
    }
    insights_.served = std::move(now_served);
    orchestration.update_watchers(insights_);
    if (on_discovered) on_discovered(found);
}

void Observation::observe_namespaces(bool scanning) {
    if (!scope_.clusterwide && !scanning && !scope_.all_specific()) {
        std::string patterns;
        for (const auto& pattern : scope_.patterns) {
            if (pattern.is_specific()) continue;
            patterns += (patterns.empty() ? "'" : ", '") + pattern.text() + "'";
        }
        logger("kopf.reactor.observation")
            ->warn(
                "Namespace patterns {} are not served: with settings.scanning.disabled, "
                "namespaces are not observed and only plain namespace names are served.",
                patterns);
    }
    if (!scope_.clusterwide) {
        if (scope_.all_specific() || !insights_.namespaces_resource || !scanning) {
            for (const auto& ns : scope_.specific_namespaces()) insights_.namespaces.insert(ns);
            orchestration.update_watchers(insights_);
            if (indexing) indexing->discovered();
        } else {
            start_namespace_observer();
        }
    } else if (indexing) {
        indexing->discovered();
    }
}

// Namespaces matching the scope's patterns, followed as they come and go.
void Observation::start_namespace_observer() {
    auto self = anchored();
    auto stop = std::make_shared<clients::StopSignal>();
    observers.push_back(stop);
    orchestration.watch_until_stopped(
        *insights_.namespaces_resource, "", stop,
        [self](clients::WatchEvent&& event) {
            const std::string name = metadata_field(event.object, "name");
            if (!self->scope_.matches(name)) return;
            const bool gone = event.type == "DELETED";
            if (gone ? self->insights_.namespaces.erase(name) > 0
                     : self->insights_.namespaces.insert(name).second) {
                self->orchestration.update_watchers(self->insights_);
            }
        },
        "kopf.reactor.observation", "Namespace observation failed", {},
        [self] {
            // The watchers of the namespaces found so far are started: the indices wait
            // for their listings.
            if (self->indexing) self->indexing->discovered();
        },
        [self](bool listed) {
            // As Kopf: without the right to list namespaces, the patterns' plain names are
            // assumed to exist; without the right to watch them, those listed stay as they are.
            if (listed) {
                logger("kopf.reactor.observation")
                    ->warn(
                        "Not enough permissions to watch for namespaces: changes "
                        "(deletion/creation) will not be noticed; the namespaces are only "
                        "refreshed on operator restarts.");
                return;
            }
            const auto exact = self->scope_.specific_namespaces();
            logger("kopf.reactor.observation")
                ->warn(
                    "Not enough permissions to list namespaces. Falling back to a list of "
                    "namespaces which are assumed to exist: {}",
                    exact.empty() ? std::string("[]")
                                  : fmt::format("['{}']", fmt::join(exact, "', '")));
            for (const auto& ns : exact) self->insights_.namespaces.insert(ns);
            self->orchestration.update_watchers(self->insights_);
            if (self->indexing) self->indexing->discovered();
        });
}

void Observation::start_crd_observer() {
    if (!insights_.crds) return;
    auto self = anchored();
    auto stop = std::make_shared<clients::StopSignal>();
    observers.push_back(stop);
    orchestration.watch_until_stopped(
        *insights_.crds, "", stop,
        [self](clients::WatchEvent&& event) {
            if (event.seen_by_listing) return;
            self->schedule_rescan();
        },
        "kopf.reactor.observation", "CRD observation failed");
}

void Observation::schedule_rescan() {
    if (rescan_pending || stopping) return;
    rescan_pending = true;
    auto self = anchored();
    // A CRD becomes servable a moment after it is created: give discovery a breath.
    executor.post_after(0.5, [self] {
        self->rescan_pending = false;
        asio::co_spawn(self->io, self->rescan(), [](std::exception_ptr error) {
            if (error) {
                logger("kopf.reactor.observation")
                    ->error("Resource rescanning failed: {}", describe(error));
            }
        });
    });
}

void Observation::stop() {
    stopping = true;
    for (auto& signal : observers) signal->stop();
    observers.clear();
}

}  // namespace kopf::runtime
