// Kopf's peering rules without a cluster: the status format read and written, who pauses whom,
// when to judge again, the identity's format, the resources chosen by the scope, the pause set.
#include "core/engines/peering.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>

#include "core/engines/leases.hpp"
#include "structs/timestamps.hpp"

namespace kopf::engines {
namespace {

using namespace std::chrono_literals;

const PeeringClock::time_point NOW = *structs::parse_iso8601("2026-11-26T05:00:00.000000+00:00");

json peering(json status) {
    return {{"apiVersion", "kopf.dev/v1"},
            {"kind", "KopfPeering"},
            {"metadata", {{"name", "default"}, {"namespace", "default"}}},
            {"status", std::move(status)}};
}

json entry(long priority, long lifetime, const std::string& lastseen) {
    return {{"priority", priority}, {"lifetime", lifetime}, {"lastseen", lastseen}};
}

std::vector<std::string> ids(const std::vector<Peer>& peers) {
    std::vector<std::string> result;
    for (const auto& peer : peers) result.push_back(peer.identity);
    return result;
}

TEST(PeeringFormat, TheKeepAliveWritesKopfsEntryOfTheOperator) {
    const json patch = touch_patch("me@host/20261126050000/abc", 100, 60, NOW);
    EXPECT_EQ(patch, json::parse(R"({"status": {"me@host/20261126050000/abc": {
        "priority": 100, "lifetime": 60, "lastseen": "2026-11-26T05:00:00.000000+00:00"}}})"));
}

TEST(PeeringFormat, TheExitAndResumeRemoveTheEntryWithANull) {
    EXPECT_EQ(touch_patch("me", 100, 0, NOW), json::parse(R"({"status": {"me": null}})"));
}

TEST(PeeringFormat, CleaningRemovesEveryDeadPeer) {
    const auto dead = parse_peers(peering({{"a", entry(0, 1, "2020-01-01T00:00:00+00:00")},
                                           {"b", entry(0, 1, "2020-01-01T00:00:00Z")}}),
                                  NOW);
    EXPECT_EQ(clean_patch(dead), json::parse(R"({"status": {"a": null, "b": null}})"));
}

TEST(PeeringFormat, PeersWrittenByKopfAreReadWithItsDefaults) {
    // Python's isoformat() omits zero microseconds; older entries have no lifetime.
    const auto peers =
        parse_peers(peering({{"kopf@host/20261126045959/x1z",
                              {{"priority", 10}, {"lastseen", "2026-11-26T04:59:30+00:00"}}},
                             {"pod-7", {{"priority", 5}, {"lifetime", 30}}},
                             {"not-a-peer", "garbage"}}),
                    NOW);
    ASSERT_EQ(peers.size(), 2u);
    EXPECT_EQ(peers[0].identity, "kopf@host/20261126045959/x1z");
    EXPECT_EQ(peers[0].priority, 10);
    EXPECT_EQ(peers[0].lifetime, 60);
    EXPECT_EQ(peers[0].lastseen, NOW - 30s);
    EXPECT_EQ(peers[1].lastseen, NOW);  // no lastseen: seen now
    EXPECT_EQ(peers[1].lifetime, 30);
}

// A peering's status is anyone's to write: numbers out of range, or of the wrong kind, fall back
// to Kopf's defaults instead of an undefined conversion.
TEST(PeeringFormat, PrioritiesAndLifetimesOutOfRangeFallBackToTheDefaults) {
    const auto peers =
        parse_peers(peering({{"huge", {{"priority", 1e300}, {"lifetime", -1e300}}},
                             {"text", {{"priority", "12"}, {"lifetime", "soon"}}},
                             {"fraction", {{"priority", 7.9}, {"lifetime", json::array({30})}}}}),
                    NOW);
    ASSERT_EQ(peers.size(), 3u);
    EXPECT_EQ(peers[0].identity, "fraction");
    EXPECT_EQ(peers[0].priority, 7);
    EXPECT_EQ(peers[0].lifetime, 60);
    EXPECT_EQ(peers[1].identity, "huge");
    EXPECT_EQ(peers[1].priority, 0);
    EXPECT_EQ(peers[1].lifetime, 60);
    EXPECT_EQ(peers[2].identity, "text");
    EXPECT_EQ(peers[2].priority, 12);
    EXPECT_EQ(peers[2].lifetime, 60);
}

TEST(PeeringFormat, PeersAreShownAsKopfShowsThem) {
    const Peer peer{"kopf@host", 100, 60, NOW};
    EXPECT_EQ(repr({peer}),
              "[<Peer kopf@host: priority=100, lifetime=60, "
              "lastseen='2026-11-26T05:00:00.000000+00:00'>]");
}

