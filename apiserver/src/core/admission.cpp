// Admission webhooks: matching of Mutating/ValidatingWebhookConfigurations,
// AdmissionReview v1 requests through CoreOptions::admission, JSON-patch
// responses, warnings, failurePolicy, timeouts, dry-run side effects.
#include "core/engine.hpp"
#include "util/schema.hpp"
#include "util/validation.hpp"

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

// Fields read by type, with a fallback: a webhook's answer may hold anything, and so may a
// configuration stored before configurations were validated (a persisted store).
std::string text_field(const json& object, const char* key, const std::string& fallback) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

const json& array_field(const json& object, const char* key) {
    static const json empty = json::array();
    const auto it = object.find(key);
    return it != object.end() && it->is_array() ? *it : empty;
}

LabelSelector stored_selector(const json& webhook, const char* key) {
    try {
        return LabelSelector::from_json(webhook[key]);
    } catch (const SelectorError& error) {
        throw api_error(500, "InternalError",
                        "Internal error occurred: webhook \"" + text_field(webhook, "name", "") +
                            "\" has an invalid " + key + ": " + error.what());
    }
}

class WebhookChecks {
  public:
    explicit WebhookChecks(std::vector<FieldError>& errors) : errors_(errors) {}

    // A string field whose value is one of `supported`; absent is allowed unless `required`.
    void one_of(const json& webhook, const std::string& path, const char* key,
                const std::vector<std::string>& supported, bool required,
                const std::string& required_detail = "") {
        const auto it = webhook.find(key);
        const std::string field = child_path(path, key);
        if (it == webhook.end() || it->is_null()) {
            if (required) errors_.push_back(field_required(field, required_detail));
            return;
        }
        if (!it->is_string()) {
            errors_.push_back(field_type_invalid(field, *it, "must be a string"));
            return;
        }
        if (std::find(supported.begin(), supported.end(), it->get<std::string>()) ==
            supported.end())
            errors_.push_back(field_not_supported(field, *it, supported));
    }

    // A list that may be absent; returns it (empty if it is not one).
    const json& list(const json& object, const std::string& path, const char* key) {
        const auto it = object.find(key);
        if (it != object.end() && !it->is_null() && !it->is_array())
            errors_.push_back(field_type_invalid(child_path(path, key), *it, "must be a list"));
        return array_field(object, key);
    }

    // A list of strings, required to be non-empty; returns it (empty if it is not one).
    std::vector<std::string> strings(const json& object, const std::string& path, const char* key,
                                     const std::string& required_detail = "") {
        const auto it = object.find(key);
        const std::string field = child_path(path, key);
        std::vector<std::string> values;
        if (it == object.end() || it->is_null() || (it->is_array() && it->empty())) {
            errors_.push_back(field_required(field, required_detail));
            return values;
        }
        if (!it->is_array()) {
            errors_.push_back(field_type_invalid(field, *it, "must be a list of strings"));
            return values;
        }
        for (std::size_t i = 0; i < it->size(); ++i) {
            const json& value = (*it)[i];
            if (!value.is_string()) {
                errors_.push_back(field_type_invalid(field + "[" + std::to_string(i) + "]", value,
                                                     "must be a string"));
                continue;
            }
            values.push_back(value.get<std::string>());
        }
        return values;
    }

    void rule(const json& rule, const std::string& path) {
        if (!rule.is_object()) {
            errors_.push_back(field_type_invalid(path, rule, "must be an object"));
            return;
        }
        const auto operations = strings(rule, path, "operations");
        static const std::vector<std::string> kOperations = {"*", "CONNECT", "CREATE", "DELETE",
                                                             "UPDATE"};
        for (std::size_t i = 0; i < operations.size(); ++i) {
            if (std::find(kOperations.begin(), kOperations.end(), operations[i]) ==
                kOperations.end())
                errors_.push_back(field_not_supported(
                    child_path(path, "operations") + "[" + std::to_string(i) + "]", operations[i],
                    kOperations));
        }
        if (operations.size() > 1 &&
            std::find(operations.begin(), operations.end(), "*") != operations.end())
            errors_.push_back(
                field_invalid(child_path(path, "operations"), json(operations),
                              "if '*' is present, must not specify other operations"));
        strings(rule, path, "apiGroups");
        strings(rule, path, "apiVersions");
        strings(rule, path, "resources");
        one_of(rule, path, "scope", {"*", "Cluster", "Namespaced"}, false);
    }

