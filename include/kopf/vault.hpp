// The credentials vault an application gives to its operator (Kopf's `vault=` of
// `kopf.operator()` and `kopf.run()`): the connections the operator's API calls use, shared
// between the application and the operator.
//
// A vault the application filled before the start is used as it is: as in Kopf, the login
// handlers do not run then. They run when nothing usable is left — at the start if the vault is
// empty (or all it holds has expired), later when the API server refuses the credentials (401)
// or they expire — and their results go into the same vault, where the application can read
// them.
//
//     auto vault = std::make_shared<kopf::Vault>();
//     kopf::ConnectionInfo info;
//     info.server = "https://10.0.0.1:6443";
//     info.ca_path = "/etc/ssl/my-ca.pem";
//     info.token = my_token();
//     vault->populate({{"my-app", info}});
//     std::thread thread([&] {
//         kopf::operator_({.namespaces = {"default"}, .stop_flag = &stop, .vault = vault});
//     });
//     ...
//     for (const auto& [name, info] : vault->credentials()) ...  // what the operator uses now
//
// Thread-safe: the application may read and change it while the operator runs.
#pragma once

#include <kopf/connection.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace kopf {

namespace structs {
class Vault;  // src/structs/credentials.hpp: what the operator's API client reads
}  // namespace structs

class Vault;

namespace detail {
/// The operator's view of a vault (for the library; not for applications).
std::shared_ptr<structs::Vault> vault_store(const Vault& vault);
}  // namespace detail

/// Named connection credentials (kopf/connection.hpp) for an operator's API calls.
class Vault {
  public:
    /// An empty vault: the operator fills it with its login handlers at the start.
    Vault();
    /// A vault holding these credentials by name (see populate()).
    explicit Vault(std::map<std::string, ConnectionInfo> credentials);
    ~Vault();
    Vault(const Vault&) = delete;
    Vault& operator=(const Vault&) = delete;

    /// Adds these credentials, replacing those of the same names (Kopf's `Vault.populate()`;
    /// the operator's login handlers add theirs under their handler ids). The highest
    /// `priority` is used first; on a 401 the next one; the login handlers run again when none
    /// is left. Throws std::invalid_argument naming the credentials when a name is empty, the
    /// server is missing, or both a file and data are given for the CA, the certificate or
    /// the private key (as Kopf's ConnectionInfo refuses them); nothing is added then.
    void populate(std::map<std::string, ConnectionInfo> credentials);

    /// True when nothing usable is left: no credentials, or only expired ones (Kopf's
    /// `Vault.is_empty()`). An operator given an empty vault logs in at its start.
    bool empty() const;

    /// Forgets the credentials of this name, as the operator does after a 401; the next API call
    /// uses the next ones, or makes the login handlers run if none is left. False if there
    /// were none of this name.
    bool invalidate(const std::string& name);
    /// Forgets all credentials: the operator's next API call runs the login handlers.
    void invalidate_all();

    /// The usable credentials by name (expired ones are left out).
    std::map<std::string, ConnectionInfo> credentials() const;
    /// The credentials the next API call uses (the highest priority), with their name; none
    /// when the vault is empty.
    std::optional<std::pair<std::string, ConnectionInfo>> current() const;

  private:
    friend std::shared_ptr<structs::Vault> detail::vault_store(const Vault& vault);
    std::shared_ptr<structs::Vault> store_;
};

}  // namespace kopf
