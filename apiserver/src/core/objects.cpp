// Object semantics: storage primitives, get/list, create/update/patch/delete
// pipelines with the metadata rules of kube-apiserver (names and generateName, uid,
// resourceVersion, generation, timestamps, managedFields, finalizers and graceful deletion).
#include <algorithm>
#include <optional>
#include <random>
#include <stdexcept>

#include "core/engine.hpp"
#include "core/field_managers.hpp"
#include "core/persistence.hpp"
#include "util/schema.hpp"
#include "util/strategic_merge.hpp"
#include "util/validation.hpp"

namespace kopf::apiserver::core {

namespace {

std::string query(const RequestInfo& rq, const char* key) {
    auto it = rq.http->query.find(key);
    return it == rq.http->query.end() ? std::string() : it->second;
}

const std::vector<std::pair<std::string, std::string>> kEventRenames = {
    {"involvedObject", "regarding"},
    {"message", "note"},
    {"reportingComponent", "reportingController"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"}};

void rename_fields(json& obj, bool to_new) {
    for (const auto& [core_name, new_name] : kEventRenames) {
        const std::string& from = to_new ? core_name : new_name;
        const std::string& to = to_new ? new_name : core_name;
        if (obj.contains(from)) {
            obj[to] = std::move(obj[from]);
            obj.erase(from);
        }
    }
}

std::string generate_name(const std::string& prefix) {
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    thread_local std::mt19937 rng{std::random_device{}()};
    std::string name = prefix.substr(0, 58);
    for (int i = 0; i < 5; ++i) name += alphabet[rng() % (sizeof alphabet - 1)];
    return name;
}

// Whether anything outside metadata (and status, when `skip_status`) differs.
bool body_differs(const json& a, const json& b, bool skip_status) {
    auto skip = [&](const std::string& k) {
        return k == "metadata" || (skip_status && k == "status");
    };
    std::size_t na = 0, nb = 0;
    for (const auto& [k, v] : a.items()) {
        if (skip(k)) continue;
        ++na;
        auto it = b.find(k);
        if (it == b.end() || *it != v) return true;
    }
    for (const auto& [k, v] : b.items())
        if (!skip(k)) ++nb;
    return na != nb;
}

uint64_t parse_rv(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw bad_request("invalid resource version: " + text);
    try {
        return std::stoull(text);
    } catch (...) {
        throw bad_request("invalid resource version: " + text);
    }
}

}  // namespace

// ---------------------------------------------------------------- storage primitives

StoredObject Engine::find_stored(const Resource& res, const std::string& ns,
                                 const std::string& name) {
    auto s = store_.find(res.storage_key);
    if (s == store_.end()) return nullptr;
    auto it = s->second.find(object_key(res, ns, name));
    return it == s->second.end() ? nullptr : it->second;
}

const json* Engine::find_object(const Resource& res, const std::string& ns,
                                const std::string& name) {
    auto s = store_.find(res.storage_key);
    if (s == store_.end()) return nullptr;
    auto it = s->second.find(object_key(res, ns, name));
    return it == s->second.end() ? nullptr : it->second.get();
}

void Engine::note_admission_storage(const Resource& res) {
    if (res.storage_key.rfind("admissionregistration.k8s.io/", 0) != 0) return;
    bool any = false;
    for (const char* key : {"admissionregistration.k8s.io/mutatingwebhookconfigurations",
                            "admissionregistration.k8s.io/validatingwebhookconfigurations"}) {
        auto it = store_.find(key);
        if (it != store_.end() && !it->second.empty()) any = true;
    }
    webhooks_configured_ = any;
}

ResourcePtr Engine::resource_for_storage(const std::string& storage_key) const {
    for (const auto& res : all_resources())
        if (res->storage_key == storage_key) return res;
    return nullptr;
}

void Engine::retain(const WatchEventPtr& event) {
    // Watchers rendered the line already (the usual case); otherwise the size is measured.
    std::size_t bytes = event->lines.empty() ? 0 : event->lines.begin()->second->size();
    if (bytes == 0)
        bytes = event->object->dump(-1, ' ', false, json::error_handler_t::replace).size();
    event->bytes = bytes;
    history_bytes_ += bytes;
    history_.push_back(event);
    while (history_.size() > options_.history_size ||
           (history_bytes_ > options_.history_bytes && history_.size() > 1)) {
        oldest_available_rv_ = history_.front()->rv;
        history_bytes_ -= history_.front()->bytes;
        history_.pop_front();
    }
}

const json& Engine::commit_write(const Resource& res, json object, const json* previous) {
    ++rv_;
    object["metadata"]["resourceVersion"] = std::to_string(rv_);
    std::string ns = object["metadata"].value("namespace", "");
    std::string key = object_key(res, ns, object["metadata"].value("name", ""));
    auto event = std::make_shared<WatchEvent>();
    event->rv = rv_;
    event->storage_key = res.storage_key;
    event->type = previous ? "MODIFIED" : "ADDED";
    event->ns = ns;
    if (!gc_relevant_) {
        const json& m = object["metadata"];
        if (m.contains("ownerReferences")) gc_relevant_ = true;
        for (const auto& f : string_list(m.value("finalizers", json::array())))
            if (f == "orphan" || f == "foregroundDeletion") gc_relevant_ = true;
    }
    if (persistence_) persistence_->put(res.storage_key, key, object.dump(), rv_);
    StoredObject& slot = store_[res.storage_key][key];
    // The state before this write is the stored object (shared, not copied).
    if (previous) event->previous = slot ? slot : std::make_shared<const json>(*previous);
    if (slot) retired_.push_back(std::move(slot));
    slot = std::make_shared<const json>(std::move(object));
    event->object = slot;
    fan_out(event);
    retain(event);
    note_admission_storage(res);
    const json& stored = *event->object;
    if (res.storage_key == kCrdStorage) {
        sync_crd(stored);
        controllers_dirty_ = true;
    }
    return stored;
}

void Engine::commit_delete(const Resource& res, const std::string& ns, const std::string& name,
                           std::optional<json> final_state) {
    auto& coll = store_[res.storage_key];
    std::string key = object_key(res, ns, name);
    auto it = coll.find(key);
    if (it == coll.end()) return;
    ++rv_;
    json last = final_state ? std::move(*final_state) : *it->second;
    retired_.push_back(std::move(it->second));
    coll.erase(it);
    if (persistence_) persistence_->erase(res.storage_key, key, rv_);
    last["metadata"]["resourceVersion"] = std::to_string(rv_);
    auto event = std::make_shared<WatchEvent>();
    event->rv = rv_;
    event->storage_key = res.storage_key;
    event->type = "DELETED";
    event->ns = ns;
    event->object = std::make_shared<const json>(std::move(last));
    fan_out(event);
    retain(event);
    note_admission_storage(res);
    controllers_dirty_ = true;
    if (res.storage_key == kCrdStorage) {
        // The CRD is gone: so are its objects and its endpoints.
        auto crd_res = crd_resources_.find(name);
        if (crd_res != crd_resources_.end()) {
            std::string storage = crd_res->second->storage_key;
            unregister_crd(name);
            for (auto& [k, list] : watchers_)
                if (k == storage)
                    for (auto& w : list) close_watcher(*w);
            watchers_.erase(storage);
            if (persistence_)
                for (const auto& [k, obj] : store_[storage]) persistence_->erase(storage, k, rv_);
            store_.erase(storage);
        }
    }
}

json Engine::to_view(const Resource& res, const std::string& version, const json& stored) const {
    json view = stored;
    view["apiVersion"] = res.group_version(version);
    view["kind"] = res.kind;
    if (res.storage_key == "/events" && res.group == "events.k8s.io") rename_fields(view, true);
    return view;
}

bool Engine::view_is_identity(const Resource& res, const std::string& version) const {
    return version == res.storage_version().name &&
           !(res.storage_key == "/events" && res.group == "events.k8s.io");
}

std::string Engine::view_dump(const Resource& res, const std::string& version,
                              const json& stored) const {
    if (view_is_identity(res, version)) {
        auto it = stored.find("apiVersion");
        if (it != stored.end() && it->is_string() &&
            it->get_ref<const std::string&>() == res.group_version(version))
            return stored.dump();
    }
    return to_view(res, version, stored).dump();
}

std::string Engine::written_view_dump(const Resource& res, const std::string& version,
                                      const json& stored) const {
    if (!history_.empty() && history_.back()->object.get() == &stored) {
        const WatchEvent& event = *history_.back();
        // The lines of event_line(): the head, the view, "}\n".
        const auto line = event.lines.find(res.group + "/" + version);
        const std::size_t prefix = event_line_head(event.type).size();
        if (line != event.lines.end() && line->second->size() > prefix + 2)
            return line->second->substr(prefix, line->second->size() - prefix - 2);
    }
    return view_dump(res, version, stored);
}

json Engine::from_view(const Resource& res, const std::string&, json object) const {
    object["apiVersion"] = res.group_version(res.storage_version().name);
    object["kind"] = res.kind;
    if (res.storage_key == "/events" && res.group == "events.k8s.io") rename_fields(object, false);
    return object;
}

json Engine::not_found_status(const Resource& res, const std::string& name) const {
    return make_status(404, "NotFound", res.qualified() + " \"" + name + "\" not found",
                       {{"name", name}, {"group", res.group}, {"kind", res.plural}});
}

// ---------------------------------------------------------------- schema and validation

void Engine::apply_schema(RequestInfo& rq, json& object, json& causes, bool report_unknown,
                          const json* old) {
    const Resource& res = *rq.res;
    if (res.builtin) return;
    const ResourceVersion* v = res.version(rq.version);
    if (!v || !v->schema.is_object()) return;
    const bool check = report_unknown && rq.field_validation != "Ignore";
    const std::vector<std::string> unknown = prune(object, v->schema);
    if (check) {
        if (!unknown.empty() && rq.field_validation == "Strict") {
            std::string msg = "strict decoding error: ";
            for (std::size_t i = 0; i < unknown.size(); ++i)
                msg += (i ? ", " : "") + std::string("unknown field \"") + unknown[i] + "\"";
            if (rq.verb == "patch")
                throw invalid_error(res.group, res.kind, rq.name,
                                    json::array({cause("FieldValueInvalid", "patch", msg)}));
            throw bad_request(res.kind + " in version \"" + rq.version +
                              "\" cannot be handled as a " + res.kind + ": " + msg);
        }
        for (const auto& f : unknown)
            rq.warnings.emplace_back("Warning", "299 - \"unknown field \\\"" + f + "\\\"\"");
    }
    apply_defaults(object, v->schema);
    bool type_errors = false;
    for (const auto& e : validate(object, v->schema)) {
        type_errors = type_errors || e.reason == "FieldValueTypeInvalid";
        causes.push_back(
            cause(e.reason.empty() ? "FieldValueInvalid" : e.reason, e.field, e.message));
    }
    // x-kubernetes-validations, unless values have the wrong types (as in Kubernetes, whose
    // rules would only fail to evaluate on them).
    if (!type_errors)
        for (const auto& e : validate_rules(object, old, v->schema))
            causes.push_back(
                cause(e.reason.empty() ? "FieldValueInvalid" : e.reason, e.field, e.message));
}

void Engine::validate_builtin(const Resource& res, const json& object, json& causes) {
    if (res.kind == "Pod" && res.group.empty()) {
        const json* containers = object.contains("spec") && object["spec"].is_object() &&
                                         object["spec"].contains("containers")
                                     ? &object["spec"]["containers"]
                                     : nullptr;
        if (!containers || !containers->is_array() || containers->empty())
            causes.push_back(cause("FieldValueRequired", "spec.containers", "Required value"));
        else
            for (std::size_t i = 0; i < containers->size(); ++i) {
                const json& c = (*containers)[i];
                std::string p = "spec.containers[" + std::to_string(i) + "]";
                for (const char* field : {"name", "image"}) {
                    const auto it = c.is_object() ? c.find(field) : c.end();
                    if (c.is_object() && it != c.end() && !it->is_string() && !it->is_null()) {
                        causes.push_back(
                            cause("FieldValueTypeInvalid", p + "." + field,
                                  "Invalid value: " + it->dump() + ": must be a string"));
                    } else if (!c.is_object() || it == c.end() || !it->is_string() ||
                               it->get_ref<const std::string&>().empty()) {
                        causes.push_back(
                            cause("FieldValueRequired", p + "." + field, "Required value"));
                    }
                }
            }
    }
    if ((res.kind == "ConfigMap" || res.kind == "Secret") && object.contains("data")) {
        const json& data = object["data"];
        if (!data.is_object() && !data.is_null())
            causes.push_back(cause("FieldValueTypeInvalid", "data",
                                   "Invalid value: " + data.dump() + ": must be a map of strings"));
        else if (data.is_object())
            for (const auto& [k, v] : data.items())
                if (!v.is_string())
                    causes.push_back(cause("FieldValueTypeInvalid", "data[" + k + "]",
                                           "Invalid value: " + v.dump() + ": must be a string"));
    }
    if (res.kind == "CustomResourceDefinition")
        for (const auto& c : validate_crd(object)) causes.push_back(c);
    // Every field's JSON type, as kube-apiserver's decoder requires; once per field (the
    // checks above name some of them already).
    for (const auto& error : builtin_type_errors(res, object)) {
        const bool named = std::any_of(causes.begin(), causes.end(), [&](const json& c) {
            return c.value("field", "") == error.field;
        });
        if (!named) causes.push_back(cause(error.reason, error.field, error.message));
    }
    if (res.group == "admissionregistration.k8s.io")
        for (const auto& c :
             validate_webhook_configuration(object, res.kind == "MutatingWebhookConfiguration"))
            causes.push_back(c);
}

// ---------------------------------------------------------------- read

HttpResponse Engine::do_get(RequestInfo& rq) {
    const Resource& res = *rq.res;
    const json* obj = find_object(res, rq.ns, rq.name);
    if (!obj) {
        ApiError e;
        e.code = 404;
        e.status = not_found_status(res, rq.name);
        throw e;
    }
    json view = to_view(res, rq.version, *obj);
    if (rq.sub == "scale") {
        const ResourceVersion* v = res.version(rq.version);
        json scale = {{"kind", "Scale"},
                      {"apiVersion", "autoscaling/v1"},
                      {"metadata",
                       {{"name", rq.name},
                        {"namespace", rq.ns},
                        {"uid", view["metadata"].value("uid", "")},
                        {"resourceVersion", view["metadata"].value("resourceVersion", "")},
                        {"creationTimestamp", view["metadata"].value("creationTimestamp", "")}}}};
        json spec_replicas = eval_json_path(view, v->scale.value("specReplicasPath", ""));
        json status_replicas = eval_json_path(view, v->scale.value("statusReplicasPath", ""));
        json selector = eval_json_path(view, v->scale.value("labelSelectorPath", ""));
        scale["spec"] = {{"replicas", spec_replicas.is_number() ? spec_replicas : json(0)}};
        scale["status"] = {{"replicas", status_replicas.is_number() ? status_replicas : json(0)}};
        if (selector.is_string()) scale["status"]["selector"] = selector;
        return json_response(scale);
    }
    if (wants_table(rq.http->accept)) {
        std::string include = query(rq, "includeObject");
        if (include.empty()) include = "Metadata";
        return json_response(to_table(res, rq.version, {view}, include, true));
    }
    return json_response(view);
}

HttpResponse Engine::do_list(RequestInfo& rq) {
    const Resource& res = *rq.res;
    LabelSelector labels;
    FieldSelector fields;
    try {
        labels = LabelSelector::parse(query(rq, "labelSelector"));
        fields = FieldSelector::parse(query(rq, "fieldSelector"), res.group, res.kind);
    } catch (const SelectorError& e) {
        throw bad_request(e.what());
    }
    std::string rv_param = query(rq, "resourceVersion");
    std::string rv_match = query(rq, "resourceVersionMatch");
    std::string cont = query(rq, "continue");
    if (!query(rq, "sendInitialEvents").empty())
        throw invalid_error("meta.k8s.io", "ListOptions", "",
                            json::array({cause("FieldValueForbidden", "sendInitialEvents",
                                               "Forbidden: sendInitialEvents is forbidden for "
                                               "list")}));
    if (!rv_match.empty()) {
        if (rv_param.empty())
            throw invalid_error(
                "meta.k8s.io", "ListOptions", "",
                json::array({cause("FieldValueForbidden", "resourceVersionMatch",
                                   "Forbidden: resourceVersionMatch is forbidden unless "
                                   "resourceVersion is provided")}));
        if (rv_match != "NotOlderThan" && rv_match != "Exact")
            throw invalid_error("meta.k8s.io", "ListOptions", "",
                                json::array({cause("FieldValueNotSupported", "resourceVersionMatch",
                                                   "Unsupported value: \"" + rv_match +
                                                       "\": supported values: \"Exact\", "
                                                       "\"NotOlderThan\"")}));
        if (!cont.empty())
            throw invalid_error("meta.k8s.io", "ListOptions", "",
                                json::array({cause("FieldValueForbidden", "resourceVersionMatch",
                                                   "Forbidden: resourceVersionMatch is forbidden "
                                                   "when continue is provided")}));
    }
    if (!rv_param.empty()) {
        uint64_t requested = parse_rv(rv_param);
        if (requested > rv_)
            throw api_error(
                504, "Timeout",
                "Too large resource version: " + rv_param + ", current: " + std::to_string(rv_),
                {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                          {"message", "Too large resource version"}}})},
                 {"retryAfterSeconds", 1}});
        bool exact = rv_match == "Exact" ||
                     (!query(rq, "limit").empty() && rv_match.empty() && rv_param != "0");
        if (exact && requested != rv_ && requested < oldest_available_rv_)
            throw api_error(410, "Expired",
                            "too old resource version: " + rv_param + " (" +
                                std::to_string(oldest_available_rv_) + ")");
    }
    std::size_t limit = 0;
    if (std::string l = query(rq, "limit"); !l.empty()) {
        try {
            long long v = std::stoll(l);
            limit = v > 0 ? static_cast<std::size_t>(v) : 0;
        } catch (...) {
            throw bad_request("invalid limit: " + l);
        }
    }
    std::string start_key;
    uint64_t list_rv = rv_;
    // The items from start_key on in the token's scope, as the previous page counted them:
    // still exact while nothing was written since (rv_ unchanged), which spares each page a
    // walk over the rest of the collection (quadratic over a paged listing of a large one).
    std::optional<std::size_t> carried_remaining;
    std::string carried_scope;
    if (!cont.empty()) {
        if (!rv_param.empty() && rv_param != "0")
            throw bad_request("specifying resource version is not allowed when using continue");
        auto decoded = base64url_decode(cont);
        json token = decoded ? json::parse(*decoded, nullptr, false) : json();
        if (!token.is_object() || !token.contains("start") || !token.contains("rv") ||
            !token["rv"].is_number_unsigned())
            throw bad_request(
                "continue key is not valid: incorrect encoded start resourceVersion "
                "(version meta.k8s.io/v1)");
        start_key = token["start"].get<std::string>();
        uint64_t token_rv = token["rv"].get<uint64_t>();
        if (token_rv < oldest_available_rv_)
            throw api_error(410, "Expired",
                            "The provided continue parameter is too old to display a consistent "
                            "list result. You can start a new list without the continue "
                            "parameter.");
        list_rv = token_rv;
        if (token_rv == rv_ && token.contains("remaining") &&
            token["remaining"].is_number_unsigned() && token.contains("scope") &&
            token["scope"].is_string()) {
            carried_remaining = token["remaining"].get<std::size_t>();
            carried_scope = token["scope"].get<std::string>();
        }
    }
    // Take pointers to the matching objects under the lock: they are immutable, so the
    // body is serialized later, piece by piece, outside it and still shows one state.
    ListSnapshot snapshot;
    snapshot.res = rq.res;
    snapshot.version = rq.version;
    if (wants_table(rq.http->accept)) {
        std::string include = query(rq, "includeObject");
        snapshot.table =
            table_row_renderer(res, rq.version, include.empty() ? "Metadata" : include);
        snapshot.column_definitions = table_columns(res, rq.version);
    }
    std::string next_key;
    std::size_t remaining = 0;
    bool filtering = !labels.empty() || !fields.empty();
    const std::string prefix = res.namespaced && !rq.ns.empty() ? rq.ns + "/" : "";
    auto s = store_.find(res.storage_key);
    if (s != store_.end()) {
        const auto& coll = s->second;
        auto it = start_key.empty() ? coll.lower_bound(prefix) : coll.lower_bound(start_key);
        auto in_scope = [&](const auto& entry) {
            return prefix.empty() || entry.first.compare(0, prefix.size(), prefix) == 0;
        };
        for (; it != coll.end() && in_scope(*it); ++it) {
            if (filtering) {
                const json& obj = *it->second;
                const auto meta = obj.find("metadata");
                const json none;
                const json& object_labels =
                    meta != obj.end() && meta->contains("labels") ? (*meta)["labels"] : none;
                if (!labels.empty() && !labels.matches(object_labels)) continue;
                if (!fields.empty() && !fields.matches(obj)) continue;
            }
            if (limit && snapshot.items.size() >= limit) {
                next_key = it->first;
                // Only counted without selectors (as Kubernetes does): carried over from the
                // previous page if nothing changed since, else a bare walk over the keys.
                if (!filtering) {
                    if (carried_remaining && carried_scope == prefix &&
                        *carried_remaining >= snapshot.items.size()) {
                        remaining = *carried_remaining - snapshot.items.size();
                    } else {
                        for (; it != coll.end() && in_scope(*it); ++it) ++remaining;
                    }
                }
                break;
            }
            snapshot.items.push_back(it->second);
        }
    }
    json metadata = {{"resourceVersion", std::to_string(list_rv)}};
    if (!next_key.empty()) {
        json token = {{"v", "meta.k8s.io/v1"}, {"rv", list_rv}, {"start", next_key}};
        if (!filtering) {
            metadata["remainingItemCount"] = remaining;
            token["remaining"] = remaining;
            token["scope"] = prefix;
        }
        metadata["continue"] = base64url_encode(token.dump());
    }
    snapshot.metadata = std::move(metadata);
    snapshot.engine = shared_from_this();
    HttpResponse response;
    response.body_stream = make_list_body(std::move(snapshot));
    return response;
}

