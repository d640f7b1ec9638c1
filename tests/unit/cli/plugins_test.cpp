#include "cli/plugins.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace kopf::runtime;

namespace {

class Plugins : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kopf-plugins-test-" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        options_.cache_dir = dir_ / "cache";
        options_.quiet = true;
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path write(const std::string& name, const std::string& text) {
        std::ofstream(dir_ / name) << text;
        return dir_ / name;
    }

    fs::path dir_;
    PluginCompiler options_;
};

}  // namespace

TEST_F(Plugins, HeadersAreFoundForTheBuildTree) {
    EXPECT_TRUE(fs::exists(kopf_include_dir() / "kopf" / "version.hpp"));
}

TEST_F(Plugins, SourceIsCompiledAgainstKopfHeadersAndLoaded) {
    auto source =
        write("op.cpp",
              "#include <kopf/version.hpp>\n"
              "extern \"C\" const char* plugin_test_version() { return kopf::version(); }\n");
    const fs::path object = compile_plugin(source, options_);
    EXPECT_EQ(object.parent_path(), options_.cache_dir);
    load_shared_object(object);
    EXPECT_NE(dlsym(RTLD_DEFAULT, "plugin_test_version"), nullptr);
}

TEST_F(Plugins, UnchangedSourceIsTakenFromTheCache) {
    auto source = write("op.cpp", "int plugin_cached_value() { return 1; }\n");
    const fs::path first = compile_plugin(source, options_);
    const auto built = fs::last_write_time(first);
    const fs::path second = compile_plugin(source, options_);
    EXPECT_EQ(first, second);
    EXPECT_EQ(fs::last_write_time(second), built);
}

TEST_F(Plugins, ChangedSourceIsCompiledAnew) {
    auto source = write("op.cpp", "int plugin_changed_value() { return 1; }\n");
    const fs::path first = compile_plugin(source, options_);
    write("op.cpp", "int plugin_changed_value() { return 2; }\n");
    EXPECT_NE(compile_plugin(source, options_), first);
}

TEST_F(Plugins, ChangedLocalHeaderInvalidatesTheCache) {
    write("local.hpp", "inline int local_value() { return 1; }\n");
    auto source = write(
        "op.cpp", "#include \"local.hpp\"\nint plugin_header_value() { return local_value(); }\n");
    const fs::path object = compile_plugin(source, options_);
    const auto built = fs::last_write_time(object);
    fs::last_write_time(dir_ / "local.hpp", built + std::chrono::seconds(5));
    compile_plugin(source, options_);
    EXPECT_GT(fs::last_write_time(object), built);
}

TEST_F(Plugins, CompileErrorsFailNamingTheFile) {
    auto source = write("broken.cpp", "this is not C++;\n");
    try {
        compile_plugin(source, options_);
        FAIL() << "no error";
    } catch (const PluginError& error) {
        EXPECT_NE(std::string(error.what()).find("broken.cpp"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("did not compile"), std::string::npos);
    }
}

TEST_F(Plugins, MissingSourceFailsNamingIt) {
    EXPECT_THROW(compile_plugin(dir_ / "absent.cpp", options_), PluginError);
}

TEST_F(Plugins, MissingCompilerIsExplained) {
    auto source = write("op.cpp", "int x;\n");
    options_.compiler = "/nonexistent/c++";
    try {
        compile_plugin(source, options_);
        FAIL() << "no error";
    } catch (const PluginError& error) {
        EXPECT_NE(std::string(error.what()).find("Cannot run the C++ compiler"), std::string::npos);
    }
}

TEST_F(Plugins, NonLibraryFileIsRejectedWithDlerror) {
    auto fake = write("libfake.so", "not an ELF file");
    try {
        load_shared_object(fake);
        FAIL() << "no error";
    } catch (const PluginError& error) {
        EXPECT_NE(std::string(error.what()).find("libfake.so"), std::string::npos);
    }
}

TEST_F(Plugins, UnknownFileKindsAreRejected) {
    auto text = write("operator.py", "import kopf\n");
    EXPECT_THROW(load_operator_files({text.string()}, options_), PluginError);
}
