// src/core/ owns the request semantics behind ApiCore::handle(): the resource
// catalog (built-ins and CRDs), object storage with one global resourceVersion,
// discovery and OpenAPI documents, CRUD/patch pipelines, watches with history,
// Table output, controllers (CRD establishment and cleanup, namespace lifecycle,
// garbage collection), admission webhooks and SQLite persistence.
//
// Everything lives in one Engine guarded by one mutex; ApiCore is a thin shell. Stored
// objects are immutable shared pointers, so a list snapshots them under the mutex and
// serializes its body outside it (list_body.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/api_core.hpp"
#include "util/schema.hpp"
#include "util/selectors.hpp"

namespace kopf::apiserver::core {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using StoredObject = std::shared_ptr<const json>;

// Any failure inside the engine: carries the Kubernetes Status body to return.
struct ApiError : std::exception {
    int code = 500;
    json status;
    std::string plain_text;  // non-empty: a plain-text body instead of a Status
    std::vector<std::pair<std::string, std::string>> headers;
    const char* what() const noexcept override { return "ApiError"; }
};

json make_status(int code, const std::string& reason, const std::string& message,
                 json details = nullptr);
ApiError api_error(int code, const std::string& reason, const std::string& message,
                   json details = nullptr);
ApiError page_not_found();  // plain-text 404 for paths nobody owns
ApiError bad_request(const std::string& message);
// 422 Invalid for `<qualified kind> "<name>" is invalid: ...` with causes [{reason,message,field}].
ApiError invalid_error(const std::string& group, const std::string& kind, const std::string& name,
                       const json& causes);
json cause(const std::string& reason, const std::string& field, const std::string& message);

// Small helpers (util.cpp).
// The store of CustomResourceDefinitions (Engine::store_'s key).
inline constexpr const char* kCrdStorage = "apiextensions.k8s.io/customresourcedefinitions";
HttpResponse json_response(const json& body, int status = 200);
std::string lower(std::string text);  // ASCII only
// The strings of a JSON array; other items and non-arrays give nothing.
std::vector<std::string> string_list(const json& value);
std::string now_rfc3339();
std::string now_rfc3339_micro();
std::string new_uid();
std::string base64_encode(const std::string& data);
std::optional<std::string> base64_decode(const std::string& data);
std::string base64url_encode(const std::string& data);
std::optional<std::string> base64url_decode(const std::string& data);
json yaml_to_json(const std::string& text);               // throws std::runtime_error
std::string media_type(const std::string& content_type);  // lower-case, without parameters
// Body of a write: JSON or YAML per the Content-Type; throws ApiError 400/415.
json decode_body(const std::string& body, const std::string& content_type);
// Throws 400 if a JSON body nests deeper than 2,000 levels, before anything recursive (parsing
// aside) sees it.
void check_body_depth(const std::string& body);
// Kubernetes protobuf envelope ("k8s\0" + runtime.Unknown) of a few core kinds (protobuf.cpp).
json decode_protobuf_body(const std::string& body);
bool parse_bool(const std::string& value, bool fallback);
// Evaluate a simple JSONPath (".spec.a.b", ".items[0].x", "{.spec.a}"); null if absent.
json eval_json_path(const json& object, const std::string& path);
std::string human_age(const std::string& rfc3339_timestamp);
int64_t parse_rfc3339(const std::string& text);  // seconds since epoch; -1 if unparsable

struct ResourceVersion {  // one served version of a resource
    std::string name;
    bool storage = false;
    bool served = true;
    json schema;           // openAPIV3Schema (CRDs), null for built-ins
    json printer_columns;  // additionalPrinterColumns (CRDs)
    bool status_subresource = false;
    json scale;  // CRD scale subresource paths, null if none
    json selectable_fields;
};

struct Resource {
    std::string group;  // "" for core
    std::string plural, singular, kind, list_kind;
    bool namespaced = true;
    std::vector<std::string> short_names, categories, verbs;
    std::vector<ResourceVersion> versions;
    std::vector<std::pair<std::string, std::vector<std::string>>> extra_subresources;  // builtins
    std::string storage_key;  // objects shared by all views (events: "/events")
    std::string name_rule = "subdomain";
    bool builtin = true;
    bool has_generation = false;
    bool return_deleted_object = false;
    bool unconditional_update = true;
    std::string crd_name;  // CRs: owning CRD
    bool terminating = false;

