// A handler with a wrong signature is the first mistake of a new user: the compiler must say in
// one readable line what the handler should look like, not in pages of template errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace kopf::lint {
namespace {

struct Compiled {
    int status = 0;
    std::string output;
};

// Compiles an operator file (syntax only) as a user would, with the public headers.
Compiled compile(const std::string& source) {
    const std::string path = testing::TempDir() + "kopf_signature_" +
                             testing::UnitTest::GetInstance()->current_test_info()->name() + ".cpp";
    std::ofstream(path) << "#include <kopf/kopf.hpp>\n" << source << "\n";
    const std::string command = std::string(KOPF_CXX_COMPILER) + " -std=c++20 -fsyntax-only -I" +
                                KOPF_SOURCE_DIR + "/include " + path + " 2>&1";
    Compiled result;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return {-1, "cannot run " + command};
    std::array<char, 4096> chunk{};
    while (const std::size_t n = fread(chunk.data(), 1, chunk.size(), pipe))
        result.output.append(chunk.data(), n);
    result.status = pclose(pipe);
    return result;
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

void expect_one_readable_error(const std::string& source, const std::string& message) {
    const Compiled compiled = compile(source);
    EXPECT_NE(compiled.status, 0) << source;
    EXPECT_NE(compiled.output.find(message), std::string::npos) << compiled.output;
    EXPECT_EQ(count(compiled.output, "error:"), 1) << compiled.output;
}

TEST(HandlerSignatures, AHandlerWithAnExtraParameterIsExplained) {
    expect_one_readable_error(R"(
        kopf::json create_fn(kopf::Context& ctx, int retries) { return {}; }
        KOPF_ON_CREATE(create_fn, "kopfexamples");)",
                              "A handler is called as fn(kopf::Context& ctx)");
}

TEST(HandlerSignatures, AHandlerTakingTheWrongContextIsExplained) {
    expect_one_readable_error(R"(
        void update_fn(kopf::ActivityContext& ctx) {}
        static kopf::on::update reg("kopfexamples", {.id = "upd"}, update_fn);)",
                              "A handler is called as fn(kopf::Context& ctx)");
}

TEST(HandlerSignatures, AResultThatIsNotJsonIsExplained) {
    expect_one_readable_error(R"(
        struct Unconvertible {};
        Unconvertible create_fn(kopf::Context&) { return {}; }
        KOPF_ON_CREATE(create_fn, "kopfexamples");)",
                              "return void or something convertible to kopf::json");
}

TEST(HandlerSignatures, ActivitiesProbesIndicesLoginsAndWebhooksAreExplained) {
    expect_one_readable_error(
        R"(
        void startup_fn(kopf::Context&) {}
        KOPF_ON_STARTUP(startup_fn);)",
        "A startup or cleanup handler is called as fn(kopf::ActivityContext& ctx)");
    expect_one_readable_error(R"(
        kopf::json probe_fn() { return 1; }
        KOPF_ON_PROBE(probe_fn);)",
                              "A probe is called as fn(kopf::ActivityContext& ctx)");
    expect_one_readable_error(R"(
        kopf::json index_fn(const kopf::json& body) { return body; }
        KOPF_INDEX(index_fn, "kopfexamples");)",
                              "An index handler is called as fn(kopf::Context& ctx)");
    expect_one_readable_error(R"(
        std::optional<kopf::ConnectionInfo> login_fn() { return std::nullopt; }
        KOPF_ON_LOGIN(login_fn);)",
                              "A login handler is called as fn(kopf::ActivityContext& ctx)");
    expect_one_readable_error(R"(
        void check_fn(kopf::AdmissionContext& ctx, bool dryrun) {}
        KOPF_VALIDATE(check_fn, "kopfexamples");)",
                              "An admission handler is called as fn(kopf::AdmissionContext& ctx)");
}

TEST(HandlerSignatures, RightSignaturesWithoutOptionsCompile) {
    const Compiled compiled = compile(R"(
        void hello(kopf::ActivityContext& ctx) { ctx.logger.info("hello"); }
        KOPF_ON_STARTUP(hello);
        KOPF_ON_CLEANUP(hello);
        kopf::json create_fn(kopf::Context& ctx) { return {{"name", ctx.name}}; }
        KOPF_ON_CREATE(create_fn, "kopfexamples");
        kopf::Task<void> resume_fn(kopf::Context& ctx) { co_return; }
        KOPF_ON_RESUME(resume_fn, "kopfexamples");)");
    EXPECT_EQ(compiled.status, 0) << compiled.output;
}

}  // namespace
}  // namespace kopf::lint
