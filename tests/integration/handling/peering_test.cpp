// Kopf's peering, and Kopf++'s active/standby replicas on a Lease, against the embedded API server:
// the operator's entry in Kopf's format, its removal at the exit, pausing for a higher peer (a
// Kopf++ operator or a Kopf one whose entry the test writes as Kopf would), the same priority
// pausing all, expiry and cleaning, daemons stopped and respawned, mandatory and automatic peering
// with the CRD or the object absent, the standalone and stealth modes. Lifetimes are shortened
// (keep-alives every second). Leases: one holder handles, the standby takes over when it exits or
// its lease expires, a leader whose lease is taken stops handling, bad lease settings stop the
// start.

#include <atomic>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/actions/logging.hpp"
#include "core/engines/leases.hpp"
#include "structs/timestamps.hpp"
#include "support/cluster.hpp"
#include "support/log_lines.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

const std::string PEERINGS = "/apis/kopf.dev/v1/namespaces/default/kopfpeerings";
const std::string CLUSTER_PEERINGS = "/apis/kopf.dev/v1/clusterkopfpeerings";
const std::string MERGE = "application/merge-patch+json";

json crd(const std::string& kind, const std::string& plural, const std::string& scope) {
    std::string singular = plural.substr(0, plural.size() - 1);
    return {{"apiVersion", "apiextensions.k8s.io/v1"},
            {"kind", "CustomResourceDefinition"},
            {"metadata", {{"name", plural + ".kopf.dev"}}},
            {"spec",
             {{"scope", scope},
              {"group", "kopf.dev"},
              {"names", {{"kind", kind}, {"plural", plural}, {"singular", singular}}},
              {"versions",
               {{{"name", "v1"},
                 {"served", true},
                 {"storage", true},
                 {"schema",
                  {{"openAPIV3Schema",
                    {{"type", "object"},
                     {"properties",
                      {{"status",
                        {{"type", "object"},
                         {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}}}}}};
}

class Peering : public HandlingTest {
  protected:
    void SetUp() override {
        HandlingTest::SetUp();
        log = std::make_shared<LogLines>(
            std::initializer_list<const char*>{"kopf.engines.peering", "kopf.engines.leases"});
    }
    void TearDown() override {
        HandlingTest::TearDown();
        log = nullptr;
    }

    // deploy/peering.yaml's CRDs and "default" objects (in the namespace "default").
    void install_peering(bool with_objects = true) {
        request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                crd("KopfPeering", "kopfpeerings", "Namespaced"));
        request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                crd("ClusterKopfPeering", "clusterkopfpeerings", "Cluster"));
        if (with_objects) {
            create_peering("default");
            create_cluster_peering("default");
        }
    }
    void create_peering(const std::string& name) {
        request("POST", PEERINGS,
                {{"apiVersion", "kopf.dev/v1"},
                 {"kind", "KopfPeering"},
                 {"metadata", {{"name", name}, {"namespace", "default"}}}});
    }
    void create_cluster_peering(const std::string& name) {
        request("POST", CLUSTER_PEERINGS,
                {{"apiVersion", "kopf.dev/v1"},
                 {"kind", "ClusterKopfPeering"},
                 {"metadata", {{"name", name}}}});
    }

    json status(const std::string& path = PEERINGS + "/default") {
        return request("GET", path).value("status", json::object());
    }
    // A peer's entry as Kopf writes it: merge-patched into the object itself.
    void write_peer(const std::string& identity, long priority, long lifetime,
                    std::chrono::system_clock::time_point lastseen,
                    const std::string& path = PEERINGS + "/default") {
        request("PATCH", path,
                {{"status",
                  {{identity,
                    {{"priority", priority},
                     {"lifetime", lifetime},
                     {"lastseen", structs::format_iso8601(lastseen)}}}}}},
                MERGE);
    }
    void remove_peer(const std::string& identity, const std::string& path = PEERINGS + "/default") {
        request("PATCH", path, {{"status", {{identity, nullptr}}}}, MERGE);
    }

    // Settings with keep-alives every second and this operator's entry alive for 5 seconds.
    static OperatorSettings peering_settings(int priority = 0) {
        OperatorSettings settings = fast_settings();
        settings.peering.priority = priority;
        settings.peering.lifetime = 5;
        return settings;
    }
    // An operator in "default" that peers (the tests' operators are standalone by default).
    std::unique_ptr<OperatorThread> start_peering(Registry& registry,
                                                  const OperatorSettings& settings,
                                                  const std::string& identity,
                                                  std::function<void(RunOptions&)> more = {}) {
        return start_operator(registry, settings, [identity, more](RunOptions& options) {
            options.standalone = false;
            options.identity = identity;
            if (more) more(options);
        });
    }

    // The peering engine's log lines (all operators of the process).
    std::shared_ptr<LogLines> log;
};

// Records each handled value of spec.field with whether the operator said it paused and
// resumed by then.
void record_fields(Registry& registry, const std::shared_ptr<Calls>& calls,
                   const std::shared_ptr<LogLines>& log, const std::string& id = "fields") {
    on::event(registry, "kopfexamples", {.id = id}, [calls, log, id](Context& ctx) {
        if (ctx.type == "DELETED") return;
        calls->add(id, {{"field", ctx.spec.value("field", "")},
                        {"paused", log->contains("Pausing operations")},
                        {"resumed", log->contains("Resuming operations")}});
    });
}

bool handled(const Calls& calls, const std::string& field, const std::string& id = "fields") {
    for (const auto& call : calls.details(id))
        if (call["field"] == field) return true;
    return false;
}

TEST_F(Peering, TheOperatorAnnouncesItselfInKopfsFormatAndRemovesItsEntryOnExit) {
    install_peering();
    Registry registry;
    on::create(registry, "kopfexamples", {.id = "noop"}, [](Context&) {});
    auto settings = peering_settings(7);
    settings.peering.lifetime = 30;
    auto operator_ = start_peering(registry, settings, "kopfpp-a");

    ASSERT_TRUE(eventually([&] { return status().contains("kopfpp-a"); })) << log->text();
    const json entry = status()["kopfpp-a"];
    EXPECT_EQ(entry["priority"], 7);
    EXPECT_EQ(entry["lifetime"], 30);
    ASSERT_TRUE(entry["lastseen"].is_string()) << entry;
    EXPECT_TRUE(std::regex_match(entry["lastseen"].get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)")))
        << entry;
    // Logged once the keep-alive's answer is back, which may be after the test sees the entry.
    EXPECT_TRUE(eventually([&] {
        return log->contains("Keep-alive in 'default' in 'default': ok.");
    })) << log->text();
    // Not in the cluster-wide peering: the operator serves a namespace.
    EXPECT_FALSE(status(CLUSTER_PEERINGS + "/default").contains("kopfpp-a"));

    EXPECT_EQ(operator_->stop(), "");
    EXPECT_FALSE(status().contains("kopfpp-a")) << status();
}

TEST_F(Peering, AClusterWideOperatorUsesTheClusterKopfPeering) {
    install_peering();
    Registry registry;
    on::create(registry, "kopfexamples", {.id = "noop"}, [](Context&) {});
    auto operator_ =
        start_peering(registry, peering_settings(), "kopfpp-cluster", [](RunOptions& options) {
            options.namespaces.clear();
            options.clusterwide = true;
        });
    ASSERT_TRUE(eventually(
        [&] { return status(CLUSTER_PEERINGS + "/default").contains("kopfpp-cluster"); }));
    EXPECT_FALSE(status().contains("kopfpp-cluster"));
    EXPECT_EQ(operator_->stop(), "");
    EXPECT_FALSE(status(CLUSTER_PEERINGS + "/default").contains("kopfpp-cluster"));
}

// The mixed peering: a Kopf operator's entry, written as Kopf writes it, pauses Kopf++; its
// removal (Kopf's exit) resumes it; what changed meanwhile is handled after the resume only.
TEST_F(Peering, AHigherKopfPeerPausesTheOperatorUntilItsEntryIsRemoved) {
    install_peering();
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    const int metrics_port = free_port();
    auto operator_ = start_peering(
        registry, peering_settings(0), "kopfpp-low", [metrics_port](RunOptions& options) {
            options.metrics_endpoint =
                "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics";
        });
    const auto scraped_paused = [metrics_port](const char* value) {
        return http_get(metrics_port, "/metrics").find(std::string("\nkopf_paused ") + value) !=
               std::string::npos;
    };
    create(example("kex-mixed", {{"field", "before"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "before"); }));
    EXPECT_TRUE(scraped_paused("0"));

    const std::string kopf_id = "kopf@workstation/20261126050000/x7q";
    write_peer(kopf_id, 100, 60, std::chrono::system_clock::now());
    ASSERT_TRUE(eventually([&] {
        return log->contains("Pausing operations in favour of [<Peer " + kopf_id);
    })) << log->text();
    EXPECT_TRUE(eventually([&] { return scraped_paused("1"); }));  // what alerts can watch
    patch("kex-mixed", {{"spec", {{"field", "during"}}}});
    // Kopf's exit: its entry is removed; the operator resumes and sees the change then.
    remove_peer(kopf_id);
    ASSERT_TRUE(eventually([&] { return handled(*calls, "during"); })) << log->text();
    for (const auto& call : calls->details("fields")) {
        if (call["field"] == "during") EXPECT_TRUE(call["resumed"].get<bool>()) << call;
    }
    EXPECT_TRUE(log->contains(
        "Resuming operations after the pause. Conflicting operators with the same priority are "
        "gone."));
    EXPECT_TRUE(eventually([&] { return scraped_paused("0"); }));
}

TEST_F(Peering, TheOperatorResumesWhenTheHigherPeerExpiresAndCleansItsEntry) {
    install_peering();
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto operator_ = start_peering(registry, peering_settings(0), "kopfpp-survivor");
    ASSERT_TRUE(eventually([&] { return status().contains("kopfpp-survivor"); }));

    // A peer that dies without a word: its entry stays until its lifetime passes.
    write_peer("crashed-pod", 50, 3, std::chrono::system_clock::now());
    ASSERT_TRUE(eventually([&] { return log->contains("Pausing operations in favour of"); }))
        << log->text();
    create(example("kex-expiry", {{"field", "while-paused"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "while-paused"); }, 30s)) << log->text();
    EXPECT_TRUE(calls->details("fields").front()["resumed"].get<bool>());
    ASSERT_TRUE(eventually([&] { return !status().contains("crashed-pod"); })) << status();
    EXPECT_TRUE(status().contains("kopfpp-survivor"));
}

TEST_F(Peering, LongDeadPeersAreCleanedAndPauseNothing) {
    install_peering();
    write_peer("long-gone", 1000, 60, std::chrono::system_clock::now() - 1h);
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto operator_ = start_peering(registry, peering_settings(0), "kopfpp-cleaner");
    ASSERT_TRUE(eventually([&] { return !status().contains("long-gone"); })) << status();
    create(example("kex-clean", {{"field", "x"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "x"); }));
    EXPECT_FALSE(log->contains("Pausing operations")) << log->text();
}

TEST_F(Peering, OperatorsOfTheSamePriorityAllPauseWithAWarning) {
    install_peering();
    Registry registry_a, registry_b;
    auto calls = std::make_shared<Calls>();
    record_fields(registry_a, calls, log, "a");
    record_fields(registry_b, calls, log, "b");
    auto a = start_peering(registry_a, peering_settings(5), "kopfpp-twin-a");
    auto b = start_peering(registry_b, peering_settings(5), "kopfpp-twin-b");
    ASSERT_TRUE(eventually([&] {
        return log->contains(
                   "Possibly conflicting operators with the same priority: [<Peer "
                   "kopfpp-twin-b:") &&
               log->contains(
                   "Possibly conflicting operators with the same priority: [<Peer kopfpp-twin-a:");
    })) << log->text();
    EXPECT_TRUE(log->contains("Pausing all operators, including self: [")) << log->text();
    create(example("kex-twins", {{"field", "nobody"}}));
    // One of them leaves: the other resumes and handles what came meanwhile.
    EXPECT_EQ(b->stop(), "");
    ASSERT_TRUE(eventually([&] { return handled(*calls, "nobody", "a"); })) << log->text();
    EXPECT_TRUE(calls->details("a").back()["resumed"].get<bool>());
}

TEST_F(Peering, TheHigherOperatorHandlesAloneAndTheLowerTakesOverWhenItExits) {
    install_peering();
    Registry registry_low, registry_high;
    auto calls = std::make_shared<Calls>();
    for (auto* registry : {&registry_low, &registry_high}) {
        const std::string who = registry == &registry_low ? "low" : "high";
        on::create(*registry, "kopfexamples", {.id = "create_fn"},
                   [calls, who](Context& ctx) { calls->add(who, ctx.name); });
    }
    auto high = start_peering(registry_high, peering_settings(10), "kopfpp-high");
    auto low = start_peering(registry_low, peering_settings(1), "kopfpp-low");
    ASSERT_TRUE(eventually([&] {
        return log->contains("Pausing operations in favour of [<Peer kopfpp-high:");
    })) << log->text();

    create(example("kex-first", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return calls->count("high") == 1; }));
    EXPECT_EQ(high->stop(), "");  // its entry goes: the lower one resumes at once
    create(example("kex-second", {{"field", 2}}));
    ASSERT_TRUE(eventually([&] { return calls->count("low") == 1; })) << log->text();
    EXPECT_EQ(calls->details("low"), std::vector<json>{"kex-second"});
    EXPECT_EQ(calls->details("high"), std::vector<json>{"kex-first"});
}

TEST_F(Peering, DaemonsAndTimersStopWhilePausedAndRespawnOnResume) {
    install_peering();
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::daemon(registry, "kopfexamples", {.id = "monitor"}, [calls](Context& ctx) {
        calls->add("daemon-started");
        while (!ctx.stopped) ctx.stopped.wait(0.05);
        calls->add("daemon-stopped", to_string(ctx.stopped.reason()));
    });
    on::timer(registry, "kopfexamples", {.id = "ticker", .interval = 0.1},
              [calls](Context&) { calls->add("tick"); });
    auto operator_ = start_peering(registry, peering_settings(0), "kopfpp-daemons");
    create(example("kex-daemons", {{"field", 1}}));
    ASSERT_TRUE(eventually(
        [&] { return calls->count("daemon-started") == 1 && calls->count("tick") > 0; }));

    write_peer("kopf-dev", 666, 60, std::chrono::system_clock::now());
    ASSERT_TRUE(eventually([&] { return calls->count("daemon-stopped") == 1; })) << log->text();
    EXPECT_NE(calls->details("daemon-stopped")[0].get<std::string>().find("OPERATOR_PAUSING"),
              std::string::npos)
        << calls->details("daemon-stopped")[0];

    remove_peer("kopf-dev");
    ASSERT_TRUE(eventually([&] { return calls->count("daemon-started") == 2; })) << log->text();
    const int ticks = calls->count("tick");
    ASSERT_TRUE(eventually([&] { return calls->count("tick") > ticks; }));
}

TEST_F(Peering, WithoutTheCrdTheOperatorWarnsAndRunsStandalone) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto operator_ = start_peering(registry, peering_settings(), "kopfpp-auto");
    create(example("kex-auto", {{"field", "handled"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "handled"); }));
    EXPECT_TRUE(
        log->contains("The peering CRD kopfpeerings.kopf.dev is absent: running in the "
                      "standalone mode"))
        << log->text();
}

TEST_F(Peering, WithoutItsObjectTheAutomaticPeeringRunsStandalone) {
    install_peering(/*with_objects=*/false);
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto operator_ = start_peering(registry, peering_settings(), "kopfpp-auto");
    create(example("kex-auto", {{"field", "handled"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "handled"); }));
    EXPECT_TRUE(
        log->contains("The peering 'default' in 'default' does not exist: running in the "
                      "standalone mode"))
        << log->text();
}

// --peering NAME: the peering is mandatory; the operator waits for its CRD and its object.
TEST_F(Peering, AMandatoryPeeringPausesUntilItsCrdAndObjectAppear) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto operator_ = start_peering(registry, peering_settings(), "kopfpp-mandatory",
                                   [](RunOptions& options) { options.peering_name = "example"; });
    ASSERT_TRUE(eventually([&] {
        return log->contains(
            "The mandatory peering 'example' cannot be used: the cluster has no "
            "KopfPeering CRD");
    })) << log->text();
    create(example("kex-waiting", {{"field", "waited"}}));

    install_peering(/*with_objects=*/false);
    ASSERT_TRUE(eventually([&] {
        return log->contains("The mandatory peering 'example' in 'default' does not exist");
    })) << log->text();
    create_peering("example");
    ASSERT_TRUE(eventually([&] { return handled(*calls, "waited"); })) << log->text();
    EXPECT_TRUE(calls->details("fields").front()["resumed"].get<bool>());
    ASSERT_TRUE(
        eventually([&] { return status(PEERINGS + "/example").contains("kopfpp-mandatory"); }));
}

TEST_F(Peering, AStandaloneOperatorNeitherAnnouncesItselfNorPauses) {
    install_peering();
    write_peer("kopf-dev", 666, 60, std::chrono::system_clock::now());
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto operator_ = start_peering(registry, peering_settings(), "kopfpp-alone",
                                   [](RunOptions& options) { options.standalone = true; });
    create(example("kex-alone", {{"field", "handled"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "handled"); }));
    EXPECT_FALSE(status().contains("kopfpp-alone"));
    EXPECT_EQ(log->text(), "");  // not a line: no peering at all
}

TEST_F(Peering, StealthKeepAlivesAreNotLogged) {
    install_peering();
    Registry registry;
    on::create(registry, "kopfexamples", {.id = "noop"}, [](Context&) {});
    auto settings = peering_settings();
    settings.peering.stealth = true;
    auto operator_ = start_peering(registry, settings, "kopfpp-stealth");
    ASSERT_TRUE(eventually([&] { return status().contains("kopfpp-stealth"); }));
    // A second keep-alive has been sent (lastseen moves on) without a line.
    const auto first = status()["kopfpp-stealth"]["lastseen"];
    ASSERT_TRUE(eventually([&] { return status()["kopfpp-stealth"]["lastseen"] != first; }));
    EXPECT_FALSE(log->contains("Keep-alive")) << log->text();
}

// ---- active/standby replicas on a Lease (settings.leasing) -------------------------------------

const std::string LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

class Leases : public Peering {
  protected:
    // A 2-second lease, renewed every 0.2 s; the leader gives up after 1.2 s without renewals.
    static OperatorSettings lease_settings() {
        OperatorSettings settings = fast_settings();
        settings.leasing.lease_duration = 2;
        settings.leasing.renew_deadline = 1.2;
        settings.leasing.retry_period = 0.2;
        return settings;
    }
    std::unique_ptr<OperatorThread> start_replica(
        Registry& registry, const std::string& identity,
        const OperatorSettings& settings = lease_settings()) {
        return start_operator(registry, settings, [identity](RunOptions& options) {
            options.lease = "kopfexample-operator";
            options.identity = identity;
        });
    }
    json lease() { return request("GET", LEASES + "/kopfexample-operator"); }
    // The Lease as another replica holds it (renewed now, for `duration` seconds).
    void hold_lease(const std::string& holder, long duration, long transitions = 0) {
        const auto now = std::chrono::system_clock::now();
        request("POST", LEASES,
                {{"apiVersion", "coordination.k8s.io/v1"},
                 {"kind", "Lease"},
                 {"metadata", {{"name", "kopfexample-operator"}, {"namespace", "default"}}},
                 {"spec",
                  {{"holderIdentity", holder},
                   {"leaseDurationSeconds", duration},
                   {"leaseTransitions", transitions},
                   {"acquireTime", engines::format_micro_time(now)},
                   {"renewTime", engines::format_micro_time(now)}}}});
    }
    // The holder dies: its last renewal is long past, so the Lease has expired.
    void expire_lease() {
        json expired = lease();
        expired["spec"]["renewTime"] =
            engines::format_micro_time(std::chrono::system_clock::now() - std::chrono::hours(2));
        request("PUT", LEASES + "/kopfexample-operator", expired);
    }
    std::string holder() {
        try {
            return lease()["spec"].value("holderIdentity", "");
        } catch (const std::exception&) {
            return "";
        }
    }
};

// Each replica's on.create handler, recording which replica handled which object.
void record_creations(Registry& registry, const std::shared_ptr<Calls>& calls,
                      const std::string& replica) {
    on::create(registry, "kopfexamples", {.id = "create_fn"},
               [calls, replica](Context& ctx) { calls->add(replica, ctx.name); });
}

TEST_F(Leases, OnlyTheHolderHandlesAndTheLeaseIsWrittenAsClientGoWritesIt) {
    Registry registry_a, registry_b;
    auto calls = std::make_shared<Calls>();
    record_creations(registry_a, calls, "a");
    record_creations(registry_b, calls, "b");
    auto a = start_replica(registry_a, "replica-a");
    ASSERT_TRUE(eventually([&] { return holder() == "replica-a"; })) << log->text();
    auto b = start_replica(registry_b, "replica-b");
    ASSERT_TRUE(eventually([&] { return log->contains("as 'replica-b'"); }));

    create(example("kex-leader", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return calls->count("a") == 1; }));
    const json spec = lease()["spec"];
    EXPECT_EQ(spec["holderIdentity"], "replica-a");
    EXPECT_EQ(spec["leaseDurationSeconds"], 2);
    EXPECT_EQ(spec["leaseTransitions"], 0);
    const std::regex micro_time(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
    EXPECT_TRUE(std::regex_match(spec["acquireTime"].get<std::string>(), micro_time)) << spec;
    EXPECT_TRUE(std::regex_match(spec["renewTime"].get<std::string>(), micro_time)) << spec;
    EXPECT_EQ(calls->count("b"), 0);
    EXPECT_EQ(holder(), "replica-a");  // renewed all along: the standby never took it
}

TEST_F(Leases, TheStandbyTakesOverAtOnceWhenTheLeaderExits) {
    Registry registry_a, registry_b;
    auto calls = std::make_shared<Calls>();
    record_creations(registry_a, calls, "a");
    record_creations(registry_b, calls, "b");
    auto a = start_replica(registry_a, "replica-a");
    ASSERT_TRUE(eventually([&] { return holder() == "replica-a"; }));
    auto b = start_replica(registry_b, "replica-b");
    create(example("kex-before", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return calls->count("a") == 1; }));

    const auto exiting = std::chrono::steady_clock::now();
    EXPECT_EQ(a->stop(), "");
    EXPECT_TRUE(log->contains("Released the lease default/kopfexample-operator."));
    create(example("kex-after", {{"field", 2}}));
    ASSERT_TRUE(eventually([&] { return calls->count("b") == 1; })) << log->text();
    RecordProperty("takeover_ms",
                   static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - exiting)
                                        .count()));
    EXPECT_EQ(calls->details("b"), std::vector<json>{"kex-after"});  // no success repeated
    EXPECT_EQ(holder(), "replica-b");
    EXPECT_EQ(lease()["spec"]["leaseTransitions"], 1);
}

TEST_F(Leases, AStandbyTakesTheLeaseOfACrashedReplicaWhenItExpires) {
    // A replica killed without a word: its lease stays until its duration passes.
    hold_lease("crashed-replica", 2, 4);
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_fields(registry, calls, log);
    auto standby = start_replica(registry, "replica-b");
    create(example("kex-orphaned", {{"field", "waited"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "waited"); }, 30s)) << log->text();
    EXPECT_EQ(holder(), "replica-b");
    EXPECT_EQ(lease()["spec"]["leaseTransitions"], 5);
    EXPECT_TRUE(log->contains("Acquired the lease default/kopfexample-operator (transitions: 5)"))
        << log->text();
}

TEST_F(Leases, ALeaderWhoseLeaseIsTakenStopsHandlingUntilItHoldsItAgain) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    // Each handled value with how many times the replica had acquired the lease by then.
    on::event(registry, "kopfexamples", {.id = "fields"}, [calls, log = log](Context& ctx) {
        if (ctx.type == "DELETED") return;
        calls->add("fields", {{"field", ctx.spec.value("field", "")},
                              {"acquired", log->count("Acquired the lease")}});
    });
    auto leader = start_replica(registry, "replica-a");
    ASSERT_TRUE(eventually([&] { return holder() == "replica-a"; }));
    create(example("kex-taken", {{"field", "led"}}));
    ASSERT_TRUE(eventually([&] { return handled(*calls, "led"); }));

    // Another holder with a long lease, as after a partition healed on the other side.
    json taken = lease();
    taken["spec"]["holderIdentity"] = "intruder";
    taken["spec"]["leaseDurationSeconds"] = 3600;
    taken["spec"]["renewTime"] = engines::format_micro_time(std::chrono::system_clock::now());
    request("PUT", LEASES + "/kopfexample-operator", taken);
    ASSERT_TRUE(eventually([&] {
        return log->contains(
            "Lost the lease default/kopfexample-operator: it is held by 'intruder'. Standing by.");
    })) << log->text();
    patch("kex-taken", {{"spec", {{"field", "while-standing-by"}}}});
    // The intruder leaves: the replica takes the lease again and handles what changed then.
    json released = lease();
    released["spec"]["holderIdentity"] = "";
    request("PUT", LEASES + "/kopfexample-operator", released);
    ASSERT_TRUE(eventually([&] { return handled(*calls, "while-standing-by"); })) << log->text();
    EXPECT_EQ(holder(), "replica-a");
    for (const auto& call : calls->details("fields")) {
        if (call["field"] == "while-standing-by") EXPECT_EQ(call["acquired"], 2) << call;
    }
}

// The watch requests of the served resource (the first one and any restart) and the API
// requests listing or watching it, as the operator's metrics count them.
struct WatchTraffic {
    double streams = -1;
    double lists_and_watches = 0;
    bool operator==(const WatchTraffic& other) const {
        return streams == other.streams && lists_and_watches == other.lists_and_watches;
    }
};
WatchTraffic watch_traffic(const std::string& metrics) {
    WatchTraffic traffic;
    traffic.streams =
        metric_sample(metrics, R"(kopf_watch_streams_total{resource="kopfexamples.v1.kopf.dev"})");
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("kopf_api_requests_total{", 0) != 0 ||
            line.find("kopfexamples") == std::string::npos ||
            (line.find(R"(verb="list")") == std::string::npos &&
             line.find(R"(verb="watch")") == std::string::npos))
            continue;
        traffic.lists_and_watches += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return traffic;
}

