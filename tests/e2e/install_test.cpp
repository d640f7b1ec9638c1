// `cmake --install` puts headers, libkopf, the kopf command, the CMake package and kopf.pc in
// place; an operator outside this tree builds against them (find_package and pkg-config) and
// gets the kopf command line from kopf::main().
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

const char* operator_source = R"(#include <kopf/kopf.hpp>
#include <kopf/main.hpp>

kopf::json create_fn(kopf::Context& ctx) {
    ctx.logger.info("Creating {}", ctx.name);
    return {{"message", "hello world"}};
}
KOPF_ON_CREATE(create_fn, "kopfexamples");

int main(int argc, char** argv) { return kopf::main(argc, argv); }
)";

class Install : public ::testing::Test {
  protected:
    void SetUp() override {
        char name[] = "/tmp/kopf-install-XXXXXX";
        dir_ = mkdtemp(name);
        prefix_ = dir_ / "prefix";
        auto installed = run({"cmake", "--install", KOPF_BINARY_DIR, "--prefix", prefix_.string()});
        ASSERT_EQ(installed.exit_code, 0) << installed.output;
        if (!fs::exists(prefix_ / "lib" / "cmake" / "kopf" / "kopfConfig.cmake")) {
            GTEST_SKIP() << "the build tree has no install rules for kopf: the top-level "
                            "CMakeLists.txt must include(cmake/Install.cmake)";
        }
        std::ofstream(dir_ / "operator.cpp") << operator_source;
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path dir_;
    fs::path prefix_;
};

}  // namespace

TEST_F(Install, LayoutHasHeadersLibraryCommandAndPackageFiles) {
    EXPECT_TRUE(fs::exists(prefix_ / "include" / "kopf" / "kopf.hpp"));
    EXPECT_TRUE(fs::exists(prefix_ / "include" / "kopf" / "run.hpp"));
    EXPECT_TRUE(fs::exists(prefix_ / "lib" / "libkopf.so"));
    EXPECT_TRUE(fs::exists(prefix_ / "bin" / "kopf"));
    EXPECT_TRUE(fs::exists(prefix_ / "lib" / "pkgconfig" / "kopf.pc"));
    auto version = run({(prefix_ / "bin" / "kopf").string(), "version"});
    EXPECT_EQ(version.exit_code, 0) << version.output;
    EXPECT_NE(version.output.find("kopf++ "), std::string::npos);
}

TEST_F(Install, OperatorBuildsWithFindPackage) {
    std::ofstream(dir_ / "CMakeLists.txt")
        << "cmake_minimum_required(VERSION 3.25)\n"
           "project(my_operator CXX)\n"
           "find_package(kopf REQUIRED)\n"
           "add_executable(my-operator operator.cpp)\n"
           "target_link_libraries(my-operator PRIVATE kopf::kopf)\n";
    auto configured = run({"cmake", "-S", dir_.string(), "-B", (dir_ / "build").string(),
                           "-DCMAKE_PREFIX_PATH=" + prefix_.string()});
    ASSERT_EQ(configured.exit_code, 0) << configured.output;
    auto built = run({"cmake", "--build", (dir_ / "build").string()});
    ASSERT_EQ(built.exit_code, 0) << built.output;
    auto version = run({(dir_ / "build" / "my-operator").string(), "version"});
    EXPECT_EQ(version.exit_code, 0) << version.output;
    EXPECT_NE(version.output.find("kopf++ "), std::string::npos) << version.output;
    auto both_scopes = run({(dir_ / "build" / "my-operator").string(), "run", "-A", "-n", "x"});
    EXPECT_NE(both_scopes.exit_code, 0);
    EXPECT_NE(both_scopes.output.find("Either --namespace or --all-namespaces"), std::string::npos)
        << both_scopes.output;
}

TEST_F(Install, OperatorBuildsWithPkgConfig) {
    const std::string pc_path = (prefix_ / "lib" / "pkgconfig").string();
    auto flags = run({"pkg-config", "--cflags", "--libs", "kopf"}, {{"PKG_CONFIG_PATH", pc_path}});
    ASSERT_EQ(flags.exit_code, 0) << flags.output;
    std::string command = "c++ " + (dir_ / "operator.cpp").string() + " -o " +
                          (dir_ / "my-operator").string() + " " + flags.output;
    auto built = run({"sh", "-c", command});
    ASSERT_EQ(built.exit_code, 0) << built.output;
    auto version = run({(dir_ / "my-operator").string(), "version"});
    EXPECT_EQ(version.exit_code, 0) << version.output;
}
