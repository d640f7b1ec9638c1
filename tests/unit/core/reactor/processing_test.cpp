// The processing of watch events: causes, handlers, progress, results and finalizers,
// checked on the patches that would be sent to the API server; and the application of a
// processing outcome through the PatchApplier interface: order, status split, conflicts of the
// finalizer guard, and wake-ups for delayed handlers.
#include <gtest/gtest.h>

#include <algorithm>

#include "unit/core/support/harness.hpp"

namespace {

using kopf::json;
using kopf::testing::Harness;

const std::string T0 = "2026-11-26T23:21:38.929772+00:00";
const std::string DIFFBASE = "kopf.zalando.org/last-handled-configuration";
const std::string FINALIZER = "kopf.zalando.org/KopfFinalizerMarker";

json ok(kopf::Context&) {
    return json();
}

TEST(Creation, RunsTheCreateHandlerAndDeliversItsResultToStatus) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "create_fn"}, [](kopf::Context&) {
        return json{{"message", "hello world"}};
    });
    auto out = h.process("ADDED");
    EXPECT_EQ(out.patch.merge["status"], (json{{"create_fn", {{"message", "hello world"}}}}));
    EXPECT_TRUE(h.logged("Handler 'create_fn' succeeded."));
    EXPECT_TRUE(h.logged("Creation is processed: 1 succeeded; 0 failed."));
}

TEST(Creation, WritesTheDiffBaseWhenAllHandlersAreDone) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "create_fn"}, ok);
    auto out = h.process("ADDED");
    EXPECT_EQ(out.patch.merge["metadata"]["annotations"],
              (json{{DIFFBASE,
                     "{\"spec\":{\"field\":\"value\",\"items\":[\"item1\",\"item2\"]},"
                     "\"metadata\":{\"labels\":{\"somelabel\":\"somevalue\"}}}\n"}}));
}

TEST(Creation, ScalarResultsReplaceTheStatusField) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "create_retry"},
                     [](kopf::Context&) { return 42; });
    EXPECT_EQ(h.process("ADDED").patch.merge["status"], (json{{"create_retry", 42}}));
}

TEST(Creation, AsapRunsOneHandlerPerCycleAndRecordsThePendingOnes) {
    Harness h;
    int a = 0, b = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_a"}, [&](kopf::Context&) { ++a; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_b"}, [&](kopf::Context&) { ++b; });
    auto out = h.step("ADDED");
    EXPECT_EQ(a + b, 1);
    auto& ann = out.patch.merge["metadata"]["annotations"];
    EXPECT_EQ(ann["kopf.zalando.org/fn_a"],
              "{\"started\":\"" + T0 + "\",\"stopped\":\"" + T0 +
                  "\",\"purpose\":\"create\",\"retries\":1,\"success\":true,\"failure\":false}");
    EXPECT_EQ(ann["kopf.zalando.org/fn_b"],
              "{\"started\":\"" + T0 +
                  "\",\"purpose\":\"create\",\"retries\":0,\"success\":false,\"failure\":false}");
    EXPECT_FALSE(ann.contains(DIFFBASE));
    EXPECT_TRUE(h.logged("Creation is in progress:"));
}

TEST(Creation, TheSecondCyclePurgesProgressAndStoresTheDiffBase) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_a"}, ok);
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_b"}, ok);
    h.step("ADDED");
    auto out = h.step();
    auto& ann = out.patch.merge["metadata"]["annotations"];
    EXPECT_TRUE(ann["kopf.zalando.org/fn_a"].is_null());
    EXPECT_TRUE(ann["kopf.zalando.org/fn_b"].is_null());
    EXPECT_TRUE(ann[DIFFBASE].is_string());
    EXPECT_TRUE(h.logged("Creation is processed: 2 succeeded; 0 failed."));
    EXPECT_FALSE(h.body["metadata"]["annotations"].contains("kopf.zalando.org/fn_a"));
}

TEST(Creation, AnAlreadySucceededHandlerNeverRunsAgain) {
    Harness h;
    int a = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_a"}, [&](kopf::Context&) { ++a; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_b"}, ok);
    h.step("ADDED");
    h.step();
    h.step();
    EXPECT_EQ(a, 1);
}

TEST(Continuation, ProgressWrittenByKopfIsContinued) {
    Harness h;
    int a = 0, b = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "create_fn_1"},
                     [&](kopf::Context&) { ++a; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "create_fn_2"}, [&](kopf::Context& c) {
        ++b;
        EXPECT_EQ(c.retry, 0);
    });
    h.body["metadata"]["annotations"]["kopf.zalando.org/create_fn_1"] =
        R"({"started":"2020-02-14T16:58:25.396364","stopped":"2020-02-14T16:58:25.401844","purpose":"create","retries":1,"success":true,"failure":false})";
    h.body["metadata"]["annotations"]["kopf.zalando.org/create_fn_2"] =
        R"({"started":"2020-02-14T16:58:25.396421+00:00","purpose":"create","retries":0,"success":false,"failure":false})";
    auto out = h.step();
    EXPECT_EQ(a, 0);
    EXPECT_EQ(b, 1);
    EXPECT_TRUE(
        out.patch.merge["metadata"]["annotations"]["kopf.zalando.org/create_fn_1"].is_null());
    EXPECT_TRUE(out.patch.merge["metadata"]["annotations"][DIFFBASE].is_string());
}

TEST(Continuation, LegacyStatusProgressIsReadAndPurged) {
    Harness h;
    int a = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn_a"}, [&](kopf::Context&) { ++a; });
    h.body["status"]["kopf"]["progress"]["fn_a"] = {
        {"started", T0}, {"retries", 1}, {"success", true}};
    auto out = h.step();
    EXPECT_EQ(a, 0);
    EXPECT_TRUE(out.patch.merge["status"]["kopf"]["progress"]["fn_a"].is_null());
}

TEST(Finalizers, AreAddedWithAGuardedJsonPatchWhenADeleteHandlerExists) {
    Harness h;
    int created = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, [&](kopf::Context&) { ++created; });
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, ok);
    auto out = h.process("ADDED");
    EXPECT_EQ(out.json_patch(),
              json::parse(R"([{"op":"test","path":"/metadata/resourceVersion","value":"100"},
                              {"op":"add","path":"/metadata/finalizers","value":["kopf.zalando.org/KopfFinalizerMarker"]}])"));
    EXPECT_EQ(created, 0);  // a finalizer-changing cycle runs no handlers
    EXPECT_TRUE(out.patch.merge.empty());
    EXPECT_TRUE(h.logged("Adding the finalizer, thus preventing the actual deletion."));
}

