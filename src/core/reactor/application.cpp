#include "core/reactor/application.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "core/actions/logging.hpp"
#include "loop/asio_bridge.hpp"
#include "structs/bodies.hpp"

namespace asio = boost::asio;

namespace kopf::runtime {

using structs::metadata_field;

const structs::Resource* ApiPatchApplier::served_resource(const kopf::Resource& resource) const {
    for (const auto& [name, r] : insights.served) {
        if (r.group == resource.group && r.version == resource.version &&
            r.plural == resource.plural) {
            return &r;
        }
    }
    return nullptr;
}

Task<reactor::PatchResult> ApiPatchApplier::write(const kopf::Resource& resource, const json& body,
                                                  clients::PatchType type, const json& patch,
                                                  bool status) {
    reactor::PatchResult result;
    try {
        // The served description is read only while the request is built, before any
        // suspension (it has a set of verbs: copying it was 18 allocations per patch).
        const structs::Resource* served_as = served_resource(resource);
        const structs::Resource unserved =
            served_as ? structs::Resource() : structs::from_public(resource);
        const std::string namespace_ = metadata_field(body, "namespace");
        const std::string name = metadata_field(body, "name");
        const std::string subresource = status ? "status" : "";
        auto patching = api.patch_version(served_as ? *served_as : unserved, namespace_, name, type,
                                          patch, subresource);
        auto awaiter = loop::on_loop(io, std::move(patching));
        clients::PatchedVersion patched = co_await awaiter;
        result.resource_version = std::move(patched.resource_version);
        result.object = std::move(patched.object);
    } catch (const clients::NotFoundError&) {
        result.found = false;
    } catch (const clients::UnprocessableEntityError&) {
        if (type != clients::PatchType::Json) throw;
        result.conflict = true;
    } catch (const clients::ConflictError&) {
        if (type != clients::PatchType::Json) throw;
        result.conflict = true;
    }
    co_return result;
}

Task<reactor::PatchResult> ApiPatchApplier::merge_patch(const kopf::Resource& resource,
                                                        const json& body, const json& patch,
                                                        bool status) {
    return write(resource, body, clients::PatchType::Merge, patch, status);
}

Task<reactor::PatchResult> ApiPatchApplier::json_patch(const kopf::Resource& resource,
                                                       const json& body, const json& ops,
                                                       bool status) {
    return write(resource, body, clients::PatchType::Json, ops, status);
}

Task<std::optional<json>> ApiPatchApplier::read(const kopf::Resource& resource, const json& body) {
    const structs::Resource* served_as = served_resource(resource);
    structs::Resource target = served_as ? *served_as : structs::from_public(resource);
    try {
        auto getting = api.get(std::move(target), metadata_field(body, "namespace"),
                               metadata_field(body, "name"));
        auto awaiter = loop::on_loop(io, std::move(getting));
        co_return co_await awaiter;
    } catch (const clients::NotFoundError&) {
        co_return std::nullopt;
    }
}

void ApiPatchApplier::touch(const structs::Resource& resource, const json& body) {
    json patch = reactor::touch_patch(settings, body, actions::Clock::now());
    // With a status subresource, the server drops status fields from a patch of the
    // object: a dummy kept in the status (StatusProgressStorage) goes to /status.
    if (resource.subresources.count("status") && patch.contains("status")) {
        json status_patch = {{"status", std::move(patch["status"])}};
        patch.erase("status");
        send_touch(resource, body, std::move(status_patch), "status");
    }
    if (!patch.empty()) send_touch(resource, body, std::move(patch), "");
}

void ApiPatchApplier::send_touch(const structs::Resource& resource, const json& body, json patch,
                                 std::string subresource) {
    asio::co_spawn(
        io,
        api.patch(resource, metadata_field(body, "namespace"), metadata_field(body, "name"),
                  clients::PatchType::Merge, std::move(patch), std::move(subresource)),
        [](std::exception_ptr error, json) {
            if (!error) return;
            try {
                std::rethrow_exception(error);
            } catch (const clients::NotFoundError&) {
            } catch (const std::exception& e) {
                logger("kopf.reactor.processing")->warn("Touching failed: {}", e.what());
            }
        });
}

}  // namespace kopf::runtime