// ---------------------------------------------------------------- create

json Engine::prepare_create(RequestInfo& rq, json obj) {
    const Resource& res = *rq.res;
    std::string expected_gv = res.group_version(rq.version);
    if (obj.contains("apiVersion") && obj["apiVersion"] != "" && obj["apiVersion"] != expected_gv)
        throw bad_request("the API version in the data (" + obj["apiVersion"].dump() +
                          ") does not match the expected API version (" + expected_gv + ")");
    if (obj.contains("kind") && obj["kind"] != "" && obj["kind"] != res.kind)
        throw bad_request("the kind in the data (" + obj["kind"].dump() +
                          ") does not match the expected kind (" + res.kind + ")");
    if (!obj.contains("metadata") || obj["metadata"].is_null()) obj["metadata"] = json::object();
    if (!obj["metadata"].is_object()) throw bad_request("metadata must be an object");
    json& meta = obj["metadata"];
    if (res.namespaced) {
        std::string body_ns = meta.value("namespace", "");
        if (!body_ns.empty() && body_ns != rq.ns)
            throw bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request");
        meta["namespace"] = rq.ns;
    } else {
        meta.erase("namespace");
    }
    std::string name =
        meta.contains("name") && meta["name"].is_string() ? meta["name"].get<std::string>() : "";
    std::string generate = meta.value("generateName", "");
    if (name.empty() && !generate.empty()) {
        for (int attempt = 0; attempt < 8; ++attempt) {
            name = generate_name(generate);
            if (!find_object(res, rq.ns, name)) break;
        }
        meta["name"] = name;
    }
    if (name.empty()) {
        throw invalid_error(res.group, res.kind, "",
                            json::array({cause("FieldValueRequired", "metadata.name",
                                               "Required value: name or generateName is "
                                               "required")}));
    }
    if (meta.contains("resourceVersion") && meta["resourceVersion"] != "" &&
        !meta["resourceVersion"].is_null())
        throw api_error(500, "InternalError",
                        "Internal error occurred: resourceVersion should not be set on objects "
                        "to be created");
    if (res.namespaced) {
        auto namespaces = find_endpoint("", "v1", "namespaces");
        const json* ns_obj = find_object(*namespaces, "", rq.ns);
        if (!ns_obj)
            throw api_error(404, "NotFound", "namespaces \"" + rq.ns + "\" not found",
                            {{"name", rq.ns}, {"kind", "namespaces"}});
        if ((*ns_obj)["metadata"].contains("deletionTimestamp"))
            throw api_error(
                403, "Forbidden",
                res.qualified() + " \"" + name +
                    "\" is forbidden: unable to create new content in namespace " + rq.ns +
                    " because it is being terminated",
                {{"name", name},
                 {"group", res.group},
                 {"kind", res.plural},
                 {"causes", json::array({cause("NamespaceTerminating", "metadata.namespace",
                                               "namespace " + rq.ns + " is being terminated")})}});
    }
    if (find_object(res, rq.ns, name)) {
        std::string msg = res.qualified() + " \"" + name + "\" already exists";
        json details = {{"name", name}, {"group", res.group}, {"kind", res.plural}};
        if (!generate.empty() && meta.value("name", "") == name && !generate.empty()) {
            msg += ", the server was not able to generate a unique name for the object";
            details["retryAfterSeconds"] = 1;
        }
        throw api_error(409, "AlreadyExists", msg, details);
    }
    meta["uid"] = new_uid();
    meta["creationTimestamp"] = now_rfc3339();
    meta.erase("deletionTimestamp");
    meta.erase("deletionGracePeriodSeconds");
    meta.erase("selfLink");
    meta.erase("resourceVersion");
    if (res.has_generation)
        meta["generation"] = 1;
    else
        meta.erase("generation");
    if (res.has_status(rq.version)) obj.erase("status");
    obj = from_view(res, rq.version, std::move(obj));
    json causes = json::array();

    // Kind-specific defaults.
    if (res.kind == "Namespace" && res.group.empty()) {
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        obj["spec"]["finalizers"] = json::array({"kubernetes"});
        obj["status"] = {{"phase", "Active"}};
    } else if (res.kind == "Pod" && res.group.empty()) {
        obj["status"] = {{"phase", "Pending"}, {"qosClass", "BestEffort"}};
    } else if (res.kind == "Secret" && res.group.empty()) {
        if (!obj.contains("type") || obj["type"] == "") obj["type"] = "Opaque";
        if (obj.contains("stringData") && obj["stringData"].is_object()) {
            for (const auto& [k, v] : obj["stringData"].items())
                if (v.is_string()) obj["data"][k] = base64_encode(v.get<std::string>());
            obj.erase("stringData");
        }
    } else if (res.kind == "CustomResourceDefinition") {
        default_crd(obj);
        auto& fins = obj["metadata"]["finalizers"];
        auto list = string_list(fins);
        if (std::find(list.begin(), list.end(), "customresourcecleanup.apiextensions.k8s.io") ==
            list.end())
            fins.push_back("customresourcecleanup.apiextensions.k8s.io");
        std::string storage;
        if (obj["spec"].contains("versions") && obj["spec"]["versions"].is_array())
            for (const auto& v : obj["spec"]["versions"])
                if (v.is_object() && v.value("storage", false)) storage = v.value("name", "");
        obj["status"] = {
            {"conditions", json::array()},
            {"acceptedNames", {{"plural", ""}, {"kind", ""}}},
            {"storedVersions", storage.empty() ? json::array() : json::array({storage})}};
    }
    apply_schema(rq, obj, causes, true);
    validate_builtin(res, obj, causes);
    if (!res.name_rule.empty())
        for (const auto& e : validate_object_meta(obj["metadata"], res.name_rule, res.namespaced))
            causes.push_back(
                cause(e.reason.empty() ? "FieldValueInvalid" : e.reason, e.field, e.message));
    if (!causes.empty()) throw invalid_error(res.group, res.kind, name, causes);
    return obj;
}

