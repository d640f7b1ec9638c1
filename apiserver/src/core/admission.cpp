// Admission webhooks: matching of Mutating/ValidatingWebhookConfigurations,
// AdmissionReview v1 requests through CoreOptions::admission, JSON-patch
// responses, warnings, failurePolicy, timeouts, dry-run side effects.
#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

const char* kMutating = "admissionregistration.k8s.io/mutatingwebhookconfigurations";
const char* kValidating = "admissionregistration.k8s.io/validatingwebhookconfigurations";

bool list_matches(const json& list, const std::string& value) {
    if (!list.is_array()) return false;
    for (const auto& v : list)
        if (v == "*" || v == value) return true;
    return false;
}

bool resource_matches(const json& resources, const std::string& plural, const std::string& sub) {
    if (!resources.is_array()) return false;
    for (const auto& r : resources) {
        if (!r.is_string()) continue;
        std::string s = r.get<std::string>();
        std::string rp = s.substr(0, s.find('/'));
        std::string rs = s.find('/') == std::string::npos ? "" : s.substr(s.find('/') + 1);
        bool plural_ok = rp == "*" || rp == plural;
        bool sub_ok = (rs.empty() && sub.empty()) || rs == "*" || rs == sub;
        if (plural_ok && sub_ok) return true;
    }
    return false;
}

struct Hook {
    std::string name;
    json webhook;
};

}  // namespace

