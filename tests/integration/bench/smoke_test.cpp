// The benchmark suite still works: `bench/run.sh --smoke` (N=200, one run) completes against
// this build tree and prints every figure. Values are never asserted — they depend on the
// machine; the figures live in bench/README.md.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

struct SuiteRun {
    int exit_code = -1;
    std::string output;  // stdout and stderr
};

SuiteRun run_suite(const std::string& arguments) {
    const std::string command = std::string("bash ") + KOPF_SOURCE_DIR + "/bench/run.sh " +
                                arguments + " --no-build --build-dir " + KOPF_BINARY_DIR + " 2>&1";
    SuiteRun run;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return run;
    std::array<char, 4096> buffer{};
    std::size_t got = 0;
    while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
        run.output.append(buffer.data(), got);
    const int status = ::pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
}

std::vector<std::string> missing_tools() {
    std::vector<std::string> missing;
    for (const char* tool : {"bin/kopf", "bench/operator_load", "bench/apiserver_load",
                             "bench/micro_bench", "bench/client_load", "bench/handler_client_load",
                             "bench/daemons_load", "bench/admission_load"}) {
        if (!std::filesystem::exists(std::filesystem::path(KOPF_BINARY_DIR) / tool))
            missing.push_back(tool);
    }
    return missing;
}