HttpResponse Engine::do_create(RequestInfo& rq, Lock& lock) {
    json body = decode_body(rq.http->body, rq.http->content_type);
    json obj = prepare_create(rq, std::move(body));
    return finish_write(rq, lock, std::move(obj), nullptr, 201);
}

// ---------------------------------------------------------------- update

json Engine::prepare_update(RequestInfo& rq, const json& current, json obj, bool from_patch) {
    const Resource& res = *rq.res;
    if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = json::object();
    json& meta = obj["metadata"];
    const json& old_meta = current["metadata"];
    std::string name = old_meta.value("name", "");
    json rv = meta.contains("resourceVersion") ? meta["resourceVersion"] : json();
    if (rv.is_null() || rv == "") {
        if (!from_patch && !res.unconditional_update)
            throw invalid_error(res.group, res.kind, name,
                                json::array({cause("FieldValueInvalid", "metadata.resourceVersion",
                                                   "Invalid value: 0x0: must be specified for an "
                                                   "update")}));
    } else if (rv != old_meta["resourceVersion"]) {
        throw api_error(409, "Conflict",
                        "Operation cannot be fulfilled on " + res.qualified() + " \"" + name +
                            "\": the object has been modified; please apply your changes to the "
                            "latest version and try again",
                        {{"name", name}, {"group", res.group}, {"kind", res.plural}});
    }
    if (meta.contains("uid") && meta["uid"] != "" && meta["uid"] != old_meta["uid"])
        throw invalid_error(
            res.group, res.kind, name,
            json::array({cause("FieldValueInvalid", "metadata.uid",
                               "Invalid value: " + meta["uid"].dump() + ": field is immutable")}));
    obj = from_view(res, rq.version, std::move(obj));
    json& m = obj["metadata"];
    for (const char* k :
         {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
          "generation", "namespace", "name", "resourceVersion"}) {
        if (old_meta.contains(k))
            m[k] = old_meta[k];
        else
            m.erase(k);
    }
    if (rq.sub == "status") {
        json result = current;
        if (obj.contains("status"))
            result["status"] = obj["status"];
        else
            result.erase("status");
        obj = std::move(result);
    } else if (rq.sub == "finalize") {
        json result = current;
        result["spec"]["finalizers"] =
            obj.contains("spec") && obj["spec"].is_object() && obj["spec"].contains("finalizers")
                ? obj["spec"]["finalizers"]
                : json::array();
        obj = std::move(result);
    } else if (res.has_status(rq.version)) {
        if (current.contains("status"))
            obj["status"] = current["status"];
        else
            obj.erase("status");
    }
    // Finalizers cannot be added while the object is being deleted.
    if (old_meta.contains("deletionTimestamp")) {
        auto old_f = string_list(old_meta.value("finalizers", json::array()));
        std::vector<std::string> added;
        for (const auto& f : string_list(obj["metadata"].value("finalizers", json::array())))
            if (std::find(old_f.begin(), old_f.end(), f) == old_f.end()) added.push_back(f);
        if (!added.empty())
            throw invalid_error(res.group, res.kind, name,
                                json::array({cause("FieldValueForbidden", "metadata.finalizers",
                                                   "Forbidden: no new finalizers can be added if "
                                                   "the object is being deleted, found new "
                                                   "finalizers " +
                                                       json(added).dump())}));
    }
    json causes = json::array();
    if (res.kind == "Namespace" && res.group.empty()) {
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        if (rq.sub != "finalize")
            obj["spec"]["finalizers"] = current["spec"].value("finalizers", json::array());
        if (rq.sub != "status") obj["status"] = current.value("status", json::object());
    } else if (res.kind == "Secret" && res.group.empty() && obj.contains("stringData")) {
        if (obj["stringData"].is_object())
            for (const auto& [k, v] : obj["stringData"].items())
                if (v.is_string()) obj["data"][k] = base64_encode(v.get<std::string>());
        obj.erase("stringData");
    } else if (res.kind == "CustomResourceDefinition") {
        default_crd(obj);
    }
    if (res.kind == "ConfigMap" || res.kind == "Secret") {
        if (current.value("immutable", false)) {
            if (!obj.value("immutable", false))
                causes.push_back(cause("FieldValueForbidden", "immutable",
                                       "Forbidden: field is immutable when `immutable` is set"));
            if (obj.value("data", json()) != current.value("data", json()) ||
                obj.value("binaryData", json()) != current.value("binaryData", json()))
                causes.push_back(cause("FieldValueForbidden", "data",
                                       "Forbidden: field is immutable when `immutable` is set"));
        }
    }
    apply_schema(rq, obj, causes, true, &current);
    validate_builtin(res, obj, causes);
    if (!res.name_rule.empty())
        for (const auto& e : validate_object_meta(obj["metadata"], res.name_rule, res.namespaced))
            causes.push_back(
                cause(e.reason.empty() ? "FieldValueInvalid" : e.reason, e.field, e.message));
    if (!causes.empty()) throw invalid_error(res.group, res.kind, name, causes);
    if (res.has_generation && old_meta.contains("generation")) {
        bool drop_status =
            res.has_status(rq.version) || !res.builtin ? res.has_status(rq.version) : true;
        if (res.builtin) drop_status = true;
        if (body_differs(obj, current, drop_status))
            obj["metadata"]["generation"] = old_meta["generation"].get<int64_t>() + 1;
    }
    return obj;
}

