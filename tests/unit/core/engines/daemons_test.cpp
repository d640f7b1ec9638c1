// The timing rules of daemons and timers on a virtual clock: initial delays, intervals (plain
// and sharp), idling, error backoffs, and the stopping phases (graceful, forced, abandoned,
// polling) as they show in the processing's delays and the finalizer.
#include "core/engines/daemons.hpp"

#include <gtest/gtest.h>

#include <coroutine>

#include "core/intents/stoppers.hpp"
#include "unit/core/support/harness.hpp"

namespace kopf::testing {
namespace {

const std::string FINALIZER = "kopf.zalando.org/KopfFinalizerMarker";

bool has_finalizer(const json& body) {
    for (const auto& item : body.value("/metadata/finalizers"_json_pointer, json::array()))
        if (item == FINALIZER) return true;
    return false;
}

// The processing of one object with daemons and timers, all on one virtual clock.
struct DaemonsBed {
    loop::VirtualExecutor ex;
    Registry registry;
    OperatorSettings settings;
    Resource resource = kopfexamples();
    reactor::ResourceMemory memory;
    std::vector<std::pair<LogLevel, std::string>> lines;
    std::vector<json> written;  // the daemons' patches, in order
    json body = example_body();
    std::unique_ptr<engines::DaemonsEngine> engine;
    const actions::TimePoint epoch = actions::Clock::from_time_t(1795735298);

    actions::TimePoint wall() const {
        return epoch + std::chrono::duration_cast<actions::Clock::duration>(
                           std::chrono::duration<double>(ex.now()));
    }

    double write_delay = 0;              // virtual seconds that each patch takes to write
    std::function<void()> on_written{};  // after each

    static Task<void> record(DaemonsBed* bed, Patch patch) {
        if (bed->write_delay > 0) co_await kopf::sleep(bed->write_delay);
        bed->written.push_back(patch.merge);
        bed->body.merge_patch(patch.merge);
        if (bed->on_written) bed->on_written();
    }

    void start() {
        engines::DaemonsEnv env{ex, std::make_shared<const OperatorSettings>(settings), Client(),
                                [this](const Resource&, const json&, Patch patch, Logger&) {
                                    return record(this, std::move(patch));
                                }};
        env.now = [this] { return wall(); };
        engine = std::make_unique<engines::DaemonsEngine>(std::move(env), registry.spawning);
        memory.memo = std::make_shared<Memo>();
    }

    // Processes one event of the current body and applies its patch; returns its delays.
    std::vector<double> event(const std::string& type = "MODIFIED") {
        reactor::ProcessingEnv env{registry, settings};
        env.now = [this] { return wall(); };
        env.make_logger = [this](const json&) { return std::make_shared<RecordingLogger>(&lines); };
        env.daemons = engine.get();
        json raw = {{"type", type}, {"object", body}};
        std::optional<reactor::ProcessingOutcome> out;
        kopf::start_detached<reactor::ProcessingOutcome>(
            ex, reactor::process_resource_event(env, resource, memory, std::move(raw)),
            [&out](std::exception_ptr error, std::optional<reactor::ProcessingOutcome> o) {
                if (error) std::rethrow_exception(error);
                out = std::move(o);
            });
        while (!out) ex.run_until(ex.now());
        json ops = out->json_patch();
        if (!out->patch.merge.empty()) body.merge_patch(out->patch.merge);
        if (!ops.empty()) body = body.patch(ops);
        return out->delays;
    }

    // Daemons still running at the end are stopped as at the operator's exit (no frame leaks).
    ~DaemonsBed() {
        if (!engine) return;
        engine->stop_all([] {});
        ex.run_until(ex.now() + 3600);
    }