TEST(Finalizers, AreAppendedToForeignFinalizers) {
    Harness h;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, ok);
    h.body["metadata"]["finalizers"] = {"other/finalizer"};
    auto out = h.process("ADDED");
    EXPECT_EQ(
        out.json_patch()[1],
        json::parse(
            R"({"op":"add","path":"/metadata/finalizers/1","value":"kopf.zalando.org/KopfFinalizerMarker"})"));
}

TEST(Finalizers, AreNotAddedForOptionalDeleteHandlers) {
    Harness h;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d", .optional = true}, ok);
    EXPECT_TRUE(h.process("ADDED").json_patch().empty());
}

TEST(Finalizers, AreRemovedWhenNoHandlerNeedsThem) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, ok);
    h.body["metadata"]["finalizers"] = {FINALIZER};
    auto out = h.process("ADDED");
    EXPECT_EQ(out.json_patch()[1], json::parse(R"({"op":"remove","path":"/metadata/finalizers"})"));
    EXPECT_TRUE(h.logged("Removing the finalizer, as there are no handlers requiring it."));
}

TEST(Deletion, RunsDeleteHandlersThenReleasesTheObject) {
    Harness h;
    int deleted = 0;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "delete_fn"}, [&](kopf::Context& c) {
        ++deleted;
        EXPECT_EQ(c.reason, "delete");
    });
    h.body["metadata"]["finalizers"] = {FINALIZER};
    h.body["metadata"]["deletionTimestamp"] = "2026-11-26T23:21:38Z";
    auto out = h.process();
    EXPECT_EQ(deleted, 1);
    EXPECT_EQ(out.json_patch(),
              json::parse(R"([{"op":"test","path":"/metadata/resourceVersion","value":"100"},
                                                {"op":"remove","path":"/metadata/finalizers"}])"));
    EXPECT_TRUE(h.logged("Deletion is processed: 1 succeeded; 0 failed."));
    EXPECT_TRUE(h.logged("Removing the finalizer, thus allowing the actual deletion."));
}

TEST(Deletion, KeepsTheFinalizerWhileADeleteHandlerIsRetrying) {
    Harness h;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "delete_fn"},
                      [](kopf::Context&) -> json { throw kopf::TemporaryError("later", 5); });
    h.body["metadata"]["finalizers"] = {FINALIZER};
    h.body["metadata"]["deletionTimestamp"] = "2026-11-26T23:21:38Z";
    auto out = h.process();
    EXPECT_TRUE(out.json_patch().empty());
    EXPECT_EQ(out.delays, std::vector<double>{5});
}

TEST(Deletion, FreeObjectsWithoutOurFinalizerAreIgnored) {
    Harness h;
    int deleted = 0;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, [&](kopf::Context&) { ++deleted; });
    h.body["metadata"]["deletionTimestamp"] = "2026-11-26T23:21:38Z";
    auto out = h.process();
    EXPECT_EQ(deleted, 0);
    EXPECT_TRUE(out.patch.empty());
}

TEST(Deletion, GoneObjectsAreForgottenWithoutHandling) {
    Harness h;
    int called = 0;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d", .optional = true},
                      [&](kopf::Context&) { ++called; });
    auto out = h.process("DELETED");
    EXPECT_TRUE(out.gone);
    EXPECT_EQ(called, 0);
    EXPECT_EQ(h.memories.size(), 0u);
}

struct Handled : ::testing::Test {
    Harness h;
    void handle_creation() {
        kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, ok);
        h.step("ADDED");
    }
};

TEST_F(Handled, UpdatesGetTheDiffOfTheEssence) {
    kopf::Diff seen;
    kopf::on::update(h.registry, "kopfexamples", {.id = "u"}, [&](kopf::Context& c) {
        seen = c.diff;
        EXPECT_EQ(c.old["spec"]["field"], "value");
        EXPECT_EQ(c.new_["spec"]["field"], "other");
    });
    handle_creation();
    h.body["spec"]["field"] = "other";
    h.step();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].op(), "change");
    EXPECT_EQ(seen[0].field, (std::vector<std::string>{"spec", "field"}));
    EXPECT_TRUE(h.logged("Updating is processed: 1 succeeded; 0 failed."));
}

TEST_F(Handled, WhenFiltersSeeTheEssencesAndDiffOfTheCause) {
    std::vector<std::string> filtered;
    int updated = 0;
    kopf::on::update(h.registry, "kopfexamples",
                     {.id = "u",
                      .when =
                          [&](const kopf::Context& c) {
                              if (c.reason != "update") return false;
                              filtered.push_back(c.old["spec"]["field"].get<std::string>() + "->" +
                                                 c.new_["spec"]["field"].get<std::string>());
                              return c.diff.size() == 1;
                          }},
                     [&](kopf::Context&) { ++updated; });
    handle_creation();
    h.body["spec"]["field"] = "other";
    h.step();
    EXPECT_EQ(updated, 1);
    ASSERT_FALSE(filtered.empty());
    EXPECT_EQ(filtered.front(), "value->other");
}

TEST_F(Handled, StatusOnlyChangesAreNoop) {
    int updated = 0;
    kopf::on::update(h.registry, "kopfexamples", {.id = "u"}, [&](kopf::Context&) { ++updated; });
    handle_creation();
    h.body["status"]["x"] = 1;
    auto out = h.step();
    EXPECT_EQ(updated, 0);
    EXPECT_TRUE(out.patch.empty());
    EXPECT_TRUE(
        h.logged("Something has changed, but we are not interested (the essence is the same)."));
}

