// The credentials vault: every connection the login handlers returned, by handler id, and those
// an application gave (kopf/vault.hpp is its public face, sharing this store with the operator).
//
// The client layer asks the vault for the best credentials (highest priority, not expired) before
// every request. On 401 it invalidates the credentials that failed; when nothing usable remains,
// the vault is empty and the client re-runs the login (see clients::ApiClient). A generation
// counter tells waiters that new credentials arrived. Thread-safe: login handlers may populate
// it from worker threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "kopf/connection.hpp"

namespace kopf::structs {

// Raised when the vault has nothing to offer and login produced nothing.
class LoginError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct VaultItem {
    std::string key;  // the login handler's id
    // Shared with the vault: every request selects its credentials, and copying them was
    // three strings per request.
    std::shared_ptr<const ConnectionInfo> info;
};

class Vault {
  public:
    using Clock = std::chrono::system_clock;

    // Replace all credentials with a fresh login result.
    void populate(std::map<std::string, ConnectionInfo> items);
    // Add these credentials, replacing only those of the same keys (Kopf's Vault.populate, which
    // the application's kopf::Vault::populate is).
    void add(std::map<std::string, ConnectionInfo> items);
    // Add or replace one item.
    void put(const std::string& key, ConnectionInfo info);

    // The best usable credentials: the highest priority among the non-expired and not
    // invalidated ones (ties: the earliest key). Expired items are removed on the way.
    std::optional<VaultItem> select(Clock::time_point now = Clock::now());

    // Mark the credentials as not working (after 401). Only an identical item is removed, so a
    // late 401 from an old request cannot drop credentials that arrived meanwhile.
    void invalidate(const VaultItem& item);

    // Forget the credentials of this key, whatever they are (an application's invalidation);
    // false if there were none.
    bool remove(const std::string& key);
    void clear();

    // The usable credentials by key (the expired ones are removed on the way).
    std::map<std::string, ConnectionInfo> items(Clock::time_point now = Clock::now());

    bool empty(Clock::time_point now = Clock::now());
    std::uint64_t generation() const;

  private:
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<const ConnectionInfo>> items_;
    std::uint64_t generation_ = 0;
};

// Same credentials (used to avoid invalidating newer ones by mistake).
bool same_credentials(const ConnectionInfo& a, const ConnectionInfo& b);

}  // namespace kopf::structs