HttpResponse Engine::do_update(RequestInfo& rq, Lock& lock) {
    const Resource& res = *rq.res;
    json body = decode_body(rq.http->body, rq.http->content_type);
    if (!body.contains("metadata") || !body["metadata"].is_object())
        body["metadata"] = json::object();
    std::string body_name = body["metadata"].value("name", "");
    if (!body_name.empty() && body_name != rq.name)
        throw bad_request("the name of the object (" + body_name +
                          ") does not match the name on the URL (" + rq.name + ")");
    std::string body_ns = body["metadata"].value("namespace", "");
    if (res.namespaced && !body_ns.empty() && body_ns != rq.ns)
        throw bad_request(
            "the namespace of the provided object does not match the namespace sent on the "
            "request");
    std::string expected_gv = res.group_version(rq.version);
    if (rq.sub.empty() && body.contains("apiVersion") && body["apiVersion"] != "" &&
        body["apiVersion"] != expected_gv)
        throw bad_request("the API version in the data (" + body["apiVersion"].dump() +
                          ") does not match the expected API version (" + expected_gv + ")");
    StoredObject current = find_stored(res, rq.ns, rq.name);
    if (!current) {
        ApiError e;
        e.code = 404;
        e.status = not_found_status(res, rq.name);
        throw e;
    }
    const json& cur = *current;
    if (rq.sub == "scale") {
        json replicas = body.contains("spec") ? body["spec"].value("replicas", json()) : json();
        std::string path =
            res.version(rq.version)->scale.value("specReplicasPath", ".spec.replicas");
        json view = to_view(res, rq.version, cur);
        std::string ptr;
        for (char c : path) ptr += c == '.' ? '/' : c;
        if (replicas.is_number_integer()) view[json::json_pointer(ptr)] = replicas;
        view["metadata"]["resourceVersion"] = body["metadata"].value("resourceVersion", "");
        RequestInfo main = rq;
        main.sub.clear();
        json obj = prepare_update(main, cur, std::move(view), true);
        finish_write(main, lock, std::move(obj), current, 200);
        RequestInfo get = rq;
        return do_get(get);
    }
    json obj = prepare_update(rq, cur, std::move(body), false);
    return finish_write(rq, lock, std::move(obj), current, 200);
}