// An object is settled when its last event needed nothing (no cause but a no-op, no patch, no
// delay, no deletion): only then may the runtime give an event that changes none of what that
// depended on to the daemons' views unprocessed (Orchestration::take_unparsed).
TEST_F(Handled, AnObjectIsSettledOnlyAfterAnEventThatNeededNothing) {
    const auto settled = [this] {
        return h.memories.recall(json{{"object", h.body}}, h.memobase).settled;
    };
    int failures = 0;
    kopf::on::update(h.registry, "kopfexamples", {.id = "u"}, [&](kopf::Context& c) -> json {
        if (c.spec.value("field", "") == "failing" && failures++ == 0)
            throw kopf::TemporaryError("later", 5);
        return json();
    });
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, ok);
    handle_creation();  // the finalizer added: a patch
    EXPECT_FALSE(settled());
    h.step();  // the creation handled: the diff base stored
    EXPECT_FALSE(settled());
    h.step();  // its echo: nothing to do
    EXPECT_TRUE(settled());
    h.body["status"]["x"] = 1;
    EXPECT_TRUE(h.step().patch.empty());
    EXPECT_TRUE(settled());

    h.body["spec"]["field"] = "other";
    EXPECT_FALSE(h.step().patch.empty());  // updated
    EXPECT_FALSE(settled());
    h.step();
    EXPECT_TRUE(settled());

    h.body["spec"]["field"] = "failing";  // retried in 5 s: a delay
    h.step();
    EXPECT_FALSE(settled());
    h.body["status"]["x"] = 2;  // while it waits, a status change needs the processing
    EXPECT_FALSE(h.step().delays.empty());
    EXPECT_FALSE(settled());
    h.advance(6);
    h.step();
    h.step();
    EXPECT_TRUE(settled());

    // A processing that fails (a diff base that is not JSON) leaves the object unsettled.
    const json diffbase = h.body["metadata"]["annotations"][DIFFBASE];
    h.body["metadata"]["annotations"][DIFFBASE] = "not JSON";
    EXPECT_ANY_THROW(h.process());
    EXPECT_FALSE(settled());
    h.body["metadata"]["annotations"][DIFFBASE] = diffbase;
    h.step();
    EXPECT_TRUE(settled());

    h.body["metadata"]["deletionTimestamp"] = T0;
    h.step();
    EXPECT_FALSE(settled());
}

TEST_F(Handled, FieldHandlersFireOnlyWhenTheirFieldChanges) {
    std::vector<std::pair<json, json>> calls;
    kopf::on::field(h.registry, "kopfexamples", {.id = "field_fn", .field = "spec.field"},
                    [&](kopf::Context& c) { calls.emplace_back(c.old, c.new_); });
    handle_creation();
    ASSERT_EQ(calls.size(), 1u);  // on creation too: null -> "value"
    EXPECT_TRUE(calls[0].first.is_null());
    h.body["spec"]["items"] = {"x"};
    h.step();
    EXPECT_EQ(calls.size(), 1u);
    h.body["spec"]["field"] = "new";
    h.step();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[1], (std::pair<json, json>{"value", "new"}));
}

TEST_F(Handled, FieldHandlerIdsCarryTheField) {
    kopf::on::field(h.registry, "kopfexamples", {.id = "field_fn", .field = "spec.field"},
                    [](kopf::Context&) -> json { throw kopf::TemporaryError("wait", 1); });
    kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, ok);
    h.lifecycle = kopf::actions::lifecycles::all_at_once;
    auto out = h.step("ADDED");
    EXPECT_TRUE(out.patch.merge["metadata"]["annotations"].contains(
        "kopf.zalando.org/field_fn.spec.field"));
}

TEST_F(Handled, UpdateOldNewFiltersSelectTransitions) {
    int calls = 0;
    kopf::on::update(h.registry, "kopfexamples",
                     {.id = "u", .field = "spec.field", .old = "value", .new_ = "ready"},
                     [&](kopf::Context&) { ++calls; });
    handle_creation();
    h.body["spec"]["field"] = "other";
    h.step();
    EXPECT_EQ(calls, 0);
    h.body["spec"]["field"] = "value";
    h.step();
    h.body["spec"]["field"] = "ready";
    h.step();
    EXPECT_EQ(calls, 1);
}

TEST(Resuming, ListedObjectsWithADiffBaseAreResumed) {
    Harness h;
    int resumed = 0;
    kopf::on::resume(h.registry, "kopfexamples", {.id = "r"}, [&](kopf::Context& c) {
        ++resumed;
        EXPECT_EQ(c.reason, "resume");
    });
    kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, ok);
    h.body["metadata"]["annotations"][DIFFBASE] =
        "{\"spec\":{\"field\":\"value\",\"items\":[\"item1\",\"item2\"]},\"metadata\":{\"labels\":{"
        "\"somelabel\":\"somevalue\"}}}\n";
    h.step("");
    EXPECT_EQ(resumed, 1);
    h.step();
    EXPECT_EQ(resumed, 1);  // not again once fully handled
}

TEST(Resuming, ResumeHandlersAreMixedIntoCreation) {
    Harness h;
    int resumed = 0, created = 0;
    kopf::on::resume(h.registry, "kopfexamples", {.id = "r"}, [&](kopf::Context&) { ++resumed; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, [&](kopf::Context&) { ++created; });
    h.step("");
    h.step();
    EXPECT_EQ(resumed, 1);
    EXPECT_EQ(created, 1);
}

TEST(Resuming, ResumeHandlersSkipDeletedObjectsUnlessAsked) {
    Harness h;
    int plain = 0, deleted = 0;
    kopf::on::resume(h.registry, "kopfexamples", {.id = "r1"}, [&](kopf::Context&) { ++plain; });
    kopf::on::resume(h.registry, "kopfexamples", {.id = "r2", .deleted = true},
                     [&](kopf::Context&) { ++deleted; });
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, ok);
    h.body["metadata"]["finalizers"] = {FINALIZER};
    h.body["metadata"]["deletionTimestamp"] = "2026-11-26T23:21:38Z";
    h.lifecycle = kopf::actions::lifecycles::all_at_once;
    h.process("");
    EXPECT_EQ(plain, 0);
    EXPECT_EQ(deleted, 1);
}

TEST(Errors, TemporaryErrorsAreRetriedAfterTheirDelay) {
    Harness h;
    std::vector<int> retries;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [&](kopf::Context& c) -> json {
        retries.push_back(c.retry);
        if (c.retry == 0) throw kopf::TemporaryError("not yet", 2);
        return json();
    });
    auto first = h.step("ADDED");
    EXPECT_EQ(first.delays, std::vector<double>{2});
    EXPECT_EQ(first.patch.merge["metadata"]["annotations"]["kopf.zalando.org/fn"],
              "{\"started\":\"" + T0 +
                  "\",\"delayed\":\"2026-11-26T23:21:40.929772+00:00\",\"purpose\":\"create\","
                  "\"retries\":1,\"success\":false,\"failure\":false,\"message\":\"not yet\"}");
    EXPECT_TRUE(h.logged("Handler 'fn' failed temporarily: not yet"));
    auto early = h.step();  // a new event before the delay: the handler sleeps
    EXPECT_EQ(retries.size(), 1u);
    EXPECT_EQ(early.delays, std::vector<double>{2});
    h.advance(2);
    h.step();
    EXPECT_EQ(retries, (std::vector<int>{0, 1}));
}

