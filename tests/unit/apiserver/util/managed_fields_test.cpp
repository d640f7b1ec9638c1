// Server-side apply's field sets: FieldsV1 both ways, the fields an applied configuration
// sets, comparisons of two versions of an object, and the apply merge, with keyed lists, set
// lists and atomic lists as structural schemas describe them.
#include "util/managed_fields.hpp"

#include <gtest/gtest.h>

#include "util/strategic_merge.hpp"

using namespace kopf::apiserver;
using nlohmann::json;

namespace {

const json kSchema = json::parse(R"({"type":"object","properties":{"spec":{"type":"object",
  "properties":{
    "ports":{"type":"array","x-kubernetes-list-type":"map",
             "x-kubernetes-list-map-keys":["port","protocol"],
             "items":{"type":"object","properties":{"port":{"type":"integer"},
                      "protocol":{"type":"string"},"name":{"type":"string"}}}},
    "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
    "args":{"type":"array","items":{"type":"string"}},
    "size":{"type":"integer"}}}}})");

std::string v1(const FieldSet& fields) {
    return fields_to_v1(fields).dump();
}

}  // namespace

TEST(ManagedFields, FieldsV1RoundTripsWithDotForMembersThatHaveChildren) {
    const json text = json::parse(
        R"({"f:data":{".":{},"f:a":{}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{}}},"f:tags":{"v:\"x\"":{}}}})");
    const FieldSet fields = fields_from_v1(text);
    EXPECT_EQ(fields.size(), 5u);
    EXPECT_TRUE(fields.contains(FieldPath{"f:data"}));
    EXPECT_FALSE(fields.contains(FieldPath{"f:spec"}));
    EXPECT_EQ(fields_to_v1(fields), text);
}

// Membership read off the FieldsV1 tree agrees with the decoded set: its members, and not the
// nodes that only lead to members, nor paths that are not there.
TEST(ManagedFields, FieldsV1MembershipAgreesWithTheDecodedSet) {
    const json text = json::parse(
        R"({"f:data":{".":{},"f:a":{}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{}}},"f:tags":{"v:\"x\"":{}}}})");
    for (const auto& path : fields_from_v1(text))
        EXPECT_TRUE(fields_v1_contains(text, path)) << field_path_string(path);
    EXPECT_FALSE(fields_v1_contains(text, {"f:spec"}));
    EXPECT_FALSE(fields_v1_contains(text, {"f:spec", "f:ports"}));
    EXPECT_FALSE(fields_v1_contains(text, {"f:spec", "f:size"}));
    EXPECT_FALSE(fields_v1_contains(text, {"f:data", "f:a", "f:deeper"}));
    EXPECT_FALSE(fields_v1_contains(text, {}));
    EXPECT_FALSE(fields_v1_contains(json(), {"f:data"}));
}

TEST(ManagedFields, FieldsV1ThatIsNotFieldsV1IsRefusedNamingTheKey) {
    EXPECT_THROW(fields_from_v1(json::parse(R"({"spec":{}})")), std::invalid_argument);
    EXPECT_THROW(fields_from_v1(json::parse(R"({"f:spec":3})")), std::invalid_argument);
    try {
        fields_from_v1(json::parse(R"({"f:spec":{"x:y":{}}})"));
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "invalid FieldsV1 key \"x:y\"");
    }
    EXPECT_TRUE(fields_from_v1(json()).empty());
}

TEST(ManagedFields, PathsRenderAsKubernetesPrintsThemInConflicts) {
    EXPECT_EQ(field_path_string({"f:spec", "f:replicas"}), ".spec.replicas");
    EXPECT_EQ(field_path_string({"f:spec", R"(k:{"port":80,"protocol":"TCP"})", "f:name"}),
              R"(.spec[port=80,protocol="TCP"].name)");
    EXPECT_EQ(field_path_string({"f:metadata", "f:finalizers", R"(v:"x")"}),
              R"(.metadata.finalizers[="x"])");
}

TEST(ManagedFields, AppliedFieldsNameLeavesKeyedItemsAndSetItemsButNotObjects) {
    const json config = json::parse(R"({"apiVersion":"v1","kind":"X",
      "metadata":{"name":"n","labels":{"a":"1"},"finalizers":["f"]},
      "spec":{"size":3,"args":["a","b"],"tags":["t"],"ports":[{"port":80,"protocol":"TCP"}],
              "empty":{}}})");
    EXPECT_EQ(v1(applied_fields(config, kSchema)), json::parse(R"({"f:apiVersion":{},"f:kind":{},
                "f:metadata":{"f:finalizers":{"v:\"f\"":{}},"f:labels":{"f:a":{}},"f:name":{}},
                "f:spec":{"f:args":{},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},
                  "f:port":{},"f:protocol":{}}},"f:size":{},"f:tags":{"v:\"t\"":{}}}})")
                                                       .dump());
}

TEST(ManagedFields, ListsWhoseItemsLackTheirKeysCountAsAtomic) {
    const json config = json::parse(R"({"spec":{"ports":[{"name":"no-port"}]}})");
    EXPECT_EQ(v1(applied_fields(config, kSchema)), R"({"f:spec":{"f:ports":{}}})");
    const json twice = json::parse(R"({"spec":{"tags":["a","a"]}})");
    EXPECT_EQ(v1(applied_fields(twice, kSchema)), R"({"f:spec":{"f:tags":{}}})");
}

