// The credentials vault picks the best credentials and forgets failed or expired ones.
#include "structs/credentials.hpp"

#include <gtest/gtest.h>

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