    void run_until(double t) { ex.run_until(t); }
    void mark_deleted() { body["metadata"]["deletionTimestamp"] = "2026-11-25T10:00:00Z"; }
    bool logged(const std::string& text) const {
        for (const auto& [level, line] : lines)
            if (line.find(text) != std::string::npos) return true;
        return false;
    }
};

// A handler recording the virtual times of its calls.
struct Times {
    std::vector<double> at;
};

TEST(DaemonTiming, DaemonStartsAfterItsInitialDelayAndSpawnsOnce) {
    DaemonsBed bed;
    Times times;
    on::daemon d(bed.registry, "kopfexamples", {.id = "d", .initial_delay = 30},
                 [&](Context& ctx) -> Task<void> {
                     times.at.push_back(bed.ex.now());
                     co_await ctx.stopped.wait();
                 });
    bed.start();
    bed.event("");
    bed.run_until(29.9);
    EXPECT_TRUE(times.at.empty());
    bed.event();  // another event: the daemon already runs, it is not spawned twice
    bed.run_until(100);
    EXPECT_EQ(times.at, (std::vector<double>{30}));
    EXPECT_TRUE(has_finalizer(bed.body)) << bed.body.dump();
    EXPECT_EQ(bed.engine->running(), 1u);
}

TEST(DaemonTiming, CallableInitialDelayIsAFunctionOfTheContextAtEachSpawn) {
    DaemonsBed bed;
    bed.body["spec"]["warmup"] = 12.5;
    Times times;
    std::vector<std::string> asked;  // the contexts the delay function saw
    on::daemon d(bed.registry, "kopfexamples",
                 {.id = "d",
                  .param = "p",
                  .initial_delay =
                      [&](Context& ctx) {
                          asked.push_back(ctx.name + " " + ctx.param.get<std::string>() + " " +
                                          ctx.spec["field"].get<std::string>());
                          return ctx.spec["warmup"].get<double>();
                      },
                  .labels = {{"run", "yes"}}},
                 [&](Context& ctx) -> Task<void> {
                     times.at.push_back(bed.ex.now());
                     co_await ctx.stopped.wait();
                 });
    bed.body["metadata"]["labels"]["run"] = "yes";
    bed.start();
    bed.event("");
    bed.run_until(12.4);
    EXPECT_TRUE(times.at.empty());
    bed.run_until(20);
    EXPECT_EQ(times.at, (std::vector<double>{12.5}));
    EXPECT_EQ(asked, (std::vector<std::string>{"kopf-example-1 p value"}));

    // Filtered out, then in again with another warm-up: a new spawn asks again.
    bed.body["metadata"]["labels"]["run"] = "no";
    bed.event();
    bed.run_until(30);
    EXPECT_EQ(bed.engine->running(), 0u);
    bed.body["metadata"]["labels"]["run"] = "yes";
    bed.body["spec"]["warmup"] = 3;
    bed.event();
    bed.run_until(50);
    EXPECT_EQ(times.at, (std::vector<double>{12.5, 33}));
    EXPECT_EQ(asked.size(), 2u);
}

TEST(DaemonTiming, TimerCallableInitialDelayTakesDurationsAndNegativeMeansNone) {
    DaemonsBed bed;
    Times late, early;
    on::timer t1(bed.registry, "kopfexamples",
                 {.id = "late",
                  .interval = 1.0,
                  .initial_delay = [](Context&) { return std::chrono::seconds(5); }},
                 [&](Context&) -> Task<void> {
                     late.at.push_back(bed.ex.now());
                     co_return;
                 });
    on::timer t2(bed.registry, "kopfexamples",
                 {.id = "early", .interval = 1.0, .initial_delay = [](Context&) { return -7; }},
                 [&](Context&) -> Task<void> {
                     early.at.push_back(bed.ex.now());
                     co_return;
                 });
    bed.start();
    bed.event("");
    bed.run_until(7.5);
    EXPECT_EQ(late.at, (std::vector<double>{5, 6, 7}));
    ASSERT_FALSE(early.at.empty());
    EXPECT_EQ(early.at.front(), 0);
}

TEST(DaemonTiming, HandlerThrowingBeforeItsCoroutineStartsIsRetriedLikeAnyError) {
    DaemonsBed bed;
    int calls = 0;
    // Not a coroutine: it throws as it is called, before any task exists.
    on::daemon d(bed.registry, "kopfexamples", {.id = "d", .backoff = 10},
                 [&](Context&) -> Task<json> {
                     ++calls;
                     throw std::runtime_error("too early");
                 });
    bed.start();
    bed.event("");
    bed.run_until(25);
    EXPECT_EQ(calls, 3);  // at 0, 10 and 20
    EXPECT_TRUE(bed.logged("will try again in 10 seconds: too early"));
}

// A body as users have them: Kopf's own annotations, labels, a deeply nested spec.
json rich_body(const std::string& leaf) {
    json body = example_body();
    body["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"] =
        R"({"spec":{"field":"value"}})";
    body["metadata"]["finalizers"] = json::array({FINALIZER});
    json* level = &body["spec"]["deep"];
    for (int i = 0; i < 64; ++i) level = &(*level)["level"];
    *level = leaf;
    return body;
}

std::string deepest(const json& spec) {
    const json* level = &spec["deep"];
    for (int i = 0; i < 64; ++i) level = &(*level)["level"];
    return level->get<std::string>();
}

TEST(DaemonTiming, CoroutineDaemonViewsFollowTheObjectAndStayValidAcrossItsWaits) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    auto seen = std::make_shared<std::vector<json>>();  // heap state, as users' closures hold
    on::daemon d(bed.registry, "kopfexamples", {.id = "d"}, [seen](Context& ctx) -> Task<void> {
        const json& spec = ctx.spec;  // a view, kept across the waits
        const json& annotations = ctx.annotations;
        while (!ctx.stopped) {
            seen->push_back({deepest(spec), ctx.labels.value("somelabel", ""),
                             annotations.value("kopf.zalando.org/last-handled-"
                                               "configuration",
                                               "")});
            co_await kopf::sleep(1);
        }
    });
    bed.start();
    bed.event("");
    bed.run_until(0.5);
    bed.body = rich_body("second");
    bed.body["metadata"]["labels"]["somelabel"] = "changed";
    bed.body["metadata"]["annotations"].erase("kopf.zalando.org/last-handled-configuration");
    bed.event();
    bed.run_until(1.5);
    ASSERT_EQ(seen->size(), 2u);
    EXPECT_EQ((*seen)[0], json({"first", "somevalue", R"({"spec":{"field":"value"}})"}));
    EXPECT_EQ((*seen)[1], json({"second", "changed", ""}));
}

// The views are refreshed in place, copying only what changed: they must still equal the
// object exactly after every kind of change (a number's type, keys gone, lists longer and
// shorter, a list becoming an object), and a view kept across the waits must stay valid.
TEST(DaemonTiming, CoroutineDaemonViewsEqualTheObjectAfterEveryKindOfChange) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    bed.body["spec"]["count"] = 1;
    bed.body["spec"]["items"] = json::array({1, 2, 3});
    bed.body["spec"]["gone"] = {{"nested", true}};
    bed.body["status"] = {{"phase", "one"}, {"list", json::array({{{"a", 1}}})}};
    auto seen = std::make_shared<std::vector<json>>();
    on::daemon d(bed.registry, "kopfexamples", {.id = "d"}, [seen](Context& ctx) -> Task<void> {
        const json& body = ctx.body;
        while (!ctx.stopped) {
            seen->push_back(body);
            co_await kopf::sleep(1);
        }
    });
    bed.start();
    bed.event("");
    bed.run_until(0.5);
    std::vector<json> expected{bed.body};
    bed.body["spec"]["count"] = 1.0;                           // the same number, a float now
    bed.body["spec"]["items"] = json::array({1, {{"x", 2}}});  // shorter, an element's type
    bed.body["spec"].erase("gone");
    bed.body["spec"]["new"] = json::array({"a", "b"});
    bed.body["status"]["list"] = {{"now", "an object"}};
    bed.body["status"]["phase"] = "two";
    bed.body["metadata"]["labels"]["added"] = "yes";
    bed.event();
    bed.run_until(1.5);
    expected.push_back(bed.body);
    bed.body["spec"]["items"] = json::array({1, {{"x", 3}}, 4, 5});  // longer
    bed.body["spec"]["count"] = 2;
    bed.body["metadata"]["labels"].erase("added");
    bed.event();
    bed.run_until(2.5);
    expected.push_back(bed.body);
    ASSERT_EQ(seen->size(), 3u);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        // Compared as text: nlohmann's == takes 1 and 1.0 for equal.
        EXPECT_EQ((*seen)[i]["spec"].dump(), expected[i]["spec"].dump()) << i;
        EXPECT_EQ((*seen)[i]["status"].dump(), expected[i]["status"].dump()) << i;
        EXPECT_EQ((*seen)[i]["metadata"]["labels"].dump(), expected[i]["metadata"]["labels"].dump())
            << i;
    }
}

