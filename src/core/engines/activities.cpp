#include "core/engines/activities.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <future>
#include <kopf/errors.hpp>
#include <kopf/registry.hpp>
#include <kopf/run.hpp>
#include <kopf/settings.hpp>
#include <map>
#include <memory>
#include <optional>

#include "core/actions/logging.hpp"
#include "loop/loop_executor.hpp"

namespace asio = boost::asio;

namespace kopf::engines {

namespace {

// How one handler's activity ended.
struct ActivityOutcome {
    bool final = true;
    std::optional<std::string> failure;  // why it failed for good, if it did
    double delay = 0;                    // before the next attempt, if not final
};

// One attempt of one activity handler, judged as Kopf's execution judges it: TemporaryError is
// retried after its delay, PermanentError is final, other exceptions follow `errors`
// (TEMPORARY by default, as in Kopf: retried after `backoff`, else
// settings.execution.default_backoff); `timeout` and `retries` end the retries, looking ahead
// at the next attempt's time and count.
// `invoke` calls the handler once.
ActivityOutcome attempt_activity(const ActivityHandler& handler, ActivityContext& ctx,
                                 const OperatorSettings& settings, runtime::NamedLogger& log,
                                 const std::function<void()>& invoke) {
    const auto& options = handler.options;
    const double runtime = std::chrono::duration<double>(ctx.runtime).count();
    const auto fail = [&log](std::string message) {
        log.error(message);
        return ActivityOutcome{true, std::move(message), 0};
    };
    if (options.timeout && runtime >= *options.timeout) {
        return fail(fmt::format("Activity '{}' has timed out after {}s.", handler.id, runtime));
    }
    if (options.retries && ctx.retry >= *options.retries) {
        return fail(
            fmt::format("Activity '{}' has exceeded {} retries.", handler.id, *options.retries));
    }
    const auto would_time_out = [&](double delay) {
        return options.timeout && runtime + delay >= *options.timeout;
    };
    const bool would_exceed_retries = options.retries && ctx.retry + 1 >= *options.retries;
    try {
        invoke();
        log.info(fmt::format("Activity '{}' succeeded.", handler.id));
        return {};
    } catch (const TemporaryError& error) {
        if (would_time_out(error.delay)) {
            return fail(
                fmt::format("Activity '{}' failed temporarily but will time out after {}s: {}",
                            handler.id, *options.timeout, error.what()));
        }
        if (would_exceed_retries) {
            return fail(
                fmt::format("Activity '{}' failed temporarily but will exceed {} retries: {}",
                            handler.id, *options.retries, error.what()));
        }
        log.error(fmt::format("Activity '{}' failed temporarily: {}. Will retry in {}s.",
                              handler.id, error.what(), error.delay));
        return {false, std::nullopt, error.delay};
    } catch (const PermanentError& error) {
        return fail(fmt::format("Activity '{}' failed permanently: {}", handler.id, error.what()));
    } catch (const std::exception& error) {
        const ErrorsMode mode = options.errors.value_or(ErrorsMode::TEMPORARY);
        const double backoff = options.backoff.value_or(settings.execution.default_backoff);
        switch (mode) {
            case ErrorsMode::IGNORED:
                log.error(fmt::format("Activity '{}' failed with an exception. Will ignore. {}",
                                      handler.id, error.what()));
                return {};
            case ErrorsMode::PERMANENT:
                return fail(
                    fmt::format("Activity '{}' failed with an exception and will stop now: {}",
                                handler.id, error.what()));
            case ErrorsMode::TEMPORARY:
                break;
        }
        if (would_time_out(backoff)) {
            return fail(
                fmt::format("Activity '{}' failed with an exception and will stop now (it would "
                            "time out in {}s on the next attempt): {}",
                            handler.id, *options.timeout, error.what()));
        }
        if (would_exceed_retries) {
            return fail(
                fmt::format("Activity '{}' failed with an exception and will stop now (it would "
                            "exceed {} retries on the next attempt): {}",
                            handler.id, *options.retries, error.what()));
        }
        log.error(
            fmt::format("Activity '{}' failed with an exception and will try again in {}s: {}",
                        handler.id, backoff, error.what()));
        return {false, std::nullopt, backoff};
    }
}

// Sleeps on the loop for `seconds`, or until `interrupt` is set (by a stop that the loop runs).
void sleep_unless(asio::io_context& io, double seconds, const std::atomic<bool>* interrupt) {
    asio::steady_timer timer(io, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(std::max(0.0, seconds))));
    bool fired = false;
    timer.async_wait([&](const boost::system::error_code&) { fired = true; });
    while (!fired) {
        if (interrupt && *interrupt) {
            timer.cancel();
            interrupt = nullptr;  // let the cancelled wait complete
        }
        io.restart();
        io.run_one();
    }
}

}  // namespace