TEST(PeeringVerdicts, AHigherLivePeerPausesAndIsJudgedAgainAtItsDeadline) {
    const auto verdict =
        judge_peers(peering({{"me", entry(0, 60, "2026-11-26T05:00:00+00:00")},
                             {"boss", entry(100, 60, "2026-11-26T04:59:50+00:00")},
                             {"junior", entry(-5, 60, "2026-11-26T04:59:50+00:00")}}),
                    "me", 0, NOW);
    EXPECT_TRUE(verdict.pauses());
    EXPECT_EQ(ids(verdict.higher), std::vector<std::string>{"boss"});
    EXPECT_TRUE(verdict.same.empty());
    EXPECT_TRUE(verdict.dead.empty());
    EXPECT_EQ(verdict.recheck, NOW + 50s);
}

TEST(PeeringVerdicts, TheSamePriorityPausesEveryone) {
    const auto verdict = judge_peers(peering({{"me", entry(3, 60, "2026-11-26T05:00:00+00:00")},
                                              {"twin", entry(3, 60, "2026-11-26T05:00:00+00:00")}}),
                                     "me", 3, NOW);
    EXPECT_TRUE(verdict.pauses());
    EXPECT_EQ(ids(verdict.same), std::vector<std::string>{"twin"});
    EXPECT_EQ(verdict.peers.size(), 2u);
}

TEST(PeeringVerdicts, DeadPeersDoNotPauseAndAreToBeCleaned) {
    const auto verdict = judge_peers(
        peering({{"boss", entry(100, 10, "2026-11-26T04:59:50+00:00")},  // deadline == now
                 {"twin", entry(0, 60, "2026-11-26T03:00:00+00:00")}}),
        "me", 0, NOW);
    EXPECT_FALSE(verdict.pauses());
    EXPECT_EQ(ids(verdict.dead), (std::vector<std::string>{"boss", "twin"}));
    EXPECT_FALSE(verdict.recheck.has_value());
}

TEST(PeeringVerdicts, OnlyLowerPeersOrNoneMeanRunning) {
    EXPECT_FALSE(
        judge_peers(peering({{"low", entry(-1, 60, "2026-11-26T05:00:00+00:00")}}), "me", 0, NOW)
            .pauses());
    EXPECT_FALSE(judge_peers(peering(json::object()), "me", 0, NOW).pauses());
    EXPECT_FALSE(judge_peers(json(), "me", 0, NOW).pauses());  // a deleted peering
    // Our own entry, even with a stale priority, is never a conflict.
    EXPECT_FALSE(
        judge_peers(peering({{"me", entry(99, 60, "2026-11-26T05:00:00+00:00")}}), "me", 0, NOW)
            .pauses());
}

TEST(PeeringIdentity, IsUserAtHostWithTheStartTimeAndThreeRandomCharacters) {
    unsetenv("POD_ID");
    const std::string identity = detect_own_id(false);
    EXPECT_TRUE(std::regex_match(identity, std::regex(R"([^@/]+@[^@/]+/\d{14}/[a-z0-9]{3})")))
        << identity;
    const std::string manual = detect_own_id(true);
    EXPECT_TRUE(std::regex_match(manual, std::regex(R"([^@/]+@[^@/]+)"))) << manual;
    EXPECT_EQ(identity.substr(0, manual.size() + 1), manual + "/");
}

TEST(PeeringIdentity, IsThePodIdWhenGiven) {
    setenv("POD_ID", "operator-5d8f-abcde", 1);
    EXPECT_EQ(detect_own_id(false), "operator-5d8f-abcde");
    EXPECT_EQ(detect_own_id(true), "operator-5d8f-abcde");
    unsetenv("POD_ID");
}

structs::Resource resource(const std::string& group, const std::string& plural, bool namespaced) {
    structs::Resource r;
    r.group = group;
    r.version = "v1";
    r.plural = plural;
    r.namespaced = namespaced;
    return r;
}

TEST(PeeringResources, AreChosenByTheScopeKopfDevFirst) {
    const std::vector<structs::Resource> found = {
        resource("zalando.org", "kopfpeerings", true),
        resource("kopf.dev", "kopfpeerings", true),
        resource("kopf.dev", "clusterkopfpeerings", false),
        resource("kopf.dev", "kopfexamples", true),
    };
    PeeringSettings settings;
    auto namespaced = peering_resources(settings, found);
    ASSERT_EQ(namespaced.size(), 2u);
    EXPECT_EQ(namespaced[0].group, "kopf.dev");
    EXPECT_EQ(namespaced[1].group, "zalando.org");
    settings.clusterwide = true;
    auto clusterwide = peering_resources(settings, found);
    ASSERT_EQ(clusterwide.size(), 1u);
    EXPECT_EQ(clusterwide[0].plural, "clusterkopfpeerings");
    EXPECT_TRUE(peering_resources(settings, {}).empty());
}