// What did not change stays where it was (a reference into it stays valid), what changed is
// there at the next resumption, and a view the object no longer has is empty, not stale.
TEST(DaemonTiming, CoroutineDaemonViewsKeepUnchangedNodesInPlaceAndEmptyTheViewsGone) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    bed.body["status"] = {{"phase", "one"}};
    struct Seen {
        const json* deep = nullptr;  // ctx.spec["deep"] at each step
        const json* name = nullptr;  // ctx.meta["name"]
        json status;
        json spec_field;
    };
    auto seen = std::make_shared<std::vector<Seen>>();
    on::daemon d(bed.registry, "kopfexamples", {.id = "d"}, [seen](Context& ctx) -> Task<void> {
        while (!ctx.stopped) {
            seen->push_back({&ctx.spec["deep"], &ctx.meta["name"], ctx.status,
                             ctx.spec.value("field", json())});
            co_await kopf::sleep(1);
        }
    });
    bed.start();
    bed.event("");
    bed.run_until(0.5);
    bed.body["status"]["phase"] = "two";  // as a timer's own patch does
    bed.body["metadata"]["resourceVersion"] = "2";
    bed.event();
    bed.run_until(1.5);
    bed.body.erase("status");  // gone from the object
    bed.body["spec"]["field"] = "changed";
    bed.event();
    bed.run_until(2.5);
    ASSERT_EQ(seen->size(), 3u);
    for (const auto& s : *seen) {
        EXPECT_EQ(s.deep, (*seen)[0].deep);
        EXPECT_EQ(s.name, (*seen)[0].name);
    }
    EXPECT_EQ((*seen)[0].status, json({{"phase", "one"}}));
    EXPECT_EQ((*seen)[1].status, json({{"phase", "two"}}));
    EXPECT_EQ((*seen)[2].status, json::object());
    EXPECT_EQ((*seen)[1].spec_field, "value");
    EXPECT_EQ((*seen)[2].spec_field, "changed");
}

// An object whose daemons are all filtered out keeps no copy of its body; the event that spawns
// a daemon makes the views, and the daemon sees that event's body, not an older one.
TEST(DaemonTiming, FilteredOutObjectsKeepNoViewsAndASpawnSeesTheLatestBody) {
    DaemonsBed bed;
    auto seen = std::make_shared<std::vector<std::string>>();
    on::daemon d(bed.registry, "kopfexamples", {.id = "d", .labels = {{"run", "yes"}}},
                 [seen](Context& ctx) -> Task<void> {
                     while (!ctx.stopped) {
                         seen->push_back(ctx.spec["field"].get<std::string>());
                         co_await kopf::sleep(1);
                     }
                 });
    bed.body["metadata"]["labels"]["run"] = "no";
    bed.start();
    bed.event("");
    bed.body["spec"]["field"] = "second";
    bed.event();
    bed.run_until(1);
    ASSERT_TRUE(bed.memory.daemons);
    EXPECT_EQ(bed.memory.daemons->live(), json::object());
    EXPECT_TRUE(seen->empty());
    bed.body["metadata"]["labels"]["run"] = "yes";
    bed.body["spec"]["field"] = "third";
    bed.event();
    bed.run_until(1.5);
    bed.body["spec"]["field"] = "fourth";
    bed.event();
    bed.run_until(2.5);
    EXPECT_EQ(*seen, (std::vector<std::string>{"third", "fourth"}));
    EXPECT_EQ(bed.memory.daemons->live()["spec"]["field"], "fourth");
}

// The executor of a coroutine that waits on a daemon's flag (e.g. a background task's), counting
// what goes through it.
class CountingExecutor final : public Executor {
  public:
    explicit CountingExecutor(loop::VirtualExecutor& loop) : loop_(loop) {}
    void post(std::function<void()> fn) override {
        ++posts;
        loop_.post(std::move(fn));
    }
    void post_after(double seconds, std::function<void()> fn) override {
        ++posts;
        loop_.post_after(seconds, std::move(fn));
    }
    void run_blocking(std::function<void()> work, std::function<void()> done) override {
        loop_.run_blocking(std::move(work), std::move(done));
    }
    double now() const override { return loop_.now(); }
    int posts = 0;

