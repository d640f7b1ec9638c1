#include "core/reactor/namespaces.hpp"

#include <gtest/gtest.h>

using kopf::runtime::NamespacePattern;
using kopf::runtime::NamespaceScope;

TEST(NamespacePattern, PlainNameMatchesOnlyItself) {
    NamespacePattern pattern("default");
    EXPECT_TRUE(pattern.matches("default"));
    EXPECT_FALSE(pattern.matches("default2"));
    EXPECT_TRUE(pattern.is_specific());
}

TEST(NamespacePattern, GlobsMatchAnyRunAndOneCharacter) {
    EXPECT_TRUE(NamespacePattern("*-pr-123-*").matches("app-pr-123-x"));
    EXPECT_FALSE(NamespacePattern("*-pr-123-*").matches("app-pr-124-x"));
    EXPECT_TRUE(NamespacePattern("ns?").matches("ns1"));
    EXPECT_FALSE(NamespacePattern("ns?").matches("ns12"));
    EXPECT_FALSE(NamespacePattern("ns*").is_specific());
}

TEST(NamespacePattern, LeadingExclusionMeansEverythingElse) {
    NamespacePattern pattern("!*-pr-123-*");
    EXPECT_TRUE(pattern.matches("myapp-live"));
    EXPECT_FALSE(pattern.matches("myapp-pr-123-x"));
}

TEST(NamespacePattern, FirstGlobIsDecisiveAndRightmostMatchWins) {
    // The example of Kopf's "Scopes" documentation.
    NamespacePattern pattern("myapp-*,!*-pr-*,*-pr-123");
    EXPECT_TRUE(pattern.matches("myapp-live"));
    EXPECT_FALSE(pattern.matches("myapp-pr-456"));
    EXPECT_TRUE(pattern.matches("myapp-pr-123"));
    EXPECT_FALSE(pattern.matches("otherapp-live"));
    EXPECT_FALSE(pattern.matches("otherapp-pr-123"));
}

TEST(NamespacePattern, InvalidCharactersAreRejectedNamingThePattern) {
    try {
        NamespacePattern pattern("My_Namespace");
        FAIL() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("My_Namespace"), std::string::npos);
    }
}

TEST(NamespacePattern, EmptyGlobsAreRejected) {
    EXPECT_THROW(NamespacePattern(""), std::invalid_argument);
    EXPECT_THROW(NamespacePattern("a,,b"), std::invalid_argument);
    EXPECT_THROW(NamespacePattern("!"), std::invalid_argument);
}

TEST(NamespaceScope, NeitherNamespacesNorClusterwideServesTheWholeCluster) {
    const auto scope = NamespaceScope::from_options(false, {});  // as Kopf, with a warning
    EXPECT_TRUE(scope.clusterwide);
    EXPECT_TRUE(scope.matches("any-namespace"));
}

TEST(NamespaceScope, BothNamespacesAndClusterwideIsAnError) {
    EXPECT_THROW(NamespaceScope::from_options(true, {"default"}), std::invalid_argument);
}

TEST(NamespaceScope, RepeatedPatternsAreAlternatives) {
    auto scope = NamespaceScope::from_options(false, {"ns1", "team-*"});
    EXPECT_TRUE(scope.matches("ns1"));
    EXPECT_TRUE(scope.matches("team-a"));
    EXPECT_FALSE(scope.matches("ns2"));
    EXPECT_FALSE(scope.all_specific());
}

TEST(NamespaceScope, ClusterwideMatchesEverything) {
    auto scope = NamespaceScope::from_options(true, {});
    EXPECT_TRUE(scope.clusterwide);
    EXPECT_TRUE(scope.matches("anything"));
}