    const ResourceVersion* version(const std::string& v) const;
    const ResourceVersion& storage_version() const;
    bool has_status(const std::string& v) const;
    std::string group_version(const std::string& v) const {
        return group.empty() ? v : group + "/" + v;
    }
    std::string qualified() const { return group.empty() ? plural : plural + "." + group; }
    std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
};
using ResourcePtr = std::shared_ptr<Resource>;

std::vector<ResourcePtr> builtin_resources();  // catalog.cpp
// Validate a CRD body as kube-apiserver does (its name is plural.group, the group a domain,
// the scope, names and versions well-formed); returns field errors as Status causes.
json validate_crd(const json& crd);
// Validate a Mutating/ValidatingWebhookConfiguration (v1) as kube-apiserver does; admission.cpp.
json validate_webhook_configuration(const json& config, bool mutating);
// Fields of a built-in kind whose JSON has the wrong type for k8s.io/api's Go types (a number
// for a string, ...), by the protobuf schema (protobuf.cpp); metadata is left to
// validate_object_meta.
std::vector<FieldError> builtin_type_errors(const Resource& res, const json& object);
ResourcePtr resource_from_crd(const json& crd);
void default_crd(json& crd);
int kube_version_priority_compare(const std::string& a, const std::string& b);  // <0: a first

struct WatchEvent {
    uint64_t rv = 0;
    std::string storage_key;
    std::string type;  // ADDED MODIFIED DELETED
    std::string ns;
    std::shared_ptr<const json> object;    // stored form
    std::shared_ptr<const json> previous;  // state before (MODIFIED/DELETED) or null
    std::size_t bytes = 0;                 // the object's serialised size, as the history counts it
    std::mutex cache_mu;
    std::unordered_map<std::string, std::shared_ptr<const std::string>> lines;  // by view gv
};
using WatchEventPtr = std::shared_ptr<WatchEvent>;

class Engine;
// Renders one Table row (cells + object per includeObject) from an object's view.
using TableRowRenderer = std::function<json(const json& view)>;

// What a list response shows, taken under the engine lock: pointers to the immutable stored
// objects plus the list metadata. Serialized in pieces outside the lock (list_body.cpp).
struct ListSnapshot {
    std::shared_ptr<const Engine> engine;  // keeps the views' helpers alive
    ResourcePtr res;
    std::string version;
    std::vector<StoredObject> items;
    json metadata;           // resourceVersion, continue, remainingItemCount
    TableRowRenderer table;  // set: a meta.k8s.io/v1 Table instead of a list
    json column_definitions;
};
std::shared_ptr<BodyStream> make_list_body(ListSnapshot snapshot);

class Watcher : public WatchStream, public std::enable_shared_from_this<Watcher> {
  public:
    std::weak_ptr<Engine> engine;
    ResourcePtr res;
    std::string version;
    std::string view_key;  // group/version: watchers with one key share serialized lines
    std::string ns;        // "" = all namespaces
    LabelSelector labels;
    FieldSelector fields;
    bool bookmarks = false;
    bool send_initial_events = false;
    std::optional<uint64_t> start_rv;  // nullopt: synthetic ADDED of current state
    std::optional<Clock::time_point> deadline;
    bool table = false;
    bool table_header_sent = false;
    std::string table_include = "Metadata";

    // Guarded by the engine mutex:
    std::shared_ptr<WatchSink> sink;
    bool active = false;
    Clock::time_point last_bookmark;
    // The revision up to which this watcher has seen every event of its collection: a stall
    // holds its events back, and resuming replays them from here, as a slow stream would.
    uint64_t seen_rv = 0;

    void start(std::shared_ptr<WatchSink> sink) override;
    void cancel() override;
};

class Persistence;         // persistence.cpp
struct RequestAttributes;  // rbac.hpp

struct RequestInfo {
    const HttpRequest* http = nullptr;
    std::string verb;
    ResourcePtr res;
    std::string version;
    std::string ns, name, sub;
    bool dry_run = false;
    bool applied = false;  // a server-side apply: managedFields are already set
    std::string field_manager;
    std::string field_validation = "Warn";                      // Ignore | Warn | Strict
    std::vector<std::pair<std::string, std::string>> warnings;  // response headers
};

class Engine : public std::enable_shared_from_this<Engine> {
  public:
    explicit Engine(CoreOptions options);
    ~Engine();
    void start();     // loads persisted state, bootstraps, starts the background thread
    void shutdown();  // ends watches and the background thread

