// Embedding (Kopf's "Embedding"): kopf::operator_() in a thread with its own registry, the
// ready and stop flags, Kubernetes Events posted from a handler, and several operators with
// their own registries and settings in one process.
#include <gtest/gtest.h>

#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <string>
#include <thread>

#include "integration/runtime/support/embedded_cluster.hpp"

namespace {
class Embedding : public kopf::testing::EmbeddedCluster {};
}  // namespace

TEST_F(Embedding, OperatorInAThreadServesItsRegistryUntilStopped) {
    kopf::Registry registry;
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [](kopf::Context& ctx) -> kopf::json {
                                      kopf::info(ctx.body, "SomeReason", "Some message");
                                      return {{"message", "embedded"}};
                                  });
    kopf::RunOptions options;
    options.namespaces = {"default"};
    options.registry = &registry;
    kopf::testing::OperatorThread operator_thread(options);
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();

    apply_example();
    EXPECT_TRUE(
        eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.message}", "embedded"));
    EXPECT_TRUE(eventually("get events -n default -o jsonpath={.items[*].reason}", "SomeReason"));
    const std::string events = kubectl("get events -n default -o json");
    EXPECT_NE(events.find("\"kopf-example-1\""), std::string::npos) << events;
    EXPECT_NE(events.find("\"Some message\""), std::string::npos) << events;

    EXPECT_EQ(operator_thread.stop(), "");
}

TEST_F(Embedding, StartupFailureIsThrownWithTheReason) {
    kopf::Registry registry;
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [](kopf::Context&) {});
    kopf::RunOptions options;  // neither namespaces nor clusterwide
    options.registry = &registry;
    try {
        kopf::operator_(options);
        FAIL() << "no error";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("--all-namespaces"), std::string::npos);
    }
}

TEST_F(Embedding, TwoOperatorsServeOnlyTheirOwnNamespacesWithTheirOwnSettings) {
    kubectl("create namespace ns-a");
    kubectl("create namespace ns-b");
    kopf::Registry registry_a, registry_b;
    kopf::on::create handler_a(registry_a, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                               [](kopf::Context&) -> kopf::json {
                                   return {{"message", "a"}};
                               });
    kopf::on::create handler_b(registry_b, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                               [](kopf::Context&) -> kopf::json {
                                   return {{"message", "b"}};
                               });
    // Deletion handlers make each operator put its own finalizer on its objects.
    kopf::on::delete_ deletion_a(registry_a, kopf::Selector("kopfexamples"), {.id = "delete_fn"},
                                 [](kopf::Context&) {});
    kopf::on::delete_ deletion_b(registry_b, kopf::Selector("kopfexamples"), {.id = "delete_fn"},
                                 [](kopf::Context&) {});
    kopf::OperatorSettings settings_a, settings_b;
    settings_a.persistence.finalizer = "a.example.com/finalizer";
    settings_b.persistence.finalizer = "b.example.com/finalizer";
    kopf::RunOptions options_a, options_b;
    options_a.namespaces = {"ns-a"};
    options_a.registry = &registry_a;
    options_a.settings = &settings_a;
    options_b.namespaces = {"ns-b"};
    options_b.registry = &registry_b;
    options_b.settings = &settings_b;

    kopf::testing::OperatorThread operator_a(options_a);
    kopf::testing::OperatorThread operator_b(options_b);
    ASSERT_TRUE(operator_a.ready()) << operator_a.failure();
    ASSERT_TRUE(operator_b.ready()) << operator_b.failure();

    apply_example("ns-a");
    apply_example("ns-b");
    const std::string message =
        "get kex kopf-example-1 -o jsonpath={.status.create_fn.message} -n ";
    EXPECT_TRUE(eventually(message + "ns-a", "a"));
    EXPECT_TRUE(eventually(message + "ns-b", "b"));
    EXPECT_EQ(kubectl(message + "ns-a"), "a");
    EXPECT_EQ(kubectl(message + "ns-b"), "b");
    const std::string finalizers = "get kex kopf-example-1 -o jsonpath={.metadata.finalizers} -n ";
    EXPECT_EQ(kubectl(finalizers + "ns-a"), "[\"a.example.com/finalizer\"]");
    EXPECT_EQ(kubectl(finalizers + "ns-b"), "[\"b.example.com/finalizer\"]");

    EXPECT_EQ(operator_a.stop(), "");
    // The other operator keeps serving after one has stopped: it releases its finalizer.
    kubectl("delete kex kopf-example-1 -n ns-b --wait=false");
    EXPECT_TRUE(eventually("get kex kopf-example-1 -n ns-b", "not found"));
    EXPECT_EQ(operator_b.stop(), "");
}
