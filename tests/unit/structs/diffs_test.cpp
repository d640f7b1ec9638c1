// Diffs of bodies, with field paths, and their reduction to a field.
#include <gtest/gtest.h>

#include <kopf/diff.hpp>

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

}  // namespace
