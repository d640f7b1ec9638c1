// Startup and login handlers retried as Kopf retries activities: arbitrary exceptions are
// TEMPORARY by default and retried after the handler's backoff; `timeout`, `retries` and
// `errors` end the retries; a stop during a pause between retries ends the operator.
#include <atomic>
#include <kopf/connection.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

class Activities : public HandlingTest {
  protected:
    std::string run_until_it_fails(Registry& registry) {
        return HandlingTest::run_until_it_fails(registry, fast_settings());
    }
};

TEST_F(Activities, ArbitraryExceptionsInStartupHandlersAreRetriedAfterTheirBackoff) {
    Registry registry;
    auto attempts = std::make_shared<std::atomic<int>>(0);
    on::startup startup(registry, {.id = "flaky", .backoff = 0.1}, [attempts](ActivityContext&) {
        if (++*attempts < 3) throw std::runtime_error("not yet");
    });
    auto calls = std::make_shared<Calls>();
    on::create fn(registry, "kopfexamples", {.id = "create_fn"},
                  [calls](Context& ctx) { calls->add(ctx.name); });
    auto operator_ = start_operator(registry);
    EXPECT_EQ(attempts->load(), 3);
    create(example("kex-after-flaky-startup", {}));
    EXPECT_TRUE(eventually([&] { return calls->count("kex-after-flaky-startup") == 1; }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Activities, AStartupHandlerThatKeepsFailingStopsAtItsTimeout) {
    Registry registry;
    auto attempts = std::make_shared<std::atomic<int>>(0);
    on::startup startup(registry, {.id = "stubborn", .timeout = 2, .backoff = 0.05},
                        [attempts](ActivityContext&) {
                            ++*attempts;
                            throw std::runtime_error("never");
                        });
    const std::string failure = run_until_it_fails(registry);
    EXPECT_NE(failure.find("stubborn"), std::string::npos) << failure;
    // "would/will time out" when the next attempt would pass the timeout, "has timed out" when a
    // slow machine made it pass already (Kopf's look-ahead and strict checks).
    EXPECT_TRUE(failure.find("would time out") != std::string::npos ||
                failure.find("will time out") != std::string::npos ||
                failure.find("has timed out") != std::string::npos)
        << failure;
    EXPECT_GE(attempts->load(), 2);  // retried until the timeout (forty pauses fit in it)
}

TEST_F(Activities, AStartupHandlerStopsAfterItsRetries) {
    Registry registry;
    auto attempts = std::make_shared<std::atomic<int>>(0);
    on::startup startup(registry, {.id = "limited", .retries = 3, .backoff = 0.01},
                        [attempts](ActivityContext&) {
                            ++*attempts;
                            throw TemporaryError("again", 0.01);
                        });
    const std::string failure = run_until_it_fails(registry);
    EXPECT_NE(failure.find("exceed 3 retries"), std::string::npos) << failure;
    EXPECT_EQ(attempts->load(), 3);
}

TEST_F(Activities, PermanentErrorsFailTheStartupAtOnceAfterTheOtherHandlers) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::startup first(registry, {.id = "strict", .errors = PERMANENT}, [calls](ActivityContext&) {
        calls->add("strict");
        throw std::runtime_error("broken");
    });
    on::startup second(registry, {.id = "doomed"}, [calls](ActivityContext&) {
        calls->add("doomed");
        throw PermanentError("also broken");
    });
    on::startup third(registry, {.id = "fine"}, [calls](ActivityContext&) { calls->add("fine"); });
    const std::string failure = run_until_it_fails(registry);
    EXPECT_NE(failure.find("strict"), std::string::npos) << failure;  // the first failure
    EXPECT_EQ(calls->count("strict"), 1);
    EXPECT_EQ(calls->count("doomed"), 1);
    EXPECT_EQ(calls->count("fine"), 1);  // as Kopf: every handler has its turn
}

// What the startup acquired before the startup failed is released: the cleanup handlers run,
// seeing the memo as the startup left it, and the startup's failure is the one reported.
TEST_F(Activities, CleanupHandlersRunAfterAFailedStartup) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::startup acquire(registry, {.id = "acquire"}, [](ActivityContext& ctx) {
        ctx.memo.set("connections", std::make_shared<std::vector<std::string>>(
                                        std::vector<std::string>{"db-1", "db-2"}));
    });
    on::startup broken(registry, {.id = "broken"},
                       [](ActivityContext&) { throw PermanentError("no quota left"); });
    on::cleanup release(registry, {.id = "release"}, [calls](ActivityContext& ctx) {
        for (const auto& name :
             *ctx.memo.get<std::shared_ptr<std::vector<std::string>>>("connections"))
            calls->add("released", name);
    });
    const std::string failure = run_until_it_fails(registry);
    EXPECT_NE(failure.find("no quota left"), std::string::npos) << failure;
    EXPECT_EQ(calls->details("released"), (std::vector<json>{"db-1", "db-2"}));
}

