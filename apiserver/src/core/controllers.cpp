// In-process controllers that a real control plane runs beside the API server:
// CRD naming/establishing and instance cleanup, namespace deletion, garbage
// collection of ownerReferences (background, foreground, orphan).
#include <algorithm>
#include <unordered_set>

#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

const char* kCrdFinalizer = "customresourcecleanup.apiextensions.k8s.io";

bool has(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

json condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message) {
    return {{"type", type},
            {"status", status},
            {"lastTransitionTime", now_rfc3339()},
            {"reason", reason},
            {"message", message}};
}

void set_condition(json& status, const json& cond) {
    json& conds = status["conditions"];
    if (!conds.is_array()) conds = json::array();
    for (auto& c : conds)
        if (cond["type"] == c.value("type", "")) {
            if (cond["status"] != c.value("status", "") || cond["reason"] != c.value("reason", ""))
                c = cond;
            return;
        }
    conds.push_back(cond);
}

}  // namespace

void Engine::run_controllers() {
    // Each step may produce work for another; stop when a round changes nothing.
    for (int round = 0; round < 20 && controllers_dirty_; ++round) {
        controllers_dirty_ = false;
        establish_crds();
        cleanup_terminating_crds();
        namespace_controller();
        garbage_collector();
    }
    controllers_dirty_ = false;
}