TEST(Errors, PermanentErrorsFailTheHandlerForGood) {
    Harness h;
    int calls = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [&](kopf::Context&) -> json {
        ++calls;
        throw kopf::PermanentError("broken");
    });
    auto out = h.step("ADDED");
    EXPECT_TRUE(h.logged("Handler 'fn' failed permanently: broken"));
    EXPECT_TRUE(h.logged("Creation is processed: 0 succeeded; 1 failed."));
    EXPECT_TRUE(out.delays.empty());
    EXPECT_TRUE(out.patch.merge["metadata"]["annotations"][DIFFBASE].is_string());
    h.step();
    EXPECT_EQ(calls, 1);
}

TEST(Errors, ArbitraryExceptionsRetryAfterTheDefaultBackoff) {
    Harness h;
    h.settings.execution.default_backoff = 7;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"},
                     [](kopf::Context&) -> json { throw std::runtime_error("boom"); });
    auto out = h.process("ADDED");
    EXPECT_EQ(out.delays, std::vector<double>{7});
    EXPECT_TRUE(
        h.logged("Handler 'fn' failed with an exception and will try again in 7 seconds: boom"));
}

TEST(Errors, PerHandlerBackoffOverridesTheDefault) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .backoff = 3},
                     [](kopf::Context&) -> json { throw std::runtime_error("boom"); });
    EXPECT_EQ(h.process("ADDED").delays, std::vector<double>{3});
}

TEST(Errors, IgnoredModeTreatsExceptionsAsSuccessWithoutResult) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .errors = kopf::IGNORED},
                     [](kopf::Context&) -> json { throw std::runtime_error("boom"); });
    auto out = h.process("ADDED");
    EXPECT_TRUE(h.logged("Creation is processed: 1 succeeded; 0 failed."));
    EXPECT_FALSE(out.patch.merge.contains("status"));
}

TEST(Errors, PermanentModeFailsOnTheFirstException) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .errors = kopf::PERMANENT},
                     [](kopf::Context&) -> json { throw std::runtime_error("boom"); });
    h.process("ADDED");
    EXPECT_TRUE(h.logged("Handler 'fn' failed with an exception and will stop now: boom"));
}

TEST(Errors, RetriesLimitTheNumberOfAttempts) {
    Harness h;
    int calls = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .retries = 2},
                     [&](kopf::Context&) -> json {
                         ++calls;
                         throw kopf::TemporaryError("again", 1);
                     });
    h.step("ADDED");
    h.advance(1);
    h.step();
    h.advance(1);
    h.step();
    EXPECT_EQ(calls, 2);
    EXPECT_TRUE(h.logged("Handler 'fn' failed temporarily but will exceed 2 retries: again"));
}

TEST(Errors, TimeoutsStopRetriesThatWouldExceedThem) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .timeout = 10},
                     [](kopf::Context&) -> json { throw kopf::TemporaryError("slow", 20); });
    auto out = h.process("ADDED");
    EXPECT_TRUE(out.delays.empty());
    EXPECT_TRUE(
        h.logged("Handler 'fn' failed temporarily but will time out after 10 seconds: slow"));
}

TEST(Errors, HandlersPastTheirTimeoutAreNotCalled) {
    Harness h;
    int calls = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .timeout = 10},
                     [&](kopf::Context&) -> json {
                         ++calls;
                         throw kopf::TemporaryError("slow", 5);
                     });
    h.step("ADDED");
    h.advance(30);
    h.step();
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(h.logged("Handler 'fn' has timed out after 0:00:30."));
}

// Kopf's docs: a coroutine still running at its timeout is interrupted (asyncio.TimeoutError
// there, kopf::CancelledError here) and fails for good.
TEST(Errors, ACoroutineStillRunningAtItsTimeoutIsCancelledAndFailsForGood) {
    Harness h;
    int cancelled = 0;
    int finished = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .timeout = 10},
                     [&](kopf::Context&) -> kopf::Task<json> {
                         try {
                             co_await kopf::sleep(100);
                         } catch (const kopf::CancelledError&) {
                             ++cancelled;
                             throw;
                         }
                         ++finished;
                         co_return json{{"finished", true}};
                     });
    auto out = h.step("ADDED");
    EXPECT_EQ(cancelled, 1);
    EXPECT_EQ(finished, 0);
    EXPECT_TRUE(out.delays.empty()) << "a timed-out handler is not retried";
    EXPECT_TRUE(h.logged("Handler 'fn' has timed out after ")) << h.lines.size();
    EXPECT_FALSE(h.body["status"].contains("fn"));
}

// Its later awaits are interrupted too: a handler that catches the cancellation and sleeps
// again does not sleep.
TEST(Errors, ACancelledCoroutineCannotSleepAgain) {
    Harness h;
    int woke = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .timeout = 10},
                     [&](kopf::Context&) -> kopf::Task<json> {
                         try {
                             co_await kopf::sleep(100);
                         } catch (const kopf::CancelledError&) {
                         }
                         co_await kopf::sleep(100);
                         ++woke;
                         co_return json{};
                     });
    auto out = h.step("ADDED");
    EXPECT_EQ(woke, 0);
    EXPECT_TRUE(out.delays.empty());
    EXPECT_TRUE(h.logged("Handler 'fn' has timed out after "));
}

TEST(SubHandlers, RunAsPersistedChildrenOfTheirParent) {
    Harness h;
    std::map<std::string, int> calls;
    kopf::on::create(h.registry, "kopfexamples", {.id = "create_with_subs"}, [&](kopf::Context& c) {
        ++calls["parent"];
        for (std::string item : {"item1", "item2"}) {
            kopf::subhandler(c, {.id = item}, [&calls, item](kopf::Context&) { ++calls[item]; });
        }
    });
    auto first = h.step("ADDED");
    auto& ann = first.patch.merge["metadata"]["annotations"];
    EXPECT_TRUE(ann.contains("kopf.zalando.org/create_with_subs.item1"));
    auto parent = json::parse(ann["kopf.zalando.org/create_with_subs"].get<std::string>());
    EXPECT_EQ(parent["message"], "None");
    EXPECT_EQ(parent["subrefs"], (json{"create_with_subs/item1", "create_with_subs/item2"}));
    auto second = h.step();
    EXPECT_EQ(calls["item1"], 1);
    EXPECT_EQ(calls["item2"], 1);
    EXPECT_EQ(calls["parent"], 2);
    auto& ann2 = second.patch.merge["metadata"]["annotations"];
    EXPECT_TRUE(ann2["kopf.zalando.org/create_with_subs.item1"].is_null());
    EXPECT_TRUE(ann2["kopf.zalando.org/create_with_subs"].is_null());
    EXPECT_TRUE(ann2[DIFFBASE].is_string());
}

