// The `kopf` command line itself: help and version, as a newcomer first meets them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

// `kopf run --compile-only FILE.cpp`: compile, load and check an operator file without running
// it (for CI and editors): no cluster is needed, the compiler's errors are shown.
TEST(Cli, CompileOnlyChecksTheFileWithoutRunning) {
    const std::vector<std::pair<std::string, std::string>> env = {
        {"KOPF_CACHE_DIR", (std::filesystem::temp_directory_path() / "kopf-e2e-cache").string()},
        {"KUBECONFIG", "/nonexistent/kubeconfig"}};
    auto good = run({kopf_binary().string(), "run", "--compile-only",
                     (source_dir() / "examples/01-minimal/example.cpp").string()},
                    env);
    EXPECT_EQ(good.exit_code, 0) << good.output;
    EXPECT_NE(good.output.find("example.cpp: compiled and loaded; it registers 1 handler(s)."),
              std::string::npos)
        << good.output;
    EXPECT_EQ(good.output.find("Absence of either namespaces"), std::string::npos) << good.output;

    const auto broken = std::filesystem::temp_directory_path() /
                        ("kopf-broken-" + std::to_string(::getpid()) + ".cpp");
    {
        std::ofstream out(broken);
        out << "#include <kopf/kopf.hpp>\nint broken( { return 0; }\n";
    }
    auto bad = run({kopf_binary().string(), "run", "--compile-only", broken.string()}, env);
    std::filesystem::remove(broken);
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
    EXPECT_NE(bad.output.find(broken.filename().string()), std::string::npos) << bad.output;

    auto nothing = run({kopf_binary().string(), "run", "--compile-only"}, env);
    EXPECT_EQ(nothing.exit_code, 2) << nothing.output;
    EXPECT_NE(nothing.output.find("--compile-only needs"), std::string::npos) << nothing.output;
}