// A standby with the lease held elsewhere: it watches and indexes, but runs no handler and no
// timer. When the leader dies, it takes over on the watch stream it has kept (no new listing
// or watch request) and handles each object changed meanwhile once, from its latest body.
TEST_F(Leases, AWarmStandbyWatchesAndIndexesThenHandlesTheLatestBodiesOnceAtTheTakeover) {
    hold_lease("departed-leader", 3600);
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, [](Context& ctx) -> json {
        return {{ctx.spec.value("field", ""), ctx.name}};
    });
    on::create(registry, "kopfexamples", {.id = "create_fn"}, [calls](Context& ctx) {
        calls->add("created", {{"name", ctx.name},
                               {"field", ctx.spec.value("field", "")},
                               {"indexed", ctx.index("by_field").get("3").size()}});
    });
    on::timer ticker(registry, "kopfexamples", {.id = "ticker", .interval = 0.1},
                     [calls](Context& ctx) { calls->add("tick", ctx.name); });
    const int port = free_port();
    auto standby = start_operator(registry, lease_settings(), [port](RunOptions& options) {
        options.lease = "kopfexample-operator";
        options.identity = "replica-b";
        options.metrics_endpoint = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
    });
    ASSERT_TRUE(eventually([&] { return log->contains("as 'replica-b'"); }));

    // While it stands by: one object created and changed twice, another created and deleted.
    create(example("kex-warm", {{"field", "1"}}));
    patch("kex-warm", {{"spec", {{"field", "2"}}}});
    patch("kex-warm", {{"spec", {{"field", "3"}}}});
    create(example("kex-gone", {{"field", "x"}}));
    remove("kex-gone");
    std::string text;
    const std::string events = R"(kopf_watch_events_total{resource="kopfexamples.v1.kopf.dev"})";
    ASSERT_TRUE(eventually([&] {
        text = http_body(http_get(port, "/metrics"));
        return metric_sample(text, events) >= 5 &&
               metric_sample(text, R"(kopf_index_keys{index="by_field"})") == 1 &&
               metric_sample(text, R"(kopf_index_values{index="by_field"})") == 1;
    })) << text;
    EXPECT_EQ(metric_sample(text, R"(kopf_paused)"), 1) << text;
    const WatchTraffic standing_by = watch_traffic(text);
    EXPECT_EQ(standing_by.streams, 1) << text;
    EXPECT_GT(standing_by.lists_and_watches, 0) << text;
    EXPECT_EQ(calls->count("created"), 0);
    EXPECT_EQ(calls->count("tick"), 0);
    EXPECT_EQ(get("kex-warm")->value("/metadata/finalizers"_json_pointer, json::array()),
              json::array());  // nothing written while standing by

    // The leader dies: the standby takes over when its lease has expired.
    expire_lease();
    ASSERT_TRUE(eventually([&] {
        return calls->count("created") == 1 && calls->count("tick") > 0;
    })) << log->text();
    EXPECT_EQ(holder(), "replica-b");
    const json once = {{"name", "kex-warm"}, {"field", "3"}, {"indexed", 1}};
    EXPECT_EQ(calls->details("created"), std::vector<json>{once});
    text = http_body(http_get(port, "/metrics"));
    EXPECT_EQ(watch_traffic(text), standing_by) << text;  // the same watch stream, no listing
    EXPECT_EQ(metric_sample(text, R"(kopf_paused)"), 0) << text;
    // Handled once: the success is recorded, and the ticks do not bring the handler back.
    ASSERT_TRUE(eventually([&] { return calls->count("tick") >= 3; }));
    EXPECT_EQ(calls->count("created"), 1);
    EXPECT_EQ(standby->stop(), "");
}

