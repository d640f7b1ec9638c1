// Managed webhook configurations (Kopf's configuration managers in engines/admission.py): with
// `settings.admission.managed` set, the operator creates one ValidatingWebhookConfiguration
// and one MutatingWebhookConfiguration of that name if absent, fills their webhooks from its
// handlers whenever the webhook server says where it is reached, and at its exit leaves only
// the webhooks of persistent handlers.
#pragma once

#include <functional>
#include <kopf/registry.hpp>
#include <kopf/webhooks.hpp>
#include <memory>
#include <optional>
#include <string>

namespace boost::asio {
class io_context;
}
namespace kopf::clients {
class ApiClient;
}

namespace kopf::engines {

class WebhookConfigurations {
  public:
    /// `api` must outlive this object's work (the operator's client).
    WebhookConfigurations(boost::asio::io_context& io, clients::ApiClient& api,
                          const Registry& registry, std::string name);
    ~WebhookConfigurations();
    WebhookConfigurations(const WebhookConfigurations&) = delete;
    WebhookConfigurations& operator=(const WebhookConfigurations&) = delete;

    /// Creates the configurations if absent and puts the handlers' webhooks into them, reached
    /// as `config` says. On the loop; failures are logged (the webhooks stay as they were).
    void configure(const WebhookClientConfig& config);
    /// Leaves only the persistent handlers' webhooks, then calls `done` (on the loop); at once
    /// if the configurations were never configured.
    void clean_up(std::function<void()> done);

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::engines
