// Owner/children hierarchies as in Kopf's kopf.adopt() and its parts.
#include <gtest/gtest.h>

#include <kopf/hierarchies.hpp>
#include <kopf/task.hpp>
#include <memory>
#include <stdexcept>

using kopf::json;

namespace {

json owner() {
    return {{"apiVersion", "kopf.dev/v1"},
            {"kind", "KopfExample"},
            {"metadata",
             {{"name", "kopf-example-1"},
              {"namespace", "ns1"},
              {"uid", "uid-1"},
              {"labels", {{"app", "demo"}, {"tier", "backend"}}}}}};
}

json cluster_owner() {
    return {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata", {{"name", "node-1"}, {"uid", "uid-node"}}}};
}

json pod() {
    return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"spec", json::object()}};
}

}  // namespace

TEST(OwnerReference, IsAControllerThatBlocksTheOwnersDeletion) {
    json child = pod();
    kopf::append_owner_reference(child, owner());
    EXPECT_EQ(child["metadata"]["ownerReferences"], json::array({{{"apiVersion", "kopf.dev/v1"},
                                                                  {"kind", "KopfExample"},
                                                                  {"name", "kopf-example-1"},
                                                                  {"uid", "uid-1"},
                                                                  {"controller", true},
                                                                  {"blockOwnerDeletion", true}}}));
}

TEST(OwnerReference, FlagsCanBeTurnedOffOrLeftOut) {
    json child = pod();
    kopf::append_owner_reference(child, owner(),
                                 {.controller = false, .block_owner_deletion = std::nullopt});
    const json& reference = child["metadata"]["ownerReferences"][0];
    EXPECT_EQ(reference["controller"], false);
    EXPECT_FALSE(reference.contains("blockOwnerDeletion"));
}

TEST(OwnerReference, IsNotAddedTwiceForTheSameOwner) {
    json child = pod();
    kopf::append_owner_reference(child, owner());
    kopf::append_owner_reference(child, owner());
    EXPECT_EQ(child["metadata"]["ownerReferences"].size(), 1u);
}

TEST(OwnerReference, IsAddedNextToOtherOwners) {
    json child = pod();
    kopf::append_owner_reference(child, cluster_owner());
    kopf::append_owner_reference(child, owner());
    EXPECT_EQ(child["metadata"]["ownerReferences"].size(), 2u);
}

TEST(OwnerReference, IsRemovedByTheOwnersUidKeepingOthers) {
    json child = pod();
    kopf::append_owner_reference(child, cluster_owner());
    kopf::append_owner_reference(child, owner());
    kopf::remove_owner_reference(child, owner());
    ASSERT_EQ(child["metadata"]["ownerReferences"].size(), 1u);
    EXPECT_EQ(child["metadata"]["ownerReferences"][0]["uid"], "uid-node");
}

TEST(OwnerReference, RemovingAnAbsentOwnerChangesNothing) {
    json child = pod();
    kopf::append_owner_reference(child, cluster_owner());
    kopf::remove_owner_reference(child, owner());
    EXPECT_EQ(child["metadata"]["ownerReferences"].size(), 1u);
}

TEST(OwnerReference, OwnerWithoutUidIsRejectedByName) {
    json child = pod();
    json unsaved = {{"kind", "KopfExample"}, {"metadata", {{"name", "unsaved"}}}};
    try {
        kopf::append_owner_reference(child, unsaved);
        FAIL() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("metadata.uid"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("unsaved"), std::string::npos);
    }
}

TEST(Naming, UnnamedObjectsGetTheNameAsAPrefix) {
    json child = pod();
    kopf::harmonize_naming(child, "parent");
    EXPECT_EQ(child["metadata"]["generateName"], "parent-");
    EXPECT_FALSE(child["metadata"].contains("name"));
}

TEST(Naming, StrictUsesTheNameAsIs) {
    json child = pod();
    kopf::harmonize_naming(child, "parent", {.strict = true});
    EXPECT_EQ(child["metadata"]["name"], "parent");
    EXPECT_FALSE(child["metadata"].contains("generateName"));
}

TEST(Naming, OwnNamesAndPrefixesAreKept) {
    json named = pod();
    named["metadata"]["name"] = "own-name";
    json prefixed = pod();
    prefixed["metadata"]["generateName"] = "own-prefix-";
    json children = {named, prefixed};
    kopf::harmonize_naming(children, "parent");
    EXPECT_EQ(children[0]["metadata"], (json{{"name", "own-name"}}));
    EXPECT_EQ(children[1]["metadata"], (json{{"generateName", "own-prefix-"}}));
}

TEST(Naming, ForcedReplacesOwnNames) {
    json child = pod();
    child["metadata"]["name"] = "own-name";
    kopf::harmonize_naming(child, "parent", {.forced = true});
    EXPECT_EQ(child["metadata"], (json{{"generateName", "parent-"}}));
}