bool Engine::admit(RequestInfo& rq, Lock& lock, const std::string& operation, json* object,
                   const json* old_object,
                   std::vector<std::pair<std::string, std::string>>& warnings) {
    const Resource& res = *rq.res;
    if (res.storage_key == kMutating || res.storage_key == kValidating) return false;
    auto collect = [&](const char* storage) {
        std::vector<Hook> hooks;
        auto s = store_.find(storage);
        if (s == store_.end()) return hooks;
        for (const auto& [key, stored] : s->second) {  // sorted by name
            const json& config = *stored;
            if (!config.contains("webhooks") || !config["webhooks"].is_array()) continue;
            for (const auto& wh : config["webhooks"]) {
                bool rule_ok = false;
                for (const auto& rule : wh.value("rules", json::array())) {
                    std::string scope = rule.value("scope", "*");
                    bool namespaced_obj = res.namespaced;
                    if (scope == "Namespaced" && !namespaced_obj) continue;
                    if (scope == "Cluster" && namespaced_obj) continue;
                    if (!list_matches(rule.value("operations", json::array()), operation) &&
                        !list_matches(rule.value("operations", json::array()), "*"))
                        continue;
                    if (!list_matches(rule.value("apiGroups", json::array()), res.group)) continue;
                    if (!list_matches(rule.value("apiVersions", json::array()), rq.version))
                        continue;
                    if (!resource_matches(rule.value("resources", json::array()), res.plural,
                                          rq.sub))
                        continue;
                    rule_ok = true;
                    break;
                }
                if (!rule_ok) continue;
                auto labels_of = [](const json* o) {
                    return o && (*o)["metadata"].contains("labels") ? (*o)["metadata"]["labels"]
                                                                    : json();
                };
                if (wh.contains("objectSelector") && wh["objectSelector"].is_object()) {
                    LabelSelector sel = LabelSelector::from_json(wh["objectSelector"]);
                    if (!sel.matches(labels_of(object)) && !sel.matches(labels_of(old_object)))
                        continue;
                }
                if (wh.contains("namespaceSelector") && wh["namespaceSelector"].is_object()) {
                    LabelSelector sel = LabelSelector::from_json(wh["namespaceSelector"]);
                    json labels;
                    if (res.namespaced) {
                        const json* ns =
                            find_object(*find_endpoint("", "v1", "namespaces"), "", rq.ns);
                        if (ns && (*ns)["metadata"].contains("labels"))
                            labels = (*ns)["metadata"]["labels"];
                        if (!sel.matches(labels)) continue;
                    } else if (res.kind == "Namespace" && res.group.empty()) {
                        if (!sel.matches(labels_of(object)) && !sel.matches(labels_of(old_object)))
                            continue;
                    }
                }
                hooks.push_back({wh.value("name", ""), wh});
            }
        }
        return hooks;
    };
    auto mutating = collect(kMutating);
    auto validating = collect(kValidating);
    if (mutating.empty() && validating.empty()) return false;
    bool mutated = false;

    std::string kind_version = rq.version;
    auto review_for = [&](const std::string& uid, const json& obj, const json* old) {
        json gvk = {{"group", res.group}, {"version", kind_version}, {"kind", res.kind}};
        json gvr = {{"group", res.group}, {"version", kind_version}, {"resource", res.plural}};
        json user = {{"username", rq.http->user.name}, {"groups", rq.http->user.groups}};
        std::string opts_kind = operation == "CREATE"   ? "CreateOptions"
                                : operation == "UPDATE" ? "UpdateOptions"
                                                        : "DeleteOptions";
        // As kube-apiserver: empty strings (subResource of the main resource, the name of an
        // object with generateName, the namespace of cluster-scoped objects) are omitted.
        json request = {{"uid", uid},
                        {"kind", gvk},
                        {"resource", gvr},
                        {"requestKind", gvk},
                        {"requestResource", gvr},
                        {"operation", operation},
                        {"userInfo", user},
                        {"object", obj},
                        {"oldObject", old ? to_view(res, rq.version, *old) : json()},
                        {"dryRun", rq.dry_run},
                        {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", opts_kind}}}};
        if (!rq.sub.empty()) {
            request["subResource"] = rq.sub;
            request["requestSubResource"] = rq.sub;
        }
        const std::string name =
            rq.name.empty() && !obj.is_null() ? obj["metadata"].value("name", "") : rq.name;
        if (!name.empty()) request["name"] = name;
        if (!rq.ns.empty()) request["namespace"] = rq.ns;
        return json{{"apiVersion", "admission.k8s.io/v1"},
                    {"kind", "AdmissionReview"},
                    {"request", std::move(request)}};
    };
    // Calls one webhook; returns the parsed response or nullopt when ignorable failure.
    auto call = [&](const Hook& hook, const json& obj, bool is_mutating) -> std::optional<json> {
        const json& wh = hook.webhook;
        bool fail_open = wh.value("failurePolicy", "Fail") == "Ignore";
        std::string side = wh.value("sideEffects", "Unknown");
        if (rq.dry_run && side != "None" && side != "NoneOnDryRun")
            throw bad_request("admission webhook \"" + hook.name + "\" does not support dry run");
        auto failure = [&](const std::string& why) -> std::optional<json> {
            if (fail_open) return std::nullopt;
            throw api_error(
                500, "InternalError",
                "Internal error occurred: failed calling webhook \"" + hook.name + "\": " + why);
        };
        if (!options_.admission) return failure("failed to call webhook: no admission transport");
        json cc = wh.value("clientConfig", json::object());
        WebhookCall wc;
        if (cc.contains("url")) {
            wc.url = cc["url"].get<std::string>();
        } else if (cc.contains("service")) {
            const json& svc = cc["service"];
            wc.url = "https://" + svc.value("name", "") + "." + svc.value("namespace", "") +
                     ".svc:" + std::to_string(svc.value("port", 443)) + svc.value("path", "");
        } else {
            return failure("failed to call webhook: no clientConfig url or service");
        }
        if (cc.contains("caBundle") && cc["caBundle"].is_string())
            wc.ca_bundle_pem = base64_decode(cc["caBundle"].get<std::string>()).value_or("");
        int timeout = wh.value("timeoutSeconds", 10);
        wc.timeout = std::chrono::seconds(timeout);
        wc.url += (wc.url.find('?') == std::string::npos ? "?" : "&") + std::string("timeout=") +
                  std::to_string(timeout) + "s";
        std::string uid = new_uid();
        wc.body = review_for(uid, obj, old_object).dump();
        auto transport = options_.admission;
        lock.unlock();
        WebhookReply reply;
        try {
            reply = transport->post(wc);
        } catch (const std::exception& e) {
            reply.reached = false;
            reply.error = e.what();
        }
        lock.lock();
        if (!reply.reached) return failure("failed to call webhook: " + reply.error);
        if (reply.status != 200)
            return failure("failed to call webhook: the server responded with status " +
                           std::to_string(reply.status));
        json review = json::parse(reply.body, nullptr, false);
        if (review.is_discarded() || !review.is_object() || !review.contains("response") ||
            !review["response"].is_object())
            return failure("received invalid webhook response: missing response");
        const json& resp = review["response"];
        if (resp.value("uid", "") != uid)
            return failure("received invalid webhook response: expected response.uid=\"" + uid +
                           "\", got \"" + resp.value("uid", "") + "\"");
        if (!is_mutating && resp.contains("patch"))
            return failure(
                "received invalid webhook response: validating webhooks may not "
                "return patches");
        return resp;
    };
    auto handle_response = [&](const Hook& hook, const json& resp) {
        for (const auto& w : resp.value("warnings", json::array()))
            if (w.is_string())
                warnings.emplace_back("Warning", "299 - " + json(w.get<std::string>()).dump());
        if (!resp.value("allowed", false)) {
            json st = resp.value("status", json::object());
            int code = st.value("code", 400);
            if (code < 400) code = 400;
            std::string msg = st.value("message", "");
            if (msg.empty()) msg = st.value("reason", "");
            std::string text = "admission webhook \"" + hook.name + "\" denied the request" +
                               (msg.empty() ? " without explanation" : ": " + msg);
            ApiError e = api_error(code, st.value("reason", ""), text);
            if (st.contains("details")) e.status["details"] = st["details"];
            throw e;
        }
    };
    for (const auto& hook : mutating) {
        json view = object ? to_view(res, rq.version, *object) : json();
        auto resp = call(hook, view, true);
        if (!resp) continue;
        handle_response(hook, *resp);
        if (resp->contains("patch") && object) {
            if (resp->value("patchType", "") != "JSONPatch")
                throw api_error(500, "InternalError",
                                "Internal error occurred: failed calling webhook \"" + hook.name +
                                    "\": received invalid webhook response: patchType must be "
                                    "JSONPatch");
            auto decoded = base64_decode((*resp)["patch"].get<std::string>());
            json ops = decoded ? json::parse(*decoded, nullptr, false) : json();
            if (!ops.is_array())
                throw api_error(500, "InternalError",
                                "Internal error occurred: failed calling webhook \"" + hook.name +
                                    "\": the patch is not a JSON array");
            try {
                json patched = view.patch(ops);
                *object = from_view(res, rq.version, patched);
                mutated = true;
            } catch (const json::exception& e) {
                throw api_error(500, "InternalError",
                                "Internal error occurred: failed calling webhook \"" + hook.name +
                                    "\": " + e.what());
            }
        }
    }
    for (const auto& hook : validating) {
        json view = object ? to_view(res, rq.version, *object) : json();
        auto resp = call(hook, view, false);
        if (resp) handle_response(hook, *resp);
    }
    return mutated;
}

}  // namespace kopf::apiserver::core
