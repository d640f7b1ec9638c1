// Patching (Kopf's clients/patching.py): merge, JSON, strategic-merge patches and server-side
// apply, the version-only patch the operator's own writes use, and PUT (a full replacement,
// the other way to modify an existing object).
#include <optional>
#include <string>

#include "clients/api.hpp"
#include "clients/api_impl.hpp"

namespace kopf::clients {

using structs::Resource;

const char* content_type_of(PatchType type) {
    switch (type) {
        case PatchType::Merge:
            return "application/merge-patch+json";
        case PatchType::Json:
            return "application/json-patch+json";
        case PatchType::StrategicMerge:
            return "application/strategic-merge-patch+json";
        case PatchType::Apply:
            return "application/apply-patch+yaml";
    }
    return "application/merge-patch+json";
}

namespace {

Awaitable<PatchedVersion> version_of(Awaitable<HttpResponse> answer) {
    HttpResponse response = co_await std::move(answer);
    PatchedVersion patched{find_resource_version(response.body), std::move(response.body)};
    co_return patched;
}

}  // namespace

Awaitable<json> ApiClient::update(Resource resource, std::string namespace_, std::string name,
                                  json body, std::string subresource) {
    co_return co_await impl_->call(
        "PUT", resource.path(namespace_, name, subresource, impl_->write_params()), body,
        "application/json");
}

Awaitable<json> ApiClient::patch(Resource resource, std::string namespace_, std::string name,
                                 PatchType type, json patch, std::string subresource, bool force) {
    auto params = impl_->write_params();
    if (type == PatchType::Apply) {
        if (params.empty()) params.emplace_back("fieldManager", "kopf");
        if (force) params.emplace_back("force", "true");
    }
    co_return co_await impl_->call("PATCH", resource.path(namespace_, name, subresource, params),
                                   patch, content_type_of(type));
}

Awaitable<PatchedVersion> ApiClient::patch_version(const Resource& resource,
                                                   const std::string& namespace_,
                                                   const std::string& name, PatchType type,
                                                   const json& patch,
                                                   const std::string& subresource) {
    // Not a coroutine: the request is built now, so the patch is serialised, not copied.
    return version_of(impl_->send(Impl::make_request(
        "PATCH", resource.path(namespace_, name, subresource, impl_->write_params()), &patch,
        content_type_of(type))));
}

}  // namespace kopf::clients
