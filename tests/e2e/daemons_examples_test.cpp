// Kopf's daemon and timer examples end to end (14-daemons, 15-timers, and the field daemon of
// 11-filtering-handlers), in the style of Kopf's own tests/e2e/test_examples.py: start the
// embedded API server, `kopf run` the example, `kubectl apply` the object, wait for the example's
// stop words in the log (Kopf's E2E_CREATION_STOP_WORDS / E2E_DELETION_STOP_WORDS), `kubectl
// delete` it, and check that nothing failed for good and that the operator exits cleanly. Beyond
// Kopf's checks, what a user would notice: the fields in the pings, the status patched while a
// daemon retries, the finalizer that holds a deleted object until its daemons exit, timers that
// wait for the object to be idle and see its latest state, daemons stopped and spawned again by
// their filters.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// Where `text` first / last occurs in `log` (npos if nowhere).
std::size_t first_in(const std::string& log, const std::string& text) {
    return log.find(text);
}
std::size_t last_in(const std::string& log, const std::string& text) {
    return log.rfind(text);
}

class DaemonExamples : public ExamplesTest {
  protected:
    void patch_field(const std::string& value) const {
        auto patched = kubectl({"patch", "kex", kObjectName, "-n", "default", "--type=merge", "-p",
                                json{{"spec", {{"field", value}}}}.dump()});
        ASSERT_EQ(patched.exit_code, 0) << patched.output;
    }

    // The count of `text` in the log does not change for `duration`.
    static bool stays_the_same(const OperatorProcess& op, const std::string& text,
                               std::chrono::milliseconds duration) {
        const int before = op.count_in_log(text);
        std::this_thread::sleep_for(duration);
        return op.count_in_log(text) == before;
    }
};

const std::string kSyncPing = kObjectPrefix + "=> Ping from a sync daemon: field='value', retry=3";
const std::string kAsyncPing = kObjectPrefix + "=> Ping from an async daemon: field='value'";
const std::string kSyncFailed = "Daemon 'background_sync' failed temporarily: Simulated failure.";
const std::string kAsyncFailed = "Daemon 'background_async' failed temporarily: Simulated failure.";
const std::string kAsyncCancelled = "Daemon 'background_async' is cancelled. Will escalate.";
const std::string kSyncExited =
    "Daemon 'background_sync' has exited on request and will not be retried or restarted.";

}  // namespace

