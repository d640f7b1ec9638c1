// settings.scanning.disabled, as in Kopf: no observation of namespaces (nor of CRDs): the
// operator serves the plain namespace names of -n, taken literally (also one that does not
// exist yet), and never the namespaces that only a glob would match. With scanning, the
// namespaces that globs match are followed as they come and go; without the right to list
// namespaces, the plain names are served as Kopf does.
#include <gtest/gtest.h>

#include <chrono>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <string>
#include <thread>

#include "integration/runtime/support/embedded_cluster.hpp"
#include "support/log_lines.hpp"

namespace {
class Scanning : public kopf::testing::EmbeddedCluster {
  protected:
    // The example object in a namespace, as kubectl shows it (retried while kubectl's output is
    // not an object, e.g. a warning of a loaded machine); null if it cannot be read.
    kopf::json example_in(const std::string& namespace_) {
        for (int attempt = 0; attempt < 50; ++attempt) {
            auto object =
                kopf::json::parse(kubectl("get kex kopf-example-1 -o json -n " + namespace_),
                                  nullptr, /*allow_exceptions=*/false);
            if (object.is_object()) return object;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return nullptr;
    }
};
}  // namespace

TEST_F(Scanning, DisabledScanningServesThePlainNamespaceNamesOnlyTakenLiterally) {
    kubectl("create namespace ns-glob-1");
    apply_example("ns-glob-1");  // before the start: a watch of ns-glob-1 would list it at once
    kopf::Registry registry;
    kopf::on::create handler(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                             [](kopf::Context& ctx) -> kopf::json {
                                 return {{"namespace", ctx.namespace_}};
                             });
    kopf::OperatorSettings settings;
    settings.scanning.disabled = true;
    kopf::RunOptions options;
    options.namespaces = {"ns-later", "ns-glob-*"};
    options.registry = &registry;
    options.settings = &settings;
    kopf::testing::OperatorThread operator_(options);
    ASSERT_TRUE(operator_.ready()) << operator_.failure();

    // Watched literally from the start, though it did not exist then.
    kubectl("create namespace ns-later");
    apply_example("ns-later");
    const std::string result =
        "get kex kopf-example-1 -o jsonpath={.status.create_fn.namespace} -n ";
    EXPECT_TRUE(eventually(result + "ns-later", "ns-later"));
    EXPECT_EQ(operator_.stop(), "");
    const kopf::json never_served = example_in("ns-glob-1");
    ASSERT_TRUE(never_served.is_object());
    EXPECT_FALSE(never_served.contains("status")) << never_served.dump(2);
}

TEST_F(Scanning, EnabledScanningServesTheNamespacesThatGlobsMatch) {
    kubectl("create namespace ns-glob-2");
    apply_example("ns-glob-2");
    kopf::Registry registry;
    kopf::on::create handler(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                             [](kopf::Context& ctx) -> kopf::json {
                                 return {{"namespace", ctx.namespace_}};
                             });
    kopf::RunOptions options;
    options.namespaces = {"ns-glob-*"};
    options.registry = &registry;
    kopf::testing::OperatorThread operator_(options);
    ASSERT_TRUE(operator_.ready()) << operator_.failure();
    EXPECT_TRUE(
        eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.namespace} -n ns-glob-2",
                   "ns-glob-2"));
    EXPECT_EQ(operator_.stop(), "");
}

// Namespaces that a glob matches are served as they appear, and no longer once they are gone.
TEST_F(Scanning, NamespacesMatchingAGlobAreWatchedWhileTheyExist) {
    kopf::testing::LogLines log({"kopf.reactor.queueing"});
    kopf::Registry registry;
    kopf::on::create handler(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                             [](kopf::Context& ctx) -> kopf::json {
                                 return {{"namespace", ctx.namespace_}};
                             });
    kopf::RunOptions options;
    options.namespaces = {"ns-dyn-*"};
    options.registry = &registry;
    kopf::testing::OperatorThread operator_(options);
    ASSERT_TRUE(operator_.ready()) << operator_.failure();

    kubectl("create namespace ns-dyn-1");
    apply_example("ns-dyn-1");
    EXPECT_TRUE(
        eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.namespace} -n ns-dyn-1",
                   "ns-dyn-1"));
    EXPECT_TRUE(log.contains("Watching kopfexamples.v1.kopf.dev in ns-dyn-1.")) << log.text();

    kubectl("delete namespace ns-dyn-1 --wait=false");
    bool stopped = false;
    for (int i = 0; i < 300 && !stopped; ++i) {
        stopped = log.contains("Stopped watching kopfexamples.v1.kopf.dev in ns-dyn-1.");
        if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(stopped) << log.text();
    EXPECT_EQ(operator_.stop(), "");
}

// As Kopf: without the right to list namespaces, the patterns' plain names are served as if
// they existed, and namespaces that only a glob matches are not served.
TEST_F(Scanning, ForbiddenNamespaceListingFallsBackToThePlainNames) {
    kubectl("create namespace ns-plain");
    kubectl("create namespace ns-glob-5");
    apply_example("ns-plain");
    apply_example("ns-glob-5");
    kopf::testing::LogLines log({"kopf.reactor.observation"});
    kopf::Registry registry;
    kopf::on::create handler(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                             [](kopf::Context& ctx) -> kopf::json {
                                 return {{"namespace", ctx.namespace_}};
                             });
    kopf::RunOptions options;
    options.namespaces = {"ns-plain", "ns-glob-*"};
    options.registry = &registry;
    options.standalone = true;
    // A 403 is retried as Kopf does (API servers answer so while they upgrade): shortened.
    kopf::OperatorSettings settings;
    settings.networking.error_backoffs = {0.1, 0.1};
    options.settings = &settings;
    // The operator's listing of namespaces is refused, each of its 3 attempts (no other request
    // of the operator goes to /api/v1/namespaces before it).
    server_->fail_next_requests(3, 403, 0, "/api/v1/namespaces");
    kopf::testing::OperatorThread operator_(options);
    ASSERT_TRUE(operator_.ready()) << operator_.failure();

    EXPECT_TRUE(
        eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.namespace} -n ns-plain",
                   "ns-plain"));
    EXPECT_EQ(server_->failing_requests_left(), 0);
    EXPECT_TRUE(
        log.contains("Not enough permissions to list namespaces. Falling back to a list "
                     "of namespaces which are assumed to exist: ['ns-plain']"))
        << log.text();
    // Not watched again: a new attempt (after 0.1 s) would be answered and serve the glob.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_EQ(operator_.stop(), "");
    const kopf::json never_served = example_in("ns-glob-5");
    ASSERT_TRUE(never_served.is_object());
    EXPECT_FALSE(never_served.contains("status")) << never_served.dump(2);
}