bool run_activity(asio::io_context& io, loop::LoopExecutor& executor, const Registry& registry,
                  const std::string& activity, OperatorSettings& settings, Memo& memo,
                  const Indices& indices, const Client* client,
                  const std::atomic<bool>* interrupt) {
    runtime::NamedLogger log("kopf.activities." + activity);
    std::optional<std::string> first_failure;
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
            const auto invoke = [&] { loop::run_to_completion(io, executor, handler.fn(ctx)); };
            const ActivityOutcome outcome = attempt_activity(handler, ctx, settings, log, invoke);
            if (outcome.final) {
                if (outcome.failure && !first_failure) first_failure = outcome.failure;
                break;
            }
            sleep_unless(io, outcome.delay, interrupt);
            if (interrupt && *interrupt) return false;
        }
    }
    // As Kopf: every handler has its turn; the first failure is the one reported.
    if (first_failure) {
        throw runtime::StartupError(
            fmt::format("The {} activity has failed: {}", activity, *first_failure));
    }
    return true;
}

LoginPause pause_thread_unless(const std::atomic<bool>& stopping) {
    return [&stopping](double seconds) {
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(std::max(0.0, seconds)));
        while (!stopping && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return !stopping;
    };
}

// Login: the registered login handlers, else Kopf's built-ins (in-cluster, then kubeconfig).
// Returns nothing when no credentials could be found.
namespace {

Task<void> log_in_with(const ActivityHandler& handler, ActivityContext& ctx,
                       std::shared_ptr<ConnectionInfo>& info) {
    auto logging_in = handler.login(ctx);
    info = co_await std::move(logging_in);
}

}  // namespace

LoginRunner run_on_loop_and_wait(loop::LoopExecutor& executor) {
    return [&executor](Task<void> task) {
        auto finished = std::make_shared<std::promise<void>>();
        auto result = finished->get_future();
        auto held = std::make_shared<Task<void>>(std::move(task));
        executor.post([&executor, held, finished] {
            kopf::start_detached(executor, std::move(*held), [finished](std::exception_ptr e) {
                if (e) {
                    finished->set_exception(e);
                } else {
                    finished->set_value();
                }
            });
        });
        result.get();
    };
}

std::map<std::string, ConnectionInfo> try_login(const Registry& registry, const RunOptions& options,
                                                OperatorSettings& settings, Memo& memo,
                                                const LoginPause& pause, const LoginRunner& run) {
    runtime::NamedLogger log("kopf.activities.authentication");
    std::map<std::string, ConnectionInfo> collected;
    std::optional<std::string> first_failure;
    bool any_login_handler = false;
    for (const auto& handler : registry.activities) {
        if (handler.activity != "login" || !handler.login) continue;
        any_login_handler = true;
        const auto started = std::chrono::system_clock::now();
        for (int retry = 0;; ++retry) {
            ActivityContext ctx{settings,
                                memo,
                                log,
                                "login",
                                retry,
                                started,
                                std::chrono::system_clock::now() - started,
                                handler.options.param};
            std::shared_ptr<ConnectionInfo> info;
            const auto invoke = [&] { run(log_in_with(handler, ctx, info)); };
            const ActivityOutcome outcome = attempt_activity(handler, ctx, settings, log, invoke);
            if (!outcome.final) {
                if (!pause(outcome.delay)) return {};
                continue;
            }
            if (outcome.failure) {
                if (!first_failure) first_failure = outcome.failure;
            } else if (info) {
                collected.insert_or_assign(handler.id, std::move(*info));
            }
            break;
        }
    }
    // As Kopf: the login handlers must all succeed (returning nothing is a success).
    if (first_failure) {
        throw runtime::StartupError(
            fmt::format("The login activity has failed: {}", *first_failure));
    }
    if (!any_login_handler) {
        if (auto info = kopf::login_with_service_account()) {
            collected.emplace("login_with_service_account", std::move(*info));
        } else {
            try {
                if (auto found = kopf::login_with_kubeconfig(options.context))
                    collected.emplace("login_with_kubeconfig", std::move(*found));
            } catch (const std::exception& error) {
                throw runtime::StartupError(
                    fmt::format("Cannot log in with the kubeconfig: {}", error.what()));
            }
        }
    }
    return collected;
}

std::optional<std::map<std::string, ConnectionInfo>> login(
    const Registry& registry, const RunOptions& options, OperatorSettings& settings, Memo& memo,
    asio::io_context& io, loop::LoopExecutor& executor, const std::atomic<bool>& stopping) {
    runtime::NamedLogger log("kopf.activities.authentication");
    log.info("Initial authentication has been initiated.");
    const LoginPause pause = [&io, &stopping](double seconds) {
        sleep_unless(io, seconds, &stopping);
        return !stopping;
    };
    const LoginRunner run = [&io, &executor](Task<void> task) {
        loop::run_to_completion(io, executor, std::move(task));
    };
    auto collected = try_login(registry, options, settings, memo, pause, run);
    if (stopping) return std::nullopt;
    if (collected.empty()) {
        throw runtime::StartupError(
            "Ran out of valid credentials: no kubeconfig was found ($KUBECONFIG or "
            "~/.kube/config) and this is not a pod with a service account. Point KUBECONFIG at a "
            "kubeconfig (e.g. the one `kopf apiserver --kubeconfig-out FILE` writes), or declare "
            "a kopf::on::login handler.");
    }
    log.info("Initial authentication has finished.");
    return collected;
}

}  // namespace kopf::engines