TEST(Namespace, UnsetNamespaceIsFilledIn) {
    json child = pod();
    kopf::adjust_namespace(child, "ns1");
    EXPECT_EQ(child["metadata"]["namespace"], "ns1");
}

TEST(Namespace, OwnNamespaceIsKeptUnlessForced) {
    json child = pod();
    child["metadata"]["namespace"] = "own";
    kopf::adjust_namespace(child, "ns1");
    EXPECT_EQ(child["metadata"]["namespace"], "own");
    kopf::adjust_namespace(child, "ns1", {.forced = true});
    EXPECT_EQ(child["metadata"]["namespace"], "ns1");
}

TEST(Labels, AreAddedWithoutOverwritingOwnValues) {
    json child = pod();
    child["metadata"]["labels"] = {{"app", "own"}};
    kopf::label(child, {{"app", "demo"}, {"tier", "backend"}});
    EXPECT_EQ(child["metadata"]["labels"], (json{{"app", "own"}, {"tier", "backend"}}));
}

TEST(Labels, ForcedOverwritesOwnValues) {
    json child = pod();
    child["metadata"]["labels"] = {{"app", "own"}};
    kopf::label(child, {{"app", "demo"}}, {.forced = true});
    EXPECT_EQ(child["metadata"]["labels"], (json{{"app", "demo"}}));
}

TEST(Labels, NestedPathsAreLabelledWhenTheyExist) {
    json job = {{"kind", "Job"}, {"spec", {{"template", {{"spec", json::object()}}}}}};
    kopf::label(job, {{"app", "demo"}}, {.nested = {"spec.template", "spec.absent.path"}});
    EXPECT_EQ(job["metadata"]["labels"], (json{{"app", "demo"}}));
    EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"], (json{{"app", "demo"}}));
    EXPECT_FALSE(job["spec"].contains("absent"));
}

TEST(Labels, NonObjectLabelsAreRejected) {
    json child = pod();
    EXPECT_THROW(kopf::label(child, json::array({"app"})), std::invalid_argument);
}

