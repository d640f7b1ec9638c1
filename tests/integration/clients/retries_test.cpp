// Server errors, throttling and connection failures are retried per error_backoffs.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "support/fixture.hpp"
#include "support/restartable_port.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

class Retries : public ClientTest {};

TEST_F(Retries, ServerErrorsThenSuccess) {
    auto api = make_client(admin());
    server->fail_next_requests(2, 503);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Retries, ServerErrorsBeyondTheBackoffsEscalate) {
    auto settings = fast_settings();
    settings.error_backoffs = {0.01, 0.01};
    auto api = make_client(admin(), settings);
    server->fail_next_requests(3, 500);
    try {
        run(api->list(configmaps(), "default"));
        FAIL() << "no error";
    } catch (const ServerError& e) {
        EXPECT_EQ(e.code(), 500);
    }
}

TEST_F(Retries, TooManyRequestsIsRetried) {
    auto settings = fast_settings();
    settings.error_backoffs = {0.01};
    auto api = make_client(admin(), settings);
    server->fail_next_requests(1, 429, 1);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Retries, EscalatedTooManyRequestsCarriesRetryAfter) {
    auto settings = fast_settings();
    settings.error_backoffs = {};
    auto api = make_client(admin(), settings);
    server->fail_next_requests(1, 429, 3);
    try {
        run(api->list(configmaps(), "default"));
        FAIL() << "no error";
    } catch (const TooManyRequestsError& e) {
        EXPECT_EQ(e.retry_after(), 3.0);
    }
}

TEST_F(Retries, ForbiddenIsRetriedAsDuringClusterUpgrades) {
    auto api = make_client(admin());
    server->fail_next_requests(1, 403);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Retries, OtherClientErrorsEscalateAtOnce) {
    auto api = make_client(admin());
    server->fail_next_requests(2, 400);
    EXPECT_THROW(run(api->list(configmaps(), "default")), ClientError);
    // The second injected failure is still pending: only one attempt was made.
    EXPECT_THROW(run(api->list(configmaps(), "default")), ClientError);
    EXPECT_NO_THROW(run(api->list(configmaps(), "default")));
}

TEST_F(Retries, RefusedConnectionEscalatesAsConnectionError) {
    auto settings = fast_settings();
    settings.error_backoffs = {0.01};
    auto info = admin();
    int port = server->port();
    server.reset();
    info.server = "https://127.0.0.1:" + std::to_string(port);
    relogin_result = [info] { return std::map<std::string, ConnectionInfo>{{"x", info}}; };
    auto api = make_client(info, settings);
    EXPECT_THROW(run(api->list(configmaps(), "default")), ConnectionError);
}

TEST_F(Retries, SlowServerHitsTheRequestTimeout) {
    auto settings = fast_settings();
    settings.error_backoffs = {};
    settings.request_timeout = Seconds(0.3);
    auto api = make_client(admin(), settings);
    server->delay_responses(std::chrono::milliseconds(2000));
    try {
        run(api->list(configmaps(), "default"));
        ADD_FAILURE() << "the slow answer was accepted";
    } catch (const ConnectionError& error) {
        EXPECT_NE(std::string(error.what()).find("request timeout"), std::string::npos)
            << error.what();
    }
    server->delay_responses(std::chrono::milliseconds(0));
}

TEST_F(Retries, RateLimitStillCompletesEveryRequest) {
    auto settings = fast_settings();
    settings.qps = 50;
    settings.burst = 2;
    auto api = make_client(admin(), settings);
    for (int i = 0; i < 10; ++i) EXPECT_NO_THROW(run(api->read_version()));
}

TEST_F(Retries, PoolLimitOfOneServesConcurrentRequests) {
    auto settings = fast_settings();
    settings.pool_limit = 1;
    auto api = make_client(admin(), settings);
    std::vector<std::future<json>> results;
    for (int i = 0; i < 5; ++i) {
        results.push_back(asio::co_spawn(io, api->read_version(), asio::use_future));
    }
    drive([&] {
        for (auto& r : results) {
            if (r.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
        }
        return true;
    });
    for (auto& r : results) EXPECT_TRUE(r.get().contains("gitVersion"));
}

// After the API server restarts, every kept-alive connection in the pool is dead. A request
// must not spend its attempts drawing them one by one (with many pooled connections, all its
// retries ran out and it escalated while the new server was up): the first dead one tells the
// others are dead too, and the request goes on over a fresh connection.
TEST_F(Retries, AServerRestartCostsNoAttemptsOnTheDeadPooledConnections) {
    apiserver::ServerOptions options;
    options.port = restartable_port();
    auto plain = std::make_unique<apiserver::Server>(options);
    plain->start();
    ConnectionInfo anonymous;
    anonymous.server = plain->url();
    auto settings = fast_settings();
    settings.error_backoffs = {};  // no retries but the transport's own
    auto api = make_client(anonymous, settings);
    std::vector<std::future<json>> warm;
    for (int i = 0; i < 8; ++i) {
        warm.push_back(asio::co_spawn(io, api->read_version(), asio::use_future));
    }
    ASSERT_TRUE(drive([&] {
        return std::all_of(warm.begin(), warm.end(), [](auto& result) {
            return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        });
    }));
    for (auto& result : warm) ASSERT_TRUE(result.get().contains("gitVersion"));

    plain->stop();
    plain = std::make_unique<apiserver::Server>(options);
    plain->start();
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(run(api->read_version()).contains("gitVersion"));
}

}  // namespace
}  // namespace kopf::testing