    HttpResponse handle(const HttpRequest& request);
    bool may_block(const HttpRequest& request) const;
    void drop_watches();
    void compact_history();
    void stall_watches(bool stalled);

    // Watch plumbing (watch.cpp), called by Watcher.
    void start_watch(const std::shared_ptr<Watcher>& w, std::shared_ptr<WatchSink> sink);
    void cancel_watch(const std::shared_ptr<Watcher>& w);

  private:
    friend class Watcher;
    CoreOptions options_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    bool stalled_ = false;
    std::thread background_;

    // Catalog: "group/version/plural" -> resource.
    std::map<std::string, ResourcePtr> endpoints_;
    std::vector<ResourcePtr> builtins_;
    std::map<std::string, ResourcePtr> crd_resources_;  // CRD name -> resource

    // Storage: storage_key -> ("ns/name" -> object in stored form). Stored objects are
    // immutable once committed: a write replaces the pointer, so lists and watch events
    // share them without copies and serialize them outside the lock.
    std::unordered_map<std::string, std::map<std::string, StoredObject>> store_;
    // Objects replaced during the current request or controller pass: callers may still
    // hold references to them (find_object() results), so they live until the next one.
    std::vector<StoredObject> retired_;
    uint64_t rv_ = 0;
    std::deque<WatchEventPtr> history_;
    std::size_t history_bytes_ = 0;
    // Keeps `event` for resuming watches, dropping the oldest beyond the count and size limits.
    void retain(const WatchEventPtr& event);
    uint64_t oldest_available_rv_ = 0;  // resuming from below this gets 410
    std::unordered_map<std::string, std::vector<std::shared_ptr<Watcher>>> watchers_;
    std::unique_ptr<Persistence> persistence_;
    bool controllers_dirty_ = false;
    bool gc_relevant_ = false;  // some object ever had ownerReferences or GC finalizers
    std::atomic<bool> webhooks_configured_{false};  // any admission webhook configuration stored
    void note_admission_storage(const Resource& res);

    // api_core.cpp: routing.
    HttpResponse route(const HttpRequest& request);
    HttpResponse resource_request(const HttpRequest& request, const std::vector<std::string>& seg,
                                  std::size_t gv_end, const std::string& group,
                                  const std::string& version);

    // RBAC (api_core.cpp, with the rules in rbac.cpp); each throws 403 Forbidden when denied.
    void authorize_path(const HttpRequest& request);  // a non-resource request
    void authorize_locked(const HttpRequest& request, const RequestAttributes& attributes);
    void bootstrap_rbac();  // kube-apiserver's default ClusterRoles and bindings, if absent
    // catalog.cpp
    void register_resource(const ResourcePtr& res);
    void unregister_crd(const std::string& crd_name);
    void sync_crd(const json& crd);  // (re)publish the CRD's resource
    ResourcePtr find_endpoint(const std::string& group, const std::string& version,
                              const std::string& plural) const;
    ResourcePtr find_by_kind(const std::string& group_version, const std::string& kind) const;
    std::vector<ResourcePtr> all_resources() const;

    // discovery.cpp
    HttpResponse discovery(const std::vector<std::string>& seg, const HttpRequest& request);
    HttpResponse openapi(const std::vector<std::string>& seg);
    json resource_list(const std::string& group, const std::string& version) const;
    std::map<std::string, std::vector<std::string>> served_groups() const;  // group->versions
    // The aggregated discovery (an APIGroupDiscoveryList of apidiscovery.k8s.io/v2 or v2beta1,
    // as the Accept header asks) of the core group (/api) or of all others (/apis).
    json aggregated_discovery(bool core_group, const std::string& api_version) const;

    // objects.cpp
    HttpResponse do_get(RequestInfo& rq);
    HttpResponse do_list(RequestInfo& rq);
    using Lock = std::unique_lock<std::mutex>;
    HttpResponse do_create(RequestInfo& rq, Lock& lock);
    HttpResponse do_update(RequestInfo& rq, Lock& lock);
    HttpResponse do_patch(RequestInfo& rq, Lock& lock);
    HttpResponse do_delete(RequestInfo& rq, Lock& lock);
    HttpResponse do_delete_collection(RequestInfo& rq, Lock& lock);
    HttpResponse do_watch(RequestInfo& rq);

