// settings.scanning.disabled, as in Kopf: no observation of namespaces (nor of CRDs): the
// operator serves the plain namespace names of -n, taken literally (also one that does not
// exist yet), and never the namespaces that only a glob would match.
#include <gtest/gtest.h>

#include <chrono>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <string>
#include <thread>

#include "integration/runtime/support/embedded_cluster.hpp"

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
