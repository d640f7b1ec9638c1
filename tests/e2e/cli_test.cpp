// The `kopf` command line itself: help and version, as a newcomer first meets them.
#include <gtest/gtest.h>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;

TEST(Cli, HelpListsEveryCommand) {
    auto help = run({kopf_binary().string(), "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    for (const char* command : {"run", "apiserver", "version"}) {
        EXPECT_NE(help.output.find("\n  " + std::string(command) + " "), std::string::npos)
            << command << " is not listed in:\n"
            << help.output;
    }
}

TEST(Cli, ApiserverHelpIsTheApiserversOwn) {
    auto help = run({kopf_binary().string(), "apiserver", "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    EXPECT_NE(help.output.find("--kubeconfig-out"), std::string::npos) << help.output;
}

TEST(Cli, NoCommandPrintsTheHelpAndFails) {
    auto bare = run({kopf_binary().string()});
    EXPECT_NE(bare.exit_code, 0);
    EXPECT_NE(bare.output.find("apiserver"), std::string::npos) << bare.output;
}

TEST(Cli, UnknownCommandIsNamedInTheError) {
    auto unknown = run({kopf_binary().string(), "frobnicate"});
    EXPECT_NE(unknown.exit_code, 0);
    EXPECT_NE(unknown.output.find("frobnicate"), std::string::npos) << unknown.output;
}

// Kopf's short forms of `kopf run` options: -L (liveness), -P (peering), -p (priority).
TEST(Cli, RunTakesKopfsShortForms) {
    auto help = run({kopf_binary().string(), "run", "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    for (const char* option : {"-L,--liveness", "-P,--peering", "-p,--priority"})
        EXPECT_NE(help.output.find(option), std::string::npos) << option << " in:\n" << help.output;
    // -L is the liveness endpoint: a bad one is refused, named, before anything else starts.
    auto bad = run({kopf_binary().string(), "run",
                    (source_dir() / "examples/01-minimal/example.cpp").string(), "-n", "default",
                    "-L", "not-an-endpoint"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.output.find("Invalid --liveness endpoint 'not-an-endpoint'"), std::string::npos)
        << bad.output;
}
