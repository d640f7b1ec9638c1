// The Debian package (cpack -G DEB, installed by scripts/test.sh with `apt-get install
// ./build/kopfpp_*.deb`): from what it installs under /usr alone, an operator compiles with
// find_package(kopf) and with `kopf run FILE.cpp`, and handles an object created with kubectl.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "kopf/version.hpp"
#include "support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

const char* kOperator = R"(#include <kopf/kopf.hpp>
kopf::json create_fn(kopf::Context& ctx) {
    ctx.logger.info("Created by the packaged Kopf++: {}", ctx.spec.dump());
    return {{"message", "hello from the package"}};
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
)";

class Package : public ::testing::Test {
  protected:
    void SetUp() override {
        auto status = run({"dpkg-query", "-W", "-f=${Status} ${Version}", "kopfpp"});
        if (status.output.rfind("install ok installed", 0) != 0)
            GTEST_SKIP() << "the kopfpp package is not installed (scripts/test.sh builds it with "
                            "cpack and installs it with apt-get): "
                         << status.output;
        ASSERT_EQ(status.output, std::string("install ok installed ") + kopf::version())
            << "the installed package is not this build's";
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        char name[] = "/tmp/kopf-e2e-package-XXXXXX";
        dir_ = mkdtemp(name);
        std::ofstream(dir_ / "operator.cpp") << kOperator;
        std::ofstream(dir_ / "main.cpp")
            << "#include <kopf/main.hpp>\nint main(int argc, char** argv) { return "
               "kopf::main(argc, argv); }\n";
        cluster_ = std::make_unique<Cluster>();
        for (const char* file : {"examples/crd.yaml"}) {
            auto applied = cluster_->kubectl({"apply", "-f", (source_dir() / file).string()});
            ASSERT_EQ(applied.exit_code, 0) << applied.output;
        }
    }
    void TearDown() override {
        cluster_.reset();
        std::error_code ec;
        if (!dir_.empty()) fs::remove_all(dir_, ec);
    }

    // Runs the operator until its handler has handled a new object.
    void expect_handled(OperatorProcess& op, const std::string& name) {
        ASSERT_TRUE(
            op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev", std::chrono::seconds(120)))
            << op.log();
        std::ofstream(dir_ / (name + ".yaml"))
            << "apiVersion: kopf.dev/v1\nkind: KopfExample\nmetadata: {name: " << name
            << "}\nspec: {field: value}\n";
        auto created =
            cluster_->kubectl({"apply", "-n", "default", "-f", (dir_ / (name + ".yaml")).string()});
        ASSERT_EQ(created.exit_code, 0) << created.output;
        ASSERT_TRUE(op.wait_for_log("[default/" + name + "] Handler 'create_fn' succeeded.",
                                    std::chrono::seconds(60)))
            << op.log();
        EXPECT_NE(op.log().find("Created by the packaged Kopf++: {\"field\":\"value\"}"),
                  std::string::npos);
        auto object = cluster_->get_json({"kex", name, "-n", "default"});
        EXPECT_EQ(object["status"]["create_fn"]["message"], "hello from the package");
        EXPECT_EQ(op.stop(SIGINT), 0) << op.log();
    }

    fs::path dir_;
    std::unique_ptr<Cluster> cluster_;
};

TEST_F(Package, AnOperatorBuiltWithFindPackageFromTheInstalledFilesHandlesObjects) {
    std::ofstream(dir_ / "CMakeLists.txt")
        << "cmake_minimum_required(VERSION 3.25)\n"
           "project(my_operator CXX)\n"
           "find_package(kopf REQUIRED)\n"
           "add_executable(my-operator operator.cpp main.cpp)\n"
           "target_link_libraries(my-operator PRIVATE kopf::kopf)\n";
    auto configured = run({"cmake", "-S", dir_.string(), "-B", (dir_ / "build").string()});
    ASSERT_EQ(configured.exit_code, 0) << configured.output;
    auto built = run({"cmake", "--build", (dir_ / "build").string()});
    ASSERT_EQ(built.exit_code, 0) << built.output;
    // It links the installed library, not the build tree's.
    auto libraries = run({"ldd", (dir_ / "build" / "my-operator").string()});
    const bool installed =
        libraries.output.find("libkopf.so.0 => /usr/lib/") != std::string::npos ||
        libraries.output.find("libkopf.so.0 => /lib/") != std::string::npos;
    EXPECT_TRUE(installed) << libraries.output;
    OperatorProcess op(*cluster_, Program{dir_ / "build" / "my-operator"},
                       {"run", "-n", "default", "--standalone"});
    expect_handled(op, "from-cmake");
}

TEST_F(Package, TheInstalledKopfCommandCompilesAndRunsAnOperatorFile) {
    auto version = run({"/usr/bin/kopf", "version"});
    EXPECT_EQ(version.output, std::string("kopf++ ") + kopf::version() + "\n");
    // A cache of its own: a plugin compiled against another tree's headers must not be reused.
    OperatorProcess op(*cluster_,
                       Program{"/usr/bin/kopf", {{"KOPF_CACHE_DIR", (dir_ / "cache").string()}}},
                       {"run", (dir_ / "operator.cpp").string(), "-n", "default", "--standalone"});
    expect_handled(op, "from-kopf-run");
}

}  // namespace
