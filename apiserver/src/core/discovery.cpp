// Legacy discovery documents (/api, /apis, ...) and OpenAPI v3 documents built
// from the catalog, so Kopf, kubectl and the Python client find every resource.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

json sub_entry(const Resource& res, const std::string& sub, const std::vector<std::string>& verbs) {
    return {{"name", res.plural + "/" + sub},
            {"singularName", ""},
            {"namespaced", res.namespaced},
            {"kind", res.kind},
            {"verbs", verbs}};
}

std::string schema_name(const Resource& res, const std::string& version) {
    if (res.group.empty()) return "io.k8s.api.core.v1." + res.kind;
    if (res.builtin) {
        std::string g = res.group.substr(0, res.group.find('.'));
        return "io.k8s.api." + g + "." + version + "." + res.kind;
    }
    // Reverse-domain notation as the reference uses for CRDs: com.example.v1.Widget.
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        auto dot = res.group.find('.', start);
        parts.push_back(res.group.substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    std::string out;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += *it + ".";
    return out + version + "." + res.kind;
}

// Splits `text` at `separator`, trimming blanks around each part.
std::vector<std::string> split_trimmed(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        std::size_t end = text.find(separator, start);
        std::string part = text.substr(start, end == std::string::npos ? end : end - start);
        auto first = part.find_first_not_of(" \t");
        auto last = part.find_last_not_of(" \t");
        parts.push_back(first == std::string::npos ? "" : part.substr(first, last - first + 1));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

// The apidiscovery.k8s.io version that the Accept header prefers ("v2" or "v2beta1"), or ""
// when it prefers (or only allows) the legacy documents. Media ranges count in their order.
std::string aggregated_discovery_version(const std::string& accept) {
    if (accept.empty()) return "";
    for (const auto& range : split_trimmed(accept, ',')) {
        auto params = split_trimmed(range, ';');
        std::string type = lower(params[0]);
        std::map<std::string, std::string> values;
        for (std::size_t i = 1; i < params.size(); ++i) {
            auto eq = params[i].find('=');
            if (eq != std::string::npos)
                values[lower(params[i].substr(0, eq))] = params[i].substr(eq + 1);
        }
        if (type == "application/json" && values.count("g")) {
            std::string version = values["v"];
            if (values["g"] == "apidiscovery.k8s.io" && values["as"] == "APIGroupDiscoveryList" &&
                (version == "v2" || version == "v2beta1"))
                return version;
            continue;  // another shape (e.g. a Table): not for discovery
        }
        if (type == "application/json" || type == "application/*" || type == "*/*") return "";
    }
    return "";
}

// A strong ETag of a discovery document: FNV-1a 64 of its bytes, as hex.
std::string etag_of(const std::string& body) {
    uint64_t hash = 14695981039346656037ull;
    for (unsigned char c : body) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    char text[24];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return std::string("\"") + text + "\"";
}

json response_kind(const std::string& group, const std::string& version, const std::string& kind) {
    return {{"group", group}, {"version", version}, {"kind", kind}};
}

}  // namespace

json Engine::aggregated_discovery(bool core_group, const std::string& api_version) const {
    auto groups = served_groups();
    auto versions_of = [&](const std::string& group) {
        json versions = json::array();
        for (const auto& version : groups[group]) {
            json resources = json::array();
            for (const auto& res : all_resources()) {
                if (res->group != group) continue;
                const ResourceVersion* v = res->version(version);
                if (!v || !v->served) continue;
                // Built-ins answer in their own group-version (the reference leaves it empty);
                // CRDs name theirs in full.
                std::string kind_group = res->builtin ? "" : group;
                std::string kind_version = res->builtin ? "" : version;
                json entry = {{"resource", res->plural},
                              {"singularResource", res->singular},
                              {"scope", res->namespaced ? "Namespaced" : "Cluster"},
                              {"responseKind", response_kind(kind_group, kind_version, res->kind)},
                              {"verbs", res->verbs}};
                if (!res->short_names.empty()) entry["shortNames"] = res->short_names;
                if (!res->categories.empty()) entry["categories"] = res->categories;
                json subresources = json::array();
                json read_write = {"get", "patch", "update"};
                if (v->status_subresource)
                    subresources.push_back(
                        {{"subresource", "status"},
                         {"responseKind", response_kind(kind_group, kind_version, res->kind)},
                         {"verbs", read_write}});
                if (!v->scale.is_null())
                    subresources.push_back(
                        {{"subresource", "scale"},
                         {"responseKind", response_kind("autoscaling", "v1", "Scale")},
                         {"verbs", read_write}});
                for (const auto& [sub, verbs] : res->extra_subresources)
                    subresources.push_back(
                        {{"subresource", sub},
                         {"responseKind", response_kind(kind_group, kind_version, res->kind)},
                         {"verbs", verbs}});
                if (!subresources.empty()) entry["subresources"] = std::move(subresources);
                resources.push_back(std::move(entry));
            }
            versions.push_back(
                {{"version", version}, {"freshness", "Current"}, {"resources", resources}});
        }
        return versions;  // preferred version first
    };
    json items = json::array();
    if (core_group) {
        items.push_back({{"metadata", {{"name", ""}}}, {"versions", versions_of("")}});
    } else {
        std::set<std::string> done;  // built-in groups first, then CRD groups in name order
        for (const auto& res : all_resources()) {
            if (res->group.empty() || done.count(res->group) || !groups.count(res->group)) continue;
            done.insert(res->group);
            items.push_back(
                {{"metadata", {{"name", res->group}}}, {"versions", versions_of(res->group)}});
        }
    }
    return {{"kind", "APIGroupDiscoveryList"},
            {"apiVersion", "apidiscovery.k8s.io/" + api_version},
            {"metadata", json::object()},
            {"items", std::move(items)}};
}

json Engine::resource_list(const std::string& group, const std::string& version) const {
    json resources = json::array();
    for (const auto& res : all_resources()) {
        if (res->group != group) continue;
        const ResourceVersion* v = res->version(version);
        if (!v || !v->served) continue;
        json entry = {{"name", res->plural},
                      {"singularName", res->singular},
                      {"namespaced", res->namespaced},
                      {"kind", res->kind},
                      {"verbs", res->verbs}};
        if (!res->short_names.empty()) entry["shortNames"] = res->short_names;
        if (!res->categories.empty()) entry["categories"] = res->categories;
        resources.push_back(entry);
        if (v->status_subresource)
            resources.push_back(sub_entry(*res, "status", {"get", "patch", "update"}));
        if (!v->scale.is_null()) {
            json s = sub_entry(*res, "scale", {"get", "patch", "update"});
            s["group"] = "autoscaling";
            s["version"] = "v1";
            s["kind"] = "Scale";
            resources.push_back(s);
        }
        for (const auto& [sub, verbs] : res->extra_subresources)
            resources.push_back(sub_entry(*res, sub, verbs));
    }
    json list = {{"kind", "APIResourceList"},
                 {"groupVersion", group.empty() ? version : group + "/" + version},
                 {"resources", resources}};
    if (!group.empty()) list["apiVersion"] = "v1";
    return list;
}

std::map<std::string, std::vector<std::string>> Engine::served_groups() const {
    std::map<std::string, std::vector<std::string>> groups;
    for (const auto& res : all_resources()) {
        for (const auto& v : res->versions) {
            if (!v.served) continue;
            auto& list = groups[res->group];
            if (std::find(list.begin(), list.end(), v.name) == list.end()) list.push_back(v.name);
        }
    }
    for (auto& [g, versions] : groups)
        std::sort(versions.begin(), versions.end(), [](const auto& a, const auto& b) {
            return kube_version_priority_compare(a, b) < 0;
        });
    return groups;
}

HttpResponse Engine::discovery(const std::vector<std::string>& seg, const HttpRequest& request) {
    if (seg.size() == 1) {
        if (std::string v = aggregated_discovery_version(request.accept); !v.empty()) {
            HttpResponse r;
            r.body = aggregated_discovery(seg[0] == "api", v).dump();
            r.content_type =
                "application/json;g=apidiscovery.k8s.io;v=" + v + ";as=APIGroupDiscoveryList";
            std::string etag = etag_of(r.body);
            r.headers = {{"ETag", etag}, {"Vary", "Accept"}, {"Cache-Control", "public"}};
            if (request.if_none_match == etag) {
                r.status = 304;
                r.body.clear();
            }
            return r;
        }
    }
    auto groups = served_groups();
    auto group_json = [](const std::string& name, const std::vector<std::string>& versions) {
        json vs = json::array();
        for (const auto& v : versions)
            vs.push_back({{"groupVersion", name + "/" + v}, {"version", v}});
        return json{{"name", name}, {"versions", vs}, {"preferredVersion", vs.front()}};
    };
    if (seg.size() == 1 && seg[0] == "api") {
        json addr = json::array();
        addr.push_back({{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", options_.server_address}});
        return json_response(
            {{"kind", "APIVersions"}, {"versions", {"v1"}}, {"serverAddressByClientCIDRs", addr}});
    }
    if (seg.size() == 2 && seg[0] == "api") {
        if (seg[1] != "v1") throw page_not_found();
        return json_response(resource_list("", "v1"));
    }
    if (seg.size() == 1) {  // /apis: built-in groups first, then CRD groups in name order
        json list = json::array();
        std::set<std::string> done;
        for (const auto& res : all_resources()) {
            if (res->group.empty() || done.count(res->group) || !groups.count(res->group)) continue;
            done.insert(res->group);
            list.push_back(group_json(res->group, groups[res->group]));
        }
        return json_response({{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}});
    }
    auto it = groups.find(seg[1]);
    if (seg[1].empty() || it == groups.end()) throw page_not_found();
    if (seg.size() == 2) {
        json g = group_json(seg[1], it->second);
        g["kind"] = "APIGroup";
        g["apiVersion"] = "v1";
        return json_response(g);
    }
    if (std::find(it->second.begin(), it->second.end(), seg[2]) == it->second.end())
        throw page_not_found();
    return json_response(resource_list(seg[1], seg[2]));
}

namespace {

json gvk(const Resource& res, const std::string& version) {
    return {{"group", res.group}, {"version", version}, {"kind", res.kind}};
}

json operation(const Resource& res, const std::string& version, const std::string& action,
               const std::string& id, bool with_body, const std::string& ref) {
    json params = json::array();
    if (with_body) {
        params.push_back({{"name", "dryRun"}, {"in", "query"}, {"schema", {{"type", "string"}}}});
        params.push_back(
            {{"name", "fieldManager"}, {"in", "query"}, {"schema", {{"type", "string"}}}});
        params.push_back(
            {{"name", "fieldValidation"}, {"in", "query"}, {"schema", {{"type", "string"}}}});
    }
    json op = {{"operationId", id},
               {"parameters", params},
               {"x-kubernetes-action", action},
               {"x-kubernetes-group-version-kind", gvk(res, version)},
               {"responses",
                {{"200",
                  {{"description", "OK"},
                   {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}}}}}};
    if (action == "patch") {
        json content = json::object();
        for (const char* t : {"application/json-patch+json", "application/merge-patch+json",
                              "application/apply-patch+yaml"})
            content[t] = {{"schema", {{"type", "object"}}}};
        op["requestBody"] = {{"content", content}, {"required", true}};
    } else if (with_body) {
        op["requestBody"] = {{"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}},
                             {"required", true}};
    }
    return op;
}

}  // namespace

HttpResponse Engine::openapi(const std::vector<std::string>& seg) {
    // seg: ["openapi", "v3", ...]
    if (seg.size() < 2 || seg[1] != "v3") throw page_not_found();
    auto groups = served_groups();
    auto document = [&](const std::string& group, const std::string& version) {
        json paths = json::object();
        json schemas = json::object();
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"] = {
            {"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
        for (const auto& res : all_resources()) {
            if (res->group != group) continue;
            const ResourceVersion* v = res->version(version);
            if (!v || !v->served) continue;
            std::string prefix = group.empty() ? "/api/v1" : "/apis/" + group + "/" + version;
            std::string coll =
                prefix + (res->namespaced ? "/namespaces/{namespace}/" : "/") + res->plural;
            std::string name = schema_name(*res, version);
            std::string ref = "#/components/schemas/" + name;
            std::string id_base = res->kind + version;
            paths[coll] = {
                {"get", operation(*res, version, "list", "list" + id_base, false, ref)},
                {"post", operation(*res, version, "post", "create" + id_base, true, ref)}};
            paths[coll + "/{name}"] = {
                {"get", operation(*res, version, "get", "read" + id_base, false, ref)},
                {"put", operation(*res, version, "put", "replace" + id_base, true, ref)},
                {"patch", operation(*res, version, "patch", "patch" + id_base, true, ref)},
                {"delete", operation(*res, version, "delete", "delete" + id_base, false, ref)}};
            if (v->status_subresource)
                paths[coll + "/{name}/status"] = {
                    {"get",
                     operation(*res, version, "get", "read" + id_base + "Status", false, ref)},
                    {"patch",
                     operation(*res, version, "patch", "patch" + id_base + "Status", true, ref)}};
            json schema =
                v->schema.is_object()
                    ? v->schema
                    : json{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
            if (!schema.contains("properties")) schema["properties"] = json::object();
            schema["properties"]["apiVersion"] = {{"type", "string"}};
            schema["properties"]["kind"] = {{"type", "string"}};
            schema["properties"]["metadata"] = {
                {"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}};
            schema["x-kubernetes-group-version-kind"] = json::array({gvk(*res, version)});
            schemas[name] = schema;
        }
        return json{{"openapi", "3.0.0"},
                    {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                    {"paths", paths},
                    {"components", {{"schemas", schemas}}}};
    };
    auto hash_of = [](const json& doc) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%016zX", std::hash<std::string>{}(doc.dump()));
        return std::string(buf);
    };
    if (seg.size() == 2) {
        json paths = json::object();
        for (const auto& [g, versions] : groups)
            for (const auto& v : versions) {
                std::string key = g.empty() ? "api/" + v : "apis/" + g + "/" + v;
                paths[key] = {{"serverRelativeURL",
                               "/openapi/v3/" + key + "?hash=" + hash_of(document(g, v))}};
            }
        return json_response({{"paths", paths}});
    }
    std::string group, version;
    if (seg.size() == 4 && seg[2] == "api") {
        version = seg[3];
    } else if (seg.size() == 5 && seg[2] == "apis") {
        group = seg[3];
        version = seg[4];
    } else {
        throw page_not_found();
    }
    auto it = groups.find(group);
    if (it == groups.end() ||
        std::find(it->second.begin(), it->second.end(), version) == it->second.end())
        throw page_not_found();
    return json_response(document(group, version));
}

}  // namespace kopf::apiserver::core
