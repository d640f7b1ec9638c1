// The credentials vault picks the best credentials and forgets failed or expired ones; its
// public face (kopf::Vault) shares the store with the operator and refuses bad credentials.
#include "structs/credentials.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <kopf/vault.hpp>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

using kopf::ConnectionInfo;
using kopf::structs::Vault;

namespace {

ConnectionInfo token(const std::string& value, int priority = 0) {
    ConnectionInfo info;
    info.server = "https://h";
    info.token = value;
    info.priority = priority;
    return info;
}

}  // namespace

TEST(Vault, HighestPriorityWins) {
    Vault vault;
    vault.populate({{"a", token("low", 1)}, {"b", token("high", 10)}});
    EXPECT_EQ(vault.select()->info->token, "high");
}

TEST(Vault, InvalidatedCredentialsAreNotOfferedAgain) {
    Vault vault;
    vault.populate({{"a", token("low", 1)}, {"b", token("high", 10)}});
    vault.invalidate(*vault.select());
    EXPECT_EQ(vault.select()->info->token, "low");
    vault.invalidate(*vault.select());
    EXPECT_TRUE(vault.empty());
}

TEST(Vault, LateInvalidationDoesNotDropNewerCredentials) {
    Vault vault;
    vault.populate({{"a", token("old")}});
    auto old = *vault.select();
    vault.populate({{"a", token("new")}});
    vault.invalidate(old);
    EXPECT_EQ(vault.select()->info->token, "new");
}

TEST(Vault, ExpiredCredentialsAreDropped) {
    Vault vault;
    auto info = token("short-lived");
    auto now = std::chrono::system_clock::now();
    info.expiration = now + std::chrono::seconds(10);
    vault.populate({{"a", info}});
    EXPECT_TRUE(vault.select(now).has_value());
    EXPECT_FALSE(vault.select(now + std::chrono::seconds(11)).has_value());
}

TEST(Vault, PopulatingBumpsTheGeneration) {
    Vault vault;
    auto before = vault.generation();
    vault.populate({{"a", token("x")}});
    EXPECT_GT(vault.generation(), before);
}

TEST(Vault, PopulatingReplacesAllCredentials) {
    Vault vault;
    vault.populate({{"a", token("x")}, {"b", token("y")}});
    vault.populate({{"c", token("z")}});
    const auto items = vault.items();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items.at("c").token, "z");
}

// As Kopf's Vault.populate (the application's kopf::Vault::populate): credentials are added to
// what is there, replacing those of the same keys.
TEST(Vault, AddingKeepsTheCredentialsAndReplacesThoseOfTheSameKey) {
    Vault vault;
    vault.add({{"app", token("app-token", 5)}, {"login_fn", token("old")}});
    vault.add({{"login_fn", token("new")}});
    const auto items = vault.items();
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items.at("app").token, "app-token");
    EXPECT_EQ(items.at("login_fn").token, "new");
}

TEST(Vault, RemovingByKeyForgetsThoseCredentialsWhateverTheyAre) {
    Vault vault;
    vault.populate({{"a", token("x")}, {"b", token("y")}});
    EXPECT_TRUE(vault.remove("a"));
    EXPECT_FALSE(vault.remove("a"));
    EXPECT_EQ(vault.select()->key, "b");
    vault.clear();
    EXPECT_TRUE(vault.empty());
}

TEST(Vault, ItemsLeaveTheExpiredCredentialsOut) {
    Vault vault;
    const auto now = std::chrono::system_clock::now();
    auto expired = token("expired");
    expired.expiration = now - std::chrono::seconds(1);
    auto lasting = token("lasting");
    lasting.expiration = now + std::chrono::hours(1);
    vault.populate({{"expired", expired}, {"lasting", lasting}, {"forever", token("forever")}});
    const auto items = vault.items(now);
    EXPECT_EQ(items.size(), 2u);
    EXPECT_EQ(items.count("expired"), 0u);
    EXPECT_EQ(items.at("lasting").token, "lasting");
}

// ---- kopf::Vault: the application's face of the same store (kopf/vault.hpp) ----

namespace {

// Credentials as an application builds them: every field with heap data, so that a copy lost
// or shared wrongly shows under ASan.
ConnectionInfo rich(const std::string& name, int priority) {
    ConnectionInfo info;
    info.server = "https://" + name + ".cluster.example.com:6443/prefix/" + std::string(64, 'p');
    info.ca_data = "-----BEGIN CERTIFICATE-----\n" + std::string(512, 'c') + "\n";
    info.scheme = "Bearer";
    info.token = name + "-" + std::string(256, 't');
    info.default_namespace = name + "-namespace";
    info.priority = priority;
    return info;
}

}  // namespace

