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
#include <vector>

namespace boost::asio {
class io_context;
}
namespace kopf::clients {
class ApiClient;
}

namespace kopf::engines {

class WebhookConfigurations {
  public:
    /// `api` must outlive this object's work (the operator's client). `backoffs`: the pauses
    /// between failed attempts (settings.networking.error_backoffs; the last one repeats).
    WebhookConfigurations(boost::asio::io_context& io, clients::ApiClient& api,
                          const Registry& registry, std::string name,
                          std::vector<double> backoffs = {1});
    ~WebhookConfigurations();
    WebhookConfigurations(const WebhookConfigurations&) = delete;
    WebhookConfigurations& operator=(const WebhookConfigurations&) = delete;

    /// Creates the configurations if absent and puts the handlers' webhooks into them, reached
    /// as `config` says. On the loop; failures are logged and retried after a pause until they
    /// succeed (or the operator exits); a newer config replaces the one being retried.
    void configure(const WebhookClientConfig& config);
    /// The same again with the last config: the served resources have changed (CRDs created or
    /// deleted), and so have the handlers' rules. Nothing before the first `configure`.
    void reconfigure();
    /// Stops retrying, leaves only the persistent handlers' webhooks (one attempt), then calls
    /// `done` (on the loop); at once if the configurations were never configured.
    void clean_up(std::function<void()> done);

  private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace kopf::engines