  private:
    loop::VirtualExecutor& loop_;
};

Task<void> wait_on(DaemonStopped stopped, double timeout, std::shared_ptr<std::vector<bool>> got) {
    got->push_back(co_await stopped.wait(timeout));
}

// A wait that ended by its timeout is left alone when the flag is set later: neither resumed
// again nor posted through its executor, which may be gone by then (a background task's). The
// flag keeps no more than the waits still pending.
TEST(DaemonStopFlag, AWaitEndedByItsTimeoutIsLeftAloneWhenTheFlagIsSet) {
    loop::VirtualExecutor loop;
    CountingExecutor executor(loop);
    auto got = std::make_shared<std::vector<bool>>();
    // Set after the wait has timed out: nothing goes through the executor.
    auto flag = std::make_shared<detail::StopFlag>(detail::StopFlag::Mode::SUSPENDING);
    start_detached(executor, wait_on(DaemonStopped(flag), 1, got), [](std::exception_ptr) {});
    loop.run_until(2);
    EXPECT_EQ(*got, std::vector<bool>{false});  // timed out
    int posts = executor.posts;
    flag->set(StopReason::RESOURCE_DELETED);
    EXPECT_EQ(executor.posts, posts);
    loop.run_until(3);
    EXPECT_EQ(*got, std::vector<bool>{false});
    // A wait timed out, then another one pending when the flag is set: only that one is woken.
    got->clear();
    auto other = std::make_shared<detail::StopFlag>(detail::StopFlag::Mode::SUSPENDING);
    start_detached(executor, wait_on(DaemonStopped(other), 1, got), [](std::exception_ptr) {});
    loop.run_until(5);
    start_detached(executor, wait_on(DaemonStopped(other), -1, got), [](std::exception_ptr) {});
    loop.run_until(6);
    posts = executor.posts;
    other->set(StopReason::RESOURCE_DELETED);
    EXPECT_EQ(executor.posts, posts + 1);
    loop.run_until(7);
    EXPECT_EQ(*got, (std::vector<bool>{false, true}));
}

TEST(DaemonTiming, PlainTimerCountsItsIntervalFromTheEndOfEachRun) {
    DaemonsBed bed;
    Times times;
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0},
                [&](Context&) -> Task<void> {
                    times.at.push_back(bed.ex.now());
                    co_await kopf::sleep(0.3);
                });
    bed.start();
    bed.event("");
    bed.run_until(4.0);
    ASSERT_EQ(times.at.size(), 4u);
    for (std::size_t i = 0; i < times.at.size(); ++i)
        EXPECT_NEAR(times.at[i], 1.3 * static_cast<double>(i), 1e-9) << i;
}

// As Kopf's timer awaits its patch before it sleeps: the interval starts once the tick's patch
// is written, and a slow API server spaces the ticks out instead of queueing their patches.
TEST(DaemonTiming, TimersIntervalStartsAfterItsPatchIsWritten) {
    DaemonsBed bed;
    Times times;
    std::vector<std::size_t> written_before;  // patches written when each tick began
    std::vector<double> written_at;
    bed.write_delay = 0.5;
    bed.on_written = [&] { written_at.push_back(bed.ex.now()); };
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0},
                [&](Context& ctx) -> Task<void> {
                    times.at.push_back(bed.ex.now());
                    written_before.push_back(bed.written.size());
                    ctx.patch.status()["tick"] = static_cast<int>(times.at.size());
                    co_return;
                });
    bed.start();
    bed.event("");
    bed.run_until(5.2);  // ticks at 0, 1.5, 3 and 4.5; the fourth patch written at 5
    ASSERT_EQ(times.at.size(), 4u);
    for (std::size_t i = 0; i < times.at.size(); ++i) {
        EXPECT_NEAR(times.at[i], 1.5 * static_cast<double>(i), 1e-9) << i;
        EXPECT_EQ(written_before[i], i) << i;
    }
    ASSERT_EQ(written_at.size(), 4u);
    EXPECT_NEAR(written_at[3], 5.0, 1e-9);
    EXPECT_EQ(bed.body["status"]["tick"], 4);
}

TEST(DaemonTiming, SharpTimerKeepsToItsGridWhateverTheRunTakes) {
    DaemonsBed bed;
    Times times;
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0, .sharp = true},
                [&](Context&) -> Task<void> {
                    times.at.push_back(bed.ex.now());
                    co_await kopf::sleep(0.3);
                });
    bed.start();
    bed.event("");
    bed.run_until(3.5);
    EXPECT_EQ(times.at, (std::vector<double>{0, 1, 2, 3}));
}

TEST(DaemonTiming, IdleTimerWaitsForNoEssentialChangeAndAnyChangeRestartsTheCountdown) {
    DaemonsBed bed;
    Times times;
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0, .idle = 5.0},
                [&](Context&) -> Task<void> {
                    times.at.push_back(bed.ex.now());
                    co_return;
                });
    bed.start();
    bed.event("");  // the creation counts as a change
    bed.run_until(2.0);
    bed.body["spec"]["field"] = "changed";
    bed.event();  // an essential change at 2: the first run moves to 7
    bed.run_until(9.5);
    EXPECT_EQ(times.at, (std::vector<double>{7, 8, 9}));
    bed.body["status"]["whatever"] = 1;
    // Only a status change; but without changing handlers no diff base is kept, so every event
    // restarts the countdown (as in Kopf).
    bed.event();
    bed.run_until(20);
    EXPECT_EQ(times.at.size(), 3u + 6u);
    EXPECT_DOUBLE_EQ(times.at[3], 14.5);
}