TEST(PublicVault, AVaultWithoutCredentialsIsEmpty) {
    kopf::Vault vault;
    EXPECT_TRUE(vault.empty());
    EXPECT_TRUE(vault.credentials().empty());
    EXPECT_FALSE(vault.current().has_value());
}

TEST(PublicVault, GivenCredentialsAreReadBackByNameAndTheHighestPriorityIsCurrent) {
    kopf::Vault vault({{"backup", rich("backup", 1)}, {"primary", rich("primary", 10)}});
    EXPECT_FALSE(vault.empty());
    const auto credentials = vault.credentials();
    ASSERT_EQ(credentials.size(), 2u);
    EXPECT_EQ(credentials.at("backup").token, rich("backup", 1).token);
    EXPECT_EQ(credentials.at("primary").default_namespace, "primary-namespace");
    const auto current = vault.current();
    ASSERT_TRUE(current.has_value());
    EXPECT_EQ(current->first, "primary");
    EXPECT_EQ(current->second.server, rich("primary", 10).server);
}

TEST(PublicVault, InvalidatedCredentialsLeaveTheNextOnesCurrent) {
    kopf::Vault vault({{"backup", rich("backup", 1)}, {"primary", rich("primary", 10)}});
    EXPECT_TRUE(vault.invalidate("primary"));
    EXPECT_FALSE(vault.invalidate("primary"));  // already gone
    EXPECT_FALSE(vault.invalidate("unknown"));
    EXPECT_EQ(vault.current()->first, "backup");
    vault.invalidate_all();
    EXPECT_TRUE(vault.empty());
}

// As Kopf's Vault.is_empty(): credentials that have all expired count as none.
TEST(PublicVault, AVaultOfExpiredCredentialsIsEmpty) {
    auto expired = rich("expired", 0);
    expired.expiration = std::chrono::system_clock::now() - std::chrono::seconds(1);
    kopf::Vault vault({{"expired", expired}});
    EXPECT_TRUE(vault.empty());
    EXPECT_TRUE(vault.credentials().empty());
}

TEST(PublicVault, TheOperatorsViewIsTheSameStore) {
    auto vault = std::make_shared<kopf::Vault>();
    const auto store = kopf::detail::vault_store(*vault);
    store->populate({{"login_fn", rich("login", 0)}});  // as the operator's initial login does
    EXPECT_EQ(vault->current()->first, "login_fn");
    vault->populate({{"app", rich("app", 3)}});
    EXPECT_EQ(store->select()->key, "app");
    vault.reset();  // the operator keeps its view alive
    EXPECT_EQ(store->items().size(), 2u);
}

TEST(PublicVault, BadCredentialsAreRefusedNamingThemAndNothingIsAdded) {
    kopf::Vault vault({{"good", rich("good", 0)}});
    const auto refusal = [&vault](std::map<std::string, ConnectionInfo> credentials) {
        try {
            vault.populate(std::move(credentials));
        } catch (const std::invalid_argument& error) {
            return std::string(error.what());
        }
        return std::string("accepted");
    };
    auto no_server = rich("x", 0);
    no_server.server.clear();
    EXPECT_EQ(refusal({{"other", rich("other", 0)}, {"serverless", no_server}}),
              "Vault credentials 'serverless': no server is given.");
    auto both_cas = rich("x", 0);
    both_cas.ca_path = "/etc/ca.pem";
    EXPECT_EQ(refusal({{"two-cas", both_cas}}),
              "Vault credentials 'two-cas': both CA path & data are set. Need only one.");
    auto both_certs = rich("x", 0);
    both_certs.certificate_path = "/etc/cert.pem";
    both_certs.certificate_data = "-----BEGIN CERTIFICATE-----";
    EXPECT_NE(refusal({{"two-certs", both_certs}}).find("'two-certs': both certificate path"),
              std::string::npos);
    auto both_keys = rich("x", 0);
    both_keys.private_key_path = "/etc/key.pem";
    both_keys.private_key_data = "-----BEGIN PRIVATE KEY-----";
    EXPECT_NE(refusal({{"two-keys", both_keys}}).find("'two-keys': both private key path"),
              std::string::npos);
    EXPECT_NE(refusal({{"", rich("anonymous", 0)}}).find("need a name"), std::string::npos);
    // The refused batches left the vault as it was.
    EXPECT_EQ(vault.credentials().size(), 1u);
    EXPECT_EQ(vault.current()->first, "good");
}