TEST(Adopt, MakesAChildOfTheOwner) {
    json child = pod();
    kopf::adopt(child, owner());
    const json& meta = child["metadata"];
    EXPECT_EQ(meta["generateName"], "kopf-example-1-");
    EXPECT_EQ(meta["namespace"], "ns1");
    EXPECT_EQ(meta["labels"], (json{{"app", "demo"}, {"tier", "backend"}}));
    ASSERT_EQ(meta["ownerReferences"].size(), 1u);
    EXPECT_EQ(meta["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(meta["ownerReferences"][0]["controller"], true);
}

TEST(Adopt, ClusterScopedOwnersSetNoNamespace) {
    json child = pod();
    kopf::adopt(child, cluster_owner());
    EXPECT_FALSE(child["metadata"].contains("namespace"));
    EXPECT_EQ(child["metadata"]["generateName"], "node-1-");
}

TEST(Adopt, ChildrensOwnValuesWinUnlessForced) {
    json child = pod();
    child["metadata"] = {{"name", "own"}, {"namespace", "own-ns"}, {"labels", {{"app", "own"}}}};
    json kept = child;
    kopf::adopt(kept, owner());
    EXPECT_EQ(kept["metadata"]["name"], "own");
    EXPECT_EQ(kept["metadata"]["namespace"], "own-ns");
    EXPECT_EQ(kept["metadata"]["labels"]["app"], "own");

    kopf::adopt(child, owner(), {.forced = true, .strict = true});
    EXPECT_EQ(child["metadata"]["name"], "kopf-example-1");
    EXPECT_EQ(child["metadata"]["namespace"], "ns1");
    EXPECT_EQ(child["metadata"]["labels"]["app"], "demo");
}

TEST(Adopt, WorksOnArraysOfObjects) {
    json children = {pod(), json::array({pod(), pod()})};
    kopf::adopt(children, owner());
    EXPECT_EQ(children[0]["metadata"]["namespace"], "ns1");
    EXPECT_EQ(children[1][0]["metadata"]["generateName"], "kopf-example-1-");
    EXPECT_EQ(children[1][1]["metadata"]["ownerReferences"][0]["uid"], "uid-1");
}

TEST(Adopt, NestedTemplatesGetTheOwnersLabels) {
    json deployment = {{"kind", "Deployment"},
                       {"spec", {{"template", {{"metadata", {{"labels", {{"x", "y"}}}}}}}}}};
    kopf::adopt(deployment, owner(), {.nested = {"spec.template"}});
    EXPECT_EQ(deployment["spec"]["template"]["metadata"]["labels"],
              (json{{"x", "y"}, {"app", "demo"}, {"tier", "backend"}}));
    EXPECT_FALSE(deployment["spec"]["template"]["metadata"].contains("ownerReferences"));
}

TEST(Adopt, NonObjectChildrenAreRejectedNamingThem) {
    json children = {pod(), "not-an-object"};
    try {
        kopf::adopt(children, owner());
        FAIL() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("not-an-object"), std::string::npos);
    }
}

TEST(Adopt, OwnerWithoutNameIsRejected) {
    json child = pod();
    json nameless = {{"metadata", {{"uid", "u"}}}};
    EXPECT_THROW(kopf::adopt(child, nameless), std::invalid_argument);
}

// Kopf's owner=None: the handled object, which the library sets as the current cause around
// each handler invocation.
class ImplicitOwner : public ::testing::Test {
  protected:
    void SetUp() override {
        kopf::detail::set_current_cause(std::make_shared<const json>(owner()));
    }
    void TearDown() override { kopf::detail::set_current_cause(nullptr); }
};

TEST_F(ImplicitOwner, AdoptUsesTheHandledObject) {
    json implicit = pod();
    json explicit_ = pod();
    kopf::adopt(implicit, {.nested = {"spec"}});
    kopf::adopt(explicit_, owner(), {.nested = {"spec"}});
    EXPECT_EQ(implicit, explicit_);
    EXPECT_EQ(implicit["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(implicit["metadata"]["generateName"], "kopf-example-1-");
    EXPECT_EQ(implicit["metadata"]["namespace"], "ns1");
    EXPECT_EQ(implicit["spec"]["metadata"]["labels"]["app"], "demo");
}

TEST_F(ImplicitOwner, EachPartUsesTheHandledObject) {
    json child = pod();
    kopf::append_owner_reference(child, {.controller = false});
    EXPECT_EQ(child["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(child["metadata"]["ownerReferences"][0]["controller"], false);
    kopf::label(child);
    EXPECT_EQ(child["metadata"]["labels"], (json{{"app", "demo"}, {"tier", "backend"}}));
    kopf::harmonize_naming(child, {.strict = true});
    EXPECT_EQ(child["metadata"]["name"], "kopf-example-1");
    kopf::adjust_namespace(child);
    EXPECT_EQ(child["metadata"]["namespace"], "ns1");
    kopf::remove_owner_reference(child);
    EXPECT_EQ(child["metadata"]["ownerReferences"], json::array());
}

TEST_F(ImplicitOwner, ExplicitOwnersStillWin) {
    json child = pod();
    kopf::adopt(child, cluster_owner());
    EXPECT_EQ(child["metadata"]["ownerReferences"][0]["uid"], "uid-node");
    EXPECT_FALSE(child["metadata"].contains("namespace"));
}

TEST_F(ImplicitOwner, AClusterScopedObjectSetsNoNamespace) {
    kopf::detail::set_current_cause(std::make_shared<const json>(cluster_owner()));
    json child = pod();
    kopf::adjust_namespace(child);
    EXPECT_FALSE(child["metadata"].contains("namespace"));
}

TEST_F(ImplicitOwner, ANamelessObjectCannotNameItsChildren) {
    kopf::detail::set_current_cause(
        std::make_shared<const json>(json{{"metadata", {{"uid", "u"}}}}));
    json child = pod();
    EXPECT_THROW(kopf::harmonize_naming(child), std::invalid_argument);
}

TEST(ImplicitOwnerOutsideHandlers, IsRefusedWithTheReason) {
    kopf::detail::set_current_cause(nullptr);
    json child = pod();
    try {
        kopf::adopt(child);
        FAIL() << "adopted to nothing";
    } catch (const std::logic_error& error) {
        EXPECT_NE(std::string(error.what()).find("kopf::adopt() without an owner"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_THROW(kopf::label(child), std::logic_error);
    EXPECT_THROW(kopf::harmonize_naming(child), std::logic_error);
    EXPECT_THROW(kopf::adjust_namespace(child), std::logic_error);
    EXPECT_THROW(kopf::append_owner_reference(child), std::logic_error);
    EXPECT_THROW(kopf::remove_owner_reference(child), std::logic_error);
}

TEST(ObjectReference, HasOnlyTheFieldsTheObjectHas) {
    EXPECT_EQ(kopf::build_object_reference(owner()), (json{{"apiVersion", "kopf.dev/v1"},
                                                           {"kind", "KopfExample"},
                                                           {"name", "kopf-example-1"},
                                                           {"namespace", "ns1"},
                                                           {"uid", "uid-1"}}));
    EXPECT_EQ(
        kopf::build_object_reference(cluster_owner()),
        (json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node-1"}, {"uid", "uid-node"}}));
    EXPECT_EQ(kopf::build_object_reference(json{{"kind", "Node"}}), (json{{"kind", "Node"}}));
    EXPECT_THROW(kopf::build_object_reference(json::array()), std::invalid_argument);
}