    void selector(const json& webhook, const std::string& path, const char* key) {
        const auto it = webhook.find(key);
        if (it == webhook.end()) return;
        try {
            (void)LabelSelector::from_json(*it);
        } catch (const SelectorError& error) {
            errors_.push_back(field_invalid(child_path(path, key), *it, error.what()));
        }
    }

    void client_config(const json& webhook, const std::string& path) {
        const std::string field = child_path(path, "clientConfig");
        const auto it = webhook.find("clientConfig");
        if (it == webhook.end() || !it->is_object()) {
            if (it != webhook.end() && !it->is_null())
                errors_.push_back(field_type_invalid(field, *it, "must be an object"));
            else
                errors_.push_back(
                    field_required(field, "exactly one of url or service is required"));
            return;
        }
        const json& config = *it;
        const bool has_url = config.contains("url") && !config["url"].is_null();
        const bool has_service = config.contains("service") && !config["service"].is_null();
        if (has_url == has_service) {
            errors_.push_back(field_required(field, "exactly one of url or service is required"));
        } else if (has_url) {
            const json& url = config["url"];
            if (!url.is_string())
                errors_.push_back(field_type_invalid(field + ".url", url, "must be a string"));
            else if (url.get<std::string>().find("://") == std::string::npos)
                errors_.push_back(field_invalid(field + ".url", url,
                                                "host must be specified: not an absolute URL"));
        } else {
            service(config["service"], field + ".service");
        }
        if (config.contains("caBundle") && !config["caBundle"].is_string() &&
            !config["caBundle"].is_null())
            errors_.push_back(
                field_type_invalid(field + ".caBundle", config["caBundle"], "must be a string"));
    }

  private:
    void service(const json& service, const std::string& field) {
        if (!service.is_object()) {
            errors_.push_back(field_type_invalid(field, service, "must be an object"));
            return;
        }
        for (const char* key : {"name", "namespace"}) {
            const auto it = service.find(key);
            if (it == service.end() || !it->is_string() || it->get<std::string>().empty())
                errors_.push_back(field_required(child_path(field, key),
                                                 "service " + std::string(key) + " is required"));
        }
        if (const auto path = service.find("path");
            path != service.end() && !path->is_null() && !path->is_string())
            errors_.push_back(field_type_invalid(field + ".path", *path, "must be a string"));
        if (const auto port = service.find("port"); port != service.end() && !port->is_null()) {
            if (!port->is_number_integer() || port->get<long long>() < 1 ||
                port->get<long long>() > 65535)
                errors_.push_back(field_invalid(field + ".port", *port,
                                                "port is not valid: must be between 1 and 65535, "
                                                "inclusive"));
        }
    }

    std::vector<FieldError>& errors_;
};

}  // namespace

