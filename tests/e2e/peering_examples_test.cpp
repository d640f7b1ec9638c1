// examples/06-peering end to end: Kopf's e2e assertions for the example (run standalone as
// Kopf's test_examples.py runs every example), then what its README shows with real peering
// (deploy/peering.yaml applied with kubectl): two operators of the same priority both pause, a
// --dev operator pauses the other and handles alone, its exit resumes the other; and
// `kopf freeze` / `kopf resume` from the command line, with their errors; and Kopf++'s
// active/standby replicas on a Lease: the leader killed with SIGKILL in the middle of a handler,
// the standby taking over when the lease expires and running the handler once.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using json = nlohmann::json;

namespace {

class PeeringExample : public ExamplesTest {
  protected:
    // deploy/peering.yaml's CRDs, then deploy/peering-default.yaml's objects, as docs/peering.md
    // tells a user.
    void install_peering() const {
        auto crds = kubectl({"apply", "-f", (source_dir() / "deploy/peering.yaml").string()});
        ASSERT_EQ(crds.exit_code, 0) << crds.output;
        auto objects =
            kubectl({"apply", "-f", (source_dir() / "deploy/peering-default.yaml").string()});
        ASSERT_EQ(objects.exit_code, 0) << objects.output;
    }
    // `kopf run examples/06-peering/example.cpp -A --verbose EXTRA...`, serving once started.
    std::unique_ptr<OperatorProcess> start_peering(const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args = {example("06-peering"), "-A", "--verbose"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto op = std::make_unique<OperatorProcess>(*cluster_, args);
        EXPECT_TRUE(op->wait_for_log("Serving resource kopfexamples.v1.kopf.dev.")) << op->log();
        return op;
    }
    CommandResult kopf(const std::vector<std::string>& args) const {
        std::vector<std::string> argv = {kopf_binary().string()};
        argv.insert(argv.end(), args.begin(), args.end());
        return run(argv, {{"KUBECONFIG", cluster_->kubeconfig().string()}});
    }
    json cluster_peering_status() const {
        const json peering = cluster_->get_json({"clusterkopfpeerings", "default"});
        return peering.is_object() ? peering.value("status", json::object()) : json();
    }
};

// Kopf's tests/e2e/test_examples.py for this example: an on.create handler and no on.delete.
TEST_F(PeeringExample, RunsAsKopfsEndToEndTestRunsIt) {
    auto op = start("06-peering");
    create_object();
    ASSERT_TRUE(op->wait_for_log("Handling cycle is finished")) << op->log();
    delete_object();
    ASSERT_TRUE(op->wait_for_log(kObjectPrefix + "Deleted, really deleted")) << op->log();
    stop_cleanly(*op);
    EXPECT_NE(op->log().find(kObjectPrefix + "Creation is in progress:"), std::string::npos)
        << op->log();
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"create_fn", 1}})) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
    // --standalone: no peering at all, not even a warning about its absence. (The line about
    // compiling the example names its folder, 06-peering, when the plugin is not cached yet.)
    std::istringstream lines(op->log());
    for (std::string line; std::getline(lines, line);) {
        if (line.find("kopf.plugins") != std::string::npos) continue;
        EXPECT_EQ(line.find("peering"), std::string::npos) << line;
    }
}

TEST_F(PeeringExample, TheDevOperatorPausesTheOtherAndHandlesAlone) {
    install_peering();
    auto a = start_peering();
    auto b = start_peering();
    // Both see a sibling of the same priority, warn, and pause.
    const std::string same = "Possibly conflicting operators with the same priority";
    ASSERT_TRUE(a->wait_for_log(same)) << a->log();
    ASSERT_TRUE(b->wait_for_log(same)) << b->log();
    EXPECT_TRUE(a->wait_for_log("Pausing all operators, including self")) << a->log();
    ASSERT_EQ(cluster_peering_status().size(), 2u) << cluster_peering_status();

    // B leaves (its entry with it) and comes back with --dev.
    stop_cleanly(*b);
    ASSERT_TRUE(a->wait_for_log("Resuming operations after the pause.")) << a->log();
    auto dev = start_peering({"--dev"});
    ASSERT_TRUE(a->wait_for_log("Pausing operations in favour of [<Peer ")) << a->log();
    EXPECT_NE(a->log().find("priority=666"), std::string::npos) << a->log();

    create_object();
    ASSERT_TRUE(dev->wait_for_log("Handler 'create_fn' succeeded.")) << dev->log();
    EXPECT_EQ(successes(*a).count("create_fn"), 0u) << a->log();

    // The dev operator exits: A resumes at once and finds nothing left to do.
    stop_cleanly(*dev);
    ASSERT_TRUE(eventually([&] {
        return a->count_in_log("Resuming operations after the pause.") == 2;
    })) << a->log();
    delete_object();
    stop_cleanly(*a);
    EXPECT_EQ(successes(*a).count("create_fn"), 0u) << a->log();
    EXPECT_TRUE(cluster_peering_status().empty()) << cluster_peering_status();
}

