#include "core/engines/activities.hpp"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <kopf/errors.hpp>
#include <kopf/registry.hpp>
#include <kopf/run.hpp>
#include <kopf/settings.hpp>

#include "core/actions/logging.hpp"
#include "loop/loop_executor.hpp"

namespace asio = boost::asio;

namespace kopf::engines {

// Runs the activity handlers of one kind (startup, cleanup) in registration order, with
// TemporaryError retried after its delay; other failures end the activity with an error.
void run_activity(asio::io_context& io, loop::LoopExecutor& executor, const Registry& registry,
                  const std::string& activity, OperatorSettings& settings, Memo& memo,
                  const Indices& indices, const Client* client) {
    runtime::NamedLogger log("kopf.activities." + activity);
    for (const auto& handler : registry.activities) {
        if (handler.activity != activity || !handler.fn) continue;
        const auto started = std::chrono::system_clock::now();
        for (int retry = 0;; ++retry) {
            ActivityContext ctx{settings,
                                memo,
                                log,
                                activity,
                                retry,
                                started,
                                std::chrono::system_clock::now() - started,
                                handler.options.param,
                                client,
                                indices};
            try {
                loop::run_to_completion(io, executor, handler.fn(ctx));
                log.info(fmt::format("Activity '{}' succeeded.", handler.id));
                break;
            } catch (const TemporaryError& error) {
                const bool exhausted =
                    handler.options.retries && retry + 1 >= *handler.options.retries;
                if (exhausted) {
                    throw runtime::StartupError(fmt::format(
                        "Activity '{}' ({}) failed permanently: {} (retries exhausted).",
                        handler.id, activity, error.what()));
                }
                log.error(fmt::format("Activity '{}' failed temporarily: {}. Will retry in {}s.",
                                      handler.id, error.what(), error.delay));
                loop::sleep_on_loop(io, error.delay);
            } catch (const std::exception& error) {
                if (handler.options.errors == ErrorsMode::IGNORED) {
                    log.error(fmt::format("Activity '{}' failed with an exception. Will ignore. {}",
                                          handler.id, error.what()));
                    break;
                }
                throw runtime::StartupError(fmt::format("Activity '{}' ({}) failed: {}", handler.id,
                                                        activity, error.what()));
            }
        }
    }
}

// Login: the registered login handlers, else Kopf's built-ins (in-cluster, then kubeconfig).
// Returns nothing when no credentials could be found.
std::optional<ConnectionInfo> try_login(const Registry& registry, const RunOptions& options,
                                        OperatorSettings& settings, Memo& memo) {
    runtime::NamedLogger log("kopf.activities.authentication");
    std::optional<ConnectionInfo> best;
    bool any_login_handler = false;
    for (const auto& handler : registry.activities) {
        if (handler.activity != "login" || !handler.login) continue;
        any_login_handler = true;
        ActivityContext ctx{settings, memo,
                            log,      "login",
                            0,        std::chrono::system_clock::now(),
                            {},       handler.options.param};
        try {
            if (auto info = handler.login(ctx);
                info && (!best || info->priority > best->priority)) {
                best = *info;
            }
        } catch (const std::exception& error) {
            log.error(fmt::format("Login handler '{}' failed: {}", handler.id, error.what()));
        }
    }
    if (!any_login_handler) {
        if (auto info = kopf::login_with_service_account()) best = std::move(info);
        if (!best) {
            try {
                best = kopf::login_with_kubeconfig(options.context);
            } catch (const std::exception& error) {
                throw runtime::StartupError(
                    fmt::format("Cannot log in with the kubeconfig: {}", error.what()));
            }
        }
    }
    return best;
}

ConnectionInfo login(const Registry& registry, const RunOptions& options,
                     OperatorSettings& settings, Memo& memo) {
    runtime::NamedLogger log("kopf.activities.authentication");
    log.info("Initial authentication has been initiated.");
    std::optional<ConnectionInfo> best = try_login(registry, options, settings, memo);
    if (!best) {
        throw runtime::StartupError(
            "Ran out of valid credentials: no kubeconfig was found ($KUBECONFIG or "
            "~/.kube/config) and this is not a pod with a service account. Point KUBECONFIG at a "
            "kubeconfig (e.g. the one `kopf apiserver --kubeconfig-out FILE` writes), or declare "
            "a kopf::on::login handler.");
    }
    log.info("Initial authentication has finished.");
    return *best;
}

}  // namespace kopf::engines
