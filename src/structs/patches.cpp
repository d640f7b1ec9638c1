// The patch object: merge-patch part plus transformations turned into a guarded JSON patch.
#include <kopf/patch.hpp>

namespace kopf {

json Patch::build_json_patch(const json& body) const {
    if (fns.empty()) return json::array();
    json target = body;
    for (const auto& fn : fns) fn(target);
    json ops = json::diff(body, target);
    if (ops.empty()) return json::array();
    // Appends get explicit indexes ("/finalizers/1", not "/finalizers/-"), as Kopf's jsonpatch
    // library produces them; the intermediate document tells the index.
    json current = body;
    for (auto& op : ops) {
        auto path = op["path"].get<std::string>();
        if (path.size() >= 2 && path.compare(path.size() - 2, 2, "/-") == 0) {
            auto parent = json::json_pointer(path.substr(0, path.size() - 2));
            if (current.contains(parent) && current[parent].is_array())
                op["path"] =
                    path.substr(0, path.size() - 1) + std::to_string(current[parent].size());
        }
        current = current.patch(json::array({op}));
    }
    json guarded = json::array();
    auto rv =
        body.contains("metadata") ? body["metadata"].value("resourceVersion", json()) : json();
    if (!rv.is_null()) {
        guarded.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", rv}});
    }
    for (auto& op : ops) guarded.push_back(op);
    return guarded;
}

}  // namespace kopf