// kube-apiserver's validation of Mutating/ValidatingWebhookConfigurations (v1): what admission
// reads of a configuration is checked when it is written, so a malformed one is refused by
// field (422) instead of failing every request it matches later.
json validate_webhook_configuration(const json& config, bool mutating) {
    std::vector<FieldError> errors;
    WebhookChecks checks(errors);
    std::set<std::string> names;
    const json& list = checks.list(config, "", "webhooks");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& webhook = list[i];
        const std::string path = "webhooks[" + std::to_string(i) + "]";
        if (!webhook.is_object()) {
            errors.push_back(field_type_invalid(path, webhook, "must be an object"));
            continue;
        }
        const std::string name_field = path + ".name";
        const auto name = webhook.find("name");
        if (name == webhook.end() || name->is_null() ||
            (name->is_string() && name->get<std::string>().empty())) {
            errors.push_back(field_required(name_field));
        } else if (!name->is_string()) {
            errors.push_back(field_type_invalid(name_field, *name, "must be a string"));
        } else {
            std::string text = name->get<std::string>();
            if (text.back() == '.') text.pop_back();
            if (const auto problems = validate_dns1123_subdomain(text); !problems.empty())
                errors.push_back(field_invalid(name_field, text, problems.front()));
            else if (std::count(text.begin(), text.end(), '.') < 2)
                errors.push_back(
                    field_invalid(name_field, text,
                                  "should be a domain with at least three segments separated "
                                  "by dots"));
            if (!names.insert(name->get<std::string>()).second)
                errors.push_back(field_duplicate(name_field, *name));
        }
        const json& rule_list = checks.list(webhook, path, "rules");
        for (std::size_t j = 0; j < rule_list.size(); ++j)
            checks.rule(rule_list[j], path + ".rules[" + std::to_string(j) + "]");
        checks.one_of(webhook, path, "failurePolicy", {"Fail", "Ignore"}, false);
        checks.one_of(webhook, path, "matchPolicy", {"Equivalent", "Exact"}, false);
        checks.one_of(webhook, path, "sideEffects", {"None", "NoneOnDryRun"}, true,
                      "must specify one of None, NoneOnDryRun");
        if (mutating)
            checks.one_of(webhook, path, "reinvocationPolicy", {"IfNeeded", "Never"}, false);
        if (const auto timeout = webhook.find("timeoutSeconds");
            timeout != webhook.end() && !timeout->is_null()) {
            if (!timeout->is_number_integer())
                errors.push_back(
                    field_type_invalid(path + ".timeoutSeconds", *timeout, "must be an integer"));
            else if (timeout->get<long long>() < 1 || timeout->get<long long>() > 30)
                errors.push_back(field_invalid(path + ".timeoutSeconds", *timeout,
                                               "the timeout value must be between 1 and 30 "
                                               "seconds"));
        }
        const auto versions = checks.strings(webhook, path, "admissionReviewVersions",
                                             "must specify one of v1, v1beta1");
        if (!versions.empty() &&
            std::find(versions.begin(), versions.end(), "v1") == versions.end() &&
            std::find(versions.begin(), versions.end(), "v1beta1") == versions.end())
            errors.push_back(field_invalid(path + ".admissionReviewVersions",
                                           webhook["admissionReviewVersions"],
                                           "must include at least one of v1, v1beta1"));
        checks.selector(webhook, path, "namespaceSelector");
        checks.selector(webhook, path, "objectSelector");
        checks.client_config(webhook, path);
    }
    json causes = json::array();
    for (const auto& error : errors)
        causes.push_back(cause(error.reason, error.field, error.message));
    return causes;
}

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
            // Configurations are validated when written, and what is read here is read by type: a
            // configuration stored before its validation existed (a persisted store) matches
            // nothing where it is malformed, and a selector it cannot have is refused by name.
            for (const auto& wh : array_field(config, "webhooks")) {
                bool rule_ok = false;
                for (const auto& rule : array_field(wh, "rules")) {
                    std::string scope = text_field(rule, "scope", "*");
                    bool namespaced_obj = res.namespaced;
                    if (scope == "Namespaced" && !namespaced_obj) continue;
                    if (scope == "Cluster" && namespaced_obj) continue;
                    if (!list_matches(array_field(rule, "operations"), operation) &&
                        !list_matches(array_field(rule, "operations"), "*"))
                        continue;
                    if (!list_matches(array_field(rule, "apiGroups"), res.group)) continue;
                    if (!list_matches(array_field(rule, "apiVersions"), rq.version)) continue;
                    if (!resource_matches(array_field(rule, "resources"), res.plural, rq.sub))
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
                    LabelSelector sel = stored_selector(wh, "objectSelector");
                    if (!sel.matches(labels_of(object)) && !sel.matches(labels_of(old_object)))
                        continue;
                }
                if (wh.contains("namespaceSelector") && wh["namespaceSelector"].is_object()) {
                    LabelSelector sel = stored_selector(wh, "namespaceSelector");
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
                hooks.push_back({text_field(wh, "name", ""), wh});
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
        bool fail_open = text_field(wh, "failurePolicy", "Fail") == "Ignore";
        std::string side = text_field(wh, "sideEffects", "Unknown");
        if (rq.dry_run && side != "None" && side != "NoneOnDryRun")
            throw bad_request("admission webhook \"" + hook.name + "\" does not support dry run");
        auto failure = [&](const std::string& why) -> std::optional<json> {
            if (fail_open) return std::nullopt;
            throw api_error(
                500, "InternalError",
                "Internal error occurred: failed calling webhook \"" + hook.name + "\": " + why);
        };
        if (!options_.admission) return failure("failed to call webhook: no admission transport");
        const auto client_config = wh.find("clientConfig");
        static const json kNoClientConfig = json::object();
        const json& cc = client_config != wh.end() ? *client_config : kNoClientConfig;
        WebhookCall wc;
        if (cc.contains("url") && cc["url"].is_string()) {
            wc.url = cc["url"].get<std::string>();
        } else if (cc.contains("service") && cc["service"].is_object()) {
            const json& svc = cc["service"];
            const auto port = svc.find("port");
            wc.url = "https://" + text_field(svc, "name", "") + "." +
                     text_field(svc, "namespace", "") + ".svc:" +
                     std::to_string(port != svc.end() && port->is_number_integer()
                                        ? port->get<long long>()
                                        : 443) +
                     text_field(svc, "path", "");
        } else {
            return failure("failed to call webhook: no clientConfig url or service");
        }
        if (cc.contains("caBundle") && cc["caBundle"].is_string())
            wc.ca_bundle_pem = base64_decode(cc["caBundle"].get<std::string>()).value_or("");
        const auto timeout_field = wh.find("timeoutSeconds");
        const long long timeout = timeout_field != wh.end() && timeout_field->is_number_integer()
                                      ? timeout_field->get<long long>()
                                      : 10;
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
        if (text_field(resp, "uid", "") != uid)
            return failure("received invalid webhook response: expected response.uid=\"" + uid +
                           "\", got " + (resp.contains("uid") ? resp["uid"].dump() : "none"));
        for (const auto& [key, expected, fits] :
             {std::tuple{"allowed", "a boolean", &json::is_boolean},
              std::tuple{"patch", "a base64 string", &json::is_string}}) {
            const auto field = resp.find(key);
            if (field != resp.end() && !field->is_null() && !((*field).*fits)())
                return failure(std::string("received invalid webhook response: response.") + key +
                               " must be " + expected + ", got " + field->dump());
        }
        if (!is_mutating && resp.contains("patch"))
            return failure(
                "received invalid webhook response: validating webhooks may not "
                "return patches");
        return resp;
    };
    auto handle_response = [&](const Hook& hook, const json& resp) {
        for (const auto& w : array_field(resp, "warnings"))
            if (w.is_string())
                warnings.emplace_back("Warning", "299 - " + json(w.get<std::string>()).dump());
        if (!resp.contains("allowed") || resp["allowed"] != true) {
            const json st = resp.contains("status") && resp["status"].is_object() ? resp["status"]
                                                                                  : json::object();
            const auto code_field = st.find("code");
            int code = code_field != st.end() && code_field->is_number_integer() &&
                               code_field->get<long long>() >= 400 &&
                               code_field->get<long long>() <= 599
                           ? code_field->get<int>()
                           : 400;
            std::string msg = text_field(st, "message", "");
            if (msg.empty()) msg = text_field(st, "reason", "");
            std::string text = "admission webhook \"" + hook.name + "\" denied the request" +
                               (msg.empty() ? " without explanation" : ": " + msg);
            ApiError e = api_error(code, text_field(st, "reason", ""), text);
            if (st.contains("details")) e.status["details"] = st["details"];
            throw e;
        }
    };
    for (const auto& hook : mutating) {
        json view = object ? to_view(res, rq.version, *object) : json();
        auto resp = call(hook, view, true);
        if (!resp) continue;
        handle_response(hook, *resp);
        if (resp->contains("patch") && (*resp)["patch"].is_string() && object) {
            if (text_field(*resp, "patchType", "") != "JSONPatch")
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