TEST_F(DaemonExamples, DaemonsRetryPingAndExitBeforeTheObjectIsReleased) {
    auto op = start("14-daemons");
    ASSERT_FALSE(HasFailure());
    create_object();

    // Both daemons fail 3 times, 1 s apart (TemporaryError's delay), then ping (Kopf's
    // E2E_CREATION_STOP_WORDS: "=> Ping from"). The sync daemon patches its status on every
    // failed attempt: watch the message as it goes.
    std::vector<std::string> messages;
    auto watch_message = [&] {
        const json object = get_object();
        const json message =
            object.is_object() ? object.value("/status/message"_json_pointer, json()) : json();
        if (message.is_string() && (messages.empty() || message != messages.back())) {
            messages.push_back(message.get<std::string>());
        }
        return op->log().find(kSyncPing) != std::string::npos &&
               op->log().find(kAsyncPing) != std::string::npos;
    };
    ASSERT_TRUE(eventually(watch_message, 60s)) << op->log();
    ASSERT_TRUE(eventually(
        [&] {
            watch_message();
            return !messages.empty() && messages.back() == "Failed 3 times.";
        },
        10s))
        << testing::PrintToString(messages);
    const std::set<std::string> allowed = {"Failed 1 times.", "Failed 2 times.", "Failed 3 times."};
    for (const auto& message : messages) EXPECT_TRUE(allowed.count(message)) << message;
    EXPECT_TRUE(std::is_sorted(messages.begin(), messages.end()))
        << testing::PrintToString(messages);

    EXPECT_EQ(op->count_in_log(kSyncFailed), 3) << op->log();
    EXPECT_EQ(op->count_in_log(kAsyncFailed), 3) << op->log();
    // The pings come after the failures only.
    EXPECT_LT(last_in(op->log(), kSyncFailed), first_in(op->log(), kSyncPing));
    EXPECT_LT(last_in(op->log(), kAsyncFailed), first_in(op->log(), kAsyncPing));

    // The running daemons hold the object with the finalizer.
    const json object = get_object();
    ASSERT_TRUE(object.is_object());
    EXPECT_EQ(object["metadata"].value("finalizers", json()), json::array({kFinalizer}))
        << object.dump(2);

    // The deletion stops the daemons: the sync one sees ctx.stopped and returns, the async one is
    // cancelled 1 s later (cancellation_backoff) at its kopf::sleep (Kopf's
    // E2E_DELETION_STOP_WORDS); only then is the finalizer removed and the deletion completes.
    delete_object();
    ASSERT_TRUE(op->wait_for_log(kAsyncCancelled, 10s)) << op->log();
    ASSERT_TRUE(op->wait_for_log(kSyncExited, 10s)) << op->log();
    const std::string released = "Removing the finalizer, thus allowing the actual deletion.";
    ASSERT_TRUE(op->wait_for_log(released, 10s)) << op->log();
    {
        const std::string log = op->log();
        EXPECT_LT(first_in(log, kAsyncCancelled), last_in(log, released)) << log;
        EXPECT_LT(first_in(log, kSyncExited), last_in(log, released)) << log;
        EXPECT_EQ(log.find("did not exit in time"), std::string::npos) << log;
    }

    // Nothing is restarted after the exit: no more pings.
    EXPECT_TRUE(stays_the_same(*op, "=> Ping from", 2500ms)) << op->log();

    stop_cleanly(*op);
    // Once a daemon succeeds, it is never executed again; the cancelled one never succeeds.
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"background_sync", 1}})) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(DaemonExamples, DaemonsStopWithTheOperatorAndTheSyncOnePatchesItsLastWords) {
    auto op = start("14-daemons");
    ASSERT_FALSE(HasFailure());
    create_object();
    ASSERT_TRUE(op->wait_for_log(kSyncPing, 60s)) << op->log();
    ASSERT_TRUE(op->wait_for_log(kAsyncPing, 60s)) << op->log();

    // SIGTERM stops the daemons as the deletion does: the sync daemon returns and its patch is
    // applied, the async daemon is cancelled; the operator exits cleanly.
    stop_cleanly(*op);
    const std::string log = op->log();
    EXPECT_NE(log.find(kSyncExited), std::string::npos) << log;
    EXPECT_NE(log.find(kAsyncCancelled), std::string::npos) << log;
    EXPECT_EQ(log.find("did not exit in time"), std::string::npos) << log;
    const json object = get_object();
    ASSERT_TRUE(object.is_object());
    EXPECT_EQ(object.value("/status/message"_json_pointer, json()), "Accompanying is finished.")
        << object.dump(2);
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"background_sync", 1}})) << log;
    EXPECT_TRUE(final_failures(*op).empty()) << log;
}

