// The per-object queues on a virtual clock: batching, worker limits, idle and consistency
// timeouts, the echoes of our own patches, the holds after unexpected errors, and the shutdown.
#include "core/reactor/queueing.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "loop/virtual_executor.hpp"

using kopf::json;
using kopf::runtime::QueueingOptions;
using Queues = kopf::runtime::ObjectQueues;

namespace {

json event(const std::string& type, const std::string& version) {
    return {{"type", type}, {"object", {{"metadata", {{"resourceVersion", version}}}}}};
}

struct Recorder {
    std::vector<std::string> versions;  // the resourceVersions processed, in order
    std::vector<Queues::Done> pending;
    Queues::Processor processor() {
        return [this](const std::string&, const json& e, Queues::Done done) {
            versions.push_back(e["object"]["metadata"]["resourceVersion"]);
            pending.push_back(std::move(done));
        };
    }
    // `object`: the patched object as the API's answer showed it (JSON text), if any.
    void finish(std::optional<std::string> patched = std::nullopt, bool echo_is_noop = false,
                std::string object = "", std::vector<std::string> earlier_versions = {}) {
        auto done = std::move(pending.front());
        pending.erase(pending.begin());
        done({.patched_version = std::move(patched),
              .patched_object = std::move(object),
              .earlier_versions = std::move(earlier_versions),
              .echo_is_noop = echo_is_noop});
    }
    // The processing failed unexpectedly: the object is held back for `hold` seconds.
    void fail(double hold) {
        auto done = std::move(pending.front());
        pending.erase(pending.begin());
        done({.hold = hold});
    }
};

// The queues under test, on a virtual clock that runs nothing until the test advances it, with a
// processor that records the events it is given and holds each until the test finishes it.
class ObjectQueues : public ::testing::Test {
  protected:
    // Fresh queues with these options, on a fresh clock and recorder.
    Queues& start(QueueingOptions options = {}) {
        queues_.reset();
        recorder = {};
        executor = {};
        return queues_.emplace(executor, options, recorder.processor());
    }

    kopf::loop::VirtualExecutor executor;
    Recorder recorder;

  private:
    std::optional<Queues> queues_;
};

}  // namespace

TEST_F(ObjectQueues, EventsArrivingWhileBusyAreBatchedToTheLatest) {
    auto& queues = start();
    // Each push says whether it replaced an event not processed yet (the metrics count them).
    EXPECT_FALSE(queues.push("uid1", event("ADDED", "1")));  // processed at once
    EXPECT_FALSE(queues.push("uid1", event("MODIFIED", "2")));
    EXPECT_TRUE(queues.push("uid1", event("MODIFIED", "3")));  // "2" is dropped
    recorder.finish();
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}

// Only an object with nothing queued, under way or awaited may have its events go elsewhere
// (the daemons' views): is_idle() says so, through every state of its worker.
TEST_F(ObjectQueues, AnObjectIsIdleOnlyWithNothingQueuedUnderWayOrAwaited) {
    auto& queues = start({.idle_timeout = 1000, .consistency_timeout = 5});
    EXPECT_TRUE(queues.is_idle("uid1"));  // never seen
    queues.push("uid1", event("ADDED", "1"));
    EXPECT_FALSE(queues.is_idle("uid1"));  // under way
    queues.push("uid1", event("MODIFIED", "2"));
    recorder.finish();
    executor.advance(0);
    EXPECT_FALSE(queues.is_idle("uid1"));  // "2" queued, then under way
    recorder.finish("3");
    executor.advance(0);
    EXPECT_FALSE(queues.is_idle("uid1"));  // our patch's echo awaited
    queues.push("uid1", event("MODIFIED", "3"));
    executor.advance(0);
    recorder.finish();
    executor.advance(0);
    EXPECT_TRUE(queues.is_idle("uid1"));  // its worker idle
    EXPECT_TRUE(queues.is_idle("uid2"));
    queues.push("uid2", event("ADDED", "7"));
    recorder.fail(10);
    executor.advance(0);
    EXPECT_FALSE(queues.is_idle("uid2"));  // held after an error
}

