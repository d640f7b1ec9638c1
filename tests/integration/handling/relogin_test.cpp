// Re-authentication of a running operator: when the API server answers 401, the operator runs
// its login handlers again and carries on with the fresh credentials, as often as it happens
// (projected service-account tokens rotate hourly on a real cluster).
#include <kopf/connection.hpp>
#include <memory>
#include <string>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

class Relogin : public HandlingTest {};

bool has_status(const std::optional<json>& body, const std::string& pointer) {
    return body && body->contains(json::json_pointer(pointer));
}

TEST_F(Relogin, OperatorSurvivesRepeated401sAndKeepsHandling) {
    Calls calls;
    Registry registry;
    // A login handler with heap state in its capture, as users' handlers have: a shared
    // counter and a path (the std::function holding it cannot keep it inline).
    auto logins = std::make_shared<int>(0);
    const std::string kubeconfig = ::getenv("KUBECONFIG");
    on::login login(
        registry, {.id = "login_fn"},
        [logins, kubeconfig, &calls](ActivityContext&) -> std::optional<ConnectionInfo> {
            ++*logins;
            calls.add("login", kubeconfig);
            return login_with_kubeconfig();
        });
    on::create created(registry, "kopfexamples", {.id = "create_fn"}, [&](Context& ctx) -> json {
        calls.add("create", ctx.name);
        return {{"message", "created " + ctx.name}};
    });
    auto operator_ = start_operator(registry);
    ASSERT_EQ(calls.count("login"), 1);

    for (int round = 1; round <= 3; ++round) {
        // The next request of any client is refused; the operator's watches reconnect at once.
        server->fail_next_requests(1, 401);
        server->drop_watches();
        ASSERT_TRUE(eventually([&] { return calls.count("login") == round + 1; }))
            << "round " << round << ": no re-login after a 401";
        const std::string name = "kex-relogin-" + std::to_string(round);
        create(example(name, {{"round", round}}));
        std::optional<json> body;
        ASSERT_TRUE(eventually([&] { return has_status(body = get(name), "/status/create_fn"); }))
            << "round " << round << ": not handled: " << (body ? body->dump(2) : "no object");
        EXPECT_EQ((*body)["status"]["create_fn"]["message"], "created " + name);
    }
    EXPECT_EQ(*logins, 4);  // the first login and one per refusal
    EXPECT_EQ(calls.count("create"), 3);
    EXPECT_EQ(operator_->stop(), "");
}

// Credentials refused while the operator starts (a token rotated meanwhile) are renewed by the
// login handlers, as later on; the start was retried forever with the refused ones.
TEST_F(Relogin, A401WhileTheOperatorStartsIsFollowedByALogin) {
    Calls calls;
    Registry registry;
    on::login login(registry, {.id = "login_fn"},
                    [&calls](ActivityContext&) -> std::optional<ConnectionInfo> {
                        calls.add("login");
                        return login_with_kubeconfig();
                    });
    on::create created(registry, "kopfexamples", {.id = "create_fn"},
                       [&calls](Context& ctx) { calls.add(ctx.name); });
    server->fail_next_requests(1, 401);  // the first request: the check that the server is there
    auto operator_ = start_operator(registry);
    EXPECT_EQ(calls.count("login"), 2);
    create(example("kex-after-start", {}));
    EXPECT_TRUE(eventually([&] { return calls.count("kex-after-start") == 1; }));
    EXPECT_EQ(operator_->stop(), "");
}

// As Kopf's vault: every login handler's credentials are kept; a 401 invalidates only the ones
// used (the highest priority), the next ones carry on, and the login handlers run again only
// when none is left. A login handler may be a coroutine.
TEST_F(Relogin, CredentialsOfSeveralLoginHandlersAreUsedByPriorityBeforeLoggingInAgain) {
    Registry registry;
    auto logins = std::make_shared<Calls>();
    on::login preferred(registry, {.id = "preferred"},
                        [logins](ActivityContext&) -> Task<std::optional<ConnectionInfo>> {
                            co_await kopf::sleep(0.01);
                            logins->add("preferred");
                            auto info = login_with_kubeconfig();
                            info->priority = 10;
                            co_return info;
                        });
    on::login fallback(registry, {.id = "fallback"},
                       [logins](ActivityContext&) -> std::optional<ConnectionInfo> {
                           logins->add("fallback");
                           return login_with_kubeconfig();
                       });
    auto handled = std::make_shared<Calls>();
    on::create created(registry, "kopfexamples", {.id = "create_fn"},
                       [handled](Context& ctx) { handled->add(ctx.name); });
    auto operator_ = start_operator(registry);
    EXPECT_EQ(logins->count("preferred"), 1);
    EXPECT_EQ(logins->count("fallback"), 1);

    // The preferred credentials are refused: the fallback ones carry on, with no new login.
    server->fail_next_requests(1, 401);
    server->drop_watches();
    ASSERT_TRUE(eventually([&] { return server->failing_requests_left() == 0; }));
    create(example("kex-fallback", {}));
    ASSERT_TRUE(eventually([&] { return handled->count("kex-fallback") == 1; }));
    EXPECT_EQ(logins->count("preferred"), 1);
    EXPECT_EQ(logins->count("fallback"), 1);

    // Those are refused too: none is left, so both handlers run again.
    server->fail_next_requests(1, 401);
    server->drop_watches();
    ASSERT_TRUE(eventually([&] { return server->failing_requests_left() == 0; }));
    ASSERT_TRUE(eventually([&] { return logins->count("fallback") == 2; }));
    EXPECT_EQ(logins->count("preferred"), 2);
    create(example("kex-relogged", {}));
    ASSERT_TRUE(eventually([&] { return handled->count("kex-relogged") == 1; }));
    EXPECT_EQ(operator_->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
