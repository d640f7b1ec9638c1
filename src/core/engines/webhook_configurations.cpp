#include "core/engines/webhook_configurations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>

#include "clients/api.hpp"
#include "clients/errors.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/admission.hpp"
#include "structs/references.hpp"

namespace asio = boost::asio;

namespace kopf::engines {

struct WebhookConfigurations::Impl : std::enable_shared_from_this<WebhookConfigurations::Impl> {
    asio::io_context& io;
    clients::ApiClient& api;
    const Registry& registry;
    std::string name;
    std::vector<double> backoffs;               // between failed attempts; the last repeats
    std::optional<WebhookClientConfig> config;  // the one to apply (the last one given)
    bool dirty = false;    // `config` (or the served resources) changed since the last attempt
    bool working = false;  // the worker runs (one at a time: the attempts do not interleave)
    bool closing = false;  // the operator exits: no more attempts
    std::optional<asio::steady_timer> pause;  // between failed attempts
    std::vector<std::function<void()>> idle;  // waiting for the worker to end
    runtime::NamedLogger log{"kopf.engines.admission"};

    Impl(asio::io_context& io, clients::ApiClient& api, const Registry& registry, std::string name,
         std::vector<double> backoffs)
        : io(io),
          api(api),
          registry(registry),
          name(std::move(name)),
          backoffs(backoffs.empty() ? std::vector<double>{1} : std::move(backoffs)) {}

    static const char* plural_of(WebhookType type) {
        return type == WebhookType::VALIDATING ? "validatingwebhookconfigurations"
                                               : "mutatingwebhookconfigurations";
    }
    static const char* kind_of(WebhookType type) {
        return type == WebhookType::VALIDATING ? "ValidatingWebhookConfiguration"
                                               : "MutatingWebhookConfiguration";
    }

    // Puts the webhooks of one type into its configuration (created first if absent).
    asio::awaitable<void> apply(WebhookType type, WebhookClientConfig client_config,
                                bool persistent_only) {
        const auto found = co_await api.discover();
        const structs::Selector selector("admissionregistration.k8s.io", "v1", plural_of(type));
        const auto resource = selector.select_one(found);
        if (!resource) {
            throw std::runtime_error(fmt::format(
                "The cluster serves no {}.admissionregistration.k8s.io/v1.", plural_of(type)));
        }
        // The served resources that the handlers of this type select.
        std::vector<kopf::Resource> resources;
        for (const auto& handler : registry.webhooks) {
            if (handler.type != type) continue;
            for (const auto& r : structs::from_public(handler.selector).select(found)) {
                auto pub = structs::to_public(r);
                if (std::find(resources.begin(), resources.end(), pub) == resources.end())
                    resources.push_back(std::move(pub));
            }
        }
        if (!persistent_only) {
            // Named first: no initializer-list temporaries inside co_await (g++ 12).
            json skeleton = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                             {"kind", kind_of(type)},
                             {"metadata", {{"name", name}}}};
            try {
                co_await api.create(*resource, "", std::move(skeleton));
            } catch (const clients::ConflictError&) {
                // It exists already: patched below.
            } catch (const clients::ForbiddenError&) {
                log.error("Not enough RBAC permissions to create a {}.", kind_of(type));
                throw;
            }
        }
        json patch = json::object();
        patch["webhooks"] = build_webhooks(registry.webhooks, type, resources, name, client_config,
                                           persistent_only);
        co_await api.patch(*resource, "", name, clients::PatchType::Merge, std::move(patch));
    }

    asio::awaitable<void> apply_all(WebhookClientConfig client_config, bool persistent_only) {
        if (persistent_only) log.info("Cleaning up the admission webhook {}.", name);
        static constexpr WebhookType types[] = {WebhookType::VALIDATING, WebhookType::MUTATING};
        for (const auto type : types) {
            if (!persistent_only) {
                log.info("Reconfiguring the {} webhook {}.", to_string(type), name);
            }
            co_await apply(type, client_config, persistent_only);
        }
    }

    // Applies the latest config until it is applied, pausing between failed attempts (a
    // failure of the API — 403, 422, 5xx after the client's own retries — must not leave the
    // webhooks stale for the rest of the run, nor stop the operator).
    asio::awaitable<void> work() {
        std::size_t failures = 0;
        while (dirty && !closing) {
            dirty = false;
            try {
                co_await apply_all(*config, false);
                failures = 0;
                continue;
            } catch (const std::exception& error) {
                const double delay = backoffs[std::min(failures, backoffs.size() - 1)];
                ++failures;
                log.error(
                    "Configuring the webhook configurations {} failed; retrying in {} "
                    "seconds: {}",
                    name, delay, error.what());
                dirty = true;
                pause.emplace(io, std::chrono::duration_cast<asio::steady_timer::duration>(
                                      std::chrono::duration<double>(delay)));
            }
            // A new config or the exit cuts the pause short.
            auto [ignored] = co_await pause->async_wait(asio::as_tuple(asio::use_awaitable));
            (void)ignored;
            pause.reset();
        }
    }

    void kick() {
        if (working) {
            if (pause) pause->cancel();  // retry at once with what is new
            return;
        }
        working = true;
        asio::co_spawn(io, work(), [self = shared_from_this()](std::exception_ptr error) {
            if (error) {
                self->log.error("Configuring the webhook configurations {} failed: {}", self->name,
                                runtime::describe(error));
            }
            self->working = false;
            auto waiting = std::move(self->idle);
            self->idle.clear();
            for (auto& fn : waiting) fn();
        });
    }

    // Once, at the exit (after the worker has ended): only the persistent webhooks stay.
    void clean_up(std::function<void()> done) {
        asio::co_spawn(
            io, apply_all(*config, true),
            [self = shared_from_this(), done = std::move(done)](std::exception_ptr error) {
                if (error) {
                    self->log.error(
                        "Cleaning up the webhook configurations {} failed: "
                        "{}",
                        self->name, runtime::describe(error));
                }
                done();
            });
    }
};

WebhookConfigurations::WebhookConfigurations(asio::io_context& io, clients::ApiClient& api,
                                             const Registry& registry, std::string name,
                                             std::vector<double> backoffs)
    : impl_(std::make_shared<Impl>(io, api, registry, std::move(name), std::move(backoffs))) {}

WebhookConfigurations::~WebhookConfigurations() = default;

void WebhookConfigurations::configure(const WebhookClientConfig& config) {
    impl_->config = config;
    reconfigure();
}

void WebhookConfigurations::reconfigure() {
    if (!impl_->config || impl_->closing) return;
    impl_->dirty = true;
    impl_->kick();
}

void WebhookConfigurations::clean_up(std::function<void()> done) {
    auto& impl = *impl_;
    impl.closing = true;
    auto after = [impl = impl_, done = std::move(done)]() mutable {
        if (!impl->config) {
            done();
            return;
        }
        impl->clean_up(std::move(done));
    };
    if (impl.working) {
        if (impl.pause) impl.pause->cancel();
        impl.idle.push_back(std::move(after));
    } else {
        after();
    }
}

}  // namespace kopf::engines