TEST(DaemonTiming, TimerErrorsOverrideItsScheduleWithTheBackoff) {
    // Kopf's docs: failing 3 times with backoff 5 and interval 10 takes 25 s per cycle.
    DaemonsBed bed;
    Times times;
    int retries_seen = -1;
    on::timer t(bed.registry, "kopfexamples",
                {.id = "t", .errors = ErrorsMode::TEMPORARY, .backoff = 5, .interval = 10},
                [&](Context& ctx) -> Task<void> {
                    times.at.push_back(bed.ex.now());
                    retries_seen = ctx.retry;
                    if (ctx.retry < 3) throw std::runtime_error("boom");
                    co_return;
                });
    bed.start();
    bed.event("");
    bed.run_until(26);
    EXPECT_EQ(times.at, (std::vector<double>{0, 5, 10, 15, 25}));
    EXPECT_EQ(retries_seen, 0);  // the new cycle starts its retries from scratch
    EXPECT_TRUE(bed.logged("Timer 't' failed with an exception and will try again in 5 seconds"));
}

TEST(DaemonTiming, DaemonRestartsAfterTemporaryErrorDelayAndStopsForGoodOnPermanentError) {
    DaemonsBed bed;
    Times times;
    on::daemon d(bed.registry, "kopfexamples", {.id = "d"}, [&](Context& ctx) -> Task<void> {
        times.at.push_back(bed.ex.now());
        if (ctx.retry < 2) throw TemporaryError("again", 10);
        throw PermanentError("enough");
        co_return;
    });
    bed.start();
    bed.event("");
    bed.run_until(100);
    EXPECT_EQ(times.at, (std::vector<double>{0, 10, 20}));
    EXPECT_TRUE(bed.logged("Daemon 'd' failed permanently: enough"));
    EXPECT_TRUE(bed.logged("Daemon 'd' has exited on its own"));
    // Stopped forever: neither respawned nor holding the object.
    bed.event();
    bed.run_until(200);
    EXPECT_EQ(times.at.size(), 3u);
    EXPECT_FALSE(has_finalizer(bed.body)) << bed.body.dump();
}

TEST(DaemonTiming, DeafCoroutineDaemonIsSignalledThenCancelledThenReleased) {
    DaemonsBed bed;
    bool cancelled_at_backoff_end = false;
    on::daemon d(bed.registry, "kopfexamples",
                 {.id = "d", .cancellation_backoff = 1.0, .cancellation_timeout = 2.0},
                 [&](Context&) -> Task<void> {
                     try {
                         for (;;) co_await kopf::sleep(100);
                     } catch (const CancelledError&) {
                         cancelled_at_backoff_end = bed.ex.now() == 11;
                         throw;
                     }
                 });
    bed.start();
    bed.event("");
    bed.event();  // the finalizer's echo
    ASSERT_TRUE(has_finalizer(bed.body));
    bed.run_until(10);
    bed.mark_deleted();
    EXPECT_EQ(bed.event(), (std::vector<double>{1.0}));  // graceful: wait out the backoff
    EXPECT_TRUE(has_finalizer(bed.body));
    bed.run_until(11);
    EXPECT_EQ(bed.event(), (std::vector<double>{}));  // cancelled: it exits at once
    EXPECT_TRUE(cancelled_at_backoff_end);
    EXPECT_FALSE(has_finalizer(bed.body)) << bed.body.dump();
    EXPECT_TRUE(bed.logged("Daemon 'd' is signalled to exit by force."));
    EXPECT_TRUE(bed.logged("Daemon 'd' is cancelled. Will escalate."));
    EXPECT_EQ(bed.engine->running(), 0u);
}

// Awaiting something that no cancellation reaches (a stuck call): resumed by the test itself.
struct Stuck {
    std::coroutine_handle<>* parked;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const noexcept { *parked = h; }
    void await_resume() const noexcept {}
};
Stuck park(std::coroutine_handle<>* parked) {
    return Stuck{parked};
}

TEST(DaemonTiming, StuckDaemonIsAbandonedAfterBackoffPlusTimeoutAndTheObjectReleased) {
    DaemonsBed bed;
    std::coroutine_handle<> parked;
    on::daemon d(bed.registry, "kopfexamples",
                 {.id = "d", .cancellation_backoff = 1.0, .cancellation_timeout = 2.0},
                 [&](Context&) -> Task<void> { co_await park(&parked); });
    bed.start();
    bed.event("");
    bed.event();
    bed.run_until(10);
    bed.mark_deleted();
    EXPECT_EQ(bed.event(), (std::vector<double>{1.0}));
    bed.run_until(11);
    EXPECT_EQ(bed.event(), (std::vector<double>{2.0}));  // cancelled, but still there
    EXPECT_TRUE(has_finalizer(bed.body));
    bed.run_until(13);
    EXPECT_EQ(bed.event(), (std::vector<double>{}));  // abandoned: released
    EXPECT_FALSE(has_finalizer(bed.body)) << bed.body.dump();
    EXPECT_TRUE(bed.logged("Daemon 'd' did not exit in time. Leaving it orphaned."));
    EXPECT_EQ(bed.engine->abandoned(), 1u);
    ASSERT_TRUE(parked);
    parked.resume();  // let it end (no leak)
    bed.run_until(14);
    EXPECT_EQ(bed.engine->running(), 0u);
}