TEST_F(ObjectQueues, DifferentObjectsAreProcessedConcurrently) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    queues.push("uid2", event("ADDED", "7"));
    EXPECT_EQ(recorder.pending.size(), 2u);
    EXPECT_EQ(queues.busy_workers(), 2u);
}

TEST_F(ObjectQueues, WorkerLimitHoldsBackOtherObjectsUntilASlotFrees) {
    auto& queues = start({.idle_timeout = 1, .worker_limit = 1});
    queues.push("uid1", event("ADDED", "1"));
    queues.push("uid2", event("ADDED", "7"));
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
    recorder.finish();
    executor.advance(0);
    EXPECT_EQ(recorder.versions.size(), 1u);  // uid1's worker is idle, still holding the slot
    executor.advance(1.02);                   // its idle timeout, served at most 1% late
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "7"}));
}

TEST_F(ObjectQueues, IdleWorkersExitAfterIdleTimeout) {
    auto& queues = start({.idle_timeout = 5});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish();
    executor.advance(4.9);
    EXPECT_EQ(queues.workers(), 1u);
    executor.advance(0.2);
    EXPECT_EQ(queues.workers(), 0u);
}

TEST_F(ObjectQueues, IdleWorkersNeverExitEarlyAndAtMostOnePercentLate) {
    auto& queues = start({.idle_timeout = 10});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish();
    executor.advance(9.999);
    EXPECT_EQ(queues.workers(), 1u);
    executor.advance(0.1 + 0.0011);  // t=10.1: a hundredth of the timeout late
    EXPECT_EQ(queues.workers(), 0u);
}

// 1,000 objects handled one per millisecond go idle within one second: their workers exit in a
// few wake-ups of the loop, not in one each (each cost ~30 µs of CPU per object).
TEST_F(ObjectQueues, WorkersGoingIdleTogetherExitInAFewWakeUps) {
    auto& queues = start({.idle_timeout = 5});
    for (int i = 0; i < 1000; ++i) {
        queues.push("uid" + std::to_string(i), event("ADDED", "1"));
        recorder.finish();
        executor.advance(0.001);
    }
    const unsigned long timers_before = executor.timers_set();
    executor.advance(3.99);  // t=4.99: nobody's idle timeout has come yet
    EXPECT_EQ(queues.workers(), 1000u);
    executor.advance(1.1);  // t=6.1: everybody's has, with the 1% slack
    EXPECT_EQ(queues.workers(), 0u);
    EXPECT_LE(executor.timers_set() - timers_before, 25u);  // one second in 50 ms spans
}

// The consistency deadline of a handled object is voided by its echo within milliseconds: the
// loop is not woken for it seconds later.
TEST_F(ObjectQueues, ConsistencyDeadlinesVoidedByTheEchoWakeNobody) {
    auto& queues = start({.idle_timeout = 1000, .consistency_timeout = 5});
    for (int i = 0; i < 100; ++i) {
        const std::string key = "uid" + std::to_string(i);
        queues.push(key, event("ADDED", "1"));
        recorder.finish("2");  // patched: waits for version 2
        executor.advance(0.001);
        queues.push(key, event("MODIFIED", "2"));  // the echo: consistent again
        recorder.finish();
        executor.advance(0.01);
    }
    const unsigned long timers_before = executor.timers_set();
    executor.advance(10);
    EXPECT_LE(executor.timers_set() - timers_before, 1u);
    EXPECT_EQ(recorder.versions.size(), 200u);  // nothing processed by a consistency timeout
}

// A worker that exited and came back with a new event is not hit by its predecessor's
// deadlines (consistency waits longer than idle workers live here).
TEST_F(ObjectQueues, AReturningObjectIsNotHitByItsFormerWorkersDeadlines) {
    auto& queues = start({.idle_timeout = 1, .consistency_timeout = 10});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish("2");  // waits for version 2 until t=10
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "2"));  // consistent; idle from t=0
    recorder.finish();
    executor.advance(2);  // exited at t=1
    EXPECT_EQ(queues.workers(), 0u);
    queues.push("uid1", event("MODIFIED", "3"));  // a new worker
    recorder.finish("4");                         // waits for version 4 until t=12
    executor.advance(9);                          // t=11: the former worker's t=10 passed
    queues.push("uid1", event("MODIFIED", "5"));  // not ours: still waiting for 4
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "2", "3"}));
    executor.advance(1.5);  // t=12.5: this worker's own consistency timeout
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "2", "3", "5"}));
}