// A standby that a higher peer pauses (Kopf's cold pause) closes its watch streams and forgets
// what it held; resumed, it lists again and still handles each object once at the takeover.
TEST_F(Leases, AStandbyPausedByAHigherPeerRelistsWhenResumedAndHandlesOnceAtTheTakeover) {
    install_peering();
    hold_lease("departed-leader", 3600);
    Registry registry;
    auto calls = std::make_shared<Calls>();
    record_creations(registry, calls, "b");
    auto standby = start_operator(registry, peering_settings(), [](RunOptions& options) {
        options.standalone = false;
        options.lease = "kopfexample-operator";
        options.identity = "replica-b";
    });
    ASSERT_TRUE(eventually([&] { return status().contains("replica-b"); })) << log->text();
    create(example("kex-before-pause", {{"field", 1}}));
    write_peer("maintenance", 100, 60, std::chrono::system_clock::now());
    ASSERT_TRUE(eventually([&] { return log->contains("Pausing operations in favour of"); }));
    create(example("kex-during-pause", {{"field", 2}}));
    remove("kex-before-pause");
    remove_peer("maintenance");
    ASSERT_TRUE(eventually([&] { return log->contains("Resuming operations"); }));
    EXPECT_EQ(calls->count("b"), 0);

    expire_lease();
    ASSERT_TRUE(eventually([&] { return calls->count("b") == 1; })) << log->text();
    EXPECT_EQ(calls->details("b"), std::vector<json>{"kex-during-pause"});
    create(example("kex-after", {{"field", 3}}));
    ASSERT_TRUE(eventually([&] { return calls->count("b") == 2; })) << log->text();
    EXPECT_EQ(calls->details("b"), (std::vector<json>{"kex-during-pause", "kex-after"}));
    EXPECT_EQ(standby->stop(), "");
}

