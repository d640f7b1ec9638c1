// Embedding (Kopf's "Embedding"): kopf::operator_() in a thread with its own registry, the
// ready and stop flags, Kubernetes Events posted from a handler, and several operators with
// their own registries and settings in one process, each posting its own Events.
#include <gtest/gtest.h>

#include <chrono>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <set>
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
    kopf::RunOptions options;
    options.namespaces = {"default"};
    options.clusterwide = true;  // both: the scope is ambiguous
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

using kopf::json;

namespace {

// Two operators in "ns-a" and "ns-b" whose create handlers post an info and a warning Event
// ("InfoReason", then "Marker"), each operator with its own settings.posting.
class EmbeddedPosting : public kopf::testing::EmbeddedCluster {
  protected:
    void SetUp() override {
        EmbeddedCluster::SetUp();
        if (IsSkipped()) return;
        kubectl("create namespace ns-a");
        kubectl("create namespace ns-b");
        settings_a.posting.reporting_component = "operator-a";
        settings_b.posting.reporting_component = "operator-b";
        for (auto* options : {&options_a, &options_b}) {
            options->registry = options == &options_a ? &registry_a : &registry_b;
            options->settings = options == &options_a ? &settings_a : &settings_b;
        }
        options_a.namespaces = {"ns-a"};
        options_b.namespaces = {"ns-b"};
    }

    static void post_info_and_marker(kopf::Context& ctx) {
        kopf::info(ctx.body, "InfoReason", "informational");
        kopf::warn(ctx.body, "Marker", "done");
    }

    // Waits for the "Marker" Event about the object; all the Events about it by then.
    json events_until_marker(const std::string& name, const std::string& namespace_) {
        for (int i = 0; i < 300; ++i) {
            const json events = events_about(name, namespace_);
            for (const auto& event : events) {
                if (event.value("reason", "") == "Marker") return events;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        ADD_FAILURE() << "no Marker event about " << namespace_ << "/" << name;
        return events_about(name, namespace_);
    }

    static std::set<std::string> components(const json& events) {
        std::set<std::string> found;
        for (const auto& event : events) found.insert(event.value("reportingComponent", ""));
        return found;
    }
    static bool has_reason(const json& events, const std::string& reason) {
        for (const auto& event : events) {
            if (event.value("reason", "") == reason) return true;
        }
        return false;
    }

    kopf::Registry registry_a, registry_b;
    kopf::OperatorSettings settings_a, settings_b;
    kopf::RunOptions options_a, options_b;
};

}  // namespace

TEST_F(EmbeddedPosting, EachOperatorPostsWithItsOwnComponentAndLevel) {
    kopf::on::create handler_a(registry_a, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                               post_info_and_marker);
    kopf::on::create handler_b(registry_b, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                               post_info_and_marker);
    settings_b.posting.level = kopf::LogLevel::WARNING;
    kopf::testing::OperatorThread operator_a(options_a);
    kopf::testing::OperatorThread operator_b(options_b);
    ASSERT_TRUE(operator_a.ready()) << operator_a.failure();
    ASSERT_TRUE(operator_b.ready()) << operator_b.failure();

    apply_example("ns-a");
    apply_example("ns-b");
    events_until_marker("kopf-example-1", "ns-a");
    events_until_marker("kopf-example-1", "ns-b");
    EXPECT_EQ(operator_a.stop(), "");
    EXPECT_EQ(operator_b.stop(), "");

    const json events_a = events_about("kopf-example-1", "ns-a");
    const json events_b = events_about("kopf-example-1", "ns-b");
    EXPECT_EQ(components(events_a), std::set<std::string>{"operator-a"}) << events_a.dump(2);
    EXPECT_EQ(components(events_b), std::set<std::string>{"operator-b"}) << events_b.dump(2);
    EXPECT_TRUE(has_reason(events_a, "InfoReason")) << events_a.dump(2);
    EXPECT_FALSE(has_reason(events_b, "InfoReason")) << events_b.dump(2);
}

TEST_F(EmbeddedPosting, AnOperatorKeepsPostingItsEventsAfterAnotherHasStopped) {
    kopf::on::create handler_a(registry_a, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                               post_info_and_marker);
    kopf::on::create handler_b(registry_b, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                               post_info_and_marker);
    kopf::testing::OperatorThread operator_a(options_a);
    kopf::testing::OperatorThread operator_b(options_b);
    ASSERT_TRUE(operator_a.ready()) << operator_a.failure();
    ASSERT_TRUE(operator_b.ready()) << operator_b.failure();
    EXPECT_EQ(operator_a.stop(), "");

    apply_example("ns-b");
    const json events = events_until_marker("kopf-example-1", "ns-b");  // operator b still runs
    EXPECT_EQ(components(events), std::set<std::string>{"operator-b"}) << events.dump(2);
    EXPECT_EQ(operator_b.stop(), "");
}

TEST_F(EmbeddedPosting, EventsFromAThreadOfAHandlerArePostedByTheRunningOperator) {
    kopf::on::create handler_a(
        registry_a, kopf::Selector("kopfexamples"), {.id = "create_fn"},
        [](kopf::Context& ctx) { std::thread([&ctx] { post_info_and_marker(ctx); }).join(); });
    kopf::testing::OperatorThread operator_a(options_a);
    ASSERT_TRUE(operator_a.ready()) << operator_a.failure();

    apply_example("ns-a");
    const json events = events_until_marker("kopf-example-1", "ns-a");
    EXPECT_EQ(components(events), std::set<std::string>{"operator-a"}) << events.dump(2);
    EXPECT_EQ(operator_a.stop(), "");
}

// The embedding application talks to the cluster with the operator's own client
// (RunOptions::client), from its own thread; once the operator has exited, calls fail at once.
TEST_F(Embedding, TheApplicationUsesTheOperatorsClientUntilItExits) {
    kopf::Registry registry;
    kopf::on::create registration(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                                  [](kopf::Context&) -> kopf::json {
                                      return {{"seen", true}};
                                  });
    kopf::Client client;
    kopf::RunOptions options;
    options.namespaces = {"default"};
    options.registry = &registry;
    options.client = &client;
    kopf::testing::OperatorThread operator_thread(options);
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();

    const kopf::json marker = {{"metadata", {{"name", "from-the-application"}}},
                               {"data", {{"written", "by the embedding application"}}}};
    auto configmaps = client.api("configmaps", "default");
    configmaps.create(marker).wait();
    EXPECT_TRUE(eventually("get configmap from-the-application -o jsonpath={.data.written}",
                           "by the embedding application"));
    apply_example();
    EXPECT_TRUE(eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.seen}", "true"));
    const kopf::json example = client.api("kopfexamples", "default").get("kopf-example-1").wait();
    EXPECT_EQ(example["status"]["create_fn"]["seen"], true);

    EXPECT_EQ(operator_thread.stop(), "");
    EXPECT_THROW(configmaps.get("from-the-application").wait(), kopf::ApiConnectionError);
}