TEST_F(ObjectQueues, EachWorkerGetsItsOwnTimeoutsThoughTheyShareOneTimer) {
    auto& queues = start({.idle_timeout = 5, .consistency_timeout = 3});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish();  // idle from t=0
    executor.advance(2);
    queues.push("uid2", event("ADDED", "1"));
    recorder.finish("9");  // waits for version 9 from t=2
    executor.advance(1);
    queues.push("uid1", event("MODIFIED", "2"));  // busy again: its first idle timeout is void
    recorder.finish();                            // idle again from t=3
    executor.advance(1.9);                        // t=4.9
    EXPECT_EQ(queues.workers(), 2u);
    EXPECT_EQ(recorder.versions.size(), 3u);
    queues.push("uid2", event("MODIFIED", "5"));  // not ours: still waiting
    executor.advance(0.2);  // t=5.1: uid2's consistency timeout (t=5) processes what came
    EXPECT_EQ(recorder.versions.back(), "5");
    EXPECT_EQ(queues.workers(), 2u);  // uid1 idles until t=8, not t=5
    recorder.finish();                // uid2 idle from t=5.1
    executor.advance(2.8);            // t=7.9
    EXPECT_EQ(queues.workers(), 2u);
    executor.advance(0.2);  // t=8.1
    EXPECT_EQ(queues.workers(), 1u);
    executor.advance(2.1);  // t=10.2
    EXPECT_EQ(queues.workers(), 0u);
}

TEST_F(ObjectQueues, AfterOwnPatchWaitsForThePatchedVersion) {
    auto& queues = start({.consistency_timeout = 5});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish("3");  // we patched the object; the API answered with version 3
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "2"));  // someone else's older change: not yet
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
    queues.push("uid1", event("MODIFIED", "3"));  // our patch has arrived: go on
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}

TEST_F(ObjectQueues, TheEchoOfOurPatchThatNeedsNothingIsNotProcessed) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish("2", true);
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "2"));  // our own patch: nothing to do
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
    EXPECT_EQ(queues.busy_workers(), 0u);
    queues.push("uid1", event("MODIFIED", "3"));  // someone else's change: processed
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}

TEST_F(ObjectQueues, TheEchoThatNeedsNothingIsRecognisedByItsVersionAlone) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    EXPECT_EQ(queues.drop_echo("2", ""), std::nullopt);  // not answered yet: pushed as usual
    recorder.finish("2", true);
    executor.advance(0);
    EXPECT_EQ(queues.drop_echo("7", ""), std::nullopt);  // not ours
    EXPECT_EQ(queues.drop_echo("2", ""), "uid1");
    EXPECT_EQ(queues.drop_echo("2", ""), std::nullopt);  // dropped once
    EXPECT_EQ(queues.busy_workers(), 0u);
    queues.push("uid1", event("MODIFIED", "3"));  // the worker is idle, not waiting
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}

TEST_F(ObjectQueues, AVersionOfAnotherKindIsNotTakenForOurEcho) {
    // Served by different API servers (aggregated APIs), two kinds may reuse a version.
    auto& queues = start();
    queues.push("pods/uid1", event("ADDED", "1"));
    queues.push("metrics/uid2", event("ADDED", "1"));
    recorder.finish("2", true);
    recorder.finish("2", true);
    executor.advance(0);
    EXPECT_EQ(queues.drop_echo("2", "nodes/"), std::nullopt);
    EXPECT_EQ(queues.drop_echo("2", "metrics/"), "metrics/uid2");
    EXPECT_EQ(queues.drop_echo("2", "metrics/"), std::nullopt);
    EXPECT_EQ(queues.drop_echo("2", "pods/"), "pods/uid1");
    EXPECT_EQ(queues.busy_workers(), 0u);
}