TEST_F(DaemonExamples, TimersPingAfterIdlingAndSeeTheLatestObject) {
    const std::string sync_ping = kObjectPrefix + "Ping from a sync timer: field=";
    const std::string async_ping = kObjectPrefix + "Ping from an async timer: field=";
    auto op = start("15-timers");
    ASSERT_FALSE(HasFailure());
    create_object();
    const auto created = std::chrono::steady_clock::now();

    // The creation is a change: the timers wait for their idle time (5 s and 10 s) first, then
    // ping every 2 s and 4 s.
    ASSERT_TRUE(op->wait_for_log(sync_ping + "'value'", 30s)) << op->log();
    EXPECT_GE(std::chrono::steady_clock::now() - created, 4s) << op->log();
    ASSERT_TRUE(op->wait_for_log(async_ping + "'value'", 30s)) << op->log();
    EXPECT_GE(std::chrono::steady_clock::now() - created, 9s) << op->log();
    EXPECT_GE(op->count_in_log(sync_ping + "'value'"), 2) << op->log();
    // Timers succeed on every run (unlike other handlers, they are meant to run again).
    EXPECT_GE(successes(*op)["every_few_seconds_sync"], 2) << op->log();
    const json object = get_object();
    ASSERT_TRUE(object.is_object());
    EXPECT_EQ(object["metadata"].value("finalizers", json()), json::array({kFinalizer}))
        << object.dump(2);

    // A change restarts the idling; then the timers see the object's latest state.
    patch_field("changed");
    const auto patched = std::chrono::steady_clock::now();
    ASSERT_TRUE(op->wait_for_log(sync_ping + "'changed'", 30s)) << op->log();
    EXPECT_GE(std::chrono::steady_clock::now() - patched, 4s) << op->log();
    ASSERT_TRUE(op->wait_for_log(async_ping + "'changed'", 30s)) << op->log();
    EXPECT_GE(std::chrono::steady_clock::now() - patched, 9s) << op->log();
    {
        const std::string log = op->log();
        EXPECT_LT(last_in(log, sync_ping + "'value'"), first_in(log, sync_ping + "'changed'"));
        EXPECT_LT(last_in(log, async_ping + "'value'"), first_in(log, async_ping + "'changed'"));
    }

    // The deletion stops the timers and then releases the object.
    delete_object();
    EXPECT_TRUE(stays_the_same(*op, "Ping from", 2500ms)) << op->log();

    stop_cleanly(*op);
    const auto counts = successes(*op);
    EXPECT_GE(counts.count("every_few_seconds_async") ? counts.at("every_few_seconds_async") : 0, 2)
        << op->log();
    for (const auto& [id, count] : counts) {
        EXPECT_TRUE(id == "every_few_seconds_sync" || id == "every_few_seconds_async") << id;
    }
    EXPECT_TRUE(count_handlers(op->log(), R"(Timer '([^']+)' failed)").empty()) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(DaemonExamples, FieldDaemonRunsOnlyWhileTheFieldMatches) {
    const std::string satisfied = kObjectPrefix + "Field daemon is satisfied.";
    // With a `.field`, the id is "<function>/<field>", as in Kopf.
    const std::string id = "daemon_with_field/spec.field";
    const std::string exited =
        "Daemon '" + id + "' has exited on request and will not be retried or restarted.";
    auto op = start("11-filtering-handlers");
    ASSERT_FALSE(HasFailure());
    create_object();

    // spec.field == "value": the daemon logs every second.
    ASSERT_TRUE(eventually([&] { return op->count_in_log(satisfied) >= 2; }, 30s)) << op->log();

    auto finalizers = [&] {
        const json object = get_object();
        return object.is_object() ? object["metadata"].value("finalizers", json()) : json();
    };
    EXPECT_EQ(finalizers(), json::array({kFinalizer}));  // the daemon holds the object

    // The field no longer matches: the daemon is stopped and its lines stop. Nothing else needs
    // the finalizer (no deletion handlers): it is removed.
    patch_field("changed");
    ASSERT_TRUE(op->wait_for_log(exited, 10s)) << op->log();
    EXPECT_TRUE(stays_the_same(*op, satisfied, 2500ms)) << op->log();
    EXPECT_EQ(successes(*op)[id], 1) << op->log();
    EXPECT_TRUE(eventually([&] { return finalizers().empty(); }, 10s)) << finalizers();

    // It matches again: the daemon is spawned again, and the finalizer is back.
    const int before = op->count_in_log(satisfied);
    patch_field("value");
    ASSERT_TRUE(eventually([&] { return op->count_in_log(satisfied) >= before + 2; }, 30s))
        << op->log();
    EXPECT_TRUE(eventually([&] { return finalizers() == json::array({kFinalizer}); }, 10s))
        << finalizers();

    // The deletion stops it for good.
    delete_object();
    ASSERT_TRUE(op->wait_for_log("Deleted, really deleted, and we are notified.")) << op->log();
    EXPECT_EQ(op->count_in_log(exited), 2) << op->log();
    EXPECT_TRUE(stays_the_same(*op, satisfied, 2500ms)) << op->log();

    stop_cleanly(*op);
    // The resource-changing handlers succeeded once each; the daemon once per stop.
    const auto counts = successes(*op);
    for (const auto& [handler, count] : counts) {
        EXPECT_EQ(count, handler == id ? 2 : 1) << handler;
    }
    EXPECT_EQ(counts.size(), 12u) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}
