// What operator code does beside its handlers, against the embedded API server: background
// tasks (kopf::spawn) started by handlers, cancelled by their handles or at the operator's exit,
// logging about their object after the handler returned; daemons that follow other resources
// through watch streams (coroutine and synchronous), ended by their stop flag; and the client's
// rate limit from settings.networking.
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

// What the operator code records, on the heap and shared with the test (as users' closures are).
struct Journal {
    Calls calls;
    std::mutex mutex;
    std::map<std::string, BackgroundTask> tasks;  // by object name
};

class Background : public HandlingTest {
  protected:
    std::shared_ptr<Journal> journal = std::make_shared<Journal>();

    // A ConfigMap for the object `owner` as users' have them: labels, a Kopf annotation, nested
    // data.
    static json configmap_for(const std::string& owner, const std::string& name) {
        return {{"metadata",
                 {{"name", name},
                  {"labels", {{"owner", owner}}},
                  {"annotations",
                   {{"kopf.zalando.org/last-handled-configuration",
                     R"({"spec":{"nested":{"deep":[1,2,{"x":"y"}]}}})"}}}}},
                {"data", {{"config", R"({"a":{"b":{"c":[1,2,3]}}})"}}}};
    }
};

Task<void> reminder(std::shared_ptr<Journal> journal, std::shared_ptr<Logger> logger,
                    std::string name, double seconds, kopf::Api configmaps) {
    try {
        co_await kopf::sleep(seconds);
        logger->info("The reminder for {} is due.", name);
        json note = {{"metadata", {{"name", name + "-reminded"}}}, {"data", {{"by", "reminder"}}}};
        co_await configmaps.create(note);
        journal->calls.add("reminded", name);
    } catch (const CancelledError&) {
        journal->calls.add("cancelled", name);
    }
}

TEST_F(Background, HandlersSpawnTasksThatOutliveThemAndAreCancelledByTheirHandles) {
    Registry registry;
    auto j = journal;
    on::create schedule(
        registry, "kopfexamples", {.id = "schedule_fn"}, [j](Context& ctx) -> Task<json> {
            const double delay = ctx.spec.value("delay", 0.0);
            auto work =
                reminder(j, ctx.logger_ptr, ctx.name, delay, ctx.api("configmaps", ctx.namespace_));
            BackgroundTask task = co_await kopf::spawn(std::move(work), "reminder");
            {
                std::lock_guard lock(j->mutex);
                j->tasks[ctx.name] = task;
            }
            j->calls.add("scheduled", ctx.name);
            co_return json{{"done", task.done()}};
        });
    // A synchronous handler cancels from a worker thread.
    on::update cancel(registry, "kopfexamples", {.id = "cancel_fn"}, [j](Context& ctx) {
        std::lock_guard lock(j->mutex);
        j->tasks.at(ctx.name).cancel();
    });
    auto operator_ = start_operator(registry);

    create(example("kex-soon", {{"delay", 0.2}}));
    create(example("kex-later", {{"delay", 3600}}));
    ASSERT_TRUE(eventually([&] { return j->calls.count("reminded") == 1; }));
    EXPECT_EQ(j->calls.details("reminded")[0], "kex-soon");
    // The handler returned before its task was done.
    auto soon = get("kex-soon");
    ASSERT_TRUE(soon.has_value());
    EXPECT_EQ((*soon)["status"]["schedule_fn"]["done"], false) << soon->dump(2);

    ASSERT_TRUE(eventually([&] { return j->calls.count("scheduled") == 2; }));
    patch("kex-later", {{"spec", {{"field", "changed"}}}});
    ASSERT_TRUE(eventually([&] { return j->calls.count("cancelled") == 1; }));
    EXPECT_EQ(j->calls.details("cancelled")[0], "kex-later");
    {
        std::lock_guard lock(j->mutex);
        EXPECT_TRUE(j->tasks.at("kex-later").done());
        EXPECT_TRUE(j->tasks.at("kex-later").cancelled());
        EXPECT_FALSE(j->tasks.at("kex-soon").cancelled());
    }
    EXPECT_EQ(j->calls.count("reminded"), 1);
    EXPECT_EQ(operator_->stop(), "");
}

Task<void> forever(std::shared_ptr<Journal> journal) {
    try {
        for (;;) co_await kopf::sleep(3600);
    } catch (const CancelledError&) {
        journal->calls.add("cancelled at exit");
        throw;
    }
}

Task<void> failing(std::shared_ptr<Journal> journal) {
    journal->calls.add("failing");
    throw std::runtime_error("the external system is down");
    co_return;
}

TEST_F(Background, TasksAreCancelledAtTheExitAndFailuresDoNotStopTheOperator) {
    Registry registry;
    auto j = journal;
    on::startup startup(registry, {.id = "start_tasks"}, [j](ActivityContext&) -> Task<void> {
        co_await kopf::spawn(forever(j), "forever");
        co_await kopf::spawn(failing(j), "failing");
    });
    on::create created(registry, "kopfexamples", {.id = "create_fn"},
                       [j](Context& ctx) { j->calls.add("created", ctx.name); });
    auto operator_ = start_operator(registry);
    ASSERT_TRUE(eventually([&] { return j->calls.count("failing") == 1; }));
    create(example("kex-alive", json::object()));
    ASSERT_TRUE(eventually([&] { return j->calls.count("created") == 1; }));

    const auto stopping = std::chrono::steady_clock::now();
    EXPECT_EQ(operator_->stop(), "");
    EXPECT_EQ(j->calls.count("cancelled at exit"), 1);
    // Cancelled after the grace period, not left to run: the operator did stop.
    EXPECT_LT(std::chrono::steady_clock::now() - stopping, 60s);
}