TEST_F(ObjectQueues, AnEchoThatNeedsProcessingIsNeverDroppedByItsVersion) {
    for (const std::string next : {"", "foreign change", "timeout"}) {
        auto& queues = start({.consistency_timeout = 5});
        queues.push("uid1", event("ADDED", "1"));
        recorder.finish("2", next != "");  // "": the echo would change something
        executor.advance(0);
        if (next == "foreign change") queues.push("uid1", event("MODIFIED", "x"));
        if (next == "timeout") executor.advance(6);
        EXPECT_EQ(queues.drop_echo("2", ""), std::nullopt) << next;
    }
}

TEST_F(ObjectQueues, TheEchoThatArrivedBeforeTheAnswerIsNotProcessedEither) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    queues.push("uid1", event("MODIFIED", "2"));  // the watch was faster than the answer
    recorder.finish("2", true);
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
    EXPECT_EQ(queues.busy_workers(), 0u);
}

TEST_F(ObjectQueues, ChangesBatchedWithTheEchoAreProcessed) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    queues.push("uid1", event("MODIFIED", "2"));  // our patch's echo...
    queues.push("uid1", event("MODIFIED", "3"));  // ...and someone else's change after it
    recorder.finish("2", true);
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}

TEST_F(ObjectQueues, SomeoneElsesChangeBeforeOurEchoIsProcessedWithIt) {
    for (const bool while_busy : {true, false}) {
        auto& queues = start();
        queues.push("uid1", event("ADDED", "1"));
        if (while_busy) queues.push("uid1", event("MODIFIED", "2"));  // e.g. the deletion
        recorder.finish("3", true);  // our patch, written on top of it
        executor.advance(0);
        if (!while_busy) queues.push("uid1", event("MODIFIED", "2"));
        queues.push("uid1", event("MODIFIED", "3"));  // carries the other change too
        EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"})) << while_busy;
    }
}

// A relisting (after 410 Gone) shows each object only as it is now: our patch's version, but not
// the event of a change the patch was merged over. That version is processed, never let pass as
// an echo that needs nothing: whether it comes while the worker waits for the patch's answer,
// after the answer, or as our cycle's first write with the second one still to come.
TEST_F(ObjectQueues, OurPatchsVersionSeenOnlyByAListingIsProcessed) {
    for (const std::string when : {"while busy", "after the answer", "first write"}) {
        auto& queues = start({.consistency_timeout = 5});
        queues.push("uid1", event("ADDED", "1"));
        if (when == "while busy") queues.push("uid1", event("", "3"), /*listed=*/true);
        if (when == "first write") {
            recorder.finish("3", true, "", {"2"});
        } else {
            recorder.finish("3", true);
        }
        executor.advance(0);
        if (when == "after the answer") queues.push("uid1", event("", "3"), /*listed=*/true);
        if (when == "first write") {
            queues.push("uid1", event("", "2"), /*listed=*/true);
            EXPECT_EQ(queues.drop_echo("3", ""), std::nullopt);
            queues.push("uid1", event("MODIFIED", "3"));
        }
        EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"})) << when;
        EXPECT_EQ(queues.busy_workers(), 1u) << when;
    }
}

// With a status subresource, a cycle writes twice: the body (version 2), then the status (3).
// The first write's event is ours, not someone else's change: the cycle's last echo is still
// dropped unprocessed, whether the first echo came while the status was written or after its
// answer, and the first echo is never processed either.
TEST_F(ObjectQueues, TheEchoesOfACyclesTwoWritesAreNotProcessed) {
    for (const bool first_echo_while_busy : {true, false}) {
        auto& queues = start();
        queues.push("uid1", event("ADDED", "1"));
        if (first_echo_while_busy) queues.push("uid1", event("MODIFIED", "2"));
        recorder.finish("3", true, "", {"2"});
        executor.advance(0);
        if (!first_echo_while_busy) queues.push("uid1", event("MODIFIED", "2"));
        EXPECT_EQ(queues.drop_echo("3", ""), "uid1") << first_echo_while_busy;
        EXPECT_EQ(queues.busy_workers(), 0u);
        EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"})) << first_echo_while_busy;
        queues.push("uid1", event("MODIFIED", "4"));  // someone else's change: processed
        EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "4"}));
    }
}

