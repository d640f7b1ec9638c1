// Applying a processing outcome through the PatchApplier interface: order, status split,
// conflicts of the finalizer guard, and wake-ups for delayed handlers.
#include <gtest/gtest.h>

#include "unit/core/support/harness.hpp"

namespace {

using kopf::json;
using kopf::testing::Harness;

// An in-memory API object that records the requests it receives.
struct RecordingApplier : kopf::reactor::PatchApplier {
    explicit RecordingApplier(json body) : object(std::move(body)) {}
    json object;
    bool conflict_on_json_patch = false;
    std::vector<std::string> requests;
    int rv = 200;

    kopf::Task<kopf::reactor::PatchResult> merge_patch(const kopf::Resource&, const json&,
                                                       const json& patch, bool status) override {
        requests.push_back(std::string(status ? "merge /status " : "merge ") + patch.dump());
        object.merge_patch(patch);
        object["metadata"]["resourceVersion"] = std::to_string(++rv);
        co_return kopf::reactor::PatchResult{true, false, object["metadata"]["resourceVersion"]};
    }
    kopf::Task<kopf::reactor::PatchResult> json_patch(const kopf::Resource&, const json&,
                                                      const json& ops, bool status) override {
        requests.push_back(std::string(status ? "json /status " : "json ") + ops.dump());
        if (conflict_on_json_patch) co_return kopf::reactor::PatchResult{true, true, std::nullopt};
        object = object.patch(ops);
        object["metadata"]["resourceVersion"] = std::to_string(++rv);
        co_return kopf::reactor::PatchResult{true, false, object["metadata"]["resourceVersion"]};
    }
};

kopf::reactor::ApplyResult apply(Harness& h, RecordingApplier& api,
                                 kopf::reactor::ProcessingOutcome& out) {
    json event = {{"type", "MODIFIED"}, {"object", h.body}};
    auto& memory = h.memories.recall(event, h.memobase);
    auto env = h.env();
    return kopf::actions::run_sync(kopf::reactor::apply_outcome(api, env, h.resource, memory, out));
}

TEST(Application, StatusIsPatchedSeparatelyAfterTheBodyForStatusSubresources) {
    Harness h;
    h.resource.subresources = {"status"};
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context&) {
        return json{{"m", 1}};
    });
    RecordingApplier api{h.body};
    auto out = h.process("ADDED");
    auto result = apply(h, api, out);
    ASSERT_EQ(api.requests.size(), 2u);
    EXPECT_EQ(api.requests[0].rfind("merge {\"metadata\"", 0), 0u);
    EXPECT_EQ(api.requests[1], "merge /status {\"status\":{\"fn\":{\"m\":1}}}");
    EXPECT_EQ(result.resource_version, "202");
}

TEST(Application, FinalizerGuardConflictsAreKeptForTheNextEvent) {
    Harness h;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, [](kopf::Context&) {});
    RecordingApplier api{h.body};
    api.conflict_on_json_patch = true;
    auto out = h.process("ADDED");
    apply(h, api, out);
    auto again = h.process();  // the same transformation is retried, no handlers run meanwhile
    EXPECT_EQ(again.json_patch()[1]["path"], "/metadata/finalizers");
}

TEST(Application, DelaysWithoutPatchesAskForAWakeUp) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"},
                     [](kopf::Context&) -> json { throw kopf::TemporaryError("later", 1000); });
    h.step("ADDED");
    RecordingApplier api{h.body};
    auto out = h.process();  // sleeping handler: nothing to patch
    ASSERT_TRUE(out.patch.empty());
    auto result = apply(h, api, out);
    EXPECT_TRUE(api.requests.empty());
    EXPECT_EQ(result.wakeup_after, 600);  // capped at WAITING_KEEPALIVE_INTERVAL
}

TEST(Application, FinishedCyclesAreReportedAsApplied) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context&) {});
    h.step("ADDED");
    RecordingApplier api{h.body};
    auto out = h.process();
    auto result = apply(h, api, out);
    EXPECT_TRUE(result.applied);
}

TEST(Application, TheEchoOfAPatchOfStatusAndKopfsAnnotationsNeedsNoProcessing) {
    Harness h;
    h.log_level = kopf::LogLevel::INFO;
    int calls = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [&calls](kopf::Context&) {
        ++calls;
        return json{{"message", "done"}};
    });
    RecordingApplier api{h.body};
    auto out = h.process("ADDED");
    auto result = apply(h, api, out);
    ASSERT_EQ(api.requests.size(), 1u);
    EXPECT_TRUE(result.own_echo_is_noop);
    // Indeed: processing the patched object finds nothing to do.
    h.body = api.object;
    auto echo = h.process();
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(echo.patch.empty());
    EXPECT_TRUE(echo.delays.empty());
}

TEST(Application, TheEchoOfAPatchOfTheSpecIsProcessed) {
    Harness h;
    h.log_level = kopf::LogLevel::INFO;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"},
                     [](kopf::Context& ctx) { ctx.patch.spec()["patched"] = true; });
    RecordingApplier api{h.body};
    auto out = h.process("ADDED");
    EXPECT_FALSE(apply(h, api, out).own_echo_is_noop);
}

TEST(Application, TheEchoIsProcessedWhileHandlersAreStillDue) {
    Harness h;
    h.log_level = kopf::LogLevel::INFO;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"},
                     [](kopf::Context&) -> json { throw kopf::TemporaryError("later", 1); });
    RecordingApplier api{h.body};
    auto out = h.process("ADDED");
    EXPECT_FALSE(apply(h, api, out).own_echo_is_noop);
}

TEST(Application, TheEchoIsProcessedForEventHandlersAndWithDebugLogging) {
    for (const bool with_event_handler : {true, false}) {
        Harness h;
        h.log_level = with_event_handler ? kopf::LogLevel::INFO : kopf::LogLevel::DEBUG;
        kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context&) {});
        if (with_event_handler)
            kopf::on::event(h.registry, "kopfexamples", {.id = "ev"}, [](kopf::Context&) {});
        RecordingApplier api{h.body};
        auto out = h.process("ADDED");
        EXPECT_FALSE(apply(h, api, out).own_echo_is_noop) << with_event_handler;
    }
}

TEST(SubHandlerFilters, FilteredOutSubHandlersDoNotRun) {
    Harness h;
    int a = 0, b = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "p"}, [&](kopf::Context& c) {
        kopf::subhandler(c, {.id = "a", .labels = {{"somelabel", "somevalue"}}},
                         [&a](kopf::Context&) { ++a; });
        kopf::subhandler(c, {.id = "b", .labels = {{"somelabel", "other"}}},
                         [&b](kopf::Context&) { ++b; });
    });
    h.step("ADDED");
    h.step();
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 0);
}

}  // namespace
