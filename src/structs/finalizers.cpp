#include "structs/finalizers.hpp"

#include <algorithm>

namespace kopf::finalizers {

bool is_deletion_ongoing(const json& body) {
    const auto m = body.find("metadata");
    if (m == body.end() || !m->is_object()) return false;
    auto ts = m->find("deletionTimestamp");
    return ts != m->end() && !ts->is_null();
}

bool is_deletion_blocked(const json& body, const std::string& finalizer) {
    const auto m = body.find("metadata");
    if (m == body.end() || !m->is_object()) return false;
    auto f = m->find("finalizers");
    if (f == m->end() || !f->is_array()) return false;
    return std::find(f->begin(), f->end(), json(finalizer)) != f->end();
}

void block_deletion(json& body, const std::string& finalizer) {
    if (is_deletion_blocked(body, finalizer)) return;
    auto& list = body["metadata"]["finalizers"];
    if (!list.is_array()) list = json::array();
    list.push_back(finalizer);
}

void allow_deletion(json& body, const std::string& finalizer) {
    if (!is_deletion_blocked(body, finalizer)) return;
    auto& meta = body["metadata"];
    auto& list = meta["finalizers"];
    list.erase(std::remove(list.begin(), list.end(), json(finalizer)), list.end());
    if (list.empty()) meta.erase("finalizers");
}

}  // namespace kopf::finalizers
