// Creating and deleting objects (Kopf's clients/creating.py; Kopf itself deletes nothing, the
// operator's own code does): POST of a new object, DELETE with DeleteOptions.
#include <string>

#include "clients/api.hpp"
#include "clients/api_impl.hpp"

namespace kopf::clients {

using structs::Resource;

Awaitable<json> ApiClient::create(Resource resource, std::string namespace_, json body) {
    std::string ns = namespace_;
    if (ns.empty() && resource.namespaced && body.contains("metadata") &&
        body["metadata"].is_object()) {
        ns = body["metadata"].value("namespace", "");
    }
    co_return co_await impl_->call("POST", resource.path(ns, "", "", impl_->write_params()), body,
                                   "application/json");
}

Awaitable<json> ApiClient::remove(Resource resource, std::string namespace_, std::string name,
                                  DeleteOptions options) {
    json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (options.propagation_policy) body["propagationPolicy"] = *options.propagation_policy;
    if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
    co_return co_await impl_->call("DELETE", resource.path(namespace_, name), body,
                                   "application/json");
}

}  // namespace kopf::clients
