// examples/05-handlers end to end: creation, update, field and deletion handlers, each once,
// and the finalizer that holds the deletion until the deletion handlers have run.
#include <gtest/gtest.h>

#include <csignal>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;

TEST(Handlers, EveryHandlerRunsOnceAcrossTheObjectsLife) {
    if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
    Cluster cluster;
    ASSERT_EQ(
        cluster.kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()}).exit_code,
        0);
    OperatorProcess op(cluster, {(source_dir() / "examples/05-handlers/example.cpp").string(), "-n",
                                 "default", "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev")) << op.log();

    ASSERT_EQ(
        cluster.kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()}).exit_code,
        0);
    ASSERT_TRUE(op.wait_for_log("Handler 'create_fn_2' succeeded.")) << op.log();
    auto object = cluster.get_json({"kex", "kopf-example-1", "-n", "default"});
    ASSERT_TRUE(object.is_object());
    EXPECT_EQ(object["metadata"]["finalizers"],
              nlohmann::json::array({"kopf.zalando.org/KopfFinalizerMarker"}));

    auto patched = cluster.kubectl({"patch", "kex", "kopf-example-1", "-n", "default", "--type",
                                    "merge", "-p", R"({"spec":{"field":"other"}})"});
    ASSERT_EQ(patched.exit_code, 0) << patched.output;
    // The field handler also ran at creation (null -> "value"), as in Kopf.
    ASSERT_TRUE(op.wait_for_log("FIELD CHANGED: \"value\" -> \"other\"")) << op.log();
    ASSERT_TRUE(op.wait_for_log("Handler 'update_fn' succeeded.")) << op.log();

    auto deleted =
        cluster.kubectl({"delete", "kex", "kopf-example-1", "-n", "default", "--timeout=60s"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(op.wait_for_log("Handler 'delete_fn_2' succeeded.")) << op.log();
    ASSERT_TRUE(op.wait_for_log("Deleted, really deleted, and we are notified.")) << op.log();
    EXPECT_TRUE(cluster.get_json({"kex", "kopf-example-1", "-n", "default"}).is_null());

    EXPECT_EQ(op.stop(SIGTERM), 0) << op.log();
    for (const char* id :
         {"create_fn_1", "create_fn_2", "update_fn", "delete_fn_1", "delete_fn_2"}) {
        EXPECT_EQ(op.count_in_log("Handler '" + std::string(id) + "' succeeded."), 1) << id << "\n"
                                                                                      << op.log();
    }
    EXPECT_EQ(op.count_in_log("Handler 'field_fn/spec.field' succeeded."), 2);
    EXPECT_EQ(op.count_in_log("RESUMED"), 0);
}