// The first write's version is announced as soon as its answer comes, before the second write:
// its event is then dropped unparsed, whether it comes while the status is being written or
// after. An announced version whose event never came is forgotten with the cycle.
TEST_F(ObjectQueues, AnAnnouncedFirstWriteOfACycleIsDroppedUnparsed) {
    for (const bool first_echo_while_busy : {true, false}) {
        auto& queues = start();
        queues.push("uid1", event("ADDED", "1"));
        queues.expect_superseded_echo("uid1", "2");
        if (first_echo_while_busy) EXPECT_EQ(queues.drop_echo("2", ""), "uid1");
        recorder.finish("3", true, "", {"2"});
        executor.advance(0);
        if (!first_echo_while_busy) EXPECT_EQ(queues.drop_echo("2", ""), "uid1");
        EXPECT_EQ(queues.drop_echo("2", ""), std::nullopt);  // dropped once
        EXPECT_EQ(queues.drop_echo("3", ""), "uid1");
        EXPECT_EQ(queues.busy_workers(), 0u);
        EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
    }
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    queues.expect_superseded_echo("uid1", "2");
    queues.expect_superseded_echo("uid2", "2");  // no such worker: ignored
    recorder.finish("3", false, "", {"2"});
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "3"));  // the next cycle: "2" is forgotten
    EXPECT_EQ(queues.drop_echo("2", ""), std::nullopt);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}

// Someone else's change between our two writes is theirs: processed with our last echo.
TEST_F(ObjectQueues, AChangeBetweenACyclesTwoWritesIsProcessed) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    queues.push("uid1", event("MODIFIED", "2"));  // our body patch
    queues.push("uid1", event("MODIFIED", "3"));  // someone else's
    recorder.finish("4", true, "", {"2"});
    executor.advance(0);
    EXPECT_EQ(queues.drop_echo("4", ""), std::nullopt);
    queues.push("uid1", event("MODIFIED", "4"));
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "4"}));
}

TEST_F(ObjectQueues, APatchThatWroteNothingNeedsNoWaiting) {
    auto& queues = start({.consistency_timeout = 5});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish("1");  // the answer shows the version we processed: nothing was written
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "2"));
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "2"}));
}

TEST_F(ObjectQueues, ConsistencyTimeoutProcessesWhatArrived) {
    auto& queues = start({.consistency_timeout = 5});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish("9");
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "2"));
    executor.advance(4);
    EXPECT_EQ(recorder.versions.size(), 1u);
    executor.advance(2);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "2"}));
}

// A stalled watch withholds the echo of our patch: the events that came before it do not show
// the handlers' successes the patch recorded, so the patched object itself is processed.
TEST_F(ObjectQueues, ConsistencyTimeoutProcessesThePatchedObjectRatherThanAnOlderEvent) {
    const std::string patched = event("MODIFIED", "9")["object"].dump();
    for (const bool someone_elses_change : {true, false}) {
        for (const bool echo_is_noop : {true, false}) {
            auto& queues = start({.consistency_timeout = 5});
            queues.push("uid1", event("ADDED", "1"));
            if (someone_elses_change) queues.push("uid1", event("MODIFIED", "2"));
            recorder.finish("9", echo_is_noop, patched);
            executor.advance(6);
            EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "9"}))
                << someone_elses_change << echo_is_noop;
        }
    }
}

TEST_F(ObjectQueues, ConsistencyTimeoutProcessesAnEventNewerThanThePatch) {
    // E.g. the listing after a restarted watch: newer than our patch, without its echo.
    auto& queues = start({.consistency_timeout = 5});
    queues.push("uid1", event("ADDED", "1"));
    recorder.finish("9", false, event("MODIFIED", "9")["object"].dump());
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "12"));
    executor.advance(6);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "12"}));
}

