// Fetching (Kopf's clients/fetching.py): reading one object and listing a collection, the
// whole list or page by page (limit/continue).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "clients/api.hpp"
#include "clients/api_impl.hpp"

namespace kopf::clients {

using structs::Resource;

Awaitable<json> ApiClient::get(Resource resource, std::string namespace_, std::string name,
                               std::string subresource) {
    co_return co_await impl_->call("GET", resource.path(namespace_, name, subresource),
                                   std::nullopt, "");
}

Awaitable<std::string> ApiClient::list_pages(Resource resource, std::string namespace_,
                                             ListOptions options, std::size_t page_size,
                                             std::function<void(std::vector<json>&&)> on_page) {
    std::string continue_token;
    std::string resource_version;
    do {
        std::vector<std::pair<std::string, std::string>> params;
        if (page_size > 0) params.emplace_back("limit", std::to_string(page_size));
        if (!continue_token.empty()) params.emplace_back("continue", continue_token);
        if (!options.label_selector.empty())
            params.emplace_back("labelSelector", options.label_selector);
        if (!options.field_selector.empty())
            params.emplace_back("fieldSelector", options.field_selector);
        auto page = co_await impl_->call("GET", resource.path(namespace_, "", "", params),
                                         std::nullopt, "");
        if (!page.is_object() || !page.contains("items") || !page["items"].is_array()) {
            throw ApiError(
                200, json::object(), "GET " + resource.path(namespace_),
                fmt::format("Listing {} returned no 'items' array", resource.to_string()));
        }
        const json metadata = page.value("metadata", json::object());
        resource_version = metadata.value("resourceVersion", "");
        continue_token = metadata.value("continue", "");
        std::vector<json> items;
        items.reserve(page["items"].size());
        for (auto& item : page["items"]) items.push_back(std::move(item));
        page = nullptr;  // release the page before the caller works on the items
        on_page(std::move(items));
    } while (!continue_token.empty());
    co_return resource_version;
}

Awaitable<json> ApiClient::list(Resource resource, std::string namespace_, ListOptions options) {
    json items = json::array();
    auto collect = [&](std::vector<json>&& page) {
        for (auto& item : page) items.push_back(std::move(item));
    };
    auto listing = list_pages(resource, namespace_, options, 500, std::move(collect));
    auto version = co_await std::move(listing);
    co_return json{{"apiVersion", resource.api_version()},
                   {"kind", resource.kind + "List"},
                   {"metadata", {{"resourceVersion", version}}},
                   {"items", std::move(items)}};
}

}  // namespace kopf::clients
