#include "structs/credentials.hpp"

#include <tuple>

namespace kopf::structs {

namespace {

auto as_tuple(const ConnectionInfo& c) {
    return std::tie(c.server, c.ca_path, c.ca_data, c.insecure, c.username, c.password, c.scheme,
                    c.token, c.token_path, c.certificate_path, c.certificate_data,
                    c.private_key_path, c.private_key_data, c.default_namespace, c.priority,
                    c.expiration);
}

}  // namespace

bool same_credentials(const ConnectionInfo& a, const ConnectionInfo& b) {
    return as_tuple(a) == as_tuple(b);
}

void Vault::populate(std::map<std::string, ConnectionInfo> items) {
    std::lock_guard lock(mutex_);
    items_.clear();
    for (auto& [key, info] : items)
        items_.emplace(key, std::make_shared<const ConnectionInfo>(std::move(info)));
    ++generation_;
}

void Vault::put(const std::string& key, ConnectionInfo info) {
    std::lock_guard lock(mutex_);
    items_[key] = std::make_shared<const ConnectionInfo>(std::move(info));
    ++generation_;
}

std::optional<VaultItem> Vault::select(Clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto best = items_.end();
    for (auto it = items_.begin(); it != items_.end();) {
        if (it->second->expiration && *it->second->expiration <= now) {
            it = items_.erase(it);
            continue;
        }
        if (best == items_.end() || it->second->priority > best->second->priority) best = it;
        ++it;
    }
    if (best == items_.end()) return std::nullopt;
    return VaultItem{best->first, best->second};
}

void Vault::invalidate(const VaultItem& item) {
    std::lock_guard lock(mutex_);
    auto it = items_.find(item.key);
    if (it != items_.end() && item.info && same_credentials(*it->second, *item.info))
        items_.erase(it);
}

bool Vault::empty(Clock::time_point now) {
    return !select(now).has_value();
}

std::uint64_t Vault::generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
}

}  // namespace kopf::structs
