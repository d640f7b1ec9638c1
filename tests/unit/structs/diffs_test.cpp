// Diffs, field paths, patches and finalizer transformations.
#include <gtest/gtest.h>

#include <kopf/diff.hpp>
#include <kopf/patch.hpp>

#include "structs/dicts.hpp"
#include "structs/finalizers.hpp"

namespace {

using kopf::json;

TEST(Diffs, ReportAddChangeAndRemoveWithFieldPaths) {
    auto d = kopf::diff(json{{"spec", {{"a", 1}, {"b", 2}}}}, json{{"spec", {{"a", 9}, {"c", 3}}}});
    EXPECT_EQ(d.to_json(),
              json::parse(R"([["change",["spec","a"],1,9],["remove",["spec","b"],2,null],
                                           ["add",["spec","c"],null,3]])"));
}

TEST(Diffs, ListsAreComparedAsWholeValues) {
    auto d = kopf::diff(json{{"items", {1, 2}}}, json{{"items", {1, 3}}});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].field, (std::vector<std::string>{"items"}));
}

TEST(Diffs, FromNothingIsOneAddition) {
    auto d = kopf::diff(json(), json{{"spec", 1}});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].op(), "add");
    EXPECT_TRUE(d[0].field.empty());
}

TEST(Diffs, EqualValuesHaveNoDiff) {
    EXPECT_TRUE(kopf::diff(json{{"a", 1}}, json{{"a", 1}}).empty());
}

TEST(Diffs, ReductionToAFieldStripsItsPath) {
    auto d = kopf::diff(json{{"spec", {{"a", 1}}}}, json{{"spec", {{"a", 2}}}});
    auto r = kopf::reduce(d, {"spec", "a"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].field.empty());
    EXPECT_EQ(r[0].new_, 2);
    EXPECT_TRUE(kopf::reduce(d, {"spec", "b"}).empty());
}

TEST(Diffs, ReductionDivesIntoAddedParents) {
    auto d = kopf::diff(json(), json{{"spec", {{"a", {{"b", 1}}}}}});
    auto r = kopf::reduce(d, {"spec", "a"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].new_, (json{{"b", 1}}));
}

TEST(Dicts, ResolveEnsureAndRemoveFieldPaths) {
    json body = json::object();
    kopf::dicts::ensure(body, {"a", "b"}, 1);
    EXPECT_EQ(*kopf::dicts::resolve(body, {"a", "b"}), 1);
    EXPECT_EQ(kopf::dicts::resolve(body, {"a", "x"}), nullptr);
    kopf::dicts::remove(body, {"a", "b"});
    EXPECT_EQ(body, (json{{"a", json::object()}}));
    kopf::dicts::remove_empty_stanzas(body);
    EXPECT_TRUE(body.empty());
    EXPECT_EQ(kopf::dicts::parse_field("spec.x.y"), (std::vector<std::string>{"spec", "x", "y"}));
}

TEST(Patches, TransformationsBecomeGuardedJsonPatches) {
    kopf::Patch patch;
    patch.transform([](json& b) { b["spec"]["x"] = 1; });
    json body = {{"metadata", {{"resourceVersion", "7"}}}, {"spec", json::object()}};
    EXPECT_EQ(patch.build_json_patch(body),
              json::parse(R"([{"op":"test","path":"/metadata/resourceVersion","value":"7"},
                                                            {"op":"add","path":"/spec/x","value":1}])"));
}

TEST(Patches, NoOpTransformationsProduceNoPatch) {
    kopf::Patch patch;
    patch.transform([](json&) {});
    EXPECT_TRUE(patch.build_json_patch(json{{"a", 1}}).empty());
    EXPECT_FALSE(patch.empty());
    EXPECT_TRUE(kopf::Patch().empty());
}

TEST(Finalizers, BlockingAndReleasingAreIdempotent) {
    json body = {{"metadata", json::object()}};
    kopf::finalizers::block_deletion(body, "f");
    kopf::finalizers::block_deletion(body, "f");
    EXPECT_EQ(body["metadata"]["finalizers"], (json{"f"}));
    EXPECT_TRUE(kopf::finalizers::is_deletion_blocked(body, "f"));
    kopf::finalizers::allow_deletion(body, "f");
    EXPECT_FALSE(body["metadata"].contains("finalizers"));
    EXPECT_FALSE(kopf::finalizers::is_deletion_ongoing(body));
}

TEST(Finalizers, ReleasingKeepsForeignFinalizers) {
    json body = {{"metadata", {{"finalizers", {"a", "f", "b"}}}}};
    kopf::finalizers::allow_deletion(body, "f");
    EXPECT_EQ(body["metadata"]["finalizers"], (json{"a", "b"}));
}

}  // namespace