TEST(DaemonTiming, DaemonWithoutCancellationTimeoutIsPolledAndHoldsTheObject) {
    DaemonsBed bed;
    std::coroutine_handle<> parked;
    on::daemon d(bed.registry, "kopfexamples", {.id = "d", .cancellation_polling = 7},
                 [&](Context&) -> Task<void> { co_await park(&parked); });
    bed.settings.background.cancellation_polling = 60;
    bed.start();
    bed.event("");
    bed.event();
    bed.mark_deleted();
    EXPECT_EQ(bed.event(), (std::vector<double>{7.0}));
    bed.run_until(1000);
    EXPECT_EQ(bed.event(), (std::vector<double>{7.0}));  // never abandoned
    EXPECT_TRUE(has_finalizer(bed.body));
    EXPECT_TRUE(bed.logged("Daemon 'd' is still exiting. The next check is in 7 seconds."));
    parked.resume();
    bed.run_until(1001);
    EXPECT_EQ(bed.event(), (std::vector<double>{}));
    EXPECT_FALSE(has_finalizer(bed.body));
}

TEST(DaemonTiming, OperatorExitGivesEachDaemonItsPhases) {
    DaemonsBed bed;
    std::coroutine_handle<> parked;
    bool polite_saw_exit = false;
    on::daemon polite(bed.registry, "kopfexamples", {.id = "polite"},
                      [&](Context& ctx) -> Task<void> {
                          co_await ctx.stopped.wait();
                          polite_saw_exit = ctx.stopped.reason() == StopReason::OPERATOR_EXITING;
                      });
    on::daemon stuck(bed.registry, "kopfexamples",
                     {.id = "stuck", .cancellation_backoff = 1, .cancellation_timeout = 2},
                     [&](Context&) -> Task<void> { co_await park(&parked); });
    bed.start();
    bed.event("");
    bool finished = false;
    double finished_at = -1;
    bed.engine->stop_all([&] {
        finished = true;
        finished_at = bed.ex.now();
    });
    bed.run_until(100);
    EXPECT_TRUE(polite_saw_exit);
    ASSERT_TRUE(finished);
    EXPECT_DOUBLE_EQ(finished_at, 3.0);  // backoff + timeout of the stuck one
    EXPECT_EQ(bed.engine->abandoned(), 1u);
    parked.resume();
    bed.run_until(101);
}

// 100,000 objects with daemons must not hold 100,000 copies of their kind (names, verbs,
// subresources): the memories of one kind share one; a kind served differently later (its CRD
// gained the status subresource) is a new one, and the memories made before keep theirs.
TEST(DaemonsMemory, ObjectsOfOneKindShareOneCopyOfItAndAChangedKindIsANewOne) {
    DaemonsBed bed;
    bed.start();
    auto logger = std::make_shared<RecordingLogger>(&bed.lines);
    auto first = bed.engine->remember(bed.resource, std::make_shared<Memo>(), logger);
    auto second = bed.engine->remember(bed.resource, std::make_shared<Memo>(), logger);
    EXPECT_EQ(first->resource.get(), second->resource.get());
    EXPECT_EQ(*first->resource, bed.resource);

    Resource changed = bed.resource;
    changed.subresources.push_back("status");
    auto third = bed.engine->remember(changed, std::make_shared<Memo>(), logger);
    EXPECT_NE(third->resource.get(), first->resource.get());
    EXPECT_TRUE(third->resource->has_status_subresource());
    EXPECT_EQ(*first->resource, bed.resource);
    EXPECT_FALSE(first->resource->has_status_subresource());
    EXPECT_EQ(bed.engine->remember(changed, std::make_shared<Memo>(), logger)->resource.get(),
              third->resource.get());
}

// ---- events given to the views instead of a processing (DaemonsEngine::adopt_body) ----

// Offers the bed's body to the daemons' views as a watch line, as the runtime does with an
// idle object's event (the keys in the API servers' order: the views remember such a line's
// text, and read the next one beside it).
bool adopt(DaemonsBed& bed) {
    const std::string line = R"({"type":"MODIFIED","object":)" + bed.body.dump() + "}";
    return bed.engine->adopt_line(*bed.memory.daemons, line);
}

// The echo of a timer's own status patch (and any change of status or metadata alone) goes to
// the views, and the next tick sees it, as it would after a processing.
TEST(DaemonsAdoption, AStatusChangeGoesToTheViewsAndTheNextTickSeesIt) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    auto seen = std::make_shared<std::vector<json>>();
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0},
                [seen](Context& ctx) -> Task<void> {
                    seen->push_back({ctx.status.value("phase", ""), ctx.meta["resourceVersion"],
                                     deepest(ctx.spec)});
                    ctx.patch.status()["ticked"] = true;
                    co_return;
                });
    bed.start();
    bed.event("");
    bed.run_until(0.5);
    bed.body["status"]["phase"] = "two";
    bed.body["metadata"]["resourceVersion"] = "101";
    bed.body["metadata"]["managedFields"] = json::array({{{"manager", "kopf"}}});
    EXPECT_TRUE(adopt(bed));
    bed.run_until(1.5);
    bed.body["status"]["phase"] = "three";
    bed.body["metadata"]["resourceVersion"] = "102";
    bed.body["metadata"].erase("managedFields");
    EXPECT_TRUE(adopt(bed));
    bed.run_until(2.5);
    ASSERT_EQ(seen->size(), 3u);
    EXPECT_EQ((*seen)[0], json({"", "100", "first"}));
    EXPECT_EQ((*seen)[1], json({"two", "101", "first"}));
    EXPECT_EQ((*seen)[2], json({"three", "102", "first"}));
    // The views are the body (with the empty views a context binds to where it has none).
    json views = bed.memory.daemons->live();
    EXPECT_EQ(views.dump(), bed.body.dump());
}