// ---------------------------------------------------------------- patch

namespace {

// RFC 6902 on nlohmann's json, op by op: an add, copy or move into a string, number or boolean
// is refused here, as json-patch does ("doc is missing path"), because nlohmann's patch
// asserts on it (and so aborts a build without NDEBUG) instead of throwing.
json apply_json_patch(const json& document, const json& patch) {
    json patched = document;
    for (const auto& operation : patch) {
        if (operation.is_object() && operation.contains("path") && operation["path"].is_string()) {
            const auto op = operation.value("op", std::string());
            if (op == "add" || op == "copy" || op == "move") {
                const json::json_pointer path(operation["path"].get<std::string>());
                if (!path.empty()) {
                    const auto parent = path.parent_pointer();
                    if (patched.contains(parent) && !patched.at(parent).is_structured() &&
                        !patched.at(parent).is_null()) {
                        throw std::invalid_argument(op +
                                                    " operation does not apply: doc is "
                                                    "missing path: " +
                                                    operation["path"].get<std::string>());
                    }
                }
            }
        }
        patched.patch_inplace(json::array({operation}));
    }
    return patched;
}

}  // namespace

HttpResponse Engine::do_patch(RequestInfo& rq, Lock& lock) {
    const Resource& res = *rq.res;
    std::string mt = media_type(rq.http->content_type);
    bool is_json_patch = mt == "application/json-patch+json";
    bool is_merge = mt == "application/merge-patch+json";
    bool is_strategic = mt == "application/strategic-merge-patch+json";
    bool is_apply = mt == "application/apply-patch+yaml";
    if (!(is_json_patch || is_merge || is_apply || (is_strategic && res.builtin)))
        throw api_error(415, "UnsupportedMediaType",
                        std::string("the body of the request was in an unknown format - accepted "
                                    "media types include: application/json-patch+json, "
                                    "application/merge-patch+json, ") +
                            (res.builtin ? "application/apply-patch+yaml, "
                                           "application/strategic-merge-patch+json"
                                         : "application/apply-patch+yaml"));
    std::string force = query(rq, "force");
    if (!force.empty() && !is_apply)
        throw invalid_error("meta.k8s.io", "PatchOptions", "",
                            json::array({cause("FieldValueForbidden", "force",
                                               "Forbidden: may not be specified for non-apply "
                                               "patch")}));
    if (is_apply && query(rq, "fieldManager").empty())
        throw invalid_error("meta.k8s.io", "PatchOptions", "",
                            json::array({cause("FieldValueRequired", "fieldManager",
                                               "Required value: is required for apply patch")}));
    json patch;
    if (is_apply) {
        patch = decode_body(rq.http->body, "application/yaml");
    } else {
        check_body_depth(rq.http->body);
        patch = json::parse(rq.http->body, nullptr, false);
        if (patch.is_discarded()) throw bad_request("couldn't decode the patch body as JSON");
    }
    StoredObject current = find_stored(res, rq.ns, rq.name);
    if (!current) {
        if (is_apply && rq.sub.empty()) {
            if (!patch.is_object())
                throw bad_request("the apply patch must be an object (a YAML mapping)");
            json applied = server_side_apply(nullptr, std::move(patch), manager_context(rq),
                                             parse_bool(force, false));
            json fields = applied["metadata"].value("managedFields", json());
            json obj = prepare_create(rq, std::move(applied));
            if (!fields.is_null()) obj["metadata"]["managedFields"] = std::move(fields);
            rq.applied = true;
            return finish_write(rq, lock, std::move(obj), nullptr, 201);
        }
        ApiError e;
        e.code = 404;
        e.status = not_found_status(res, rq.name);
        throw e;
    }
    const json& cur = *current;
    json base = to_view(res, rq.version, cur);
    json patched;
    if (is_json_patch) {
        if (!patch.is_array())
            throw bad_request("json: cannot unmarshal " + std::string(patch.type_name()) +
                              " into Go value of type jsonpatch.Patch");
        if (patch.size() > 10000)
            throw api_error(413, "RequestEntityTooLarge",
                            "The request entity is too large: the allowed maximum operations in "
                            "a JSON patch is 10000, got " +
                                std::to_string(patch.size()));
        try {
            patched = apply_json_patch(base, patch);
        } catch (const json::parse_error& e) {
            throw bad_request(std::string("the JSON patch is malformed: ") + e.what());
        } catch (const json::exception& e) {
            throw api_error(422, "Invalid",
                            std::string("the server rejected our request due to an error in our "
                                        "request: ") +
                                e.what());
        } catch (const std::invalid_argument& e) {
            throw api_error(422, "Invalid",
                            std::string("the server rejected our request due to an error in our "
                                        "request: ") +
                                e.what());
        }
    } else if (is_strategic) {
        if (!patch.is_object()) throw bad_request("the strategic merge patch must be an object");
        try {
            patched = strategic_merge_patch(base, patch, res.group, res.kind);
        } catch (const std::exception& e) {
            throw api_error(422, "Invalid", e.what());
        }
    } else {
        if (!patch.is_object()) {
            if (is_merge) throw bad_request("the merge patch must be a JSON object");
            if (is_apply) throw bad_request("the apply patch must be an object (a YAML mapping)");
        }
        if (is_apply && rq.sub != "scale") {
            // Server-side apply with field managers (409 on conflicts unless forced).
            patched =
                server_side_apply(&base, patch, manager_context(rq), parse_bool(force, false));
            rq.applied = true;
            if (!patched.contains("metadata") || !patched["metadata"].is_object())
                throw api_error(422, "Invalid", "the patched object has no metadata");
            if (patched["metadata"].value("resourceVersion", json("")) == "")
                patched["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"];
        } else {
            patched = std::move(base);
            if (!is_apply) patched.merge_patch(patch);
        }
    }
    if (!patched.is_object() || !patched.contains("metadata") || !patched["metadata"].is_object())
        throw api_error(422, "Invalid", "the patched object has no metadata");
    // A resourceVersion in the patch is a precondition.
    if (patched["metadata"].value("resourceVersion", json("")) !=
        cur["metadata"]["resourceVersion"])
        throw api_error(409, "Conflict",
                        "Operation cannot be fulfilled on " + res.qualified() + " \"" + rq.name +
                            "\": the object has been modified; please apply your changes to the "
                            "latest version and try again",
                        {{"name", rq.name}, {"group", res.group}, {"kind", res.plural}});
    if (const json name = patched["metadata"].value("name", json(rq.name)); name != rq.name)
        throw bad_request("the name of the object (" +
                          (name.is_string() ? name.get<std::string>() : name.dump()) +
                          ") does not match the name on the URL (" + rq.name + ")");
    if (rq.sub == "scale") {
        // Patches on /scale address the Scale object; translate to the main resource.
        RequestInfo get = rq;
        json scale = json::parse(do_get(get).body);
        scale.merge_patch(is_merge || is_apply ? patch : json::object());
        if (is_json_patch) scale = json::parse(do_get(get).body).patch(patch);
        json replicas = scale["spec"].value("replicas", json());
        std::string path =
            res.version(rq.version)->scale.value("specReplicasPath", ".spec.replicas");
        std::string ptr;
        for (char c : path) ptr += c == '.' ? '/' : c;
        json view = to_view(res, rq.version, cur);  // `base` may have been moved from
        if (replicas.is_number_integer()) view[json::json_pointer(ptr)] = replicas;
        RequestInfo main = rq;
        main.sub.clear();
        json obj = prepare_update(main, cur, std::move(view), true);
        finish_write(main, lock, std::move(obj), current, 200);
        return do_get(get);
    }
    json obj = prepare_update(rq, cur, std::move(patched), true);
    return finish_write(rq, lock, std::move(obj), current, 200);
}