void Engine::establish_crds() {
    auto crds = resource_for_storage(kCrdStorage);
    std::vector<json> pending;
    for (const auto& [key, crd_ptr] : store_[kCrdStorage]) {
        const json& crd = *crd_ptr;
        json names = crd["spec"].value("names", json::object());
        json status = crd.value("status", json::object());
        bool established = false;
        for (const auto& c : status.value("conditions", json::array()))
            if (c.value("type", "") == "Established" && c.value("status", "") == "True")
                established = true;
        std::string storage;
        for (const auto& v : crd["spec"].value("versions", json::array()))
            if (v.value("storage", false)) storage = v.value("name", "");
        auto stored = string_list(status.value("storedVersions", json::array()));
        bool stored_ok = storage.empty() || has(stored, storage);
        if (established && stored_ok && status.value("acceptedNames", json()) == names) continue;
        if (crd["metadata"].contains("deletionTimestamp")) continue;
        pending.push_back(crd);
    }
    for (auto& crd : pending) {
        json before = crd;
        json& status = crd["status"];
        for (const auto& v : crd["spec"].value("versions", json::array()))
            if (v.value("storage", false)) {
                auto stored = string_list(status.value("storedVersions", json::array()));
                if (!has(stored, v.value("name", ""))) stored.push_back(v.value("name", ""));
                status["storedVersions"] = stored;
            }
        // Names conflicting with another CRD of the same group are not accepted.
        std::string group = crd["spec"].value("group", "");
        json names = crd["spec"].value("names", json::object());
        std::string conflict;
        for (const auto& [k, stored] : store_[kCrdStorage]) {
            const json& other = *stored;
            if (k == crd["metadata"].value("name", "")) continue;
            if (other["spec"].value("group", "") != group) continue;
            json accepted =
                other.value("status", json::object()).value("acceptedNames", json::object());
            if (!accepted.value("kind", "").empty() &&
                accepted.value("kind", "") == names.value("kind", ""))
                conflict = "KindConflict";
            if (!accepted.value("listKind", "").empty() &&
                accepted.value("listKind", "") == names.value("listKind", ""))
                conflict = "ListKindConflict";
        }
        if (!conflict.empty()) {
            set_condition(status,
                          condition("NamesAccepted", "False", conflict,
                                    "\"" + names.value("kind", "") + "\" is already in use"));
            set_condition(status, condition("Established", "False", "NotAccepted",
                                            "not all names are accepted"));
        } else {
            status["acceptedNames"] = names;
            set_condition(status,
                          condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"));
            set_condition(status, condition("Established", "True", "InitialNamesAccepted",
                                            "the initial names have been accepted"));
        }
        if (crd != before) commit_write(*crds, std::move(crd), &before);
    }
}

void Engine::cleanup_terminating_crds() {
    auto crds = resource_for_storage(kCrdStorage);
    std::vector<json> terminating;
    for (const auto& [key, stored] : store_[kCrdStorage])
        if (const json& crd = *stored;
            crd["metadata"].contains("deletionTimestamp") &&
            has(string_list(crd["metadata"].value("finalizers", json::array())), kCrdFinalizer))
            terminating.push_back(crd);
    for (auto& crd : terminating) {
        std::string name = crd["metadata"].value("name", "");
        json before = crd;
        set_condition(crd["status"], condition("Terminating", "True", "InstanceDeletionInProgress",
                                               "CustomResource deletion is in progress"));
        auto res_it = crd_resources_.find(name);
        bool empty = true;
        if (res_it != crd_resources_.end()) {
            ResourcePtr res = res_it->second;
            if (!res->terminating) {
                res->terminating = true;
                res->verbs = {"delete", "deletecollection", "get", "list", "watch"};
            }
            std::vector<json> objects;
            for (const auto& [k, obj] : store_[res->storage_key]) objects.push_back(*obj);
            for (const auto& obj : objects)
                if (!obj["metadata"].contains("deletionTimestamp"))
                    delete_object(*res, res->storage_version().name, obj, "", false);
            empty = store_[res->storage_key].empty();
        }
        if (!empty) {
            if (crd != before) commit_write(*crds, std::move(crd), &before);
            continue;
        }
        set_condition(crd["status"], condition("Terminating", "True", "InstanceDeletionCompleted",
                                               "removed all instances"));
        auto fins = string_list(crd["metadata"].value("finalizers", json::array()));
        fins.erase(std::remove(fins.begin(), fins.end(), kCrdFinalizer), fins.end());
        crd["metadata"]["finalizers"] = fins;
        if (fins.empty())
            commit_delete(*crds, "", name);
        else
            commit_write(*crds, std::move(crd), &before);
    }
}

void Engine::namespace_controller() {
    auto namespaces = resource_for_storage("/namespaces");
    std::vector<json> terminating;
    for (const auto& [key, ns] : store_["/namespaces"])
        if ((*ns)["metadata"].contains("deletionTimestamp")) terminating.push_back(*ns);
    if (terminating.empty()) return;
    std::map<std::string, ResourcePtr> storages;
    for (const auto& res : all_resources())
        if (res->namespaced && !storages.count(res->storage_key)) storages[res->storage_key] = res;
    for (auto& ns : terminating) {
        std::string name = ns["metadata"].value("name", "");
        std::size_t remaining = 0;
        std::map<std::string, std::size_t> finalizers_left;
        for (const auto& [storage, res] : storages) {
            auto s = store_.find(storage);
            if (s == store_.end()) continue;
            std::vector<json> objects;
            for (auto it = s->second.lower_bound(name + "/"); it != s->second.end(); ++it) {
                if (it->first.compare(0, name.size() + 1, name + "/") != 0) break;
                objects.push_back(*it->second);
            }
            for (const auto& obj : objects) {
                if (!obj["metadata"].contains("deletionTimestamp"))
                    delete_object(*res, res->storage_version().name, obj, "", false);
            }
            for (auto it = s->second.lower_bound(name + "/"); it != s->second.end(); ++it) {
                if (it->first.compare(0, name.size() + 1, name + "/") != 0) break;
                ++remaining;
                for (const auto& f :
                     string_list((*it->second)["metadata"].value("finalizers", json::array())))
                    ++finalizers_left[f];
            }
        }
        json before = ns;
        if (remaining > 0) {
            std::string fin_msg;
            for (const auto& [f, n] : finalizers_left)
                fin_msg += (fin_msg.empty() ? "" : ", ") + f + " in " + std::to_string(n) +
                           " resource instances";
            set_condition(ns["status"],
                          condition("NamespaceContentRemaining", "True", "SomeResourcesRemain",
                                    "Some resources are remaining: " + std::to_string(remaining) +
                                        " resource instances"));
            if (!fin_msg.empty())
                set_condition(
                    ns["status"],
                    condition(
                        "NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                        "Some content in the namespace has finalizers remaining: " + fin_msg));
            if (ns != before) commit_write(*namespaces, std::move(ns), &before);
            continue;
        }
        // Empty: finalize (drop the `kubernetes` spec finalizer), then remove.
        auto spec_fins = string_list(ns["spec"].value("finalizers", json::array()));
        spec_fins.erase(std::remove(spec_fins.begin(), spec_fins.end(), "kubernetes"),
                        spec_fins.end());
        ns["spec"]["finalizers"] = spec_fins;
        auto meta_fins = string_list(ns["metadata"].value("finalizers", json::array()));
        if (spec_fins.empty() && meta_fins.empty())
            commit_delete(*namespaces, "", name);
        else if (ns != before)
            commit_write(*namespaces, std::move(ns), &before);
    }
}

void Engine::garbage_collector() {
    if (!gc_relevant_) return;
    struct Ref {
        ResourcePtr res;
        std::string key;
    };
    // uid -> (resource, key) for all objects; plus the dependents.
    std::unordered_map<std::string, Ref> by_uid;
    std::vector<Ref> dependents;
    std::map<std::string, ResourcePtr> storages;
    for (const auto& res : all_resources())
        if (!storages.count(res->storage_key)) storages[res->storage_key] = res;
    for (const auto& [storage, res] : storages) {
        auto s = store_.find(storage);
        if (s == store_.end()) continue;
        for (const auto& [key, obj] : s->second) {
            const json& meta = (*obj)["metadata"];
            by_uid[meta.value("uid", "")] = {res, key};
            if (meta.contains("ownerReferences") && meta["ownerReferences"].is_array() &&
                !meta["ownerReferences"].empty())
                dependents.push_back({res, key});
        }
    }
    auto lookup = [&](const Ref& r) -> const json* {
        auto s = store_.find(r.res->storage_key);
        if (s == store_.end()) return nullptr;
        auto it = s->second.find(r.key);
        return it == s->second.end() ? nullptr : it->second.get();
    };
    std::unordered_set<std::string> blocking_owners;  // foreground owners still waiting
    for (const auto& dep : dependents) {
        const json* obj = lookup(dep);
        if (!obj) continue;
        json cur = *obj;
        const json& meta = cur["metadata"];
        std::string dep_ns = meta.value("namespace", "");
        json kept = json::array();
        bool any_alive = false, foreground = false, changed = false;
        for (const auto& ref : meta["ownerReferences"]) {
            std::string uid = ref.value("uid", "");
            auto it = by_uid.find(uid);
            const json* owner = it == by_uid.end() ? nullptr : lookup(it->second);
            // A namespaced owner must live in the dependent's namespace.
            if (owner && it->second.res->namespaced &&
                (*owner)["metadata"].value("namespace", "") != dep_ns)
                owner = nullptr;
            if (!owner) {
                kept.push_back(ref);
                continue;
            }
            auto owner_fins = string_list((*owner)["metadata"].value("finalizers", json::array()));
            bool deleting = (*owner)["metadata"].contains("deletionTimestamp");
            if (deleting && has(owner_fins, "orphan")) {
                changed = true;  // orphaning: drop this reference
                continue;
            }
            kept.push_back(ref);
            if (deleting && has(owner_fins, "foregroundDeletion")) {
                foreground = true;
                if (ref.value("blockOwnerDeletion", false)) blocking_owners.insert(uid);
            } else {
                any_alive = true;
            }
        }
        if (changed) {
            json updated = cur;
            if (kept.empty())
                updated["metadata"].erase("ownerReferences");
            else
                updated["metadata"]["ownerReferences"] = kept;
            commit_write(*dep.res, std::move(updated), &cur);
            controllers_dirty_ = true;
            continue;
        }
        if (!any_alive && !meta.contains("deletionTimestamp")) {
            delete_object(*dep.res, dep.res->storage_version().name, cur,
                          foreground ? "Foreground" : "Background", false);
            controllers_dirty_ = true;
        }
    }
    // Owners waiting for dependents: release their GC finalizers when done.
    for (const auto& [uid, ref] : by_uid) {
        const json* obj = lookup(ref);
        if (!obj || !(*obj)["metadata"].contains("deletionTimestamp")) continue;
        auto fins = string_list((*obj)["metadata"].value("finalizers", json::array()));
        bool fg = has(fins, "foregroundDeletion"), orphan = has(fins, "orphan");
        if (!fg && !orphan) continue;
        if (fg && blocking_owners.count(uid)) continue;
        if (orphan) {
            // Still referenced by some dependent? Then the next round strips it first.
            bool referenced = false;
            for (const auto& dep : dependents) {
                const json* d = lookup(dep);
                if (!d) continue;
                for (const auto& r : (*d)["metadata"].value("ownerReferences", json::array()))
                    if (r.value("uid", "") == uid) referenced = true;
            }
            if (referenced) continue;
        }
        json cur = *obj;
        fins.erase(std::remove_if(fins.begin(), fins.end(),
                                  [](const std::string& f) {
                                      return f == "foregroundDeletion" || f == "orphan";
                                  }),
                   fins.end());
        if (fins.empty()) {
            commit_delete(*ref.res, cur["metadata"].value("namespace", ""),
                          cur["metadata"].value("name", ""));
        } else {
            json updated = cur;
            updated["metadata"]["finalizers"] = fins;
            commit_write(*ref.res, std::move(updated), &cur);
        }
        controllers_dirty_ = true;
    }
}

}  // namespace kopf::apiserver::core
