// Settings that startup handlers change, as Kopf's docs show it, take effect for the handlers
// that follow: here the size of the pool of synchronous handlers.
#include <atomic>
#include <string>
#include <thread>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

class StartupSettings : public HandlingTest {};

// How many synchronous handlers run at once, at most.
struct Concurrency {
    std::atomic<int> now{0};
    std::atomic<int> most{0};
    std::atomic<int> done{0};
};

TEST_F(StartupSettings, MaxWorkersSetInAStartupHandlerLimitsTheSynchronousHandlers) {
    Registry registry;
    on::startup configure(registry, {.id = "configure"},
                          [](ActivityContext& ctx) { ctx.settings.execution.max_workers = 1; });
    auto seen = std::make_shared<Concurrency>();
    on::create fn(registry, "kopfexamples", {.id = "create_fn"}, [seen](Context&) {
        const int running = ++seen->now;
        int most = seen->most;
        while (running > most && !seen->most.compare_exchange_weak(most, running)) {
        }
        std::this_thread::sleep_for(300ms);
        --seen->now;
        ++seen->done;
    });
    auto operator_ = start_operator(registry);
    for (const auto* name : {"kex-w1", "kex-w2", "kex-w3"}) create(example(name, {}));
    ASSERT_TRUE(eventually([&] { return seen->done == 3; }));
    EXPECT_EQ(seen->most.load(), 1);  // the default pool (4 or more) ran all three at once
    EXPECT_EQ(operator_->stop(), "");
}

// With the progress kept in the status (a CRD with a status subresource), a handler that asks
// for a retry is retried: the touch-dummy that provokes the next event goes to /status.
TEST_F(StartupSettings, StatusProgressStorageRetriesTemporaryErrors) {
    Registry registry;
    auto attempts = std::make_shared<std::atomic<int>>(0);
    on::create fn(registry, "kopfexamples", {.id = "create_fn"}, [attempts](Context&) -> json {
        if (++*attempts < 3) throw TemporaryError("not yet", 0.3);
        return {{"done", true}};
    });
    auto settings = fast_settings();
    settings.persistence.progress_storage = std::make_shared<StatusProgressStorage>();
    auto operator_ = start_operator(registry, settings);
    create(example("kex-status-progress", {}));
    std::optional<json> body;
    ASSERT_TRUE(eventually(
        [&] {
            body = get("kex-status-progress");
            return body && body->value("/status/create_fn/done"_json_pointer, false);
        },
        30s))
        << attempts->load() << " attempts; " << (body ? body->dump(2) : "no object");
    EXPECT_EQ(attempts->load(), 3);
    EXPECT_EQ(operator_->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