// ---------------------------------------------------------------- commit with admission

HttpResponse Engine::finish_write(RequestInfo& rq, Lock& lock, json obj, StoredObject current,
                                  int code) {
    const Resource& res = *rq.res;
    std::vector<std::pair<std::string, std::string>> warnings;
    std::string operation = current ? "UPDATE" : "CREATE";
    uint64_t base_rv = rv_;
    std::string current_rv = current ? current->at("metadata").value("resourceVersion", "") : "";
    bool mutated = admit(rq, lock, operation, &obj, current ? &*current : nullptr, warnings);
    if (rv_ != base_rv) {
        // The lock was released for webhooks: re-check the stored state.
        const json* now = find_object(res, rq.ns, obj["metadata"].value("name", ""));
        if (current && (!now || (*now)["metadata"].value("resourceVersion", "") != current_rv))
            throw api_error(409, "Conflict",
                            "Operation cannot be fulfilled on " + res.qualified() + " \"" +
                                obj["metadata"].value("name", "") +
                                "\": the object has been modified; please apply your changes to "
                                "the latest version and try again",
                            {{"name", obj["metadata"].value("name", "")},
                             {"group", res.group},
                             {"kind", res.plural}});
        if (!current && now)
            throw api_error(
                409, "AlreadyExists",
                res.qualified() + " \"" + obj["metadata"].value("name", "") + "\" already exists",
                {{"name", obj["metadata"].value("name", "")},
                 {"group", res.group},
                 {"kind", res.plural}});
    }
    if (mutated) {
        json causes = json::array();
        apply_schema(rq, obj, causes, false, current ? &*current : nullptr);
        if (!causes.empty())
            throw invalid_error(res.group, res.kind, obj["metadata"].value("name", ""), causes);
    }
    // Writers other than server-side apply are recorded as Update managers (after admission:
    // what mutating webhooks add counts as the writer's, as in Kubernetes).
    if (!rq.applied) track_update(current ? &*current : nullptr, obj, manager_context(rq));
    HttpResponse response;
    response.status = code;
    response.headers = rq.warnings;
    response.headers.insert(response.headers.end(), warnings.begin(), warnings.end());
    if (current && obj == *current) {  // no-op: no new resourceVersion, no event
        response.body = view_dump(res, rq.version, *current);
        return response;
    }
    if (rq.dry_run) {
        if (!current) obj["metadata"].erase("resourceVersion");
        response.body = to_view(res, rq.version, obj).dump();
        return response;
    }
    if (current && current->at("metadata").contains("deletionTimestamp") &&
        string_list(obj["metadata"].value("finalizers", json::array())).empty()) {
        // The last finalizer is gone: the object goes away in the same request.
        // As in Kubernetes, the DELETED event and the response show the written object (without
        // finalizers) at the deletion's resourceVersion, so writers can wait for their own write.
        if (find_object(res, rq.ns, rq.name)) {
            commit_delete(res, rq.ns, rq.name, obj);
            obj["metadata"]["resourceVersion"] = std::to_string(rv_);
        }
        response.body = to_view(res, rq.version, obj).dump();
        return response;
    }
    const json& stored = commit_write(res, std::move(obj), current ? &*current : nullptr);
    response.body = written_view_dump(res, rq.version, stored);
    return response;
}

