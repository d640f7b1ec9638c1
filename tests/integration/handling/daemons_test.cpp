// Daemons and timers against the embedded API server: what a user sees on the objects and in
// the daemons' calls — spawning, stopping by deletion (the finalizer held until they exit),
// abandoning a stubborn daemon, forced cancellation of coroutines, filters flipping off and on,
// the operator's exit and restart, timers' patches and fresh bodies.
#include <atomic>
#include <string>
#include <thread>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

const std::string FINALIZER = "kopf.zalando.org/KopfFinalizerMarker";

bool has_finalizer(const json& body) {
    for (const auto& item : body.value("/metadata/finalizers"_json_pointer, json::array()))
        if (item == FINALIZER) return true;
    return false;
}

// What the daemons remember, on the heap and shared with the test (as users' closures are).
struct Journal {
    Calls calls;
    std::atomic<int> running{0};
    std::atomic<bool> release{false};  // lets a stubborn daemon go at the end of a test
};

class Daemons : public HandlingTest {
  protected:
    std::shared_ptr<Journal> journal = std::make_shared<Journal>();

    void TearDown() override {
        journal->release = true;  // no thread of a stubborn daemon outlives the test
        HandlingTest::TearDown();
    }
};

TEST_F(Daemons, SyncDaemonRunsUntilDeletionAndHoldsTheFinalizerUntilItExits) {
    Registry registry;
    auto j = journal;
    on::daemon monitor(registry, "kopfexamples", {.id = "monitor"}, [j](Context& ctx) {
        ++j->running;
        j->calls.add("started", ctx.name);
        while (!ctx.stopped) {
            j->calls.add("field", ctx.spec.value("field", ""));
            ctx.stopped.wait(0.05);
        }
        j->calls.add("reason", to_string(ctx.stopped.reason()));
        std::this_thread::sleep_for(700ms);  // a slow cleanup: the object must wait for it
        j->calls.add("exited");
        --j->running;
    });
    auto operator_ = start_operator(registry);

    create(example("kex-daemon", {{"field", "one"}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("started") == 1; }));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-daemon");
        return body && has_finalizer(*body);
    }));

    // The daemon sees the object's latest body, not the one it was spawned with.
    patch("kex-daemon", {{"spec", {{"field", "two"}}}});
    ASSERT_TRUE(eventually([&] {
        auto fields = j->calls.details("field");
        return !fields.empty() && fields.back() == "two";
    }));

    remove("kex-daemon");
    ASSERT_TRUE(eventually([&] { return j->calls.count("reason") == 1; }));
    EXPECT_EQ(j->calls.details("reason")[0], "RESOURCE_DELETED");
    // While the daemon cleans up, the object stays (marked for deletion, with the finalizer).
    auto during = get("kex-daemon");
    ASSERT_TRUE(during.has_value());
    EXPECT_TRUE(has_finalizer(*during)) << during->dump(2);
    ASSERT_TRUE(eventually([&] { return !get("kex-daemon").has_value(); }));
    EXPECT_EQ(j->calls.count("exited"), 1);
    EXPECT_EQ(j->calls.count("started"), 1);  // never respawned for a deleted object
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, StubbornSyncDaemonIsAbandonedAfterItsTimeoutAndTheObjectReleased) {
    Registry registry;
    auto j = journal;
    on::daemon stubborn(
        registry, "kopfexamples",
        {.id = "stubborn", .cancellation_backoff = 0.2, .cancellation_timeout = 0.5},
        [j](Context& ctx) {
            ++j->running;
            j->calls.add("started");
            while (!j->release) std::this_thread::sleep_for(20ms);  // deaf
            j->calls.add("reason", to_string(ctx.stopped.reason()));
            --j->running;
        });
    auto operator_ = start_operator(registry);
    create(example("kex-stubborn", {{"field", "x"}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("started") == 1; }));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-stubborn");
        return body && has_finalizer(*body);
    }));

    const auto deleting = std::chrono::steady_clock::now();
    remove("kex-stubborn");
    ASSERT_TRUE(eventually([&] { return !get("kex-stubborn").has_value(); }, 30s));
    // Not before the backoff and the timeout have passed.
    EXPECT_GE(std::chrono::steady_clock::now() - deleting, 600ms);
    EXPECT_EQ(j->running.load(), 1);  // orphaned, still running on its thread

    j->release = true;
    ASSERT_TRUE(eventually([&] { return j->calls.count("reason") == 1; }));
    const std::string reason = j->calls.details("reason")[0];
    EXPECT_NE(reason.find("RESOURCE_DELETED"), std::string::npos) << reason;
    EXPECT_NE(reason.find("DAEMON_ABANDONED"), std::string::npos) << reason;
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, CoroutineDaemonIsCancelledByForceAndCleansUp) {
    Registry registry;
    auto j = journal;
    on::daemon sleeper(registry, "kopfexamples",
                       {.id = "sleeper", .cancellation_backoff = 0.1, .cancellation_timeout = 5},
                       [j](Context& ctx) -> Task<void> {
                           j->calls.add("started");
                           try {
                               for (;;) co_await kopf::sleep(100);  // deaf to the flag
                           } catch (const CancelledError&) {
                               j->calls.add("cancelled", to_string(ctx.stopped.reason()));
                               throw;
                           }
                       });
    auto operator_ = start_operator(registry);
    create(example("kex-sleeper", {{"field", "x"}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("started") == 1; }));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-sleeper");
        return body && has_finalizer(*body);
    }));
    remove("kex-sleeper");
    ASSERT_TRUE(eventually([&] { return !get("kex-sleeper").has_value(); }, 30s));
    ASSERT_EQ(j->calls.count("cancelled"), 1);
    const std::string reason = j->calls.details("cancelled")[0];
    EXPECT_NE(reason.find("DAEMON_CANCELLED"), std::string::npos) << reason;
    EXPECT_EQ(reason.find("DAEMON_ABANDONED"), std::string::npos) << reason;
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, CoroutineDaemonSleepingSeesTheLatestBodyAndItsPatchesLand) {
    Registry registry;
    auto j = journal;
    on::daemon poller(registry, "kopfexamples", {.id = "poller", .cancellation_timeout = 1},
                      [j](Context& ctx) -> Task<void> {
                          for (int n = 1;; ++n) {
                              j->calls.add("field", ctx.spec.value("field", ""));
                              ctx.patch.status()["polls"] = n;
                              co_await kopf::sleep(0.05);  // never looks at ctx.stopped
                          }
                      });
    auto operator_ = start_operator(registry);
    create(example("kex-poller", {{"field", "one"}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("field") >= 2; }));
    patch("kex-poller", {{"spec", {{"field", "two"}}}});
    ASSERT_TRUE(eventually([&] {
        auto fields = j->calls.details("field");
        return fields.back() == "two";
    }));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-poller");
        return body && body->value("/status/polls"_json_pointer, 0) >= 3;
    }));
    remove("kex-poller");
    ASSERT_TRUE(eventually([&] { return !get("kex-poller").has_value(); }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, FiltersFlippingOffAndOnStopAndRespawnTheDaemon) {
    Registry registry;
    auto j = journal;
    on::daemon labelled(registry, "kopfexamples",
                        {.id = "labelled", .labels = {{"watched", "yes"}}},
                        [j](Context& ctx) -> Task<void> {
                            j->calls.add("started");
                            while (!ctx.stopped) co_await ctx.stopped.wait(10);
                            j->calls.add("reason", to_string(ctx.stopped.reason()));
                        });
    auto operator_ = start_operator(registry);
    create(example("kex-filters", {{"field", "x"}}, {{"labels", {{"watched", "yes"}}}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("started") == 1; }));

    patch("kex-filters", {{"metadata", {{"labels", {{"watched", "no"}}}}}});
    ASSERT_TRUE(eventually([&] { return j->calls.count("reason") == 1; }));
    EXPECT_EQ(j->calls.details("reason")[0], "FILTERS_MISMATCH");
    // Not matching: no daemon, and no finalizer kept for it.
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-filters");
        return body && !has_finalizer(*body);
    }));

    patch("kex-filters", {{"metadata", {{"labels", {{"watched", "yes"}}}}}});
    ASSERT_TRUE(eventually([&] { return j->calls.count("started") == 2; }));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-filters");
        return body && has_finalizer(*body);
    }));
    remove("kex-filters");
    ASSERT_TRUE(eventually([&] { return !get("kex-filters").has_value(); }));
    ASSERT_EQ(j->calls.count("reason"), 2);  // the finalizer waited for the daemon's exit
    EXPECT_EQ(j->calls.details("reason").back(), "RESOURCE_DELETED");
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, OperatorExitStopsTheDaemonsAndARestartRespawnsThem) {
    Registry registry;
    auto j = journal;
    on::daemon sync_daemon(registry, "kopfexamples", {.id = "sync_daemon"}, [j](Context& ctx) {
        j->calls.add("sync started", ctx.name);
        while (!ctx.stopped) ctx.stopped.wait(30);
        j->calls.add("sync reason", to_string(ctx.stopped.reason()));
    });
    on::daemon async_daemon(registry, "kopfexamples", {.id = "async_daemon"},
                            [j](Context& ctx) -> Task<void> {
                                j->calls.add("async started", ctx.name);
                                co_await ctx.stopped.wait();
                                j->calls.add("async reason", to_string(ctx.stopped.reason()));
                            });
    auto operator_ = start_operator(registry);
    create(example("kex-exit-1", {{"field", "x"}}));
    create(example("kex-exit-2", {{"field", "y"}}));
    ASSERT_TRUE(eventually([&] {
        return j->calls.count("sync started") == 2 && j->calls.count("async started") == 2;
    }));

    EXPECT_EQ(operator_->stop(), "");
    EXPECT_EQ(j->calls.details("sync reason"),
              (std::vector<json>{"OPERATOR_EXITING", "OPERATOR_EXITING"}));
    EXPECT_EQ(j->calls.details("async reason"),
              (std::vector<json>{"OPERATOR_EXITING", "OPERATOR_EXITING"}));
    // The objects keep their finalizer: the daemons will run again with the next operator.
    for (const char* name : {"kex-exit-1", "kex-exit-2"}) {
        auto body = get(name);
        ASSERT_TRUE(body.has_value());
        EXPECT_TRUE(has_finalizer(*body)) << body->dump(2);
    }

    operator_ = start_operator(registry);
    ASSERT_TRUE(eventually([&] {
        return j->calls.count("sync started") == 4 && j->calls.count("async started") == 4;
    }));
    remove("kex-exit-1");
    remove("kex-exit-2");
    ASSERT_TRUE(eventually(
        [&] { return !get("kex-exit-1").has_value() && !get("kex-exit-2").has_value(); }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, DaemonRetriesTemporaryErrorsThenSucceedsOnceWithItsResultAndPatch) {
    Registry registry;
    auto j = journal;
    on::daemon flaky(registry, "kopfexamples", {.id = "flaky", .backoff = 0.1},
                     [j](Context& ctx) -> json {
                         j->calls.add("attempt", ctx.retry);
                         if (ctx.retry < 2) {
                             ctx.patch.status()["message"] =
                                 "Failed " + std::to_string(ctx.retry + 1) + " times.";
                             throw TemporaryError("Simulated failure.", 0.1);
                         }
                         if (ctx.retry == 2) throw std::runtime_error("An arbitrary error.");
                         ctx.patch.status()["message"] = "Accompanying is finished.";
                         return {{"finished", true}};
                     });
    auto operator_ = start_operator(registry);
    create(example("kex-flaky", {{"field", "x"}}));
    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        body = get("kex-flaky");
        return body && body->value("/status/flaky/finished"_json_pointer, json()) == true &&
               body->value("/status/message"_json_pointer, json()) == "Accompanying is finished.";
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ(j->calls.details("attempt"), (std::vector<json>{0, 1, 2, 3}));
    // Exited on its own: not restarted by later changes of the object.
    patch("kex-flaky", {{"spec", {{"field", "changed"}}}});
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(j->calls.count("attempt"), 4);
    // Nothing left to hold the object: it goes at once.
    remove("kex-flaky");
    ASSERT_TRUE(eventually([&] { return !get("kex-flaky").has_value(); }, 10s));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, RunningDaemonPatchIsWrittenWhenItWaitsOnItsFlag) {
    Registry registry;
    auto j = journal;
    on::daemon counter(registry, "kopfexamples", {.id = "counter"}, [j](Context& ctx) {
        int n = 0;
        while (!ctx.stopped) {
            ctx.patch.status()["beats"] = ++n;
            ctx.stopped.wait(0.1);
        }
    });
    auto operator_ = start_operator(registry);
    create(example("kex-beats", {{"field", "x"}}));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-beats");
        return body && body->value("/status/beats"_json_pointer, 0) >= 3;
    }));
    remove("kex-beats");
    ASSERT_TRUE(eventually([&] { return !get("kex-beats").has_value(); }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, TimerPatchesTheObjectWithItsLatestBodyAndNeverOverlapsItself) {
    Registry registry;
    auto j = journal;
    on::timer ticker(registry, "kopfexamples", {.id = "ticker", .interval = 0.1},
                     [j](Context& ctx) -> json {
                         if (++j->running > 1) j->calls.add("overlap");
                         const int n = j->calls.add("tick", ctx.spec.value("field", ""));
                         ctx.patch.status()["seen"] = ctx.spec.value("field", "");
                         std::this_thread::sleep_for(30ms);
                         --j->running;
                         return n;
                     });
    auto operator_ = start_operator(registry);
    create(example("kex-timer", {{"field", "one"}}));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-timer");
        return body && body->value("/status/ticker"_json_pointer, 0) >= 3 &&
               body->value("/status/seen"_json_pointer, "") == "one";
    }));
    patch("kex-timer", {{"spec", {{"field", "two"}}}});
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-timer");
        return body && body->value("/status/seen"_json_pointer, "") == "two";
    }));
    remove("kex-timer");
    ASSERT_TRUE(eventually([&] { return !get("kex-timer").has_value(); }));
    const int ticks = j->calls.count("tick");
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(j->calls.count("tick"), ticks);  // no ticks for a deleted object
    EXPECT_EQ(j->calls.count("overlap"), 0);
    EXPECT_EQ(operator_->stop(), "");
}