TEST(SubHandlers, ExecuteRunsTheFunctionsInPlace) {
    Harness h;
    auto calls = std::make_shared<std::vector<std::string>>();
    kopf::on::create(h.registry, "kopfexamples", {.id = "p"},
                     [calls](kopf::Context& c) -> kopf::Task<json> {
                         calls->push_back("before");
                         std::vector<kopf::SubhandlerFn> children = {
                             {"a", [calls](kopf::Context&) { calls->push_back("a"); }},
                             {"b", [calls](kopf::Context& ctx) -> kopf::Task<json> {
                                  calls->push_back("b");
                                  co_return json{{"child", ctx.name}};
                              }}};
                         co_await kopf::execute(c, children);
                         calls->push_back("after");
                         co_return json{{"children", "done"}};
                     });
    // Kopf's default lifecycle (asap) runs one sub-handler per cycle: the parent is re-entered.
    h.step("ADDED");
    EXPECT_EQ(*calls, (std::vector<std::string>{"before", "a"}));
    auto out = h.step("MODIFIED");
    EXPECT_EQ(*calls, (std::vector<std::string>{"before", "a", "before", "b", "after"}));
    EXPECT_EQ(out.patch.merge["status"]["p"], (json{{"children", "done"}}));
    EXPECT_EQ(h.body["status"]["p/b"]["child"], h.body["metadata"]["name"]);
    EXPECT_TRUE(out.patch.merge["metadata"]["annotations"][DIFFBASE].is_string());
}

// The functions that kopf::execute() runs in place belong to their parent's invocation: the
// parent's timeout interrupts them too.
TEST(SubHandlers, ExecuteInATimedOutParentIsInterruptedWithIt) {
    Harness h;
    auto calls = std::make_shared<std::vector<std::string>>();
    kopf::on::create(h.registry, "kopfexamples", {.id = "p", .timeout = 10},
                     [calls](kopf::Context& c) -> kopf::Task<json> {
                         std::vector<kopf::SubhandlerFn> children = {
                             {"slow", [calls](kopf::Context&) -> kopf::Task<json> {
                                  co_await kopf::sleep(100);
                                  calls->push_back("slept");
                                  co_return json{};
                              }}};
                         co_await kopf::execute(c, children);
                         calls->push_back("after");
                         co_return json{};
                     });
    auto out = h.step("ADDED");
    EXPECT_TRUE(calls->empty()) << calls->size();
    EXPECT_TRUE(out.delays.empty());
    EXPECT_TRUE(h.logged("Handler 'p' has timed out after "));
}

// As Kopf: while a sub-handler is not done, execute() leaves the parent, which is retried; the
// sub-handlers that succeeded do not run again, and all progress is purged at the end.
TEST(SubHandlers, ExecuteLeavesTheParentUntilEveryFunctionIsDone) {
    Harness h;
    auto calls = std::make_shared<std::map<std::string, int>>();
    kopf::on::create(h.registry, "kopfexamples", {.id = "p"},
                     [calls](kopf::Context& c) -> kopf::Task<void> {
                         ++(*calls)["parent"];
                         std::vector<kopf::SubhandlerFn> children = {
                             {"fine", [calls](kopf::Context&) { ++(*calls)["fine"]; }},
                             {"flaky", [calls](kopf::Context& ctx) {
                                  ++(*calls)["flaky"];
                                  if (ctx.retry == 0) throw kopf::TemporaryError("not yet", 0);
                              }}};
                         co_await kopf::execute(c, children);
                         ++(*calls)["after"];
                     });
    h.lifecycle = kopf::actions::lifecycles::all_at_once;
    auto first = h.step("ADDED");
    EXPECT_EQ((*calls)["after"], 0);
    EXPECT_FALSE(first.patch.merge["metadata"]["annotations"]["kopf.zalando.org/p"].is_null());
    auto second = h.step("MODIFIED");
    EXPECT_EQ((*calls)["parent"], 2);
    EXPECT_EQ((*calls)["fine"], 1);
    EXPECT_EQ((*calls)["flaky"], 2);
    EXPECT_EQ((*calls)["after"], 1);
    auto& annotations = second.patch.merge["metadata"]["annotations"];
    EXPECT_TRUE(annotations["kopf.zalando.org/p.fine"].is_null());
    EXPECT_TRUE(annotations["kopf.zalando.org/p.flaky"].is_null());
    EXPECT_TRUE(annotations["kopf.zalando.org/p"].is_null());
    EXPECT_TRUE(annotations[DIFFBASE].is_string());
}

TEST(SubHandlers, ExecuteOutsideAChangingHandlerIsRefused) {
    Harness h;
    auto refusal = std::make_shared<std::string>();
    kopf::on::event(h.registry, "kopfexamples", {.id = "watcher"},
                    [refusal](kopf::Context& c) -> kopf::Task<void> {
                        std::vector<kopf::SubhandlerFn> children = {{"a", [](kopf::Context&) {}}};
                        try {
                            co_await kopf::execute(c, children);
                        } catch (const std::logic_error& e) {
                            *refusal = e.what();
                        }
                    });
    h.step("ADDED");
    EXPECT_NE(refusal->find("only inside resource-changing handlers"), std::string::npos)
        << *refusal;
}

TEST(Lifecycles, AllAtOnceRunsEveryHandlerInOneCycle) {
    Harness h;
    h.lifecycle = kopf::actions::lifecycles::all_at_once;
    int calls = 0;
    for (auto id : {"a", "b", "c"})
        kopf::on::create(h.registry, "kopfexamples", {.id = id}, [&](kopf::Context&) { ++calls; });
    h.process("ADDED");
    EXPECT_EQ(calls, 3);
}

TEST(Lifecycles, OneByOneKeepsTheRegistrationOrder) {
    Harness h;
    h.lifecycle = kopf::actions::lifecycles::one_by_one;
    std::vector<std::string> order;
    kopf::on::create(h.registry, "kopfexamples", {.id = "a"}, [&](kopf::Context&) -> json {
        order.push_back("a");
        throw kopf::TemporaryError("x", 0);
    });
    kopf::on::create(h.registry, "kopfexamples", {.id = "b"},
                     [&](kopf::Context&) { order.push_back("b"); });
    h.step("ADDED");
    h.step();
    EXPECT_EQ(order, (std::vector<std::string>{"a", "a"}));
}

