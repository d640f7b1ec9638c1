#include "cli/peering_commands.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <exception>
#include <set>
#include <stdexcept>

#include "clients/api.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/peering.hpp"
#include "core/reactor/namespaces.hpp"
#include "structs/credentials.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {
namespace {

// A failure to tell the user as it is (exit code 1).
struct CommandError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string where(const std::string& namespace_) {
    return namespace_.empty() ? "cluster-wide" : fmt::format("in '{}'", namespace_);
}

// The namespaces of the peerings: the plain names as given; patterns against the cluster's.
asio::awaitable<std::set<std::string>> namespaces_of(clients::ApiClient& api,
                                                     const NamespaceScope& scope,
                                                     const std::vector<structs::Resource>& found) {
    std::set<std::string> namespaces;
    if (scope.all_specific()) {
        for (const auto& ns : scope.specific_namespaces()) namespaces.insert(ns);
        co_return namespaces;
    }
    const auto resource = structs::namespaces_selector().select_one(found);
    if (!resource) throw CommandError("The API serves no namespaces to match the patterns with.");
    const json list = co_await api.list(*resource, "");
    for (const auto& item : list.value("items", json::array())) {
        const std::string name = item.value("/metadata/name"_json_pointer, std::string());
        if (scope.matches(name)) namespaces.insert(name);
    }
    co_return namespaces;
}

asio::awaitable<void> touch_all(clients::ApiClient& api, const PeeringCommandOptions& options,
                                const NamespaceScope& scope, const std::string& identity,
                                long priority, long lifetime) {
    const auto found = co_await api.discover();
    PeeringSettings settings;
    settings.name = options.peering;
    settings.clusterwide = scope.clusterwide;
    const auto resources = engines::peering_resources(settings, found);
    if (resources.empty()) {
        throw CommandError(fmt::format(
            "The cluster has no {} CRD: there is no peering to {}. Apply deploy/peering.yaml.",
            settings.clusterwide ? "ClusterKopfPeering" : "KopfPeering",
            options.freeze ? "freeze" : "resume"));
    }
    std::set<std::string> namespaces = {""};
    if (!scope.clusterwide) namespaces = co_await namespaces_of(api, scope, found);
    if (namespaces.empty()) throw CommandError("No namespace matches the -n/--namespace patterns.");
    auto log = logger("kopf.cli");
    for (const auto& ns : namespaces) {
        bool touched = false;
        for (const auto& resource : resources) {
            touched = co_await engines::touch_peering(api, resource, ns, options.peering, identity,
                                                      priority, lifetime) ||
                      touched;
        }
        if (!touched) {
            throw CommandError(
                fmt::format("The peering '{}' {} does not exist.", options.peering, where(ns)));
        }
        const std::string message = options.message.empty() ? "" : ": " + options.message;
        if (options.freeze) {
            log->info("The peering '{}' {} is frozen by '{}' (priority {}) for {} seconds{}.",
                      options.peering, where(ns), identity, priority, lifetime, message);
        } else {
            log->info("The peering '{}' {} is resumed: the entry of '{}' is removed.",
                      options.peering, where(ns), identity);
        }
    }
}

}  // namespace

int peering_command(const PeeringCommandOptions& options) {
    LoggingOptions logging;
    logging.verbose = options.verbose;
    logging.debug = options.debug;
    logging.quiet = options.quiet;
    configure_logging(logging);

    const char* command = options.freeze ? "freeze" : "resume";
    NamespaceScope scope;
    try {
        if (options.peering.empty())
            throw std::invalid_argument("-P/--peering NAME is required: the peering to " +
                                        std::string(command) + ".");
        if (options.freeze && (!options.lifetime || *options.lifetime <= 0))
            throw std::invalid_argument(
                "-t/--lifetime SECONDS is required and must be positive: how long the operators "
                "stay frozen.");
        if (options.all_namespaces && !options.namespaces.empty())
            throw std::invalid_argument(
                "Either --namespace or --all-namespaces can be used, not both.");
        // Without -n, the cluster-wide peering (as `kopf run` serves the whole cluster then).
        scope.clusterwide = options.namespaces.empty();
        for (const auto& text : options.namespaces) scope.patterns.emplace_back(text);
    } catch (const std::invalid_argument& error) {
        std::fprintf(stderr, "Error: %s\n", error.what());
        return 2;
    }
    const std::string identity = options.id.empty() ? engines::detect_own_id(true) : options.id;
    const long priority = options.dev ? 666 : options.priority;
    const long lifetime = options.freeze ? *options.lifetime : 0;

    auto credentials = clients::default_login();
    if (credentials.empty()) {
        std::fprintf(stderr,
                     "Error: no credentials: neither a service account nor a kubeconfig "
                     "($KUBECONFIG, ~/.kube/config) is found.\n");
        return 1;
    }
    asio::io_context io;
    auto vault = std::make_shared<structs::Vault>();
    vault->populate(std::move(credentials));
    clients::ClientSettings settings;
    settings.error_backoffs = {0.5, 1, 2};
    clients::ApiClient api(io.get_executor(), vault, clients::ReloginFn{}, settings);
    std::exception_ptr failure;
    asio::co_spawn(io, touch_all(api, options, scope, identity, priority, lifetime),
                   [&failure](std::exception_ptr error) { failure = error; });
    io.run();
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& error) {
            std::fprintf(stderr, "Error: kopf %s: %s\n", command, error.what());
        }
        return 1;
    }
    return 0;
}

}  // namespace kopf::runtime