TEST(ManagedFields, ComparisonFindsAddedModifiedAndRemovedFieldsAndItems) {
    const json before = json::parse(
        R"({"spec":{"size":1,"args":["a"],"tags":["x","y"],"ports":[{"port":80,"protocol":"TCP","name":"a"}]}})");
    const json after = json::parse(
        R"({"spec":{"size":2,"args":["a"],"tags":["y","z"],"ports":[{"port":80,"protocol":"TCP","name":"b"},{"port":81,"protocol":"TCP"}]},"status":{"phase":"Up"}})");
    const FieldComparison c = compare_fields(before, after, kSchema);
    EXPECT_EQ(v1(c.added),
              json::parse(R"({"f:spec":{"f:ports":{"k:{\"port\":81,\"protocol\":\"TCP\"}":{".":{},
                "f:port":{},"f:protocol":{}}},"f:tags":{"v:\"z\"":{}}},"f:status":{".":{},"f:phase":{}}})")
                  .dump());
    EXPECT_EQ(
        v1(c.modified),
        json::parse(
            R"({"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:name":{}}},"f:size":{}}})")
            .dump());
    EXPECT_EQ(v1(c.removed), R"({"f:spec":{"f:tags":{"v:\"x\"":{}}}})");
    EXPECT_TRUE(compare_fields(after, after, kSchema).modified.empty());
}

// The managers' own record is no field anyone manages: a comparison for them leaves it out,
// however it changed, and still finds a change deep inside an otherwise unchanged object.
TEST(ManagedFields, ComparisonCanLeaveOutTheManagedFieldsAndFindsDeepChangesAmongEqualSubtrees) {
    const json before = json::parse(R"({"metadata":{"name":"n","labels":{"a":"1"},
      "managedFields":[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:spec":{}}}]},
      "spec":{"size":1,"deep":{"a":{"b":{"c":1,"d":[1,2]}},"same":{"x":{"y":"z"}}}}})");
    json after = before;
    after["metadata"]["managedFields"][0]["manager"] = "kopf";
    after["metadata"]["managedFields"].push_back({{"manager", "other"}});
    after["spec"]["deep"]["a"]["b"]["c"] = 2;
    after["metadata"]["labels"]["b"] = "2";

    const FieldComparison ignoring = compare_fields(before, after, kSchema, true);
    EXPECT_EQ(v1(ignoring.modified), R"({"f:spec":{"f:deep":{"f:a":{"f:b":{"f:c":{}}}}}})");
    EXPECT_EQ(v1(ignoring.added), R"({"f:metadata":{"f:labels":{"f:b":{}}}})");
    EXPECT_TRUE(ignoring.removed.empty());

    const FieldComparison all = compare_fields(before, after, kSchema);
    EXPECT_TRUE(all.modified.contains(FieldPath{"f:metadata", "f:managedFields"}));
    EXPECT_EQ(all.added, ignoring.added);
}

TEST(ManagedFields, ApplyMergeMergesKeyedItemsUnitesSetsAndReplacesAtomicLists) {
    const json live = json::parse(
        R"({"spec":{"size":1,"args":["a","b"],"tags":["x"],"ports":[{"port":80,"protocol":"TCP","name":"a"},{"port":90,"protocol":"TCP"}]},"other":1})");
    const json config = json::parse(
        R"({"spec":{"size":null,"args":["c"],"tags":["y","x"],"ports":[{"port":80,"protocol":"TCP","name":"b"},{"port":81,"protocol":"UDP"}]}})");
    EXPECT_EQ(apply_merge(live, config, kSchema),
              json::parse(R"({"spec":{"args":["c"],"tags":["x","y"],"ports":[
                {"port":80,"protocol":"TCP","name":"b"},{"port":90,"protocol":"TCP"},
                {"port":81,"protocol":"UDP"}]},"other":1})"));
}

TEST(ManagedFields, RemovingFieldsDropsItemsAndTheObjectsTheyEmpty) {
    json object = json::parse(
        R"({"metadata":{"labels":{"a":"1"},"finalizers":["f","g"]},"spec":{"ports":[{"port":80,"protocol":"TCP"},{"port":81,"protocol":"TCP"}],"size":1}})");
    remove_fields(object, {{"f:metadata", "f:labels", "f:a"},
                           {"f:metadata", "f:finalizers", R"(v:"g")"},
                           {"f:spec", "f:ports", R"(k:{"port":81,"protocol":"TCP"})"},
                           {"f:spec", "f:missing"}});
    EXPECT_EQ(object, json::parse(R"({"metadata":{"finalizers":["f"]},
      "spec":{"ports":[{"port":80,"protocol":"TCP"}],"size":1}})"));
}

TEST(ManagedFields, BuiltinKindsKeyContainersByName) {
    const json schema = list_shapes_schema("apps", "Deployment");
    const json config = json::parse(
        R"({"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}]}]}}}})");
    EXPECT_EQ(
        v1(applied_fields(config, schema)),
        json::parse(R"({"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{
                ".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80}":{".":{},
                "f:containerPort":{}}}}}}}}})")
            .dump());
}
