// Progress storages (configs/progress.py): annotations (Kopf >= 1.44 default writer), status
// (legacy), multi and smart combinations.
#include <kopf/storage.hpp>

#include "clients/json_codec.hpp"
#include "structs/dicts.hpp"

namespace kopf {

namespace {
std::vector<std::string> format_field(const std::string& spec, const std::string& name) {
    std::string real = spec;
    auto pos = real.find("{name}");
    if (pos != std::string::npos) real.replace(pos, 6, name);
    return dicts::parse_field(real);
}
const std::vector<std::string> FIELD_ORDER = {"started", "stopped", "delayed", "purpose", "retries",
                                              "success", "failure", "message", "subrefs"};
}  // namespace

json ProgressStorage::clear(json essence) const {
    return essence;
}

AnnotationsProgressStorage::AnnotationsProgressStorage(std::string prefix, bool verbose,
                                                       std::string touch_key, bool v1)
    : StorageKeyConvention(std::move(prefix), v1),
      verbose_(verbose),
      touch_key_(std::move(touch_key)) {}

std::optional<json> AnnotationsProgressStorage::fetch(const std::string& key,
                                                      const json& body) const {
    for (const auto& full_key : cached_keys(key, &body)) {
        const json* encoded = dicts::resolve(body, {"metadata", "annotations", full_key});
        if (encoded && encoded->is_string()) {
            // The client's parser: nlohmann's cost ~90 instructions per byte of a record here.
            auto decoded = clients::parse_json_or_discarded(encoded->get_ref<const std::string&>());
            if (decoded.is_discarded()) continue;  // foreign garbage is not our progress
            if (!decoded.is_null()) return decoded;
        }
    }
    return std::nullopt;
}

void AnnotationsProgressStorage::store(const std::string& key, const json& record, const json& body,
                                       Patch& patch) const {
    // Field order is Kopf's record order (nlohmann's ordered_json keeps insertion order).
    nlohmann::ordered_json decoded = nlohmann::ordered_json::object();
    for (const auto& field : FIELD_ORDER) {
        auto it = record.find(field);
        if (it == record.end()) continue;
        if (it->is_null() && !verbose_) continue;
        decoded[field] = *it;
    }
    std::string encoded = decoded.dump();
    for (const auto& full_key : cached_keys(key, &body)) {
        patch.merge["metadata"]["annotations"][full_key] = encoded;
    }
    store_marker(body, patch);
}

void AnnotationsProgressStorage::purge(const std::string& key, const json& body,
                                       Patch& patch) const {
    for (const auto& full_key : cached_keys(key, &body)) {
        // Mostly there is nothing to purge: no path is built for that.
        const bool in_body = dicts::resolve(body, {"metadata", "annotations", full_key});
        if (!in_body && !dicts::resolve(patch.merge, {"metadata", "annotations", full_key}))
            continue;
        const dicts::FieldPath path{"metadata", "annotations", full_key};
        if (in_body) {
            dicts::ensure(patch.merge, path, nullptr);
        } else {
            dicts::remove(patch.merge, path);
        }
    }
}

void AnnotationsProgressStorage::touch(const json& body, Patch& patch,
                                       const std::optional<std::string>& value) const {
    for (const auto& full_key : cached_keys(touch_key_, &body)) {
        dicts::FieldPath path{"metadata", "annotations", full_key};
        const json* current = dicts::resolve(body, path);
        json wanted = value ? json(*value) : json();
        json have = current ? *current : json();
        if (have != wanted) {
            dicts::ensure(patch.merge, path, wanted);
            store_marker(body, patch);
        }
    }
}

json AnnotationsProgressStorage::clear(json essence) const {
    if (auto* ann = const_cast<json*>(dicts::resolve(essence, {"metadata", "annotations"}));
        ann && ann->is_object()) {
        for (auto it = ann->begin(); it != ann->end();) {
            if (it.key().rfind(prefix_ + "/", 0) == 0) {
                it = ann->erase(it);
            } else {
                ++it;
            }
        }
    }
    dicts::remove_empty_stanzas(essence);
    return essence;
}

StatusProgressStorage::StatusProgressStorage(std::string name, std::string field,
                                             std::string touch_field)
    : field_(format_field(field, name)), touch_field_(format_field(touch_field, name)) {}

std::optional<json> StatusProgressStorage::fetch(const std::string& key, const json& body) const {
    const json* container = dicts::resolve(body, field_);
    if (!container || !container->is_object()) return std::nullopt;
    auto it = container->find(key);
    if (it == container->end() || it->is_null()) return std::nullopt;
    return *it;
}

void StatusProgressStorage::store(const std::string& key, const json& record, const json&,
                                  Patch& patch) const {
    auto path = field_;
    path.push_back(key);
    json full = json::object();
    for (const auto& f : FIELD_ORDER) full[f] = record.value(f, json());
    dicts::ensure(patch.merge, path, full);
}

void StatusProgressStorage::purge(const std::string& key, const json& body, Patch& patch) const {
    // Mostly there is nothing to purge: no path is built for that.
    const auto has_key = [&key](const json* parent) {
        return parent && parent->is_object() && parent->contains(key);
    };
    const bool in_body = has_key(dicts::resolve(body, field_));
    if (!in_body && !has_key(dicts::resolve(patch.merge, field_))) return;
    auto path = field_;
    path.push_back(key);
    if (in_body) {
        dicts::ensure(patch.merge, path, nullptr);
    } else {
        dicts::remove(patch.merge, path);
    }
}

void StatusProgressStorage::touch(const json& body, Patch& patch,
                                  const std::optional<std::string>& value) const {
    const json* current = dicts::resolve(body, touch_field_);
    json wanted = value ? json(*value) : json();
    if ((current ? *current : json()) != wanted) dicts::ensure(patch.merge, touch_field_, wanted);
}

json StatusProgressStorage::clear(json essence) const {
    dicts::remove(essence, field_);
    dicts::remove_empty_stanzas(essence);
    return essence;
}

MultiProgressStorage::MultiProgressStorage(std::vector<std::shared_ptr<ProgressStorage>> storages)
    : storages_(std::move(storages)) {}

std::optional<json> MultiProgressStorage::fetch(const std::string& key, const json& body) const {
    for (const auto& s : storages_) {
        if (auto r = s->fetch(key, body)) return r;
    }
    return std::nullopt;
}
void MultiProgressStorage::store(const std::string& key, const json& record, const json& body,
                                 Patch& patch) const {
    for (const auto& s : storages_) s->store(key, record, body, patch);
}
void MultiProgressStorage::purge(const std::string& key, const json& body, Patch& patch) const {
    for (const auto& s : storages_) s->purge(key, body, patch);
}
void MultiProgressStorage::touch(const json& body, Patch& patch,
                                 const std::optional<std::string>& value) const {
    for (const auto& s : storages_) s->touch(body, patch, value);
}
json MultiProgressStorage::clear(json essence) const {
    for (const auto& s : storages_) essence = s->clear(std::move(essence));
    return essence;
}

SmartProgressStorage::SmartProgressStorage(std::string name, std::string prefix, bool verbose,
                                           std::string touch_key, bool v1)
    : MultiProgressStorage(
          {std::make_shared<AnnotationsProgressStorage>(prefix, verbose, touch_key, v1),
           std::make_shared<NoWriteStatusProgressStorage>(name)}) {}

}  // namespace kopf
