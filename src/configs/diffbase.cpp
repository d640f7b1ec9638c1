// Diff-base storages (configs/diffbase.py): the essence of an object and where it is kept.
#include <fmt/format.h>

#include <kopf/storage.hpp>
#include <stdexcept>

#include "clients/json_codec.hpp"
#include "structs/dicts.hpp"

namespace kopf {

namespace {
// Kopf writes json.dumps(essence): the spec (and other top-level fields) first, metadata last,
// and in metadata the labels and annotations first.
void append_member(std::string& out, bool& first, const std::string& key, const json& value) {
    if (!first) out += ',';
    first = false;
    clients::append_json_string(out, key);
    out += ':';
    clients::append_json(out, value);
}

// A stored diff base that is not JSON fails the object's processing (as in Kopf): taken as
// absent, it would run the creation handlers again, duplicating their side effects.
json decode_diff_base(const std::string& encoded, const std::string& where) {
    try {
        return clients::parse_json(encoded);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format(
            "The last handled configuration in {} is not JSON ({}): no handler runs for this "
            "object until it is fixed or removed (removing it makes the object look new).",
            where, e.what()));
    }
}

std::string dump_essence(const json& essence) {
    if (!essence.is_object()) return "{}";
    std::string out = "{";
    bool first = true;
    for (const auto& [key, value] : essence.items()) {
        if (key != "metadata") append_member(out, first, key, value);
    }
    const auto meta = essence.find("metadata");
    if (meta != essence.end()) {
        std::string inner = "{";
        bool inner_first = true;
        if (meta->is_object()) {
            for (const char* k : {"labels", "annotations"}) {
                if (meta->contains(k)) append_member(inner, inner_first, k, (*meta)[k]);
            }
            for (const auto& [key, value] : meta->items()) {
                if (key != "labels" && key != "annotations")
                    append_member(inner, inner_first, key, value);
            }
        }
        inner += '}';
        if (!first) out += ',';
        out += "\"metadata\":";
        out += inner;
    }
    out += '}';
    return out;
}

bool is_kopf_managed_prefix(const json& annotations, const std::string& prefix) {
    if (prefix == "kopf.zalando.org") return true;
    const std::string tail = ".kopf.zalando.org";
    if (prefix.size() > tail.size() &&
        prefix.compare(prefix.size() - tail.size(), tail.size(), tail) == 0)
        return true;
    return annotations.contains(prefix + "/kopf-managed");
}
}  // namespace

bool DiffBaseStorage::is_own_annotation(const std::string&) const {
    return false;
}

json DiffBaseStorage::build(const json& body,
                            const std::vector<std::vector<std::string>>& extra_fields) const {
    // Copy only what the essence keeps (metadata carries the stored diff base itself).
    json essence = json::object();
    if (body.is_object()) {
        for (const auto& [key, value] : body.items()) {
            if (key != "apiVersion" && key != "kind" && key != "metadata" && key != "status")
                essence[key] = value;
        }
    }

    const json* labels = dicts::resolve(body, {"metadata", "labels"});
    const json* annotations = dicts::resolve(body, {"metadata", "annotations"});
    if (labels) essence["metadata"]["labels"] = *labels;
    if (annotations && annotations->is_object()) {
        json kept = json::object();
        for (auto it = annotations->begin(); it != annotations->end(); ++it) {
            const auto& key = it.key();
            auto slash = key.find('/');
            if (slash != std::string::npos &&
                is_kopf_managed_prefix(*annotations, key.substr(0, slash)))
                continue;
            if (key == "kubectl.kubernetes.io/last-applied-configuration") continue;
            if (is_own_annotation(key)) continue;
            kept[key] = it.value();
        }
        essence["metadata"]["annotations"] = kept;
    }
    for (const auto& field : extra_fields) {
        if (const json* v = dicts::resolve(body, field)) dicts::ensure(essence, field, *v);
    }
    dicts::remove_empty_stanzas(essence);
    for (const auto& field : ignored_fields) dicts::remove(essence, field);
    dicts::remove_empty_stanzas(essence);
    return essence;
}

