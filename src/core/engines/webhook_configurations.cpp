#include "core/engines/webhook_configurations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
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
    std::optional<WebhookClientConfig> config;  // the last one applied (or being applied)
    int busy = 0;
    std::vector<std::function<void()>> idle;  // waiting for the work in progress to end
    runtime::NamedLogger log{"kopf.engines.admission"};

    Impl(asio::io_context& io, clients::ApiClient& api, const Registry& registry, std::string name)
        : io(io), api(api), registry(registry), name(std::move(name)) {}

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

    void start(WebhookClientConfig client_config, bool persistent_only) {
        ++busy;
        asio::co_spawn(
            io, apply_all(std::move(client_config), persistent_only),
            [this, self = shared_from_this(), persistent_only](std::exception_ptr error) {
                if (error) {
                    log.error("{} the webhook configurations {} failed: {}",
                              persistent_only ? "Cleaning up" : "Configuring", name,
                              runtime::describe(error));
                }
                if (--busy == 0) {
                    auto waiting = std::move(idle);
                    idle.clear();
                    for (auto& fn : waiting) fn();
                }
            });
    }
};

WebhookConfigurations::WebhookConfigurations(asio::io_context& io, clients::ApiClient& api,
                                             const Registry& registry, std::string name)
    : impl_(std::make_shared<Impl>(io, api, registry, std::move(name))) {}

WebhookConfigurations::~WebhookConfigurations() = default;

void WebhookConfigurations::configure(const WebhookClientConfig& config) {
    impl_->config = config;
    impl_->start(config, false);
}

void WebhookConfigurations::clean_up(std::function<void()> done) {
    auto& impl = *impl_;
    auto after = [impl = impl_, done = std::move(done)]() mutable {
        if (!impl->config) {
            done();
            return;
        }
        impl->idle.push_back(std::move(done));
        impl->start(*impl->config, true);
    };
    if (impl.busy > 0) {
        impl.idle.push_back(std::move(after));
    } else {
        after();
    }
}

}  // namespace kopf::engines