TEST_F(PeeringExample, FreezeAndResumeFromTheCommandLine) {
    install_peering();
    auto op = start_peering();
    ASSERT_TRUE(op->wait_for_log("Keep-alive in 'default' cluster-wide: ok.")) << op->log();

    auto frozen = kopf({"freeze", "-A", "-P", "default", "--id", "maintainer", "-t", "60", "-m",
                        "upgrading the database"});
    ASSERT_EQ(frozen.exit_code, 0) << frozen.output;
    EXPECT_NE(frozen.output.find("The peering 'default' cluster-wide is frozen by 'maintainer' "
                                 "(priority 100) for 60 seconds: upgrading the database."),
              std::string::npos)
        << frozen.output;
    const json entry = cluster_peering_status()["maintainer"];
    EXPECT_EQ(entry["priority"], 100) << entry;
    EXPECT_EQ(entry["lifetime"], 60) << entry;
    ASSERT_TRUE(
        op->wait_for_log("Pausing operations in favour of [<Peer maintainer: "
                         "priority=100, lifetime=60"))
        << op->log();

    create_object();  // while frozen: handled only after the resume
    auto resumed = kopf({"resume", "-A", "-P", "default", "--id", "maintainer"});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_FALSE(cluster_peering_status().contains("maintainer"));
    ASSERT_TRUE(op->wait_for_log("Handler 'create_fn' succeeded.")) << op->log();
    const std::string log = op->log();
    EXPECT_LT(log.find("Resuming operations after the pause."),
              log.find("Handler 'create_fn' succeeded."))
        << log;
    delete_object();
    stop_cleanly(*op);
}

TEST_F(PeeringExample, FreezeExplainsWhatIsMissing) {
    auto no_crd = kopf({"freeze", "-A", "-P", "default", "-t", "10"});
    EXPECT_EQ(no_crd.exit_code, 1);
    EXPECT_NE(no_crd.output.find("The cluster has no ClusterKopfPeering CRD"), std::string::npos)
        << no_crd.output;

    install_peering();
    auto absent = kopf({"freeze", "-n", "default", "-P", "nonexistent", "-t", "10"});
    EXPECT_EQ(absent.exit_code, 1);
    EXPECT_NE(absent.output.find("The peering 'nonexistent' in 'default' does not exist."),
              std::string::npos)
        << absent.output;

    auto no_lifetime = kopf({"freeze", "-A", "-P", "default"});
    EXPECT_NE(no_lifetime.exit_code, 0);
    EXPECT_NE(no_lifetime.output.find("--lifetime"), std::string::npos) << no_lifetime.output;
    auto no_peering = kopf({"resume", "-A"});
    EXPECT_NE(no_peering.exit_code, 0);
    EXPECT_NE(no_peering.output.find("--peering"), std::string::npos) << no_peering.output;
}

// Two replicas of an operator with a slow creation handler and a 3-second lease.
const char* LEASED_OPERATOR = R"(#include <kopf/kopf.hpp>
#include <thread>

void configure(kopf::ActivityContext& ctx) {
    ctx.settings.leasing.lease_duration = 3;
    ctx.settings.leasing.renew_deadline = 2;
    ctx.settings.leasing.retry_period = 0.5;
}
KOPF_ON_STARTUP(configure);

kopf::json create_fn(kopf::Context& ctx) {
    ctx.logger.info("Creating slowly.");
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return {{"message", "created"}};
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
)";

TEST_F(PeeringExample, AStandbyReplicaTakesOverFromAKilledLeaderAndRunsTheHandlerOnce) {
    const auto source = cluster_->workdir() / "leased_operator.cpp";
    std::ofstream(source) << LEASED_OPERATOR;
    const std::vector<std::string> args = {source.string(), "-n",      "default",
                                           "--standalone",  "--lease", "kopfexample-operator",
                                           "--verbose"};
    setenv("POD_ID", "replica-a", 1);  // the replicas' identities (as a Deployment's pods have)
    auto leader = std::make_unique<OperatorProcess>(*cluster_, args);
    ASSERT_TRUE(leader->wait_for_log("Acquired the lease default/kopfexample-operator"))
        << leader->log();
    setenv("POD_ID", "replica-b", 1);
    auto standby = std::make_unique<OperatorProcess>(*cluster_, args);
    unsetenv("POD_ID");
    ASSERT_TRUE(
        standby->wait_for_log("Competing for the lease default/kopfexample-operator as "
                              "'replica-b'."))
        << standby->log();

    create_object();
    ASSERT_TRUE(leader->wait_for_log("Creating slowly.")) << leader->log();
    const auto killed = std::chrono::steady_clock::now();
    leader->stop(SIGKILL);
    ASSERT_TRUE(
        standby->wait_for_log("Acquired the lease default/kopfexample-operator "
                              "(transitions: 1)"))
        << standby->log();
    const auto takeover = std::chrono::steady_clock::now() - killed;
    ASSERT_TRUE(standby->wait_for_log("Handler 'create_fn' succeeded.")) << standby->log();
    const auto handled = std::chrono::steady_clock::now() - killed;
    RecordProperty(
        "takeover_ms",
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(takeover).count()));
    RecordProperty(
        "first_success_ms",
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(handled).count()));

    // The killed leader never finished; the standby ran the handler once: none lost, none twice.
    EXPECT_EQ(successes(*leader).count("create_fn"), 0u) << leader->log();
    EXPECT_EQ(successes(*standby), (std::map<std::string, int>{{"create_fn", 1}}))
        << standby->log();
    EXPECT_EQ(get_object()["status"]["create_fn"]["message"], "created");
    delete_object();
    stop_cleanly(*standby);
    EXPECT_NE(standby->log().find("Released the lease default/kopfexample-operator."),
              std::string::npos)
        << standby->log();
}

}  // namespace