// ---------------------------------------------------------------- delete

json Engine::delete_object(const Resource& res, const std::string& version, const json& current,
                           const std::string& propagation, bool dry_run) {
    const json& meta = current["metadata"];
    std::string name = meta.value("name", "");
    std::string ns = meta.value("namespace", "");
    json obj = current;
    if (res.kind == "Namespace" && res.group.empty()) {
        if (name == "default" || name == "kube-system" || name == "kube-public")
            throw api_error(403, "Forbidden",
                            "namespaces \"" + name +
                                "\" is forbidden: this namespace may not be "
                                "deleted",
                            {{"name", name}, {"kind", "namespaces"}});
        if (meta.contains("deletionTimestamp")) return to_view(res, version, current);
        obj["metadata"]["deletionTimestamp"] = now_rfc3339();
        obj["metadata"]["deletionGracePeriodSeconds"] = 0;
        obj["status"]["phase"] = "Terminating";
        if (dry_run) return to_view(res, version, obj);
        controllers_dirty_ = true;
        return to_view(res, version, commit_write(res, std::move(obj), &current));
    }
    auto finalizers = string_list(meta.value("finalizers", json::array()));
    auto drop = [&](const char* f) {
        finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), f), finalizers.end());
    };
    auto add = [&](const char* f) {
        if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end())
            finalizers.push_back(f);
    };
    if (propagation == "Foreground") {
        drop("orphan");
        add("foregroundDeletion");
    } else if (propagation == "Orphan") {
        drop("foregroundDeletion");
        add("orphan");
    } else if (propagation == "Background") {
        drop("orphan");
        drop("foregroundDeletion");
    }
    if (!finalizers.empty()) {
        bool changed = false;
        if (!meta.contains("deletionTimestamp")) {
            obj["metadata"]["deletionTimestamp"] = now_rfc3339();
            obj["metadata"]["deletionGracePeriodSeconds"] = 0;
            if (meta.contains("generation"))
                obj["metadata"]["generation"] = meta["generation"].get<int64_t>() + 1;
            changed = true;
        }
        if (finalizers != string_list(meta.value("finalizers", json::array()))) {
            obj["metadata"]["finalizers"] = finalizers;
            changed = true;
        }
        if (!changed || dry_run) return to_view(res, version, obj);
        controllers_dirty_ = true;
        return to_view(res, version, commit_write(res, std::move(obj), &current));
    }
    json view = to_view(res, version, current);
    if (!dry_run) commit_delete(res, ns, name);
    if (res.return_deleted_object) return view;
    return {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Success"},
            {"details",
             {{"name", name},
              {"group", res.group},
              {"kind", res.plural},
              {"uid", meta.value("uid", "")}}}};
}