AnnotationsDiffBaseStorage::AnnotationsDiffBaseStorage(std::string prefix, std::string key, bool v1)
    : StorageKeyConvention(std::move(prefix), v1), key_(std::move(key)) {}

bool AnnotationsDiffBaseStorage::is_own_annotation(const std::string& key) const {
    for (const auto& k : cached_keys(key_)) {
        if (k == key) return true;
    }
    return false;
}

json AnnotationsDiffBaseStorage::build(
    const json& body, const std::vector<std::vector<std::string>>& extra_fields) const {
    return DiffBaseStorage::build(body, extra_fields);
}

std::optional<json> AnnotationsDiffBaseStorage::fetch(const json& body) const {
    for (const auto& full_key : cached_keys(key_, &body)) {
        const json* encoded = dicts::resolve(body, {"metadata", "annotations", full_key});
        if (encoded && encoded->is_string()) {
            auto decoded =
                decode_diff_base(encoded->get<std::string>(), "the annotation '" + full_key + "'");
            if (!decoded.is_null()) return decoded;
        }
    }
    return std::nullopt;
}

void AnnotationsDiffBaseStorage::store(const json& body, Patch& patch, const json& essence) const {
    std::string encoded = dump_essence(essence);
    encoded += '\n';  // a trailing newline, as Kopf writes it
    const auto& keys = cached_keys(key_, &body);
    json& annotations = patch.merge["metadata"]["annotations"];
    for (std::size_t i = 0; i + 1 < keys.size(); ++i) annotations[keys[i]] = encoded;
    if (!keys.empty()) annotations[keys.back()] = std::move(encoded);
    store_marker(body, patch);
}

StatusDiffBaseStorage::StatusDiffBaseStorage(std::string name, std::string field) {
    auto pos = field.find("{name}");
    if (pos != std::string::npos) field.replace(pos, 6, name);
    field_ = dicts::parse_field(field);
}

json StatusDiffBaseStorage::build(const json& body,
                                  const std::vector<std::vector<std::string>>& extra_fields) const {
    return DiffBaseStorage::build(body, extra_fields);
}

std::optional<json> StatusDiffBaseStorage::fetch(const json& body) const {
    const json* encoded = dicts::resolve(body, field_);
    if (!encoded || !encoded->is_string()) return std::nullopt;
    auto decoded = decode_diff_base(encoded->get<std::string>(),
                                    "the field '" + dicts::format_field(field_) + "'");
    if (decoded.is_null()) return std::nullopt;
    return decoded;
}

void StatusDiffBaseStorage::store(const json&, Patch& patch, const json& essence) const {
    dicts::ensure(patch.merge, field_, dump_essence(essence));
}

MultiDiffBaseStorage::MultiDiffBaseStorage(std::vector<std::shared_ptr<DiffBaseStorage>> storages)
    : storages_(std::move(storages)) {}

json MultiDiffBaseStorage::build(const json& body,
                                 const std::vector<std::vector<std::string>>& extra_fields) const {
    json essence = storages_.empty() ? DiffBaseStorage::build(body, extra_fields)
                                     : storages_.front()->build(body, extra_fields);
    for (std::size_t i = 1; i < storages_.size(); ++i) {
        // Each storage strips its own traces from the essence.
        json other = storages_[i]->build(body, extra_fields);
        if (other.contains("metadata") && other["metadata"].contains("annotations") &&
            essence.contains("metadata") && essence["metadata"].contains("annotations")) {
            auto& ann = essence["metadata"]["annotations"];
            for (auto it = ann.begin(); it != ann.end();) {
                if (!other["metadata"]["annotations"].contains(it.key()))
                    it = ann.erase(it);
                else
                    ++it;
            }
        }
    }
    dicts::remove_empty_stanzas(essence);
    return essence;
}

std::optional<json> MultiDiffBaseStorage::fetch(const json& body) const {
    for (const auto& s : storages_) {
        if (auto e = s->fetch(body)) return e;
    }
    return std::nullopt;
}

void MultiDiffBaseStorage::store(const json& body, Patch& patch, const json& essence) const {
    for (const auto& s : storages_) s->store(body, patch, essence);
}

}  // namespace kopf
