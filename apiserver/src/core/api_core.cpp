// ApiCore: a thin shell over the Engine, plus request routing (paths -> verbs).
#include "api/api_core.hpp"

#include <cctype>

#include "core/engine.hpp"
#include "core/persistence.hpp"
#include "core/rbac.hpp"

namespace kopf::apiserver {

using core::Engine;

struct ApiCore::Impl {
    std::shared_ptr<Engine> engine;
};

ApiCore::ApiCore(CoreOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->engine = std::make_shared<Engine>(std::move(options));
    impl_->engine->start();
}

ApiCore::~ApiCore() {
    impl_->engine->shutdown();
}

HttpResponse ApiCore::handle(const HttpRequest& request) {
    return impl_->engine->handle(request);
}
bool ApiCore::may_block(const HttpRequest& request) const {
    return impl_->engine->may_block(request);
}
void ApiCore::drop_watches() {
    impl_->engine->drop_watches();
}
void ApiCore::compact_history() {
    impl_->engine->compact_history();
}
void ApiCore::stall_watches(bool stalled) {
    impl_->engine->stall_watches(stalled);
}

}  // namespace kopf::apiserver

namespace kopf::apiserver::core {

Engine::Engine(CoreOptions options) : options_(std::move(options)) {}

Engine::~Engine() {
    shutdown();
}

void Engine::start() {
    builtins_ = builtin_resources();
    for (const auto& r : builtins_) register_resource(r);
    {
        std::unique_lock lock(mu_);
        if (!options_.data_dir.empty()) load_persisted();
        auto* namespaces = find_endpoint("", "v1", "namespaces").get();
        for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
            if (find_object(*namespaces, "", ns)) continue;
            json obj = {{"apiVersion", "v1"},
                        {"kind", "Namespace"},
                        {"metadata",
                         {{"name", ns},
                          {"uid", new_uid()},
                          {"creationTimestamp", now_rfc3339()},
                          {"labels", {{"kubernetes.io/metadata.name", ns}}}}},
                        {"spec", {{"finalizers", {"kubernetes"}}}},
                        {"status", {{"phase", "Active"}}}};
            commit_write(*namespaces, std::move(obj), nullptr);
        }
        if (options_.rbac) bootstrap_rbac();
        // In memory, history starts with the first write; restored state has no history.
        oldest_available_rv_ = options_.data_dir.empty() ? 0 : rv_;
        run_controllers();
    }
    background_ = std::thread([this] { background_loop(); });
}

void Engine::shutdown() {
    {
        std::unique_lock lock(mu_);
        if (stopping_) return;
        stopping_ = true;
        for (auto& [key, list] : watchers_)
            for (auto& w : list) {
                if (w->sink) w->sink->close();
                w->sink.reset();
                w->active = false;
            }
        watchers_.clear();
    }
    cv_.notify_all();
    if (background_.joinable()) background_.join();
    std::unique_lock lock(mu_);
    persistence_.reset();
}

bool Engine::may_block(const HttpRequest& request) const {
    if (request.method == "GET") return false;  // reads wait on neither disk nor webhooks
    return !options_.data_dir.empty() || webhooks_configured_.load();
}

