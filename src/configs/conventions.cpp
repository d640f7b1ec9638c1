// Annotation key conventions of Kopf (configs/conventions.py): safe keys, V1 and V2 shapes,
// the blake2b suffix for long keys, and the kopf-managed marker for foreign prefixes.
#include <kopf/storage.hpp>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "configs/blake2b.hpp"
#include "structs/dicts.hpp"

namespace kopf {

namespace {
constexpr std::size_t MAX_NAME = 63;

std::string base64_dash_dot(const std::vector<std::uint8_t>& bytes) {
    static const char* alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        unsigned n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += alphabet[(n >> 6) & 63];
        out += alphabet[n & 63];
    }
    std::size_t rest = bytes.size() - i;
    if (rest == 1) {
        unsigned n = bytes[i] << 16;
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += "==";
    } else if (rest == 2) {
        unsigned n = (bytes[i] << 16) | (bytes[i + 1] << 8);
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += alphabet[(n >> 6) & 63];
        out += '=';
    }
    return out;
}

// Kopf's collision evasion: ReplicaSets owned by Deployments share the annotations' names,
// so their keys are marked.
constexpr const char* kReplicaSetMark = "-ofDRS";

bool is_owned_replicaset(const json* body) {
    const json* kind = body && body->is_object() ? dicts::resolve(*body, {"kind"}) : nullptr;
    if (!kind || !kind->is_string() || kind->get_ref<const std::string&>() != "ReplicaSet")
        return false;
    const json* owners = dicts::resolve(*body, {"metadata", "ownerReferences"});
    if (!owners || !owners->is_array()) return false;
    for (const auto& owner : *owners) {
        if (owner.is_object() && owner.value("kind", "") == "Deployment") return true;
    }
    return false;
}
}  // namespace

// Keys already built, by marked key; entries are never removed, so references stay valid.
struct StorageKeyConvention::KeyCache {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<std::string>> keys;
};

StorageKeyConvention::StorageKeyConvention(std::string prefix, bool v1)
    : prefix_(std::move(prefix)), v1_(v1), key_cache_(std::make_shared<KeyCache>()) {
    if (prefix_.empty()) throw std::invalid_argument("Annotations storages must be prefixed.");
}

const std::vector<std::string>& StorageKeyConvention::cached_keys(const std::string& key,
                                                                  const json* body) const {
    const bool marked = is_owned_replicaset(body);
    const std::string marked_key = marked ? key + kReplicaSetMark : std::string();
    const std::string& lookup = marked ? marked_key : key;
    std::lock_guard lock(key_cache_->mutex);
    auto found = key_cache_->keys.find(lookup);
    if (found == key_cache_->keys.end())
        found = key_cache_->keys.emplace(lookup, keys_of(lookup)).first;
    return found->second;
}

std::string StorageKeyConvention::make_safe_key(const std::string& key) {
    std::string out = key;
    for (auto& c : out) {
        if (c == '/')
            c = '.';
        else if (c == '<' || c == '>')
            c = '_';
    }
    return out;
}

std::string StorageKeyConvention::make_suffix(const std::string& key) {
    std::string s = "-" + base64_dash_dot(configs::blake2b(key, 4));
    while (!s.empty() && (s.back() == '=' || s.back() == '-' || s.back() == '.')) s.pop_back();
    return s;
}

namespace {
// prefix + "/" + the first `limit` characters of the safe key + suffix, built in place
// (these keys are made several times per handled object).
std::string join_key(const std::string& prefix, const std::string& safe, std::size_t limit,
                     const std::string& suffix) {
    const std::size_t cut = std::min(limit, safe.size());
    std::string out;
    out.reserve(prefix.size() + 1 + cut + suffix.size());
    out += prefix;
    out += '/';
    out.append(safe, 0, cut);
    out += suffix;
    return out;
}
}  // namespace

std::string StorageKeyConvention::make_v1_key(const std::string& key) const {
    const auto safe = make_safe_key(key);
    const std::size_t prefix_size = prefix_.size() + 1;
    std::string suffix;
    if (!(safe.size() + prefix_size <= MAX_NAME)) suffix = make_suffix(safe);
    const long limit = static_cast<long>(MAX_NAME) - static_cast<long>(prefix_size) -
                       static_cast<long>(suffix.size());
    return join_key(prefix_, safe, limit <= 0 ? 0 : static_cast<std::size_t>(limit), suffix);
}

std::string StorageKeyConvention::make_v2_key(const std::string& key) const {
    const std::string suffix = key.size() > MAX_NAME ? make_suffix(key) : "";
    const std::size_t limit = MAX_NAME > suffix.size() ? MAX_NAME - suffix.size() : 0;
    return join_key(prefix_, make_safe_key(key), limit, suffix);
}

std::vector<std::string> StorageKeyConvention::make_keys(const std::string& key,
                                                         const json* body) const {
    return cached_keys(key, body);
}

std::vector<std::string> StorageKeyConvention::keys_of(const std::string& marked) const {
    std::vector<std::string> keys;
    keys.reserve(2);
    keys.push_back(make_v2_key(marked));
    if (v1_) {
        auto v1 = make_v1_key(marked);
        if (v1 != keys[0]) keys.push_back(std::move(v1));
    }
    return keys;
}

void StorageKeyConvention::store_marker(const json& body, Patch& patch) const {
    if (prefix_.rfind("kopf.", 0) == 0) return;
    std::string key = prefix_ + "/kopf-managed";
    const json* existing = dicts::resolve(body, {"metadata", "annotations", key});
    if (!existing) patch.merge["metadata"]["annotations"][key] = "yes";
}

}  // namespace kopf