// A synchronous timer reads a copy of its own, taken from the views at each tick: an adopted
// status reaches it too.
TEST(DaemonsAdoption, ASynchronousTimersCopySeesTheAdoptedStatus) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    auto seen = std::make_shared<std::vector<json>>();
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0}, [seen](Context& ctx) {
        seen->push_back({ctx.status.value("phase", ""), deepest(ctx.spec)});
    });
    bed.start();
    bed.event("");
    bed.run_until(0.5);
    bed.body["status"]["phase"] = "two";
    bed.body["metadata"]["resourceVersion"] = "101";
    EXPECT_TRUE(adopt(bed));
    bed.run_until(1.5);
    ASSERT_EQ(seen->size(), 2u);
    EXPECT_EQ((*seen)[0], json({"", "first"}));
    EXPECT_EQ((*seen)[1], json({"two", "first"}));
}

// Whatever the daemons decide on (their filters, the finalizer, the deletion, an idle timer's
// essence) is left to the processing: the event is refused (the views have its body already,
// as the processing would give them).
TEST(DaemonsAdoption, WhatTheDaemonsDecideOnIsLeftToTheProcessing) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    on::timer t(bed.registry, "kopfexamples",
                {.id = "t", .interval = 1.0, .labels = {{"somelabel", "somevalue"}}},
                [](Context&) -> Task<void> { co_return; });
    bed.start();
    bed.event("");
    const json base = bed.body;
    const std::vector<std::pair<std::string, std::function<void(json&)>>> changes{
        {"a label", [](json& b) { b["metadata"]["labels"]["other"] = "x"; }},
        {"an annotation", [](json& b) { b["metadata"]["annotations"]["note"] = "x"; }},
        {"the finalizers", [](json& b) { b["metadata"]["finalizers"] = json::array(); }},
        {"the deletion",
         [](json& b) { b["metadata"]["deletionTimestamp"] = "2026-11-27T00:00:00Z"; }},
        {"the spec", [](json& b) { b["spec"]["field"] = "changed"; }},
        {"a field added to the spec", [](json& b) { b["spec"]["count"] = 1.5; }},
        {"no spec", [](json& b) { b.erase("spec"); }},
        {"another top-level field",
         [](json& b) {
             b["data"] = {{"k", "v"}};
         }},
        {"the kind", [](json& b) { b["kind"] = "Other"; }},
        {"no metadata", [](json& b) { b.erase("metadata"); }},
    };
    for (const auto& [what, change] : changes) {
        bed.body = base;
        change(bed.body);
        bed.body["status"]["phase"] = "changed";
        EXPECT_FALSE(adopt(bed)) << what;
        EXPECT_EQ(bed.memory.daemons->live()["status"]["phase"], "changed") << what;
        bed.body = base;
        EXPECT_FALSE(adopt(bed)) << what << ", back";
    }
    bed.body = base;
    bed.body["status"]["phase"] = "changed";
    EXPECT_TRUE(adopt(bed));
    EXPECT_EQ(bed.memory.daemons->live()["status"]["phase"], "changed");
    EXPECT_TRUE(adopt(bed));  // the same again: nothing changed
    bed.body["metadata"]["deletionTimestamp"] = "2026-11-27T00:00:00Z";
    EXPECT_FALSE(adopt(bed));
    EXPECT_FALSE(adopt(bed));  // still being deleted
}

// After a processing changed the views (a label added), the text of the last adopted echo no
// longer matches them: the next echo is read whole. Read beside that text, the label set back as
// it was there would look unchanged, and the views would keep the processed one.
TEST(DaemonsAdoption, AfterAProcessingTheNextEchoIsReadWhole) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    bed.body["metadata"]["labels"]["somelabel"] = "somevalue";
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0},
                [](Context&) -> Task<void> { co_return; });
    bed.start();
    bed.event("");
    bed.body["status"]["phase"] = "two";
    ASSERT_TRUE(adopt(bed));
    bed.body["metadata"]["labels"]["other"] = "x";
    bed.event();
    ASSERT_EQ(bed.memory.daemons->live()["metadata"]["labels"].value("other", ""), "x");
    bed.body["metadata"]["labels"].erase("other");
    bed.body["status"]["phase"] = "three";
    EXPECT_FALSE(adopt(bed));  // a label changed: left to the processing
    const json& views = bed.memory.daemons->live();
    EXPECT_FALSE(views["metadata"]["labels"].contains("other"));
    EXPECT_EQ(views["status"]["phase"], "three");
    EXPECT_EQ(views["spec"], bed.body["spec"]);
}