HttpResponse Engine::handle(const HttpRequest& request) {
    HttpResponse response;
    try {
        return route(request);
    } catch (const ApiError& e) {
        response.status = e.code;
        response.headers = e.headers;
        if (!e.plain_text.empty()) {
            response.content_type = "text/plain; charset=utf-8";
            response.body = e.plain_text;
        } else {
            // Messages may quote the client's invalid UTF-8: replaced, not a failure.
            response.body = e.status.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            if (e.status.contains("details") && e.status["details"].contains("retryAfterSeconds"))
                response.headers.emplace_back(
                    "Retry-After",
                    std::to_string(e.status["details"]["retryAfterSeconds"].get<int>()));
        }
    } catch (const std::exception& e) {
        response.status = 500;
        response.body =
            make_status(500, "InternalError", std::string("Internal error occurred: ") + e.what())
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    return response;
}

namespace {

// kube-apiserver's 406 for an Accept header that admits no JSON.
void require_json_acceptable(const std::string& accept) {
    if (!accept.empty() && accept.find("json") == std::string::npos &&
        accept.find("*/*") == std::string::npos &&
        accept.find("application/*") == std::string::npos)
        throw api_error(406, "NotAcceptable",
                        "the server was unable to respond with a content type that the client "
                        "supports");
}

std::vector<std::string> split_path(const std::string& path) {
    std::vector<std::string> seg;
    std::size_t i = 0;
    while (i < path.size()) {
        std::size_t j = path.find('/', i);
        if (j == std::string::npos) j = path.size();
        if (j > i) seg.push_back(path.substr(i, j - i));
        i = j + 1;
    }
    return seg;
}

// The verb kube-apiserver's authorizers see for a request on a resource.
std::string kube_verb(const HttpRequest& request, bool named, bool watch_prefix) {
    const std::string& m = request.method;
    if (m == "GET" || m == "HEAD") {
        auto it = request.query.find("watch");
        const bool watch = watch_prefix || (it != request.query.end() && it->second != "false" &&
                                            it->second != "0");
        return watch ? "watch" : named ? "get" : "list";
    }
    if (m == "POST") return "create";
    if (m == "PUT") return "update";
    if (m == "PATCH") return "patch";
    if (m == "DELETE") return named ? "delete" : "deletecollection";
    std::string verb = m;
    for (char& c : verb) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return verb;
}

HttpResponse text(const std::string& body) {
    HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.body = body;
    return r;
}

// Protobuf's length-delimited field (wire type 2) with a one- or two-byte length.
std::string proto_bytes(int field, const std::string& value) {
    std::string out(1, static_cast<char>((field << 3) | 2));
    std::size_t n = value.size();
    while (n >= 0x80) {
        out += static_cast<char>((n & 0x7F) | 0x80);
        n >>= 7;
    }
    out += static_cast<char>(n);
    return out + value;
}

// GET /openapi/v2. client-go asks for it only as protobuf (gnostic's openapi_v2.Document),
// when kubectl validates on the client: kubectl applying a CRD and objects of it in one file
// does so for the objects, whose kind the server does not know yet. The document describes
// no definitions, so kubectl skips client-side validation (as for any kind a real server's
// document lacks) and reports the objects' unknown kind itself ("no matches for kind ...;
// ensure CRDs are installed first"). JSON clients get the same document as JSON.
HttpResponse openapi_v2(const std::string& accept) {
    HttpResponse r;
    if (accept.find("application/com.github.proto-openapi.spec.v2") != std::string::npos) {
        // Document{swagger = 1: "2.0", info = 2: {title = 1, version = 2}, paths = 8: {}}.
        r.content_type = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
        r.body = proto_bytes(1, "2.0") +
                 proto_bytes(2, proto_bytes(1, "Kubernetes") + proto_bytes(2, "v1.32.0")) +
                 proto_bytes(8, "");
        return r;
    }
    require_json_acceptable(accept);
    r.body = json{{"swagger", "2.0"},
                  {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                  {"paths", json::object()}}
                 .dump();
    return r;
}

}  // namespace

HttpResponse Engine::route(const HttpRequest& request) {
    const std::string& p = request.path;
    if (p == "/version" || p == "/version/") {
        authorize_path(request);
        HttpResponse r;
        r.body = json{{"major", "1"},
                      {"minor", "32"},
                      {"emulationMajor", "1"},
                      {"emulationMinor", "32"},
                      {"minCompatibilityMajor", "1"},
                      {"minCompatibilityMinor", "31"},
                      {"gitVersion", "v1.32.0"},
                      {"gitCommit", "0000000000000000000000000000000000000000"},
                      {"gitTreeState", "clean"},
                      {"buildDate", "2026-01-01T00:00:00Z"},
                      {"goVersion", "go1.23.0"},
                      {"compiler", "gc"},
                      {"platform", "linux/amd64"}}
                     .dump();
        return r;
    }
    if (p == "/healthz" || p == "/livez" || p == "/readyz" || p.rfind("/healthz/", 0) == 0 ||
        p.rfind("/livez/", 0) == 0 || p.rfind("/readyz/", 0) == 0) {
        authorize_path(request);
        return text("ok");
    }
    auto seg = split_path(p);
    if (seg.empty() || (seg[0] != "api" && seg[0] != "apis") ||
        seg.size() <= (seg[0] == "api" ? 2U : 3U))
        authorize_path(request);
    if (seg.empty()) throw page_not_found();
    const std::string& accept = request.accept;
    if (p == "/openapi/v2" && request.method == "GET") return openapi_v2(accept);
    require_json_acceptable(accept);
    if (seg[0] == "openapi") {
        if (request.method != "GET") throw page_not_found();
        std::unique_lock lock(mu_);
        return openapi(seg);
    }
    if (seg[0] == "api" || seg[0] == "apis") {
        std::size_t gv_end = seg[0] == "api" ? 2 : 3;
        if (seg.size() <= gv_end) {
            if (request.method != "GET") throw page_not_found();
            std::unique_lock lock(mu_);
            return discovery(seg, request);
        }
        std::string group = seg[0] == "api" ? "" : seg[1];
        std::string version = seg[gv_end - 1];
        if (seg[0] == "api" && version != "v1") throw page_not_found();
        return resource_request(request, seg, gv_end, group, version);
    }
    throw page_not_found();
}

HttpResponse Engine::resource_request(const HttpRequest& request,
                                      const std::vector<std::string>& seg, std::size_t gv_end,
                                      const std::string& group, const std::string& version) {
    std::vector<std::string> rest(seg.begin() + static_cast<long>(gv_end), seg.end());
    bool watch_prefix = false;
    if (!rest.empty() && rest[0] == "watch") {
        watch_prefix = true;
        rest.erase(rest.begin());
    }
    if (rest.empty()) throw page_not_found();
    RequestInfo rq;
    rq.http = &request;
    rq.version = version;
    std::string plural;
    bool namespaced_path = false;
    if (rest[0] == "namespaces" && rest.size() >= 3 &&
        !(rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"))) {
        namespaced_path = true;
        rq.ns = rest[1];
        plural = rest[2];
        rest.erase(rest.begin(), rest.begin() + 3);
    } else {
        plural = rest[0];
        rest.erase(rest.begin());
    }
    if (rest.size() > 2) throw page_not_found();
    if (!rest.empty()) rq.name = rest[0];
    if (rest.size() == 2) rq.sub = rest[1];

    std::unique_lock lock(mu_);
    retired_.clear();  // no request holds references into the store any more
    if (options_.rbac) {
        // Decided before the resource is looked up, as kube-apiserver does: a user without
        // access learns nothing about what exists.
        RequestAttributes attributes;
        attributes.resource_request = true;
        attributes.verb = kube_verb(request, !rq.name.empty(), watch_prefix);
        attributes.group = group;
        attributes.resource = plural;
        attributes.subresource = rq.sub;
        attributes.name = rq.name;
        // A namespace is its own namespace, so a RoleBinding there may grant reading it.
        attributes.ns = !namespaced_path && plural == "namespaces" ? rq.name : rq.ns;
        authorize_locked(request, attributes);
    }
    rq.res = find_endpoint(group, version, plural);
    if (!rq.res) throw page_not_found();
    const Resource& res = *rq.res;
    if (namespaced_path && !res.namespaced) throw page_not_found();
    if (!namespaced_path && res.namespaced && !rq.name.empty()) throw page_not_found();

    const auto& q = request.query;
    auto qv = [&](const char* key) {
        auto it = q.find(key);
        return it == q.end() ? std::string() : it->second;
    };
    bool watch = watch_prefix || (q.count("watch") && qv("watch") != "false" && qv("watch") != "0");
    const std::string& m = request.method;
    if (m == "GET")
        rq.verb = watch ? "watch" : rq.name.empty() ? "list" : "get";
    else if (m == "POST" && rq.name.empty())
        rq.verb = "create";
    else if (m == "PUT" && !rq.name.empty())
        rq.verb = "update";
    else if (m == "PATCH" && !rq.name.empty())
        rq.verb = "patch";
    else if (m == "DELETE")
        rq.verb = rq.name.empty() ? "deletecollection" : "delete";
    else
        throw api_error(405, "MethodNotAllowed",
                        "the server does not allow this method on the requested resource");
    if (!rq.sub.empty()) {
        const ResourceVersion* v = res.version(version);
        bool known = (rq.sub == "status" && v && v->status_subresource) ||
                     (rq.sub == "scale" && v && !v->scale.is_null());
        for (const auto& [sub, verbs] : res.extra_subresources)
            if (sub == rq.sub) known = true;
        if (!known)
            throw api_error(404, "NotFound", "the server could not find the requested resource");
        if (rq.verb != "get" && rq.verb != "update" && rq.verb != "patch")
            throw api_error(405, "MethodNotAllowed",
                            rq.verb + " is not supported on resources of kind \"" + res.plural +
                                "/" + rq.sub + "\"");
        if (rq.sub == "finalize" && rq.verb != "update")
            throw api_error(
                405, "MethodNotAllowed",
                rq.verb + " is not supported on resources of kind \"namespaces/finalize\"");
    }
    std::string verb_check = rq.verb;
    if (std::find(res.verbs.begin(), res.verbs.end(), verb_check) == res.verbs.end()) {
        if (verb_check == "create" && res.terminating)
            throw api_error(403, "Forbidden",
                            res.qualified() +
                                " is forbidden: create not allowed while custom "
                                "resource definition is terminating",
                            {{"group", res.group}, {"kind", res.plural}});
        if ((verb_check == "update" || verb_check == "patch") && res.terminating) {
            // Updates stay allowed on terminating CRDs' objects (finalizer removal).
        } else {
            throw api_error(
                405, "MethodNotAllowed",
                verb_check + " is not supported on resources of kind \"" + res.plural + "\"");
        }
    }
    if (res.namespaced && rq.ns.empty() && (rq.verb == "create" || rq.verb == "deletecollection"))
        throw api_error(405, "MethodNotAllowed",
                        "the server does not allow this method on the requested resource");
    std::string dry = qv("dryRun");
    if (!dry.empty() && dry != "All")
        throw invalid_error(
            "meta.k8s.io", "DryRun", "",
            json::array({cause("FieldValueNotSupported", "dryRun",
                               "Unsupported value: \"" + dry + "\": supported values: \"All\"")}));
    rq.dry_run = dry == "All";
    std::string fv = qv("fieldValidation");
    if (!fv.empty() && fv != "Ignore" && fv != "Warn" && fv != "Strict")
        throw bad_request("fieldValidation: Unsupported value: \"" + fv +
                          "\": supported values: \"Ignore\", \"Strict\", \"Warn\"");
    if (!fv.empty()) rq.field_validation = fv;
    rq.field_manager = qv("fieldManager");
    if (rq.field_manager.empty()) {
        const std::string& ua = request.user_agent;
        rq.field_manager = ua.substr(0, ua.find('/'));
        if (rq.field_manager.empty()) rq.field_manager = "unknown";
    }
    HttpResponse response;
    if (rq.verb == "get")
        response = do_get(rq);
    else if (rq.verb == "list")
        response = do_list(rq);
    else if (rq.verb == "watch")
        response = do_watch(rq);
    else if (rq.verb == "create")
        response = do_create(rq, lock);
    else if (rq.verb == "update")
        response = do_update(rq, lock);
    else if (rq.verb == "patch")
        response = do_patch(rq, lock);
    else if (rq.verb == "delete")
        response = do_delete(rq, lock);
    else
        response = do_delete_collection(rq, lock);
    if (controllers_dirty_) run_controllers();
    return response;
}

void Engine::authorize_path(const HttpRequest& request) {
    if (!options_.rbac) return;
    RequestAttributes attributes;
    attributes.verb = request.method;
    for (char& c : attributes.verb)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    attributes.path = request.path;
    std::unique_lock lock(mu_);
    authorize_locked(request, attributes);
}

void Engine::authorize_locked(const HttpRequest& request, const RequestAttributes& attributes) {
    auto stored = [this](const char* plural, const std::string& key) -> const json* {
        auto s = store_.find(std::string("rbac.authorization.k8s.io/") + plural);
        if (s == store_.end()) return nullptr;
        auto it = s->second.find(key);
        return it == s->second.end() ? nullptr : it->second.get();
    };
    RbacObjects objects;
    if (auto s = store_.find("rbac.authorization.k8s.io/clusterrolebindings"); s != store_.end())
        for (const auto& [key, object] : s->second)
            objects.cluster_role_bindings.push_back(object.get());
    if (auto s = store_.find("rbac.authorization.k8s.io/rolebindings");
        s != store_.end() && !attributes.ns.empty()) {
        const std::string prefix = attributes.ns + "/";
        for (auto it = s->second.lower_bound(prefix);
             it != s->second.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
            objects.role_bindings.push_back(it->second.get());
    }
    objects.role = [&](const std::string& ns, const std::string& name) {
        return stored("roles", ns + "/" + name);
    };
    objects.cluster_role = [&](const std::string& name) { return stored("clusterroles", name); };
    if (rbac_allows(request.user, attributes, objects)) return;
    json details = nullptr;
    if (attributes.resource_request) {
        details = {{"group", attributes.group}, {"kind", attributes.resource}};
        if (!attributes.name.empty()) details["name"] = attributes.name;
    }
    throw api_error(403, "Forbidden", forbidden_message(request.user, attributes),
                    std::move(details));
}

void Engine::bootstrap_rbac() {
    auto bootstrap = [this](const char* plural, std::vector<json> objects) {
        auto* res = find_endpoint("rbac.authorization.k8s.io", "v1", plural).get();
        for (auto& object : objects) {
            const std::string name = object["metadata"]["name"];
            if (find_object(*res, "", name)) continue;  // kept as restored or as changed
            object["metadata"]["uid"] = new_uid();
            object["metadata"]["creationTimestamp"] = now_rfc3339();
            commit_write(*res, std::move(object), nullptr);
        }
    };
    bootstrap("clusterroles", bootstrap_cluster_roles());
    bootstrap("clusterrolebindings", bootstrap_cluster_role_bindings());
}

void Engine::drop_watches() {
    std::unique_lock lock(mu_);
    for (auto& [key, list] : watchers_) {
        for (auto& w : list) {
            if (w->sink) w->sink->close();
            w->sink.reset();
            w->active = false;
        }
    }
    watchers_.clear();
}

void Engine::compact_history() {
    std::unique_lock lock(mu_);
    history_.clear();
    history_bytes_ = 0;
    oldest_available_rv_ = rv_;
}

void Engine::stall_watches(bool stalled) {
    std::unique_lock lock(mu_);
    const bool resuming = stalled_ && !stalled;
    stalled_ = stalled;
    if (!resuming) return;
    // The held-back events go out late, none lost (a bookmark must not skip them).
    for (auto& [key, list] : watchers_) {
        const auto watchers = list;  // replay() swaps the list while it delivers
        for (const auto& w : watchers) {
            if (w->active && w->sink) replay(w, w->seen_rv);
        }
    }
}

}  // namespace kopf::apiserver::core