  public:
    // Storage primitives (need mu_ held).
    std::string object_key(const Resource& res, const std::string& ns,
                           const std::string& name) const {
        return res.namespaced ? ns + "/" + name : name;
    }
    const json* find_object(const Resource& res, const std::string& ns, const std::string& name);
    StoredObject find_stored(const Resource& res, const std::string& ns, const std::string& name);
    const json& commit_write(const Resource& res, json object, const json* previous);
    // `final_state`: the object as the DELETED event shows it (default: the stored one).
    void commit_delete(const Resource& res, const std::string& ns, const std::string& name,
                       std::optional<json> final_state = std::nullopt);
    json to_view(const Resource& res, const std::string& version, const json& stored) const;
    json from_view(const Resource& res, const std::string& version, json object) const;
    // Stored objects already carry the storage version's apiVersion/kind.
    bool view_is_identity(const Resource& res, const std::string& version) const;
    std::string view_dump(const Resource& res, const std::string& version,
                          const json& stored) const;
    // The answer to a write just committed: the object as its watchers of `version` were sent
    // it (one serialisation for both), else serialised here.
    std::string written_view_dump(const Resource& res, const std::string& version,
                                  const json& stored) const;
    json not_found_status(const Resource& res, const std::string& name) const;

  private:
    // The write pipeline shared by create/update/patch (objects.cpp).
    json prepare_create(RequestInfo& rq, json object);
    json prepare_update(RequestInfo& rq, const json& current, json object, bool from_patch);
    // Admission, no-op detection, dry-run and commit; `current` is null for creates.
    HttpResponse finish_write(RequestInfo& rq, Lock& lock, json object, StoredObject current,
                              int code);
    // CRs: prune, default and validate; unknown (pruned) fields are reported per
    // fieldValidation when `report_unknown`.
    // `old`: the stored object on update, for transition rules (oldSelf) and ratcheting.
    void apply_schema(RequestInfo& rq, json& object, json& causes, bool report_unknown,
                      const json* old = nullptr);
    void validate_builtin(const Resource& res, const json& object, json& causes);
    // Deletion semantics of one object (finalizers, propagation); returns the response body.
    json delete_object(const Resource& res, const std::string& version, const json& current,
                       const std::string& propagation, bool dry_run);
    ResourcePtr resource_for_storage(const std::string& storage_key) const;

    // watch.cpp
    void fan_out(const WatchEventPtr& event);
    // Sends `w` the retained events of its collection after `after_rv` (410 if they are gone).
    void replay(const std::shared_ptr<Watcher>& w, uint64_t after_rv);
    std::shared_ptr<const std::string> event_line(const WatchEventPtr& event, const Watcher& w);
    // How a watch line of `type` starts, before the object: {"type":"<type>","object":
    static std::string event_line_head(const std::string& type);
    std::string render_event(const Watcher& w, const std::string& type, const json& view);
    void send_bookmark(Watcher& w, bool initial_end);
    void background_loop();
    void close_watcher(Watcher& w);

    // table.cpp
    json to_table(const Resource& res, const std::string& version, const std::vector<json>& views,
                  const std::string& include_object, bool with_columns) const;
    json table_columns(const Resource& res, const std::string& version) const;

  public:
    // Throws 400 for an unknown includeObject.
    TableRowRenderer table_row_renderer(const Resource& res, const std::string& version,
                                        const std::string& include_object) const;

  private:
    // controllers.cpp (need mu_ held)
    void run_controllers();
    void establish_crds();
    void cleanup_terminating_crds();
    void namespace_controller();
    void garbage_collector();

    // admission.cpp: may release and re-acquire the lock while calling webhooks.
    // Returns whether a mutating webhook changed the object.
    bool admit(RequestInfo& rq, std::unique_lock<std::mutex>& lock, const std::string& operation,
               json* object, const json* old_object,
               std::vector<std::pair<std::string, std::string>>& warnings);

    // persistence.cpp
    void load_persisted();
};

// Accept header asks for a Table.
bool wants_table(const std::string& accept);

}  // namespace kopf::apiserver::core