TEST_F(ObjectQueues, VersionsThatAreNotNumbersAreNotCompared) {
    // As Kopf: the latest event is processed after the timeout.
    auto& queues = start({.consistency_timeout = 5});
    queues.push("uid1", event("ADDED", "a"));
    queues.push("uid1", event("MODIFIED", "b"));
    recorder.finish("c", false, event("MODIFIED", "c")["object"].dump());
    executor.advance(6);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ObjectQueues, ShutdownWaitsForBusyWorkers) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    bool finished = false;
    queues.shutdown([&] { finished = true; });
    queues.push("uid1", event("MODIFIED", "2"));  // ignored while stopping
    EXPECT_FALSE(finished);
    recorder.finish();
    executor.advance(0);
    EXPECT_TRUE(finished);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
}

TEST_F(ObjectQueues, ShutdownGivesUpOnBusyWorkersAfterExitTimeout) {
    auto& queues = start({.exit_timeout = 2});
    queues.push("uid1", event("ADDED", "1"));
    bool finished = false;
    queues.shutdown([&] { finished = true; });
    executor.advance(1.9);
    EXPECT_FALSE(finished);
    executor.advance(0.2);
    EXPECT_TRUE(finished);
}

TEST_F(ObjectQueues, AnObjectHeldAfterAnErrorProcessesOnlyItsLatestEventWhenTheHoldIsOver) {
    auto& queues = start();
    std::vector<std::string> over;
    queues.on_hold_over([&](const std::string& key) { over.push_back(key); });
    queues.push("uid1", event("ADDED", "1"));
    recorder.fail(10);
    executor.advance(0);
    queues.push("uid1", event("MODIFIED", "2"));
    queues.push("uid1", event("MODIFIED", "3"));
    executor.advance(9.9);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));  // held back
    EXPECT_TRUE(over.empty());
    executor.advance(0.2);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
    EXPECT_EQ(over, (std::vector<std::string>{"uid1"}));
}

TEST_F(ObjectQueues, AHeldObjectWithoutNewEventsGoesIdleWhenTheHoldIsOver) {
    auto& queues = start({.idle_timeout = 1});
    queues.push("uid1", event("ADDED", "1"));
    recorder.fail(5);
    executor.advance(5.5);  // held until t=5, then idle
    EXPECT_EQ(queues.workers(), 1u);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));  // nothing reprocessed
    executor.advance(1.1);
    EXPECT_EQ(queues.workers(), 0u);
}

TEST_F(ObjectQueues, AHeldObjectDoesNotHoldOtherObjectsBack) {
    auto& queues = start();
    queues.push("uid1", event("ADDED", "1"));
    recorder.fail(100);
    executor.advance(0);
    queues.push("uid2", event("ADDED", "7"));
    recorder.finish();
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "7"}));
}

TEST_F(ObjectQueues, AHeldWorkerKeepsItsSlotUnderTheWorkerLimit) {
    auto& queues = start({.worker_limit = 1});
    queues.push("uid1", event("ADDED", "1"));
    recorder.fail(10);
    executor.advance(0);
    queues.push("uid2", event("ADDED", "7"));
    executor.advance(5);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1"}));
    executor.advance(5.1 + 5.1);  // the hold is over at t=10; uid1 idles out at t=15.05
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "7"}));
}

TEST_F(ObjectQueues, ShutdownDoesNotWaitForHeldObjects) {
    auto& queues = start({.exit_timeout = 2});
    queues.push("uid1", event("ADDED", "1"));
    recorder.fail(600);
    executor.advance(0);
    bool finished = false;
    queues.shutdown([&] { finished = true; });
    EXPECT_TRUE(finished);
}

namespace {

// A watch line of `type` at `version`, and a parser that counts what it parses.
std::string line(const std::string& type, const std::string& version) {
    return event(type, version).dump();
}

struct CountingParser {
    std::vector<std::string> parsed;  // the versions parsed
    Queues::Parser parser() {
        return [this](const std::string&, std::string_view text) -> std::optional<json> {
            json parsed_event = json::parse(text, nullptr, /*allow_exceptions=*/false);
            if (parsed_event.is_discarded()) return std::nullopt;
            parsed.push_back(parsed_event["object"]["metadata"]["resourceVersion"]);
            return parsed_event;
        };
    }
};

}  // namespace