TEST(Lifecycles, AsapPrefersTheHandlerWithFewerRetries) {
    Harness h;
    std::vector<std::string> order;
    kopf::on::create(h.registry, "kopfexamples", {.id = "a"}, [&](kopf::Context&) -> json {
        order.push_back("a");
        throw kopf::TemporaryError("x", 0);
    });
    kopf::on::create(h.registry, "kopfexamples", {.id = "b"},
                     [&](kopf::Context&) { order.push_back("b"); });
    h.step("ADDED");
    h.step();
    EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
}

TEST(Lifecycles, ShuffledAndRandomizedRunTheirShare) {
    Harness h;
    h.lifecycle = kopf::actions::lifecycles::shuffled;
    int calls = 0;
    for (auto id : {"a", "b"})
        kopf::on::create(h.registry, "kopfexamples", {.id = id}, [&](kopf::Context&) { ++calls; });
    h.process("ADDED");
    EXPECT_EQ(calls, 2);
    Harness r;
    r.lifecycle = kopf::actions::lifecycles::randomized;
    int rcalls = 0;
    for (auto id : {"a", "b"})
        kopf::on::create(r.registry, "kopfexamples", {.id = id}, [&](kopf::Context&) { ++rcalls; });
    r.process("ADDED");
    EXPECT_EQ(rcalls, 1);
}

TEST(Filters, MismatchingLabelsMakeTheOperatorBlindToTheObject) {
    Harness h;
    int calls = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .labels = {{"somelabel", "other"}}},
                     [&](kopf::Context&) { ++calls; });
    auto out = h.process("ADDED");
    EXPECT_EQ(calls, 0);
    EXPECT_TRUE(out.patch.empty());
}

TEST(Filters, PresentAbsentAndCallbacksSelectObjects) {
    Harness h;
    std::vector<std::string> called;
    auto record = [&called](std::string id) {
        return [&called, id](kopf::Context&) { called.push_back(id); };
    };
    h.lifecycle = kopf::actions::lifecycles::all_at_once;
    kopf::on::create(h.registry, "kopfexamples",
                     {.id = "present", .labels = {{"somelabel", kopf::PRESENT}}},
                     record("present"));
    kopf::on::create(h.registry, "kopfexamples",
                     {.id = "absent", .labels = {{"somelabel", kopf::ABSENT}}}, record("absent"));
    kopf::on::create(
        h.registry, "kopfexamples",
        {.id = "cb", .labels = {{"somelabel", [](const json& v) { return v == "somevalue"; }}}},
        record("cb"));
    kopf::on::create(h.registry, "kopfexamples",
                     {.id = "when", .when = kopf::not_([](const kopf::Context& c) {
                                        return c.name == "kopf-example-1";
                                    })},
                     record("when"));
    kopf::on::create(h.registry, "kopfexamples",
                     {.id = "value", .field = "spec.field", .value = "value"}, record("value"));
    kopf::on::create(h.registry, "kopfexamples",
                     {.id = "nope", .field = "spec.field", .value = "other"}, record("nope"));
    h.process("ADDED");
    EXPECT_EQ(called, (std::vector<std::string>{"present", "cb", "value"}));
}

TEST(Filters, CombinatorsCombineCallbacks) {
    auto yes = [](const kopf::Context&) { return true; };
    auto no = [](const kopf::Context&) { return false; };
    Harness h;
    int calls = 0;
    h.lifecycle = kopf::actions::lifecycles::all_at_once;
    kopf::on::create(h.registry, "kopfexamples", {.id = "a", .when = kopf::all_(yes, yes)},
                     [&](kopf::Context&) { ++calls; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "b", .when = kopf::any_(no, yes)},
                     [&](kopf::Context&) { ++calls; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "c", .when = kopf::none_(no, no)},
                     [&](kopf::Context&) { ++calls; });
    kopf::on::create(h.registry, "kopfexamples", {.id = "d", .when = kopf::all_(yes, no)},
                     [&](kopf::Context&) { ++calls; });
    h.process("ADDED");
    EXPECT_EQ(calls, 3);
}

TEST(Filters, OtherResourcesAreNotHandled) {
    Harness h;
    int calls = 0;
    kopf::on::create(h.registry, "pods", {.id = "fn"}, [&](kopf::Context&) { ++calls; });
    EXPECT_TRUE(h.process("ADDED").patch.empty());
    EXPECT_EQ(calls, 0);
}

TEST(Events, EventHandlersSeeEveryEventAndIgnoreErrors) {
    Harness h;
    std::vector<std::string> types;
    kopf::on::event(h.registry, "kopfexamples", {.id = "ev"}, [&](kopf::Context& c) -> json {
        types.push_back(c.type);
        throw std::runtime_error("ignored");
    });
    h.process("ADDED");
    h.process("MODIFIED");
    EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "MODIFIED"}));
    EXPECT_TRUE(h.logged("Handler 'ev' failed with an exception and will ignore it: ignored"));
}

TEST(Events, EventHandlerResultsAreDelivered) {
    Harness h;
    kopf::on::event(h.registry, "kopfexamples", {.id = "ev"}, [](kopf::Context&) {
        return json{{"seen", true}};
    });
    EXPECT_EQ(h.process("ADDED").patch.merge["status"]["ev"]["seen"], true);
}

TEST(Context, ExposesKopfsKeywordArguments) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn", .param = 5}, [](kopf::Context& c) {
        EXPECT_EQ(c.name, "kopf-example-1");
        EXPECT_EQ(c.namespace_, "default");
        EXPECT_EQ(c.uid, "uid-1");
        EXPECT_EQ(c.spec["field"], "value");
        EXPECT_EQ(c.labels["somelabel"], "somevalue");
        EXPECT_TRUE(c.status.empty());
        EXPECT_EQ(c.param, 5);
        EXPECT_EQ(c.reason, "create");
        EXPECT_EQ(c.resource.plural, "kopfexamples");
        EXPECT_EQ(c.settings.persistence.finalizer, FINALIZER);
        EXPECT_EQ(c.retry, 0);
    });
    h.process("ADDED");
}

TEST(Context, PatchEditsAndTransformationsReachTheObject) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context& c) {
        c.patch["spec"]["extra"] = 1;
        c.patch.transform([](json& b) { b["metadata"]["labels"]["added"] = "yes"; });
    });
    h.step("ADDED");
    EXPECT_EQ(h.body["spec"]["extra"], 1);
    EXPECT_EQ(h.body["metadata"]["labels"]["added"], "yes");
}

