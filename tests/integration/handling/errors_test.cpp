// Error handling end to end against the embedded API server: temporary errors retried after
// their delay with the progress visible on the object, permanent errors recorded and not
// retried, the retries= and timeout= limits, and API faults while the operator patches.
#include <algorithm>
#include <string>
#include <thread>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool handled(const std::optional<json>& body) {
    return body && body->value("/metadata/annotations"_json_pointer, json::object())
                       .contains("kopf.zalando.org/last-handled-configuration");
}

// Handled, with the result at `pointer` (results are patched to /status after the diff base).
bool handled_with(const std::optional<json>& body, const std::string& pointer, const json& value) {
    return handled(body) && body->value(json::json_pointer(pointer), json()) == value;
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

class HandlingErrors : public HandlingTest {};

TEST_F(HandlingErrors, TemporaryErrorIsRetriedAfterItsDelayWithProgressOnTheObject) {
    Calls calls;
    const auto start = Clock::now();
    Registry registry;
    on::create flaky(registry, "kopfexamples", {.id = "flaky"}, [&](Context& ctx) -> json {
        int n = calls.add("flaky", {{"retry", ctx.retry}, {"at", seconds_since(start)}});
        if (n < 3) throw TemporaryError("not yet", 2);
        return {{"attempts", n}};
    });
    auto operator_ = start_operator(registry);
    create(example("kex-flaky", {{"field", "value"}}));

    // Between the attempts: the progress record says what happened and when it continues.
    std::optional<json> record;
    ASSERT_TRUE(eventually([&] {
        record = kopf_annotation("kex-flaky", "flaky");
        return record && record->value("retries", 0) == 1;
    })) << (record ? record->dump() : "no record");
    EXPECT_EQ((*record)["purpose"], "create");
    EXPECT_EQ((*record)["success"], false);
    EXPECT_EQ((*record)["failure"], false);
    EXPECT_EQ((*record)["message"], "not yet");
    EXPECT_TRUE(record->contains("started")) << *record;
    EXPECT_TRUE(record->contains("delayed")) << *record;
    EXPECT_FALSE(record->contains("stopped")) << *record;

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-flaky"), "/status/flaky/attempts", 3);
    })) << (body ? body->dump(2) : "no object");
    const auto details = calls.details("flaky");
    ASSERT_EQ(details.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(details[i]["retry"], i);
    // Each retry waited for the delay the error asked for.
    EXPECT_GE(details[1]["at"].get<double>() - details[0]["at"].get<double>(), 1.9);
    EXPECT_GE(details[2]["at"].get<double>() - details[1]["at"].get<double>(), 1.9);
    EXPECT_FALSE(body->value("/metadata/annotations"_json_pointer, json::object())
                     .contains("kopf.zalando.org/flaky"))
        << "the progress was not purged";
}

TEST_F(HandlingErrors, PermanentErrorIsRecordedAsFailureAndNotRetried) {
    Calls calls;
    Registry registry;
    on::create fatal(registry, "kopfexamples", {.id = "fatal"}, [&](Context&) -> json {
        calls.add("fatal");
        throw PermanentError("fatal error");
    });
    // Keeps the cycle open for a while, so that the failure record can be seen.
    on::create slow(registry, "kopfexamples", {.id = "slow"}, [&](Context&) -> json {
        if (calls.add("slow") == 1) throw TemporaryError("wait", 3);
        return {{"done", true}};
    });
    auto operator_ = start_operator(registry);
    create(example("kex-fatal", {{"field", "value"}}));

    std::optional<json> record;
    ASSERT_TRUE(eventually([&] {
        record = kopf_annotation("kex-fatal", "fatal");
        return record && record->value("failure", false);
    })) << (record ? record->dump() : "no record");
    EXPECT_EQ((*record)["success"], false);
    EXPECT_EQ((*record)["message"], "fatal error");
    EXPECT_EQ((*record)["retries"], 1);
    EXPECT_TRUE(record->contains("stopped")) << *record;
    EXPECT_FALSE(record->contains("delayed")) << *record;

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-fatal"), "/status/slow/done", true);
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ(calls.count("fatal"), 1);
    EXPECT_EQ(calls.count("slow"), 2);
    EXPECT_FALSE(body->value("/status"_json_pointer, json::object()).contains("fatal"));
}

TEST_F(HandlingErrors, RetriesLimitStopsTheHandlerAfterThatManyAttempts) {
    Calls calls;
    Registry registry;
    on::create limited(registry, "kopfexamples", {.id = "limited", .retries = 3},
                       [&](Context& ctx) -> json {
                           calls.add("limited", ctx.retry);
                           throw TemporaryError("again", 0.2);
                       });
    auto operator_ = start_operator(registry);
    create(example("kex-retries", {{"field", "value"}}));

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] { return handled(body = get("kex-retries")); }))
        << (body ? body->dump(2) : "no object");
    EXPECT_EQ(calls.details("limited"), (std::vector<json>{0, 1, 2}));
    EXPECT_FALSE(body->value("/status"_json_pointer, json::object()).contains("limited"));
}

TEST_F(HandlingErrors, TimeoutStopsRetriesOnceTheHandlerHasRunForThatLong) {
    Calls calls;
    Registry registry;
    on::create slowpoke(registry, "kopfexamples", {.id = "slowpoke", .timeout = 1.5},
                        [&](Context& ctx) -> json {
                            calls.add("slowpoke", ctx.runtime.count());
                            throw TemporaryError("still not", 0.4);
                        });
    auto operator_ = start_operator(registry);
    create(example("kex-timeout", {{"field", "value"}}));

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] { return handled(body = get("kex-timeout")); }))
        << (body ? body->dump(2) : "no object");
    const auto runtimes = calls.details("slowpoke");
    ASSERT_GE(runtimes.size(), 2u);
    // No attempt starts after the timeout has passed.
    for (const auto& runtime : runtimes) EXPECT_LT(runtime.get<double>(), 1.5);
    EXPECT_FALSE(body->value("/status"_json_pointer, json::object()).contains("slowpoke"));
}