// Only a worker that is not idle takes a line unparsed: an event for an idle or unknown worker
// is processed at once, so the caller parses it.
TEST_F(ObjectQueues, OnlyAWorkerThatIsNotIdleTakesAnEventUnparsed) {
    auto& queues = start();
    CountingParser counting;
    queues.parse_unparsed_with(counting.parser());
    bool batched = true;
    EXPECT_FALSE(queues.push_unparsed("uid1", "1", line("MODIFIED", "1"), batched));
    queues.push("uid1", event("ADDED", "1"));
    EXPECT_TRUE(queues.push_unparsed("uid1", "2", line("MODIFIED", "2"), batched));
    EXPECT_FALSE(batched);
    recorder.finish();
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "2"}));
    recorder.finish();
    executor.advance(0);
    EXPECT_FALSE(queues.push_unparsed("uid1", "3", line("MODIFIED", "3"), batched));  // idle
    EXPECT_EQ(counting.parsed, (std::vector<std::string>{"2"}));
}

// Events that come while the worker is busy are parsed only if they are still the newest when
// it is free: the superseded ones, and the echoes of the cycle's own writes, never are.
TEST_F(ObjectQueues, EventsSupersededWhileBusyAreNeverParsed) {
    auto& queues = start();
    CountingParser counting;
    queues.parse_unparsed_with(counting.parser());
    bool batched = false;
    queues.push("uid1", event("ADDED", "1"));
    ASSERT_TRUE(queues.push_unparsed("uid1", "2", line("MODIFIED", "2"), batched));
    ASSERT_TRUE(queues.push_unparsed("uid1", "3", line("MODIFIED", "3"), batched));
    EXPECT_TRUE(batched);  // "2" was replaced
    recorder.finish();
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
    EXPECT_EQ(counting.parsed, (std::vector<std::string>{"3"}));

    // A status-subresource cycle whose two echoes (4, then 5) both came before the answers:
    // neither is parsed, and the worker goes idle.
    ASSERT_TRUE(queues.push_unparsed("uid1", "4", line("MODIFIED", "4"), batched));
    ASSERT_TRUE(queues.push_unparsed("uid1", "5", line("MODIFIED", "5"), batched));
    recorder.finish("5", true, "", {"4"});
    executor.advance(0);
    EXPECT_EQ(queues.busy_workers(), 0u);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
    EXPECT_EQ(counting.parsed, (std::vector<std::string>{"3"}));

    // Someone else's change among the echoes is parsed and processed.
    queues.push("uid1", event("MODIFIED", "6"));
    ASSERT_TRUE(queues.push_unparsed("uid1", "7", line("MODIFIED", "7"), batched));
    ASSERT_TRUE(queues.push_unparsed("uid1", "8", line("MODIFIED", "8"), batched));  // theirs
    ASSERT_TRUE(queues.push_unparsed("uid1", "9", line("MODIFIED", "9"), batched));
    recorder.finish("9", true, "", {"7"});
    executor.advance(0);
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3", "6", "9"}));
    EXPECT_EQ(counting.parsed, (std::vector<std::string>{"3", "9"}));
}

// A line that cannot be parsed when its turn comes is skipped (the parser says why); the worker
// goes on with the object's next event.
TEST_F(ObjectQueues, AnUnreadableLineIsSkippedAndTheNextEventProcessed) {
    auto& queues = start();
    CountingParser counting;
    queues.parse_unparsed_with(counting.parser());
    bool batched = false;
    queues.push("uid1", event("ADDED", "1"));
    ASSERT_TRUE(queues.push_unparsed("uid1", "2", R"({"type":"MODIFIED","object":{)", batched));
    recorder.finish();
    executor.advance(0);
    EXPECT_EQ(queues.busy_workers(), 0u);
    queues.push("uid1", event("MODIFIED", "3"));
    EXPECT_EQ(recorder.versions, (std::vector<std::string>{"1", "3"}));
}