TEST(Memos, EachObjectGetsACopyOfTheOperatorMemoKeptAcrossEvents) {
    Harness h;
    h.memobase["greeting"] = "hi";
    std::vector<int> counts;
    kopf::on::event(h.registry, "kopfexamples", {.id = "ev"}, [&](kopf::Context& c) {
        EXPECT_EQ(c.memo["greeting"], "hi");
        int n = c.memo.values.value("n", 0) + 1;
        c.memo["n"] = n;
        counts.push_back(n);
    });
    h.process("ADDED");
    h.process("MODIFIED");
    EXPECT_EQ(counts, (std::vector<int>{1, 2}));
    EXPECT_FALSE(h.memobase.values.contains("n"));
}

struct CustomMemo : kopf::Memo {
    std::shared_ptr<int> shared = std::make_shared<int>(0);
    std::shared_ptr<kopf::Memo> copy() const override {
        return std::make_shared<CustomMemo>(*this);
    }
};

TEST(Memos, CustomMemoTypesAreShallowCopied) {
    Harness h;
    CustomMemo base;
    kopf::on::event(h.registry, "kopfexamples", {.id = "ev"},
                    [](kopf::Context& c) { ++*c.memo_as<CustomMemo>().shared; });
    json event = {{"type", "ADDED"}, {"object", h.body}};
    auto& memory = h.memories.recall(event, base);
    auto env = h.env();
    kopf::loop::run_sync(kopf::reactor::process_resource_event(env, h.resource, memory, event));
    EXPECT_EQ(*base.shared, 1);
}

TEST(Coroutines, AsyncHandlersCanSleepAndReturnResults) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"},
                     [](kopf::Context&) -> kopf::Task<json> {
                         co_await kopf::sleep(5);
                         co_return json{{"slept", true}};
                     });
    EXPECT_EQ(h.process("ADDED").patch.merge["status"]["fn"]["slept"], true);
}

TEST(Coroutines, AsyncHandlerErrorsFollowTheSameRules) {
    Harness h;
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"},
                     [](kopf::Context&) -> kopf::Task<json> {
                         co_await kopf::sleep(1);
                         throw kopf::TemporaryError("later", 9);
                     });
    EXPECT_EQ(h.process("ADDED").delays, std::vector<double>{9});
}

TEST(Processing, InvalidEventsAreRejectedWithAClearError) {
    Harness h;
    kopf::reactor::ResourceMemory memory;
    auto env = h.env();
    EXPECT_THROW(kopf::loop::run_sync(kopf::reactor::process_resource_event(
                     env, h.resource, memory, json{{"type", "ADDED"}})),
                 std::invalid_argument);
}

TEST(Processing, TouchPatchWritesTheDummyAnnotation) {
    Harness h;
    json patch = kopf::reactor::touch_patch(h.settings, h.body, h.clock);
    EXPECT_EQ(patch,
              (json{{"metadata", {{"annotations", {{"kopf.zalando.org/touch-dummy", T0}}}}}}));
}

TEST(Processing, StatusGoesToTheSubresourceWhenThereIsOne) {
    Harness h;
    h.resource.subresources = {"status"};
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context&) {
        return json{{"m", 1}};
    });
    auto out = h.process("ADDED");
    EXPECT_FALSE(out.body_merge_patch(h.resource).contains("status"));
    EXPECT_EQ(out.status_merge_patch(h.resource), (json{{"status", {{"fn", {{"m", 1}}}}}}));
}

// An in-memory API object that records the requests it receives.
struct RecordingApplier : kopf::reactor::PatchApplier {
    explicit RecordingApplier(json body) : object(std::move(body)) {}
    json object;
    bool conflict_on_json_patch = false;
    int conflicts_left = 0;  // the next JSON patches that conflict (someone wrote meanwhile)
    bool missing = false;    // every write answers 404
    std::vector<std::string> requests;
    int rv = 200;

    kopf::Task<kopf::reactor::PatchResult> merge_patch(const kopf::Resource&, const json&,
                                                       const json& patch, bool status) override {
        requests.push_back(std::string(status ? "merge /status " : "merge ") + patch.dump());
        if (missing) co_return kopf::reactor::PatchResult{false, false, std::nullopt, ""};
        object.merge_patch(patch);
        object["metadata"]["resourceVersion"] = std::to_string(++rv);
        co_return kopf::reactor::PatchResult{true, false, object["metadata"]["resourceVersion"],
                                             object.dump()};
    }
    kopf::Task<kopf::reactor::PatchResult> json_patch(const kopf::Resource&, const json&,
                                                      const json& ops, bool status) override {
        requests.push_back(std::string(status ? "json /status " : "json ") + ops.dump());
        if (conflict_on_json_patch || conflicts_left > 0) {
            --conflicts_left;
            // Someone else's write has moved the object on meanwhile.
            object["metadata"]["resourceVersion"] = std::to_string(++rv);
            co_return kopf::reactor::PatchResult{true, true, std::nullopt, ""};
        }
        if (ops[0]["op"] == "test" && ops[0]["value"] != object["metadata"]["resourceVersion"])
            co_return kopf::reactor::PatchResult{true, true, std::nullopt, ""};
        object = object.patch(ops);
        object["metadata"]["resourceVersion"] = std::to_string(++rv);
        co_return kopf::reactor::PatchResult{true, false, object["metadata"]["resourceVersion"],
                                             object.dump()};
    }
    kopf::Task<std::optional<json>> read(const kopf::Resource&, const json&) override {
        requests.push_back("get");
        if (missing) co_return std::nullopt;
        co_return object;
    }
};

kopf::reactor::ApplyResult apply(Harness& h, RecordingApplier& api,
                                 kopf::reactor::ProcessingOutcome& out) {
    json event = {{"type", "MODIFIED"}, {"object", h.body}};
    auto& memory = h.memories.recall(event, h.memobase);
    auto env = h.env();
    return kopf::loop::run_sync(kopf::reactor::apply_outcome(api, env, h.resource, memory, out));
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

// The body patch's version is announced before the status patch is sent (its echo is then ours,
// dropped unparsed), and reported as an earlier version; not when no status patch follows, nor
// when event handlers watch the resource (they see every event, our own writes' included).
TEST(Application, TheBodyPatchIsAnnouncedAsSupersededWhenTheStatusPatchFollows) {
    for (const std::string variant : {"status follows", "no subresource", "event handler"}) {
        Harness h;
        if (variant != "no subresource") h.resource.subresources = {"status"};
        kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context&) {
            return json{{"m", 1}};
        });
        if (variant == "event handler")
            kopf::on::event(h.registry, "kopfexamples", {.id = "ev"}, [](kopf::Context&) {});
        RecordingApplier api{h.body};
        auto out = h.process("ADDED");
        json event = {{"type", "MODIFIED"}, {"object", h.body}};
        auto& memory = h.memories.recall(event, h.memobase);
        auto env = h.env();
        std::vector<std::string> announced;
        std::size_t requests_when_announced = 0;
        auto result = kopf::loop::run_sync(kopf::reactor::apply_outcome(
            api, env, h.resource, memory, out, [&](const std::string& version) {
                announced.push_back(version);
                requests_when_announced = api.requests.size();
            }));
        if (variant == "status follows") {
            EXPECT_EQ(announced, std::vector<std::string>{"201"});
            EXPECT_EQ(requests_when_announced, 1u);  // before the status patch went out
            EXPECT_EQ(result.earlier_versions, std::vector<std::string>{"201"});
            EXPECT_EQ(result.resource_version, "202");
        } else {
            EXPECT_TRUE(announced.empty()) << variant;
        }
    }
}