// Kopf's docs: a coroutine handler still running when its timeout is over is interrupted.
TEST_F(HandlingErrors, TimeoutCancelsACoroutineHandlerStillRunningAndFailsItForGood) {
    Calls calls;
    const auto start = Clock::now();
    Registry registry;
    on::create sleepy(registry, "kopfexamples", {.id = "sleepy", .timeout = 1.0},
                      [&](Context&) -> Task<json> {
                          calls.add("sleepy");
                          try {
                              co_await kopf::sleep(60);
                          } catch (const CancelledError&) {
                              calls.add("cancelled", seconds_since(start));
                              throw;
                          }
                          calls.add("woke up");
                          co_return json{{"slept", true}};
                      });
    // Keeps the cycle open for a while, so that the failure record can be seen.
    on::create slow(registry, "kopfexamples", {.id = "slow"}, [&](Context&) -> json {
        if (calls.add("slow") == 1) throw TemporaryError("wait", 4);
        return {{"done", true}};
    });
    auto operator_ = start_operator(registry);
    create(example("kex-sleepy", {{"field", "value"}}));

    std::optional<json> record;
    ASSERT_TRUE(eventually([&] {
        record = kopf_annotation("kex-sleepy", "sleepy");
        return record && record->value("failure", false);
    })) << (record ? record->dump() : "no record");
    EXPECT_EQ((*record)["success"], false);
    EXPECT_EQ(record->value("message", "").rfind("Handler 'sleepy' has timed out after 0:00:01", 0),
              0u)
        << *record;
    EXPECT_FALSE(record->contains("delayed")) << *record;
    ASSERT_EQ(calls.count("cancelled"), 1);
    EXPECT_LT(calls.details("cancelled")[0].get<double>(), 30.0) << "not interrupted";

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-sleepy"), "/status/slow/done", true);
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ(calls.count("sleepy"), 1) << "a timed-out handler is not retried";
    EXPECT_EQ(calls.count("woke up"), 0);
    EXPECT_FALSE(body->value("/status"_json_pointer, json::object()).contains("sleepy"));
}

// Threads cannot be stopped from outside: a synchronous handler runs to its end, and what it
// returns counts (as in Kopf). Its timeout bounds the retries only.
TEST_F(HandlingErrors, TimeoutDoesNotInterruptASynchronousHandler) {
    Calls calls;
    Registry registry;
    on::create sluggish(registry, "kopfexamples", {.id = "sluggish", .timeout = 0.5},
                        [&](Context&) -> json {
                            calls.add("sluggish");
                            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
                            return {{"finished", true}};
                        });
    auto operator_ = start_operator(registry);
    create(example("kex-sluggish", {{"field", "value"}}));

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-sluggish"), "/status/sluggish/finished", true);
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ(calls.count("sluggish"), 1);
}

// A coroutine that finishes within its timeout is not disturbed by it.
TEST_F(HandlingErrors, TimeoutLeavesACoroutineHandlerThatFinishesInTimeAlone) {
    Registry registry;
    on::create brisk(registry, "kopfexamples", {.id = "brisk", .timeout = 30},
                     [](Context&) -> Task<json> {
                         co_await kopf::sleep(0.1);
                         co_return json{{"finished", true}};
                     });
    auto operator_ = start_operator(registry);
    create(example("kex-brisk", {{"field", "value"}}));

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-brisk"), "/status/brisk/finished", true);
    })) << (body ? body->dump(2) : "no object");
}

TEST_F(HandlingErrors, ServiceUnavailableWhileTheOperatorPatchesIsRetriedAndHandlingCompletes) {
    Calls calls;
    Registry registry;
    on::create create_fn(registry, "kopfexamples", {.id = "create_fn"}, [&](Context&) -> json {
        // The operator's next requests (the patch of this result) fail.
        if (calls.add("create_fn") == 1) server->fail_next_requests(3, 503);
        return {{"message", "survived 503"}};
    });
    auto operator_ = start_operator(registry);
    create(example("kex-503", {{"field", "value"}}));

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-503"), "/status/create_fn/message", "survived 503");
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ(calls.count("create_fn"), 1);
}

TEST_F(HandlingErrors, TooManyRequestsWithRetryAfterWhileTheOperatorPatchesIsHonoured) {
    Calls calls;
    Registry registry;
    on::create create_fn(registry, "kopfexamples", {.id = "create_fn"}, [&](Context&) -> json {
        if (calls.add("create_fn") == 1) server->fail_next_requests(2, 429, 1);
        return {{"message", "survived 429"}};
    });
    auto operator_ = start_operator(registry);
    create(example("kex-429", {{"field", "value"}}));

    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        return handled_with(body = get("kex-429"), "/status/create_fn/message", "survived 429");
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ(calls.count("create_fn"), 1);
}

TEST_F(HandlingErrors, OperatorStartingBeforeItsApiServerAnswersRetriesThenServes) {
    Calls calls;
    Registry registry;
    on::create create_fn(registry, "kopfexamples", {.id = "create_fn"},
                         [&](Context& ctx) { calls.add("create_fn", ctx.name); });
    // The API server refuses its first requests: the operator's probes of /version.
    server->fail_next_requests(3, 503);
    auto operator_ = start_operator(registry);
    create(example("kex-late-server", {{"field", "x"}}));
    ASSERT_TRUE(eventually([&] { return calls.count("create_fn") == 1; }));
    EXPECT_EQ(operator_->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