// The operator's tasks fail (here: the API server is unreachable and no retry is allowed):
// the cleanup handlers still run before the failure ends the operator.
TEST_F(Activities, CleanupHandlersRunAfterTheOperatorsTasksFail) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::cleanup release(registry, {.id = "release"},
                        [calls](ActivityContext&) { calls->add("release"); });
    auto settings = fast_settings();
    settings.networking.error_backoffs.clear();
    server->stop();
    const std::string failure = HandlingTest::run_until_it_fails(registry, settings);
    EXPECT_NE(failure.find("The API server is unreachable"), std::string::npos) << failure;
    EXPECT_EQ(calls->count("release"), 1);
}

TEST_F(Activities, IgnoredErrorsLetTheOperatorStart) {
    Registry registry;
    on::startup startup(registry, {.id = "careless", .errors = IGNORED},
                        [](ActivityContext&) { throw std::runtime_error("whatever"); });
    auto operator_ = start_operator(registry);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Activities, AStopDuringThePauseBetweenRetriesEndsTheOperator) {
    Registry registry;
    auto attempts = std::make_shared<std::atomic<int>>(0);
    on::startup startup(registry, {.id = "slow", .backoff = 3600}, [attempts](ActivityContext&) {
        ++*attempts;
        throw std::runtime_error("not now");
    });
    const OperatorSettings settings = fast_settings();
    OperatorFlag stop;
    std::string failure;
    std::thread thread([&] {
        RunOptions options;
        options.namespaces = {"default"};
        options.standalone = true;
        options.registry = &registry;
        options.settings = &settings;
        options.stop_flag = &stop;
        try {
            operator_(options);
        } catch (const std::exception& error) {
            failure = error.what();
        }
    });
    EXPECT_TRUE(eventually([&] { return attempts->load() == 1; }));
    stop.set();
    thread.join();  // not after an hour
    EXPECT_EQ(failure, "");
    EXPECT_EQ(attempts->load(), 1);
}

TEST_F(Activities, LoginHandlersAreRetriedAsActivitiesAre) {
    Registry registry;
    auto attempts = std::make_shared<std::atomic<int>>(0);
    on::login login(registry, {.id = "flaky_login", .backoff = 0.05},
                    [attempts](ActivityContext&) -> std::optional<ConnectionInfo> {
                        if (++*attempts < 3) throw std::runtime_error("the token is not there yet");
                        return login_with_kubeconfig();
                    });
    auto calls = std::make_shared<Calls>();
    on::create fn(registry, "kopfexamples", {.id = "create_fn"},
                  [calls](Context& ctx) { calls->add(ctx.name); });
    auto operator_ = start_operator(registry);
    EXPECT_EQ(attempts->load(), 3);
    create(example("kex-after-flaky-login", {}));
    EXPECT_TRUE(eventually([&] { return calls->count("kex-after-flaky-login") == 1; }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Activities, ALoginHandlerThatFailsForGoodFailsTheStartNamingIt) {
    Registry registry;
    on::login login(registry, {.id = "broken_login", .errors = PERMANENT},
                    [](ActivityContext&) -> std::optional<ConnectionInfo> {
                        throw std::runtime_error("no such secret");
                    });
    const std::string failure = run_until_it_fails(registry);
    EXPECT_NE(failure.find("broken_login"), std::string::npos) << failure;
    EXPECT_NE(failure.find("no such secret"), std::string::npos) << failure;
}

}  // namespace
}  // namespace kopf::testing
