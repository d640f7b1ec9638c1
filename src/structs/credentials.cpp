#include "structs/credentials.hpp"

#include <fmt/format.h>

#include <kopf/vault.hpp>
#include <stdexcept>
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

void Vault::add(std::map<std::string, ConnectionInfo> items) {
    std::lock_guard lock(mutex_);
    for (auto& [key, info] : items)
        items_.insert_or_assign(key, std::make_shared<const ConnectionInfo>(std::move(info)));
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

bool Vault::remove(const std::string& key) {
    std::lock_guard lock(mutex_);
    return items_.erase(key) > 0;
}

void Vault::clear() {
    std::lock_guard lock(mutex_);
    items_.clear();
}

std::map<std::string, ConnectionInfo> Vault::items(Clock::time_point now) {
    std::lock_guard lock(mutex_);
    std::map<std::string, ConnectionInfo> usable;
    for (auto it = items_.begin(); it != items_.end();) {
        if (it->second->expiration && *it->second->expiration <= now) {
            it = items_.erase(it);
            continue;
        }
        usable.emplace(it->first, *it->second);
        ++it;
    }
    return usable;
}

bool Vault::empty(Clock::time_point now) {
    return !select(now).has_value();
}

std::uint64_t Vault::generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
}

}  // namespace kopf::structs

namespace kopf {

namespace {

// As Kopf's ConnectionInfo refuses them; the name says which credentials are at fault.
void check_credentials(const std::string& name, const ConnectionInfo& info) {
    if (name.empty()) {
        throw std::invalid_argument(
            fmt::format("Vault credentials need a name (of server '{}').", info.server));
    }
    const auto refuse = [&name](const std::string& why) {
        throw std::invalid_argument(fmt::format("Vault credentials '{}': {}", name, why));
    };
    if (info.server.empty()) refuse("no server is given.");
    if (info.ca_path && info.ca_data) refuse("both CA path & data are set. Need only one.");
    if (info.certificate_path && info.certificate_data)
        refuse("both certificate path & data are set. Need only one.");
    if (info.private_key_path && info.private_key_data)
        refuse("both private key path & data are set. Need only one.");
}

}  // namespace

Vault::Vault() : store_(std::make_shared<structs::Vault>()) {}

Vault::Vault(std::map<std::string, ConnectionInfo> credentials) : Vault() {
    populate(std::move(credentials));
}

Vault::~Vault() = default;

void Vault::populate(std::map<std::string, ConnectionInfo> credentials) {
    for (const auto& [name, info] : credentials) check_credentials(name, info);
    store_->add(std::move(credentials));
}

bool Vault::empty() const {
    return store_->empty();
}

bool Vault::invalidate(const std::string& name) {
    return store_->remove(name);
}

void Vault::invalidate_all() {
    store_->clear();
}

std::map<std::string, ConnectionInfo> Vault::credentials() const {
    return store_->items();
}

std::optional<std::pair<std::string, ConnectionInfo>> Vault::current() const {
    auto item = store_->select();
    if (!item) return std::nullopt;
    return std::make_pair(item->key, *item->info);
}

std::shared_ptr<structs::Vault> detail::vault_store(const Vault& vault) {
    return vault.store_;
}

}  // namespace kopf
