// Garbage collection of ownerReferences and namespace deletion.
#include <gtest/gtest.h>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

namespace {
const std::string kCms = "/api/v1/namespaces/default/configmaps";

json child_of(const std::string& name, const json& owner, bool block = false) {
    json cm = configmap(name);
    cm["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                          {"kind", "ConfigMap"},
                                          {"name", owner["metadata"]["name"]},
                                          {"uid", owner["metadata"]["uid"]},
                                          {"blockOwnerDeletion", block}}};
    return cm;
}
}  // namespace

TEST(GarbageCollection, BackgroundDeletesDependents) {
    ApiCore core({});
    auto owner = post(core, kCms, configmap("owner")).body;
    post(core, kCms, child_of("child", owner));
    del(core, kCms + "/owner", {{"propagationPolicy", "Background"}});
    EXPECT_EQ(get(core, kCms + "/child").status, 404);
}

TEST(GarbageCollection, OrphanKeepsDependentsAndStripsReferences) {
    ApiCore core({});
    auto owner = post(core, kCms, configmap("owner")).body;
    post(core, kCms, child_of("child", owner));
    del(core, kCms + "/owner", {{"propagationPolicy", "Orphan"}});
    EXPECT_EQ(get(core, kCms + "/owner").status, 404);
    auto child = get(core, kCms + "/child");
    ASSERT_EQ(child.status, 200);
    EXPECT_FALSE(child.body["metadata"].contains("ownerReferences"));
}

TEST(GarbageCollection, ForegroundWaitsForBlockingDependents) {
    ApiCore core({});
    auto owner = post(core, kCms, configmap("owner")).body;
    json child = child_of("child", owner, true);
    child["metadata"]["finalizers"] = {"example.com/hold"};
    post(core, kCms, child);
    auto d = del(core, kCms + "/owner", {{"propagationPolicy", "Foreground"}});
    EXPECT_EQ(d.body["metadata"]["finalizers"], json::array({"foregroundDeletion"}));
    EXPECT_EQ(get(core, kCms + "/owner").status, 200);
    patch(core, kCms + "/child", {{"metadata", {{"finalizers", nullptr}}}});
    EXPECT_EQ(get(core, kCms + "/child").status, 404);
    EXPECT_EQ(get(core, kCms + "/owner").status, 404);
}

TEST(Namespaces, CreateSetsPhaseFinalizerAndLabel) {
    ApiCore core({});
    auto r = post(core, "/api/v1/namespaces", {{"metadata", {{"name", "team"}}}});
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["status"]["phase"], "Active");
    EXPECT_EQ(r.body["spec"]["finalizers"], json::array({"kubernetes"}));
    EXPECT_EQ(r.body["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
}

TEST(Namespaces, DeletionRemovesContentThenNamespace) {
    ApiCore core({});
    post(core, "/api/v1/namespaces", {{"metadata", {{"name", "team"}}}});
    post(core, "/api/v1/namespaces/team/configmaps", configmap("a"));
    auto d = del(core, "/api/v1/namespaces/team");
    EXPECT_EQ(d.body["status"]["phase"], "Terminating");
    EXPECT_EQ(get(core, "/api/v1/namespaces/team/configmaps/a").status, 404);
    EXPECT_EQ(get(core, "/api/v1/namespaces/team").status, 404);
}

TEST(Namespaces, TerminatingNamespaceRefusesCreates) {
    ApiCore core({});
    post(core, "/api/v1/namespaces", {{"metadata", {{"name", "team"}}}});
    json held = configmap("held");
    held["metadata"]["finalizers"] = {"example.com/hold"};
    post(core, "/api/v1/namespaces/team/configmaps", held);
    del(core, "/api/v1/namespaces/team");
    auto r = post(core, "/api/v1/namespaces/team/configmaps", configmap("new"));
    EXPECT_EQ(r.status, 403);
    EXPECT_EQ(r.body["details"]["causes"][0]["reason"], "NamespaceTerminating");
    patch(core, "/api/v1/namespaces/team/configmaps/held",
          {{"metadata", {{"finalizers", nullptr}}}});
    EXPECT_EQ(get(core, "/api/v1/namespaces/team").status, 404);
}

// Operators wait for the resourceVersion their write returned; when removing the last finalizer
// deletes the object, that version must be the one of the DELETED event they will see.
TEST(Finalizers, RemovingTheLastOneAnswersWithTheDeletionsResourceVersion) {
    ApiCore core({});
    json held = configmap("held");
    held["metadata"]["finalizers"] = {"example.com/hold"};
    post(core, kCms, held);
    del(core, kCms + "/held");
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    auto sink = watch(core, kCms, {{"resourceVersion", rv}});
    auto released = patch(core, kCms + "/held", {{"metadata", {{"finalizers", nullptr}}}});
    ASSERT_EQ(released.status, 200) << released.raw;
    ASSERT_TRUE(sink->wait_for_count(1));
    auto events = sink->events();
    ASSERT_EQ(events.size(), 1U) << "no MODIFIED event before the DELETED one";
    EXPECT_EQ(events[0]["type"], "DELETED");
    EXPECT_EQ(events[0]["object"]["metadata"]["resourceVersion"],
              released.body["metadata"]["resourceVersion"]);
    EXPECT_FALSE(events[0]["object"]["metadata"].contains("finalizers"));
}