// A leader that loses its lease handles nothing more, not even what it had queued: an object
// waiting for the only worker slot behind a running handler is handled once, after the lease is
// held again; the running handler ends and its success is kept (it does not run again).
TEST_F(Leases, ALeaderThatLosesItsLeaseHandlesNothingOfWhatItHadQueued) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    auto release = std::make_shared<std::atomic<bool>>(false);
    // The replica sees an object as soon as its index handler does (it needs no worker slot).
    on::index idx(registry, "kopfexamples", {.id = "seen"}, [calls](Context& ctx) -> json {
        calls->add("seen:" + ctx.name);
        return {{ctx.name, true}};
    });
    on::create(registry, "kopfexamples", {.id = "create_fn"},
               [calls, release, log = log](Context& ctx) {
                   calls->add(ctx.name, log->count("Acquired the lease"));
                   while (ctx.name == "kex-running" && !*release) std::this_thread::sleep_for(10ms);
               });
    auto settings = lease_settings();
    settings.queueing.worker_limit = 1;  // the second object waits for the first one's slot
    auto leader = start_replica(registry, "replica-a", settings);
    ASSERT_TRUE(eventually([&] { return holder() == "replica-a"; }));
    create(example("kex-running", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return calls->count("kex-running") == 1; }));
    create(example("kex-queued", {{"field", 2}}));
    ASSERT_TRUE(eventually([&] { return calls->count("seen:kex-queued") > 0; }));

    json taken = lease();
    taken["spec"]["holderIdentity"] = "intruder";
    taken["spec"]["leaseDurationSeconds"] = 3600;
    taken["spec"]["renewTime"] = engines::format_micro_time(std::chrono::system_clock::now());
    request("PUT", LEASES + "/kopfexample-operator", taken);
    ASSERT_TRUE(eventually([&] { return log->contains("Lost the lease"); })) << log->text();
    *release = true;  // the running handler ends; the queued object gets the slot, standing by
    ASSERT_TRUE(eventually(
        [&] { return kopf_annotation("kex-running", "last-handled-configuration").has_value(); }));
    EXPECT_EQ(calls->count("kex-queued"), 0);

    json released = lease();
    released["spec"]["holderIdentity"] = "";
    request("PUT", LEASES + "/kopfexample-operator", released);
    ASSERT_TRUE(eventually([&] { return calls->count("kex-queued") == 1; })) << log->text();
    EXPECT_EQ(calls->details("kex-queued"), std::vector<json>{2});  // after the second acquisition
    EXPECT_EQ(calls->count("kex-running"), 1);
    EXPECT_EQ(leader->stop(), "");
    EXPECT_EQ(calls->count("kex-queued"), 1);
    EXPECT_EQ(calls->count("kex-running"), 1);
}