namespace {

json read_delete_options(const RequestInfo& rq) {
    json options = json::object();
    const std::string& body = rq.http->body;
    if (body.find_first_not_of(" \t\r\n") != std::string::npos) {
        check_body_depth(body);
        options = json::parse(body, nullptr, false);
        if (options.is_discarded() || !options.is_object())
            throw bad_request("couldn't decode the DeleteOptions body as a JSON object");
    }
    std::string p = query(rq, "propagationPolicy");
    if (!p.empty()) options["propagationPolicy"] = p;
    std::string o = query(rq, "orphanDependents");
    if (!o.empty()) options["orphanDependents"] = parse_bool(o, false);
    return options;
}

std::string propagation_of(const Resource& res, const json& options) {
    std::string p = options.value("propagationPolicy", "");
    if (p.empty() && options.contains("orphanDependents") &&
        options["orphanDependents"].is_boolean())
        p = options["orphanDependents"].get<bool>() ? "Orphan" : "Background";
    if (!p.empty() && p != "Orphan" && p != "Background" && p != "Foreground")
        throw invalid_error("meta.k8s.io", "DeleteOptions", "",
                            json::array({cause("FieldValueNotSupported", "propagationPolicy",
                                               "Unsupported value: \"" + p +
                                                   "\": supported values: \"Foreground\", "
                                                   "\"Background\", \"Orphan\"")}));
    (void)res;
    return p;
}

}  // namespace

HttpResponse Engine::do_delete(RequestInfo& rq, Lock& lock) {
    const Resource& res = *rq.res;
    json options = read_delete_options(rq);
    std::string propagation = propagation_of(res, options);
    if (options.contains("dryRun") && options["dryRun"].is_array())
        for (const auto& d : options["dryRun"])
            if (d == "All") rq.dry_run = true;
    const json* current = find_object(res, rq.ns, rq.name);
    if (!current) {
        ApiError e;
        e.code = 404;
        e.status = not_found_status(res, rq.name);
        throw e;
    }
    json cur = *current;
    if (options.contains("preconditions") && options["preconditions"].is_object()) {
        const json& pre = options["preconditions"];
        std::string uid = pre.value("uid", "");
        std::string rv = pre.value("resourceVersion", "");
        auto conflict = [&](const std::string& why) {
            return api_error(409, "Conflict",
                             "Operation cannot be fulfilled on " + res.qualified() + " \"" +
                                 rq.name + "\": " + why,
                             {{"name", rq.name}, {"group", res.group}, {"kind", res.plural}});
        };
        if (!uid.empty() && uid != cur["metadata"].value("uid", ""))
            throw conflict("Precondition failed: UID in precondition: " + uid +
                           ", UID in object meta: " + cur["metadata"].value("uid", ""));
        if (!rv.empty() && rv != cur["metadata"].value("resourceVersion", ""))
            throw conflict("the ResourceVersion in the precondition (" + rv +
                           ") does not match the ResourceVersion in record (" +
                           cur["metadata"].value("resourceVersion", "") +
                           "). The object might have been modified");
    }
    std::vector<std::pair<std::string, std::string>> warnings;
    admit(rq, lock, "DELETE", nullptr, &cur, warnings);
    current = find_object(res, rq.ns, rq.name);
    if (!current) {
        ApiError e;
        e.code = 404;
        e.status = not_found_status(res, rq.name);
        throw e;
    }
    json body = delete_object(res, rq.version, *current, propagation, rq.dry_run);
    HttpResponse r = json_response(body);
    r.headers = warnings;
    return r;
}

HttpResponse Engine::do_delete_collection(RequestInfo& rq, Lock& lock) {
    const Resource& res = *rq.res;
    json options = read_delete_options(rq);
    std::string propagation = propagation_of(res, options);
    LabelSelector labels;
    FieldSelector fields;
    try {
        labels = LabelSelector::parse(query(rq, "labelSelector"));
        fields = FieldSelector::parse(query(rq, "fieldSelector"), res.group, res.kind);
    } catch (const SelectorError& e) {
        throw bad_request(e.what());
    }
    std::vector<json> targets;
    auto s = store_.find(res.storage_key);
    if (s != store_.end())
        for (const auto& [key, stored] : s->second) {
            const json& obj = *stored;
            if (res.namespaced && obj["metadata"].value("namespace", "") != rq.ns) continue;
            const json& meta = obj["metadata"];
            if (!labels.matches(meta.contains("labels") ? meta["labels"] : json())) continue;
            if (!fields.matches(obj)) continue;
            targets.push_back(obj);
        }
    json items = json::array();
    for (const auto& t : targets) {
        std::vector<std::pair<std::string, std::string>> warnings;
        RequestInfo item = rq;
        item.name = t["metadata"].value("name", "");
        admit(item, lock, "DELETE", nullptr, &t, warnings);
        const json* current = find_object(res, rq.ns, item.name);
        if (!current) continue;
        json c = *current;
        delete_object(res, rq.version, c, propagation, rq.dry_run);
        items.push_back(to_view(res, rq.version, c));
    }
    return json_response({{"kind", res.list_kind},
                          {"apiVersion", res.group_version(rq.version)},
                          {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                          {"items", items}});
}

}  // namespace kopf::apiserver::core
