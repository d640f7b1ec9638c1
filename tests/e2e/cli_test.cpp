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
