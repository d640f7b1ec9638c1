// `kopf run` with bad input: one-paragraph errors and a non-zero exit code.
#include <gtest/gtest.h>

#include <fstream>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

CommandResult kopf_run(const std::vector<std::string>& args,
                       std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> argv = {kopf_binary().string(), "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace_back("KOPF_CACHE_DIR", (fs::temp_directory_path() / "kopf-e2e-cache").string());
    return run(argv, env);
}

fs::path write_temp(const std::string& name, const std::string& text) {
    const fs::path path =
        fs::temp_directory_path() / ("kopf-e2e-" + std::to_string(getpid()) + "-" + name);
    std::ofstream(path) << text;
    return path;
}

std::string minimal() {
    return (source_dir() / "examples/01-minimal/example.cpp").string();
}

}  // namespace

TEST(BadInput, NeitherNamespaceNorAllNamespacesIsAnError) {
    auto result = kopf_run({minimal()});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("Neither --namespace nor --all-namespaces"), std::string::npos)
        << result.output;
}

TEST(BadInput, InvalidNamespacePatternIsNamed) {
    auto result = kopf_run({minimal(), "-n", "Not_A_Namespace"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("Not_A_Namespace"), std::string::npos) << result.output;
}

TEST(BadInput, SourceThatDoesNotCompileShowsTheCompilerErrors) {
    auto source =
        write_temp("broken.cpp", "#include <kopf/kopf.hpp>\nint broken() { return nope; }\n");
    auto result = kopf_run({source.string(), "-n", "default"});
    fs::remove(source);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("nope"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("was not declared"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("did not compile"), std::string::npos) << result.output;
}

TEST(BadInput, SourceWithoutHandlersIsAnError) {
    auto source =
        write_temp("empty.cpp", "#include <kopf/kopf.hpp>\nint unused_function() { return 0; }\n");
    auto result = kopf_run({source.string(), "-n", "default"});
    fs::remove(source);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("registers no handlers"), std::string::npos) << result.output;
}

TEST(BadInput, MissingKubeconfigIsExplained) {
    auto result = kopf_run({minimal(), "-n", "default"},
                           {{"KUBECONFIG", "/nonexistent/kubeconfig"}, {"HOME", "/nonexistent"}});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("no kubeconfig was found"), std::string::npos) << result.output;
}

TEST(BadInput, UnreachableApiServerIsExplained) {
    auto kubeconfig = write_temp("kubeconfig.yaml",
                                 "apiVersion: v1\nkind: Config\n"
                                 "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
                                 "users: [{name: u, user: {token: t}}]\n"
                                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                 "current-context: x\n");
    auto result = kopf_run({minimal(), "-n", "default"}, {{"KUBECONFIG", kubeconfig.string()}});
    fs::remove(kubeconfig);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("The API server is unreachable"), std::string::npos)
        << result.output;
}

TEST(BadInput, PythonModulesAreNotApplicable) {
    auto result = kopf_run({"-m", "mymodule", "-n", "default"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.output.find("-m/--module"), std::string::npos) << result.output;
}
