// Patches: transformations of the body turned into guarded JSON patches.
#include <gtest/gtest.h>

#include <kopf/patch.hpp>

namespace {

using kopf::json;

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

}  // namespace
