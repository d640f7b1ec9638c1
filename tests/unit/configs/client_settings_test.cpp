// Kopf's settings as the client layer takes them: the request and connection timeouts of API
// calls (settings.networking) and of watch streams (settings.watching).
#include "configs/client_settings.hpp"

#include <gtest/gtest.h>

using kopf::OperatorSettings;
using kopf::clients::Seconds;
using kopf::configs::client_settings;
using kopf::configs::watch_settings;

TEST(ClientSettings, NoConnectTimeoutByDefaultAsInKopf) {
    const OperatorSettings settings;
    EXPECT_FALSE(client_settings(settings).connect_timeout);
    EXPECT_EQ(client_settings(settings).request_timeout, Seconds(300));
    EXPECT_FALSE(watch_settings(settings).connect_timeout);
}

TEST(ClientSettings, NetworkingTimeoutsAreTakenForApiCalls) {
    OperatorSettings settings;
    settings.networking.connect_timeout = 7;
    settings.networking.request_timeout = 11;
    EXPECT_EQ(client_settings(settings).connect_timeout, Seconds(7));
    EXPECT_EQ(client_settings(settings).request_timeout, Seconds(11));
}

TEST(ClientSettings, TrustEnvIsTakenForTheConnections) {
    OperatorSettings settings;
    EXPECT_FALSE(client_settings(settings).trust_env);
    settings.networking.trust_env = true;
    EXPECT_TRUE(client_settings(settings).trust_env);
}

TEST(ClientSettings, WatchingTimeoutsAreTakenForWatchStreams) {
    OperatorSettings settings;
    settings.watching.connect_timeout = 3;
    settings.watching.server_timeout = 120;
    settings.watching.client_timeout = 150;
    const auto watching = watch_settings(settings);
    EXPECT_EQ(watching.connect_timeout, Seconds(3));
    EXPECT_EQ(watching.server_timeout, Seconds(120));
    EXPECT_EQ(watching.client_timeout, Seconds(150));
}
