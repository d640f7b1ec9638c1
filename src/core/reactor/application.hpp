// Applying the processing's writes to the API (the writes of Kopf's actions/application.py;
// the order of its apply() is reactor::apply_outcome in processing.cpp): the patches of the
// handlers, daemons and timers, and the touch-dummies that provoke a new watch event. The
// served description of a resource (its subresources) comes from the observation's insights.
#pragma once

#include <kopf/json.hpp>
#include <kopf/resource.hpp>
#include <kopf/settings.hpp>
#include <kopf/task.hpp>
#include <string>

#include "clients/api.hpp"
#include "core/reactor/observation.hpp"
#include "core/reactor/processing.hpp"
#include "structs/references.hpp"

namespace boost::asio {
class io_context;
}

namespace kopf::runtime {

class ApiPatchApplier final : public reactor::PatchApplier {
  public:
    ApiPatchApplier(boost::asio::io_context& io, clients::ApiClient& api,
                    const OperatorSettings& settings, const Insights& insights)
        : io(io), api(api), settings(settings), insights(insights) {}

    Task<reactor::PatchResult> merge_patch(const kopf::Resource& resource, const json& body,
                                           const json& patch, bool status) override;
    Task<reactor::PatchResult> json_patch(const kopf::Resource& resource, const json& body,
                                          const json& ops, bool status) override;
    Task<std::optional<json>> read(const kopf::Resource& resource, const json& body) override;

    // Kopf's touch-dummy: patches the object (a dummy kept in the status to /status) to provoke
    // a watch event; in the background, a failure is logged, a gone object ignored.
    void touch(const structs::Resource& resource, const json& body);

  private:
    const structs::Resource* served_resource(const kopf::Resource& resource) const;
    Task<reactor::PatchResult> write(const kopf::Resource& resource, const json& body,
                                     clients::PatchType type, const json& patch, bool status);
    void send_touch(const structs::Resource& resource, const json& body, json patch,
                    std::string subresource);

    boost::asio::io_context& io;
    clients::ApiClient& api;
    const OperatorSettings& settings;
    const Insights& insights;
};

}  // namespace kopf::runtime