// The events of an object served by timers alone that change only its status (the echoes of
// the timer's own patches, another writer's notes) go straight to the timer's views; whatever
// the timer's filters and finalizer depend on is still handled as any event is.
TEST_F(Daemons, TimerSeesStatusChangesAndItsFiltersAndFinalizerAreStillHandled) {
    Registry registry;
    auto j = journal;
    on::timer counter(registry, "kopfexamples",
                      {.id = "counter", .interval = 0.05, .labels = {{"counted", "yes"}}},
                      [j](Context& ctx) -> Task<void> {
                          const int seen = ctx.status.value("count", 0);
                          j->calls.add("seen", {seen, ctx.status.value("note", "")});
                          ctx.patch.status()["count"] = seen + 1;
                          co_return;
                      });
    auto operator_ = start_operator(registry);
    create(example("kex-counter", {{"field", "x"}}, {{"labels", {{"counted", "yes"}}}}));
    // Each tick sees the count its previous ticks wrote: never less than the last one saw.
    ASSERT_TRUE(eventually([&] { return j->calls.count("seen") >= 6; }));
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-counter");
        return body && has_finalizer(*body) && body->value("/status/count"_json_pointer, 0) >= 6;
    }));

    // Another writer's status note reaches the views.
    request("PATCH", "/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex-counter/status",
            {{"status", {{"note", "hello"}}}}, "application/merge-patch+json");
    ASSERT_TRUE(eventually([&] {
        auto seen = j->calls.details("seen");
        return seen.back()[1] == "hello";
    }));

    // A finalizer taken away is put back: that event is processed, not only viewed.
    patch("kex-counter", {{"metadata", {{"finalizers", nullptr}}}});
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-counter");
        return body && has_finalizer(*body);
    }));

    // The label filter still stops the timer.
    patch("kex-counter", {{"metadata", {{"labels", {{"counted", "no"}}}}}});
    ASSERT_TRUE(eventually([&] {
        auto body = get("kex-counter");
        return body && !has_finalizer(*body);
    }));
    const int ticks = j->calls.count("seen");
    std::this_thread::sleep_for(300ms);
    EXPECT_LE(j->calls.count("seen"), ticks + 1);  // a tick under way when it stopped, at most

    auto seen = j->calls.details("seen");
    for (std::size_t i = 1; i < seen.size(); ++i)
        EXPECT_GE(seen[i][0].get<int>(), seen[i - 1][0].get<int>()) << i;
    EXPECT_GE(seen.back()[0].get<int>(), 6);
    remove("kex-counter");
    ASSERT_TRUE(eventually([&] { return !get("kex-counter").has_value(); }));
    EXPECT_EQ(operator_->stop(), "");
}