// A partition: every request of every replica takes longer than the lease. The leader stops
// handling at its renew deadline, before its lease (longer) can expire and be taken.
TEST_F(Leases, APartitionedLeaderStopsHandlingBeforeAnotherCanTakeOver) {
    Registry registry_a, registry_b;
    auto calls = std::make_shared<Calls>();
    record_creations(registry_a, calls, "a");
    record_creations(registry_b, calls, "b");
    auto a = start_replica(registry_a, "replica-a");
    ASSERT_TRUE(eventually([&] { return holder() == "replica-a"; }));
    auto b = start_replica(registry_b, "replica-b");
    ASSERT_TRUE(eventually([&] { return log->contains("as 'replica-b'"); }));

    server->delay_responses(2500ms);
    const std::string lost =
        "Lost the lease default/kopfexample-operator: it is not renewed within the renew deadline "
        "(1.2s). Standing by.";
    ASSERT_TRUE(eventually([&] { return log->contains(lost); })) << log->text();
    server->delay_responses(0ms);
    // Someone leads again (either replica) — only after the leader had stopped.
    ASSERT_TRUE(eventually([&] { return log->count("Acquired the lease") == 2; })) << log->text();
    const std::string text = log->text();
    const auto second_acquisition =
        text.find("Acquired the lease", text.find("Acquired the lease") + 1);
    EXPECT_LT(text.find(lost), second_acquisition) << text;
    create(example("kex-healed", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return calls->count("a") + calls->count("b") == 1; }));
}

TEST_F(Leases, InconsistentLeaseSettingsStopTheStart) {
    Registry registry;
    on::create(registry, "kopfexamples", {.id = "noop"}, [](Context&) {});
    auto settings = lease_settings();
    settings.leasing.name = "kopfexample-operator";
    settings.leasing.renew_deadline = 5;  // longer than the lease: a standby could take over first
    const std::string failure = run_until_it_fails(registry, settings);
    EXPECT_NE(failure.find("settings.leasing needs a lease name and a namespace, and "
                           "lease_duration (2s) > renew_deadline (5s) > retry_period (0.2s) > 0."),
              std::string::npos)
        << failure;
}

}  // namespace
}  // namespace kopf::testing
