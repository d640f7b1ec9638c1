// Scanning (Kopf's clients/scanning.py): the server's version and the discovery of its
// resources from /api and /apis, group version by group version.
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "clients/api.hpp"
#include "clients/api_impl.hpp"

namespace kopf::clients {

using structs::Resource;

Awaitable<json> ApiClient::read_version() {
    co_return co_await impl_->call("GET", "/version", std::nullopt, "");
}

Awaitable<std::string> ApiClient::read_server_certificate() {
    const structs::VaultItem item = co_await impl_->credentials();
    co_return co_await impl_->transport.server_certificate(*item.info, impl_->timeouts());
}

Awaitable<std::vector<Resource>> ApiClient::discover() {
    std::vector<Resource> resources;
    auto scan = [&](std::string path, const std::string& group, const std::string& version,
                    bool preferred) -> Awaitable<void> {
        try {
            auto list = co_await impl_->call("GET", path, std::nullopt, "");
            auto found = structs::parse_api_resource_list(list, group, version, preferred);
            resources.insert(resources.end(), found.begin(), found.end());
        } catch (const NotFoundError&) {
            spdlog::debug("Discovery: {} is not served (404); skipped.", path);
        }
    };
    auto core = co_await impl_->call("GET", "/api", std::nullopt, "");
    if (core.is_object() && core.contains("versions") && core["versions"].is_array()) {
        bool first = true;
        for (const auto& version : core["versions"]) {
            if (!version.is_string()) continue;
            co_await scan("/api/" + version.get<std::string>(), "", version.get<std::string>(),
                          first);
            first = false;
        }
    }
    auto groups = co_await impl_->call("GET", "/apis", std::nullopt, "");
    if (groups.is_object() && groups.contains("groups") && groups["groups"].is_array()) {
        for (const auto& group : groups["groups"]) {
            std::string name = group.value("name", "");
            std::string preferred =
                group.value("preferredVersion", json::object()).value("version", "");
            for (const auto& version : group.value("versions", json::array())) {
                std::string v = version.value("version", "");
                if (name.empty() || v.empty()) continue;
                co_await scan("/apis/" + name + "/" + v, name, v,
                              preferred.empty() || v == preferred);
            }
        }
    }
    co_return resources;
}

}  // namespace kopf::clients