// A coroutine daemon follows the ConfigMaps of its object through a stream, until the object
// is deleted; a synchronous daemon does the same with blocking reads.
TEST_F(Background, DaemonsFollowOtherResourcesThroughStreamsUntilStopped) {
    Registry registry;
    auto j = journal;
    on::daemon follower(
        registry, "kopfexamples", {.id = "follower"}, [j](Context& ctx) -> Task<void> {
            auto events =
                ctx.api("configmaps", ctx.namespace_).stream(ctx.stopped, "owner=" + ctx.name);
            while (auto event = co_await events.next()) {
                j->calls.add("async " + event->type, event->object["metadata"]["name"]);
                ctx.patch.status()["last-seen"] = event->object["metadata"]["name"];
                if (ctx.stopped) break;  // a check of the flag sends the patch
            }
            j->calls.add("async ended", to_string(ctx.stopped.reason()));
        });
    on::daemon blocking(registry, "kopfexamples", {.id = "blocking_follower"}, [j](Context& ctx) {
        auto events =
            ctx.api("configmaps", ctx.namespace_).stream(ctx.stopped, "owner=" + ctx.name);
        while (auto event = events.next().wait()) {
            j->calls.add("sync " + event->type, event->object["metadata"]["name"]);
        }
        j->calls.add("sync ended", to_string(ctx.stopped.reason()));
    });
    auto operator_ = start_operator(registry);

    kopf::Client client(*login_with_kubeconfig());
    auto configmaps = client.api("configmaps", "default");
    configmaps.create(configmap_for("kex-follow", "cm-before")).wait();
    configmaps.create(configmap_for("someone-else", "cm-foreign")).wait();
    create(example("kex-follow", json::object()));
    ASSERT_TRUE(eventually(
        [&] { return j->calls.count("async ADDED") == 1 && j->calls.count("sync ADDED") == 1; }));
    configmaps.create(configmap_for("kex-follow", "cm-after")).wait();
    configmaps.delete_("cm-before").wait();
    ASSERT_TRUE(eventually([&] {
        return j->calls.count("async DELETED") == 1 && j->calls.count("sync DELETED") == 1;
    }));
    EXPECT_EQ(j->calls.details("async ADDED").size(), 2u);
    EXPECT_EQ(j->calls.details("async ADDED")[1], "cm-after");
    EXPECT_EQ(j->calls.details("sync DELETED")[0], "cm-before");
    ASSERT_TRUE(eventually(
        [&] {
            auto body = get("kex-follow");
            return body && body->value("/status/last-seen"_json_pointer, json()) == "cm-before";
        },
        10s))
        << get("kex-follow")->dump(2);  // the last event was cm-before's deletion

    remove("kex-follow");
    ASSERT_TRUE(eventually(
        [&] { return j->calls.count("async ended") == 1 && j->calls.count("sync ended") == 1; }));
    EXPECT_EQ(j->calls.details("async ended")[0], "RESOURCE_DELETED");
    ASSERT_TRUE(eventually([&] { return !get("kex-follow").has_value(); }));
    for (const auto& key : {"async ADDED", "sync ADDED"}) {
        for (const auto& name : j->calls.details(key)) EXPECT_NE(name, "cm-foreign");
    }
    EXPECT_EQ(operator_->stop(), "");
}

// settings.networking.qps: ten calls from a handler at 5 requests per second in bursts of one
// cannot take less than 1.8 s (the operator's own requests share the bucket).
TEST_F(Background, TheClientsRateLimitComesFromTheSettings) {
    Registry registry;
    auto j = journal;
    on::create busy(registry, "kopfexamples", {.id = "busy_fn"}, [j](Context& ctx) -> Task<json> {
        auto configmaps = ctx.api("configmaps", ctx.namespace_);
        const auto started = std::chrono::steady_clock::now();
        for (int i = 0; i < 10; ++i) co_await configmaps.list().limit(1);
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        j->calls.add("took", took.count());
        co_return json{};
    });
    OperatorSettings settings = fast_settings();
    settings.networking.qps = 5;
    settings.networking.burst = 1;
    auto operator_ = start_operator(registry, settings);
    create(example("kex-busy", json::object()));
    ASSERT_TRUE(eventually([&] { return j->calls.count("took") == 1; }));
    EXPECT_GE(j->calls.details("took")[0].get<double>(), 1.8);
    EXPECT_EQ(operator_->stop(), "");
}

// An operator whose settings hold an invalid value stops at start-up with an error that names
// the setting.
void expect_refused_by_name(const OperatorSettings& settings, const std::string& setting) {
    Registry registry;
    on::create noop(registry, "kopfexamples", {.id = "noop"}, [](Context&) {});
    OperatorSettings given = settings;
    RunOptions options;
    options.registry = &registry;
    options.settings = &given;
    options.namespaces = {"default"};
    try {
        kopf::operator_(options);
        ADD_FAILURE() << "the operator started with an invalid " << setting;
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find(setting), std::string::npos) << error.what();
    }
}

TEST_F(Background, ANegativeRateLimitIsRefusedByName) {
    OperatorSettings settings = fast_settings();
    settings.networking.qps = -1;
    expect_refused_by_name(settings, "settings.networking.qps");
}

TEST_F(Background, ACoalescingWindowOutOfRangeIsRefusedByName) {
    for (const double window : {-0.001, 2.0, std::numeric_limits<double>::quiet_NaN()}) {
        OperatorSettings settings = fast_settings();
        settings.queueing.coalescing_window = window;
        SCOPED_TRACE(window);
        expect_refused_by_name(settings, "settings.queueing.coalescing_window");
    }
}

}  // namespace
}  // namespace kopf::testing
