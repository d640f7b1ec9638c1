// settings.scanning.disabled, as in Kopf: no observation of namespaces (nor of CRDs): the
// operator serves the plain namespace names of -n, taken literally (also one that does not
// exist yet), and never the namespaces that only a glob would match.
#include <gtest/gtest.h>

#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <string>

#include "integration/runtime/support/embedded_cluster.hpp"

namespace {
class Scanning : public kopf::testing::EmbeddedCluster {};
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
    EXPECT_EQ(kubectl(result + "ns-glob-1"), "");  // never served
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