TEST(OperatorPauses, IsPausedWhileAnyToggleIsOnAndSaysWhenItChanges) {
    OperatorPause pause;
    std::vector<bool> changes;
    pause.on_change([&](bool paused) { changes.push_back(paused); });
    const auto a = pause.make(false, "default@ns1");
    const auto b = pause.make(true, "default@ns2");
    EXPECT_TRUE(pause.paused());
    EXPECT_EQ(pause.blockers(), std::vector<std::string>{"default@ns2"});
    pause.turn(a, true);
    pause.turn(b, false);
    EXPECT_TRUE(pause.paused());
    pause.drop(a);
    EXPECT_FALSE(pause.paused());
    EXPECT_EQ(changes, (std::vector<bool>{true, false}));
}

// The Lease's standby is a warm toggle: paused, but not cold (the watch streams stay open);
// a peering toggle on top makes it cold. Each change of either is told.
TEST(OperatorPauses, WarmTogglesPauseWithoutGoingColdAndEveryChangeIsTold) {
    OperatorPause pause;
    std::vector<std::pair<bool, bool>> changes;  // cold, warm
    pause.on_change([&](bool paused) {
        EXPECT_EQ(paused, pause.cold() || pause.warm());
        changes.emplace_back(pause.cold(), pause.warm());
    });
    const auto lease = pause.make(true, "lease default/op", /*warm=*/true);
    EXPECT_TRUE(pause.paused());
    EXPECT_FALSE(pause.cold());
    EXPECT_TRUE(pause.warm());
    const auto peer = pause.make(true, "default@ns1");  // still paused, now cold as well
    EXPECT_TRUE(pause.cold());
    pause.turn(lease, false);  // leading, but paused by the peer
    EXPECT_TRUE(pause.paused());
    EXPECT_FALSE(pause.warm());
    pause.turn(peer, false);
    EXPECT_FALSE(pause.paused());
    EXPECT_EQ(changes, (std::vector<std::pair<bool, bool>>{
                           {false, true}, {true, true}, {true, false}, {false, false}}));
    EXPECT_EQ(pause.blockers(), std::vector<std::string>{});
}

TEST(Leases, AStandbyTriesAgainWhenTheHoldersLeaseExpiresIfThatComesBeforeTheRetryPeriod) {
    const json held = {{"holderIdentity", "replica-a"},
                       {"leaseDurationSeconds", 15},
                       {"renewTime", "2026-11-26T04:59:46.500000Z"}};  // expires in 1.5 s
    EXPECT_NEAR(standby_retry_delay(held, NOW, 2.0), 1.51, 1e-6);
    EXPECT_NEAR(standby_retry_delay(held, NOW - 10s, 2.0), 2.0, 1e-6);  // 11.5 s to go
    EXPECT_NEAR(standby_retry_delay(held, NOW + 5s, 2.0), 0.01, 1e-6);  // overdue: at once
    EXPECT_NEAR(standby_retry_delay({{"holderIdentity", "replica-a"}}, NOW, 2.0), 2.0, 1e-6);
    EXPECT_NEAR(standby_retry_delay(json(), NOW, 2.0), 2.0, 1e-6);
}

TEST(Leases, TimesAreWrittenAsKubernetesMicroTime) {
    EXPECT_EQ(format_micro_time(NOW + 123456us), "2026-11-26T05:00:00.123456Z");
}

TEST(Leases, AreAvailableWhenFreeExpiredOrOwn) {
    const json held = {{"holderIdentity", "replica-a"},
                       {"leaseDurationSeconds", 15},
                       {"renewTime", "2026-11-26T04:59:50.000000Z"}};
    EXPECT_FALSE(lease_is_available(held, "replica-b", NOW));      // 5 s left
    EXPECT_TRUE(lease_is_available(held, "replica-a", NOW));       // its own
    EXPECT_TRUE(lease_is_available(held, "replica-b", NOW + 5s));  // expired
    json released = held;
    released["holderIdentity"] = "";
    EXPECT_TRUE(lease_is_available(released, "replica-b", NOW));
    EXPECT_TRUE(lease_is_available(json::object(), "replica-b", NOW));
}

}  // namespace
}  // namespace kopf::engines