// The common operator: creation, update and deletion handlers beside a status timer. The
// timer's echoes (and another writer's status notes) reach its views; the changing handlers
// still see what is theirs: the creation once, each change of the spec, the deletion.
TEST_F(Daemons, TimerBesideChangingHandlersSeesStatusAndTheHandlersSeeTheirCauses) {
    Registry registry;
    auto j = journal;
    on::create(registry, "kopfexamples", {.id = "create"},
               [j](Context& ctx) { j->calls.add("created", ctx.spec.value("field", "")); });
    on::update(registry, "kopfexamples", {.id = "update"},
               [j](Context& ctx) { j->calls.add("updated", ctx.spec.value("field", "")); });
    on::delete_(registry, "kopfexamples", {.id = "delete"},
                [j](Context& ctx) { j->calls.add("deleted", ctx.status.value("count", 0)); });
    on::timer counter(
        registry, "kopfexamples", {.id = "counter", .interval = 0.05},
        [j](Context& ctx) -> Task<void> {
            const int seen = ctx.status.value("count", 0);
            j->calls.add("seen", {seen, ctx.status.value("note", ""), ctx.spec.value("field", "")});
            ctx.patch.status()["count"] = seen + 1;
            co_return;
        });
    auto operator_ = start_operator(registry);
    create(example("kex-mixed", {{"field", "one"}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("seen") >= 8; }));
    request("PATCH", "/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex-mixed/status",
            {{"status", {{"note", "hello"}}}}, "application/merge-patch+json");
    ASSERT_TRUE(eventually([&] { return j->calls.details("seen").back()[1] == "hello"; }));

    patch("kex-mixed", {{"spec", {{"field", "two"}}}});
    ASSERT_TRUE(eventually([&] { return j->calls.count("updated") == 1; }));
    ASSERT_TRUE(eventually([&] { return j->calls.details("seen").back()[2] == "two"; }));
    const int ticks = j->calls.count("seen");
    ASSERT_TRUE(eventually([&] { return j->calls.count("seen") >= ticks + 5; }));

    remove("kex-mixed");
    ASSERT_TRUE(eventually([&] { return !get("kex-mixed").has_value(); }));
    EXPECT_EQ(j->calls.count("created"), 1);
    EXPECT_EQ(j->calls.details("created"), (std::vector<json>{"one"}));
    EXPECT_EQ(j->calls.details("updated"), (std::vector<json>{"two"}));
    ASSERT_EQ(j->calls.count("deleted"), 1);
    auto seen = j->calls.details("seen");
    for (std::size_t i = 1; i < seen.size(); ++i)
        EXPECT_GE(seen[i][0].get<int>(), seen[i - 1][0].get<int>()) << i;
    // The deletion handler saw the count the last tick read, or the one it wrote.
    EXPECT_GE(j->calls.details("deleted")[0].get<int>(), seen.back()[0].get<int>());
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, IdleTimerWaitsForTheObjectToStayUnchanged) {
    Registry registry;
    auto j = journal;
    on::timer quiet(registry, "kopfexamples", {.id = "quiet", .interval = 0.1, .idle = 1.0},
                    [j](Context& ctx) { j->calls.add("tick", ctx.spec.value("field", "")); });
    auto operator_ = start_operator(registry);
    create(example("kex-idle", {{"field", "0"}}));
    // Changes every 0.3 s keep it idle-waiting.
    for (int i = 1; i <= 6; ++i) {
        std::this_thread::sleep_for(300ms);
        patch("kex-idle", {{"spec", {{"field", std::to_string(i)}}}});
    }
    EXPECT_EQ(j->calls.count("tick"), 0);
    ASSERT_TRUE(eventually([&] { return j->calls.count("tick") >= 2; }));
    EXPECT_EQ(j->calls.details("tick")[0], "6");
    remove("kex-idle");
    ASSERT_TRUE(eventually([&] { return !get("kex-idle").has_value(); }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Daemons, InvalidDurationsAreRefusedWithTheHandlerNamed) {
    Registry registry;
    auto noop = [](Context&) {};
    try {
        on::timer bad(registry, "kopfexamples", {.id = "bad", .interval = -1}, noop);
        FAIL() << "a negative interval was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("Timer 'bad'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(".interval"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(registry.spawning.empty());
}

}  // namespace
}  // namespace kopf::testing