// Handlers whose filters read the body (callbacks, a field) may decide otherwise on any change;
// a handler not running (filtered out, or exited for good) may have to be spawned.
TEST(DaemonsAdoption, FiltersReadingTheBodyAndHandlersNotRunningRefuseIt) {
    const auto tick = [](Context&) -> Task<void> { co_return; };
    const std::vector<std::pair<std::string, std::function<void(Registry&)>>> registries{
        {"a when callback",
         [&](Registry& r) {
             on::timer(r, "kopfexamples",
                       {.id = "t", .interval = 1.0, .when = [](const Context&) { return true; }},
                       tick);
         }},
        {"a label callback",
         [&](Registry& r) {
             on::timer(r, "kopfexamples",
                       {.id = "t",
                        .interval = 1.0,
                        .labels = {{"somelabel", [](const json& v) { return v.is_string(); }}}},
                       tick);
         }},
        {"a field",
         [&](Registry& r) {
             on::timer(r, "kopfexamples", {.id = "t", .interval = 1.0, .field = "spec.field"},
                       tick);
         }},
        {"a timer filtered out",
         [&](Registry& r) {
             on::timer(r, "kopfexamples", {.id = "t", .interval = 1.0}, tick);
             on::timer(r, "kopfexamples",
                       {.id = "u", .interval = 1.0, .labels = {{"somelabel", "other"}}}, tick);
         }},
        {"a daemon exited for good",
         [&](Registry& r) {
             on::timer(r, "kopfexamples", {.id = "t", .interval = 1.0}, tick);
             on::daemon(r, "kopfexamples", {.id = "d"}, [](Context&) -> Task<void> { co_return; });
         }},
    };
    for (const auto& [what, add] : registries) {
        DaemonsBed bed;
        bed.body = rich_body("first");
        add(bed.registry);
        bed.start();
        bed.event("");
        bed.run_until(0.5);
        bed.body["status"]["phase"] = "changed";
        EXPECT_FALSE(adopt(bed)) << what;
        EXPECT_FALSE(bed.memory.daemons->live()["status"].contains("phase")) << what;
    }
}

// A context that refers to the views across its waits (a daemon's for its whole life, a timer's
// during its tick) keeps them valid: they are updated in place, not replaced.
TEST(DaemonsAdoption, ViewsThatContextsReferToAreRefreshedInPlace) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    bed.body["status"] = {{"phase", "one"}, {"deep", {{"er", {{"est", "x"}}}}}};
    auto seen = std::make_shared<std::vector<std::string>>();
    on::daemon d(bed.registry, "kopfexamples", {.id = "d"}, [seen](Context& ctx) -> Task<void> {
        const json& status = ctx.status;
        while (!ctx.stopped) {
            seen->push_back("daemon " + status.value("phase", ""));
            co_await kopf::sleep(1);
        }
    });
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 10},
                [seen](Context& ctx) -> Task<void> {
                    const json& deep = ctx.status["deep"]["er"];
                    co_await kopf::sleep(0.5);
                    seen->push_back("timer " + deep.value("est", ""));
                });
    bed.start();
    bed.event("");
    bed.run_until(0.2);
    const json* status = &bed.memory.daemons->live()["status"];
    bed.body["status"] = {{"phase", "two"}, {"deep", {{"er", {{"est", "y"}}}}}};
    EXPECT_TRUE(adopt(bed));
    EXPECT_EQ(&bed.memory.daemons->live()["status"], status);
    bed.run_until(1.5);
    EXPECT_EQ(*seen, (std::vector<std::string>{"daemon one", "timer y", "daemon two"}));
}

// A timer's context takes the body's parts and identity from views kept beside the body, found
// again after each change: after an adopted echo and after a processing; a malformed echo
// parsed halfway (its new uid, longer than a short string, is rolled back) leaves the kept
// views valid (a dangling one would show here, and under AddressSanitizer).
TEST(DaemonsAdoption, ATimersContextSeesTheIdentityAndPartsOfTheLatestBody) {
    DaemonsBed bed;
    bed.body = rich_body("first");
    const std::string long_uid = "5f0e7c1a-uid-long-enough-to-live-on-the-heap-";
    bed.body["metadata"]["uid"] = long_uid + "1";
    auto seen = std::make_shared<std::vector<json>>();
    on::timer t(bed.registry, "kopfexamples", {.id = "t", .interval = 1.0},
                [seen](Context& ctx) -> Task<void> {
                    seen->push_back({ctx.name, ctx.namespace_, ctx.uid,
                                     ctx.meta.value("resourceVersion", ""),
                                     ctx.status.value("phase", ""), ctx.labels, deepest(ctx.spec)});
                    co_return;
                });
    bed.start();
    bed.event("");
    bed.run_until(0.5);
    bed.body["metadata"]["uid"] = long_uid + "2";
    bed.body["metadata"]["resourceVersion"] = "101";
    bed.body["status"]["phase"] = "two";
    EXPECT_TRUE(adopt(bed));
    bed.run_until(1.5);
    bed.body["metadata"]["labels"]["somelabel"] = "changed";  // decided on: processed
    bed.body["spec"] = rich_body("second")["spec"];
    EXPECT_FALSE(adopt(bed));
    bed.event();
    bed.run_until(2.5);
    json halfway = bed.body;
    halfway["metadata"]["uid"] = long_uid + "3";
    const std::string text = R"({"type":"MODIFIED","object":)" + halfway.dump() + "}";
    const std::string broken = text.substr(0, text.find(R"("spec":)") + 9);
    EXPECT_FALSE(bed.engine->adopt_line(*bed.memory.daemons, broken));
    bed.run_until(3.5);
    ASSERT_EQ(seen->size(), 4u);
    const json first_labels = {{"somelabel", "somevalue"}};
    const json changed_labels = {{"somelabel", "changed"}};
    EXPECT_EQ((*seen)[0], json({"kopf-example-1", "default", long_uid + "1", "100", "",
                                first_labels, "first"}));
    EXPECT_EQ((*seen)[1], json({"kopf-example-1", "default", long_uid + "2", "101", "two",
                                first_labels, "first"}));
    EXPECT_EQ((*seen)[2], json({"kopf-example-1", "default", long_uid + "2", "101", "two",
                                changed_labels, "second"}));
    EXPECT_EQ((*seen)[3], (*seen)[2]);
}

}  // namespace
}  // namespace kopf::testing