TEST(BenchSmoke, SmokeRunCompletesAndPrintsEveryFigure) {
    if (auto missing = missing_tools(); !missing.empty()) {
        GTEST_SKIP() << "this build tree lacks " << missing.front()
                     << " (configure with -DKOPF_BUILD_BENCH=ON and build the bench tools)";
    }
    const SuiteRun run = run_suite("--smoke");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    for (const char* figure : {
             // The rates group: the status subresource at the paced rate (1000/s in the smoke
             // run), the CRD without it as fast as accepted; both with the minimal client's limit.
             "figure: rates, status subresource: limit, create + 1 patch + 1 status patch per",
             "figure: create 200 at 1000/s, status subresource: operator CPU per object (headline)",
             "figure: create 200 at 1000/s, status subresource: operator API writes per object",
             "figure: create 200 at 1000/s, status subresource: creates accepted",
             "figure: create 200 at 1000/s, status subresource: end-to-end throughput (headline)",
             "figure: update 200 at 1000/s, status subresource: operator CPU per update",
             "figure: update 200 at 1000/s, status subresource: operator API writes per update",
             "figure: update 200 at 1000/s, status subresource: updates accepted",
             "figure: update 200 at 1000/s, status subresource: end-to-end throughput",
             "figure: rates, no status subresource: limit, create + 1 patch per object from a",
             "figure: create 200 at max, no status subresource: operator CPU per object",
             "figure: create 200 at max, no status subresource: operator API writes per object",
             "figure: create 200 at max, no status subresource: end-to-end throughput, % of the",
             "figure: update 200 at max, no status subresource: operator CPU per update",
             "figure: update 200 at max, no status subresource: end-to-end throughput",
             "figure: apiserver merge-patch rate (200 objects",
             "figure: apiserver watch delivery (10 watchers)",
             "figure: apiserver list of 200 objects",
             "figure: apiserver RSS growth while listing 200 objects",
             "figure: apiserver list response size (200 objects)",
             "figure: apiserver peak RSS (200 objects stored and listed)",
             "figure: idle RSS, 0 objects",
             "figure: create 200: wall time until every result is in status",
             "figure: create 200: end-to-end throughput",
             "figure: create 200: API server acceptance rate",
             "figure: create 200: operator CPU (user+sys)",
             "figure: create 200: operator CPU per object",
             "figure: create 200: operator API writes per object",
             "figure: create 200: operator peak RSS",
             "figure: idle RSS, 200 objects",
             "figure: idle RSS per watched object",
             "figure: steady 200 objects, 20 updates/s: update-to-handler latency p50",
             "figure: steady 200 objects, 20 updates/s: update-to-handler latency p99",
             "figure: resume 200: last resume handler after the operator's start",
             "figure: resume 200: operator idle after its start",
             "figure: limit: create + ",
             "figure: micro BM_WatchLineSplitAndParse",
             "figure: micro BM_CauseDetectionUnchanged",
             "figure: micro BM_CauseDetectionUpdated",
             "figure: micro BM_DiffOfEssences",
             "figure: micro BM_ProgressRecordEncode",
             "figure: micro BM_ProgressRecordDecode",
             "figure: micro BM_PatchBuildEndOfCycle",
             "figure: micro BM_PatchBuildJsonPatch",
             "figure: client watch-stream parsing, ~2 KB objects, one core: bytes",
             "figure: client watch-stream parsing, ~2 KB objects, one core: events",
             "figure: client watch-stream parsing, ~5 KB objects, one core: bytes",
             "figure: client watch-stream parsing, ~5 KB objects, one core: events",
             "figure: client watch end to end (200 ~2 KB objects created over 4 connections)",
             "figure: client watch end to end: client thread CPU per event",
             "figure: client list of 200 objects page by page (50 per page): time",
             "figure: client list of 200 objects page by page (50 per page): client CPU",
             "figure: client list of 200 objects page by page (50 per page): peak RSS growth",
             "figure: client list of 200 objects joined into one list (ApiClient::list): time",
             "figure: client list of 200 objects joined into one list (ApiClient::list): client",
             "figure: client list of 200 objects joined into one list (ApiClient::list): peak RSS",
             "figure: client list of 200 objects: the objects' JSON",
             "figure: client from sync handlers (kopf::Api), get, one at a time: rate",
             "figure: client from sync handlers (kopf::Api), merge-patch, one at a time: client",
             "figure: client from async handlers (kopf::Api), get, one at a time: client CPU",
             "figure: client from async handlers (kopf::Api), merge-patch, one at a time: rate",
             "figure: daemons 200: RSS per daemon (with − without)",
             "figure: daemons 200: all daemons running, after the operator's start",
             "figure: daemons 200: operator CPU per daemon stopped at exit",
             "figure: timers 200, 1 s interval: ticks per second",
             "figure: timers 200: operator CPU per tick",
             "figure: timers 200: tick lateness p99",
             "figure: indexing 200: operator RSS per indexed object",
             "figure: indexing 200: operator CPU per indexed object",
             "figure: indexing 200: all indices ready",
             "figure: micro BM_IndexUpdate/10000",
             "figure: micro BM_IndexUpdate/10000: heap per index entry",
             "figure: indexing 200: every object's daemon runs, with the index",
             "figure: admission: create 200 objects through the API server, no webhook",
             "figure: admission: create 200 objects through the API server, validating webhook",
             "figure: admission: reviews/s of a validating handler, one keep-alive HTTPS",
             "figure: admission: review latency p99, as fast as answered",
             "figure: admission: operator CPU per review",
             "figure: admission: review latency p99 at 1000 reviews/s",
             "figure: standby: idle CPU, watching 200 objects",
             "figure: standby: idle RSS, watching 200 objects",
             "figure: standby: failover, kill -9 of the leader to the first handled object on the",
             "the first handled object on the standby (lease 3 s",
         }) {
        EXPECT_NE(run.output.find(figure), std::string::npos) << "missing line: " << figure;
    }
}

TEST(BenchSmoke, UnknownOptionIsRejectedWithItsName) {
    const SuiteRun run = run_suite("--smoke --bogus-option");
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.output.find("unknown option '--bogus-option'"), std::string::npos) << run.output;
}

TEST(BenchSmoke, UnknownGroupIsRejectedWithTheValidNames) {
    const SuiteRun run = run_suite("--smoke --only everything");
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.output.find("unknown group 'everything'"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("rates apiserver limit create steady resume idle micro client"),
              std::string::npos);
}

TEST(BenchSmoke, RateThatIsNeitherANumberNorMaxIsRejectedNamingIt) {
    const SuiteRun run = run_suite("--only rates --rate-objects 10 --rates 100,fast");
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.output.find("'fast' in --rates is neither a positive integer nor 'max'"),
              std::string::npos)
        << run.output;
}

}  // namespace
