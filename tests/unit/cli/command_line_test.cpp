// What `kopf run`'s options mean for the operator, by Kopf's rules.
#include "cli/command_line.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kopf::runtime {
namespace {

TEST(RunOptionsOf, DevMeansPriority666WhateverPrioritySays) {
    RunCommandOptions command;
    command.namespaces = {"default"};
    command.priority = 100;
    EXPECT_EQ(run_options_of(command).priority, 100);
    command.dev = true;
    EXPECT_EQ(run_options_of(command).priority, 666);  // Kopf: priority = 666 if dev else ...
}

TEST(RunOptionsOf, ScopePeeringLivenessAndContextAreCarriedOver) {
    RunCommandOptions command;
    command.namespaces = {"ns-*", "!ns-x"};
    command.standalone = true;
    command.peering = "team-a";
    command.liveness = "http://127.0.0.1:8080/healthz";
    command.context = "kind-dev";
    const auto options = run_options_of(command);
    EXPECT_EQ(options.namespaces, (std::vector<std::string>{"ns-*", "!ns-x"}));
    EXPECT_FALSE(options.clusterwide);
    EXPECT_TRUE(options.standalone);
    EXPECT_EQ(options.peering_name, "team-a");
    EXPECT_EQ(options.liveness_endpoint, "http://127.0.0.1:8080/healthz");
    EXPECT_EQ(options.context, "kind-dev");
    EXPECT_FALSE(options.priority.has_value());  // none given: the settings' default
}

// An operator linked with kopf::main is named in its help as its binary is, not as "kopf".
TEST(CommandLine, HelpNamesTheProgramAsItWasStarted) {
    std::string program = "/opt/operators/my-operator";
    std::string help = "--help";
    char* argv[] = {program.data(), help.data(), nullptr};
    ::testing::internal::CaptureStdout();
    const int code = main(2, argv);
    const std::string output = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, 0);
    EXPECT_NE(output.find("Usage: my-operator"), std::string::npos) << output;
    EXPECT_EQ(output.find("/opt/operators"), std::string::npos) << output;
}

}  // namespace
}  // namespace kopf::runtime