// A timer patching its object every second moves it on between any event and the guarded
// patch made from it: the object is read again and the patch retried at once (a finalizer that
// waited for a fresher event never came under load).
TEST(Application, AGuardedPatchThatConflictsIsRetriedOnTheObjectReadAgain) {
    Harness h;
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, [](kopf::Context&) {});
    RecordingApplier api{h.body};
    api.conflicts_left = 2;
    auto out = h.process("ADDED");
    apply(h, api, out);
    const auto patches = std::count_if(api.requests.begin(), api.requests.end(),
                                       [](const auto& r) { return r.rfind("json ", 0) == 0; });
    EXPECT_EQ(patches, 3);
    EXPECT_EQ(std::count(api.requests.begin(), api.requests.end(), "get"), 2);
    // The last attempt was guarded by the version read last, and it landed.
    EXPECT_NE(api.requests.back().find(R"("value":"202")"), std::string::npos)
        << api.requests.back();
    EXPECT_EQ(api.object["metadata"]["finalizers"], json::array({FINALIZER}));
    h.body = api.object;  // the next event shows it: nothing is left to retry
    auto again = h.process();
    EXPECT_TRUE(again.json_patch().empty()) << again.json_patch();
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

// The guarded patch may have been applied although its answer was lost (a server that stopped
// after writing it): its retry then conflicts, and the next event already shows the finalizer.
// That event is consistent: its handlers run (waiting for yet another event left the object
// unhandled for good, as no more came).
TEST(Application, AFinalizerConflictWhoseChangeHasLandedDoesNotHoldTheHandlers) {
    Harness h;
    int created = 0;
    kopf::on::create(h.registry, "kopfexamples", {.id = "c"}, [&](kopf::Context&) { ++created; });
    kopf::on::delete_(h.registry, "kopfexamples", {.id = "d"}, [](kopf::Context&) {});
    RecordingApplier api{h.body};
    api.conflict_on_json_patch = true;
    auto out = h.process("ADDED");
    apply(h, api, out);
    h.body["metadata"]["finalizers"] = {FINALIZER};
    h.body["metadata"]["resourceVersion"] = "101";
    auto next = h.process();
    EXPECT_EQ(created, 1);
    EXPECT_TRUE(next.json_patch().empty()) << next.json_patch();
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

// A daemon's or timer's patch is written as the handlers' are (the status to /status with a
// status subresource, the rest to the object, nothing sent for what is not there), without
// processing's outcome around it.
TEST(Application, APatchAloneIsSplitBetweenTheObjectAndItsStatusSubresource) {
    struct Case {
        json merge;
        bool subresource;
        std::vector<std::string> requests;
    };
    const std::vector<Case> cases{
        {{{"status", {{"tick", 1}}}}, true, {R"(merge /status {"status":{"tick":1}})"}},
        {{{"status", {{"tick", 1}}}}, false, {R"(merge {"status":{"tick":1}})"}},
        {{{"metadata", {{"labels", {{"a", "b"}}}}}, {"status", {{"tick", 2}}}},
         true,
         {R"(merge {"metadata":{"labels":{"a":"b"}}})", R"(merge /status {"status":{"tick":2}})"}},
        {{{"spec", {{"x", 1}}}}, true, {R"(merge {"spec":{"x":1}})"}},
    };
    for (const auto& c : cases) {
        Harness h;
        if (c.subresource) h.resource.subresources = {"status"};
        RecordingApplier api{h.body};
        kopf::Patch patch;
        patch.merge = c.merge;
        std::vector<kopf::Patch::Fn> remaining;
        auto env = h.env();
        kopf::testing::RecordingLogger logger(&h.lines);
        auto result = kopf::loop::run_sync(
            kopf::reactor::apply_patch(api, env, h.resource, logger, h.body, patch, remaining));
        EXPECT_EQ(api.requests, c.requests) << c.merge;
        EXPECT_EQ(result.resource_version, std::to_string(200 + c.requests.size())) << c.merge;
        EXPECT_EQ(patch.merge, c.merge);  // the patch is read, not consumed
        EXPECT_FALSE(result.gone);
    }
}

// An object gone before its patch (HTTP 404): nothing more is written, and the outcome asks for
// nothing (no wake-up, not "applied").
TEST(Application, AGoneObjectEndsThePatchingAtItsFirstWrite) {
    Harness h;
    h.resource.subresources = {"status"};
    kopf::on::create(h.registry, "kopfexamples", {.id = "fn"}, [](kopf::Context&) {
        return json{{"m", 1}};
    });
    RecordingApplier api{h.body};
    api.missing = true;
    auto out = h.process("ADDED");
    auto result = apply(h, api, out);
    EXPECT_EQ(api.requests.size(), 1u);
    EXPECT_TRUE(result.gone);
    EXPECT_FALSE(result.resource_version);
    EXPECT_FALSE(result.applied);
    EXPECT_FALSE(result.wakeup_after);
}

// Bodies released after their event: null, every node freed (the sanitizer build checks), also
// those nested deeper than the levels freed directly.
TEST(Processing, ReleasedBodiesAreNullAndFreedAtAnyDepth) {
    json body = {{"metadata", {{"name", "a-name-longer-than-the-small-string-buffer"}}},
                 {"spec", {{"list", json::array({1, "two", json::object({{"three", 3}})})}}}};
    json* level = &body["spec"]["deep"];
    for (int i = 0; i < 200; ++i)
        level = &((*level)["level-" + std::to_string(i)] = json::array({json::object()}))[0];
    (*level)["leaf"] = "the last one, long enough to be allocated";
    kopf::reactor::release_body(body);
    EXPECT_TRUE(body.is_null());
    json scalar = "text";
    kopf::reactor::release_body(scalar);
    EXPECT_TRUE(scalar.is_null());
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
