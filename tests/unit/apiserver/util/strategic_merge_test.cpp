// Strategic merge patch for built-in kinds: merge keys, list strategies and every
// directive, with the element order kube-apiserver produces.
#include "util/strategic_merge.hpp"

#include <gtest/gtest.h>

#include <random>

using kopf::apiserver::PatchError;
using kopf::apiserver::strategic_merge_patch;
using nlohmann::json;

namespace {

json pod_patch(const char* original, const char* patch) {
    return strategic_merge_patch(json::parse(original), json::parse(patch), "", "Pod");
}

std::string pod_patch_error(const char* original, const char* patch) {
    try {
        pod_patch(original, patch);
    } catch (const PatchError& error) {
        return error.what();
    }
    return "<no error>";
}

const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
  "labels":{"app":"web","tier":"front"},"finalizers":["a","b"],
  "ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o1","uid":"u1"}]},
  "spec":{"containers":[
      {"name":"app","image":"app:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
       "ports":[{"containerPort":80,"protocol":"TCP"}]},
      {"name":"sidecar","image":"side:1"}],
    "volumes":[{"name":"data","emptyDir":{}}],
    "tolerations":[{"key":"k1","operator":"Exists"}]},
  "status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Initialized","status":"True"}]}})";

}  // namespace

// ------------------------------------------------------------------ maps

TEST(StrategicMerge, MapsMergeAndNullDeletes) {
    auto result = pod_patch(kPod, R"({"metadata":{"labels":{"tier":null,"new":"x"}}})");
    EXPECT_EQ(result["metadata"]["labels"], json::parse(R"({"app":"web","new":"x"})"));
}

TEST(StrategicMerge, NullForAMissingKeyIsIgnored) {
    auto result = pod_patch(R"({"a":1})", R"({"b":null,"c":{"d":null,"e":1}})");
    EXPECT_EQ(result, json::parse(R"({"a":1,"c":{"e":1}})"));
}

TEST(StrategicMerge, ScalarsAndTypeChangesReplace) {
    auto result = pod_patch(R"({"a":1,"b":{"x":1}})", R"({"a":"s","b":[1]})");
    EXPECT_EQ(result, json::parse(R"({"a":"s","b":[1]})"));
}

// ------------------------------------------------------------------ merge keys

TEST(StrategicMerge, ContainersMergeByName) {
    auto result =
        pod_patch(kPod, R"({"spec":{"containers":[{"name":"sidecar","image":"side:2"}]}})");
    const auto& containers = result["spec"]["containers"];
    ASSERT_EQ(containers.size(), 2u);
    EXPECT_EQ(containers[0]["image"], "app:1");
    EXPECT_EQ(containers[1]["image"], "side:2");
}

TEST(StrategicMerge, NewListItemsAppendAndPatchOrderWins) {
    auto result = pod_patch(R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
                            R"({"spec":{"containers":[{"name":"c"},{"name":"a","image":"x"}]}})");
    EXPECT_EQ(result["spec"]["containers"],
              json::parse(R"([{"name":"c"},{"name":"a","image":"x"},{"name":"b"}])"));
}

TEST(StrategicMerge, EnvMergesByNameInsideAContainer) {
    auto result = pod_patch(
        kPod,
        R"({"spec":{"containers":[{"name":"app","env":[{"name":"B","value":"20"},{"name":"C","value":"3"}]}]}})");
    EXPECT_EQ(
        result["spec"]["containers"][0]["env"],
        json::parse(
            R"([{"name":"A","value":"1"},{"name":"B","value":"20"},{"name":"C","value":"3"}])"));
}

TEST(StrategicMerge, PortsMergeByContainerPort) {
    auto result = pod_patch(
        kPod,
        R"({"spec":{"containers":[{"name":"app","ports":[{"containerPort":80,"name":"http"},{"containerPort":443}]}]}})");
    EXPECT_EQ(
        result["spec"]["containers"][0]["ports"],
        json::parse(
            R"([{"containerPort":80,"protocol":"TCP","name":"http"},{"containerPort":443}])"));
}

TEST(StrategicMerge, OwnerReferencesMergeByUid) {
    auto result = pod_patch(
        kPod,
        R"({"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Y","name":"o2","uid":"u2"}]}})");
    // Without $setElementOrder, items unknown to the original go first (as upstream).
    ASSERT_EQ(result["metadata"]["ownerReferences"].size(), 2u);
    EXPECT_EQ(result["metadata"]["ownerReferences"][0]["uid"], "u2");
    EXPECT_EQ(result["metadata"]["ownerReferences"][1]["uid"], "u1");
}

TEST(StrategicMerge, ConditionsMergeByType) {
    auto result =
        pod_patch(kPod, R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})");
    EXPECT_EQ(result["status"]["conditions"],
              json::parse(
                  R"([{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}])"));
}

TEST(StrategicMerge, ListsWithoutStrategyAreReplaced) {
    auto result = pod_patch(kPod, R"({"spec":{"tolerations":[{"key":"k2","operator":"Exists"}]}})");
    EXPECT_EQ(result["spec"]["tolerations"], json::parse(R"([{"key":"k2","operator":"Exists"}])"));
}

TEST(StrategicMerge, ServicePortsMergeByPort) {
    auto result = strategic_merge_patch(
        json::parse(R"({"spec":{"ports":[{"port":80,"targetPort":8080},{"port":443}]}})"),
        json::parse(R"({"spec":{"ports":[{"port":80,"targetPort":9090}]}})"), "", "Service");
    EXPECT_EQ(result["spec"]["ports"],
              json::parse(R"([{"port":80,"targetPort":9090},{"port":443}])"));
}

TEST(StrategicMerge, DeploymentTemplateContainersMergeByName) {
    auto result = strategic_merge_patch(
        json::parse(
            R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b"}]}}}})"),
        json::parse(R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"2"}]}}}})"),
        "apps", "Deployment");
    EXPECT_EQ(result["spec"]["template"]["spec"]["containers"],
              json::parse(R"([{"name":"a","image":"2"},{"name":"b"}])"));
}

TEST(StrategicMerge, WebhooksMergeByName) {
    auto result = strategic_merge_patch(
        json::parse(R"({"webhooks":[{"name":"a.x","sideEffects":"None"},{"name":"b.x"}]})"),
        json::parse(R"({"webhooks":[{"name":"a.x","timeoutSeconds":5}]})"),
        "admissionregistration.k8s.io", "ValidatingWebhookConfiguration");
    EXPECT_EQ(result["webhooks"].size(), 2u);
    EXPECT_EQ(result["webhooks"][0]["timeoutSeconds"], 5);
    EXPECT_EQ(result["webhooks"][0]["sideEffects"], "None");
}

TEST(StrategicMerge, CustomKindsMergeListsLikeMergePatch) {
    auto result = strategic_merge_patch(
        json::parse(R"({"spec":{"items":[1,2]},"metadata":{"finalizers":["a"]}})"),
        json::parse(R"({"spec":{"items":[3]},"metadata":{"finalizers":["b"]}})"), "example.com",
        "Widget");
    EXPECT_EQ(result["spec"]["items"], json::parse("[3]"));
    EXPECT_EQ(result["metadata"]["finalizers"], json::parse(R"(["b","a"])"));
}

// ------------------------------------------------------------------ primitive lists

TEST(StrategicMerge, FinalizersAreUnioned) {
    // New items lead unless $setElementOrder says otherwise (upstream mergeSortedSlice).
    auto result = pod_patch(kPod, R"({"metadata":{"finalizers":["c","b"]}})");
    EXPECT_EQ(result["metadata"]["finalizers"], json::parse(R"(["c","a","b"])"));
}

TEST(StrategicMerge, UnionOrderFollowsThePatch) {
    auto result = pod_patch(kPod, R"({"metadata":{"finalizers":["c","a"]}})");
    EXPECT_EQ(result["metadata"]["finalizers"], json::parse(R"(["c","a","b"])"));
}

TEST(StrategicMerge, DeleteFromPrimitiveList) {
    auto result =
        pod_patch(kPod, R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a","zzz"]}})");
    EXPECT_EQ(result["metadata"]["finalizers"], json::parse(R"(["b"])"));
}

TEST(StrategicMerge, DeleteFromAbsentPrimitiveListIsANoOp) {
    auto result = pod_patch(R"({"metadata":{}})",
                            R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})");
    EXPECT_EQ(result["metadata"], json::object());
}

// ------------------------------------------------------------------ $patch directives

TEST(StrategicMergeDirectives, ReplaceAMap) {
    auto result = pod_patch(kPod, R"({"metadata":{"labels":{"$patch":"replace","only":"this"}}})");
    EXPECT_EQ(result["metadata"]["labels"], json::parse(R"({"only":"this"})"));
}

TEST(StrategicMergeDirectives, DeleteAMap) {
    auto result = pod_patch(kPod, R"({"metadata":{"labels":{"$patch":"delete"}}})");
    EXPECT_EQ(result["metadata"]["labels"], json::object());
}

TEST(StrategicMergeDirectives, MergeDirectiveOnAMapIsRejected) {
    EXPECT_EQ(pod_patch_error(kPod, R"({"metadata":{"labels":{"$patch":"merge"}}})"),
              "unknown patch type: merge in map: map[$patch:merge]");
}

TEST(StrategicMergeDirectives, DeleteAListElementByKey) {
    auto result =
        pod_patch(kPod, R"({"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}})");
    ASSERT_EQ(result["spec"]["containers"].size(), 1u);
    EXPECT_EQ(result["spec"]["containers"][0]["name"], "app");
}

TEST(StrategicMergeDirectives, ReplaceAWholeList) {
    auto result =
        pod_patch(kPod, R"({"spec":{"containers":[{"name":"only"},{"$patch":"replace"}]}})");
    EXPECT_EQ(result["spec"]["containers"], json::parse(R"([{"name":"only"}])"));
}

TEST(StrategicMergeDirectives, MergeDirectiveInAListIsRejected) {
    EXPECT_EQ(pod_patch_error(kPod, R"({"spec":{"containers":[{"$patch":"merge"}]}})"),
              "merging lists cannot yet be specified in the patch");
}

TEST(StrategicMergeDirectives, UnknownDirectiveInAListIsRejected) {
    EXPECT_EQ(pod_patch_error(kPod, R"({"spec":{"containers":[{"name":"a","$patch":"bogus"}]}})"),
              "unknown patch type: bogus in map: map[$patch:bogus name:a]");
}

TEST(StrategicMergeDirectives, DirectivesInNewFieldsAreStripped) {
    auto result =
        pod_patch(R"({})", R"({"spec":{"containers":[{"name":"a"},{"name":"b","$patch":"delete"}],
        "x":{"$patch":"replace"}}})");
    EXPECT_EQ(result, json::parse(R"({"spec":{"containers":[{"name":"a"}]}})"));
}

TEST(StrategicMergeDirectives, RetainKeysDropsUnlistedFields) {
    auto result = pod_patch(
        kPod,
        R"({"spec":{"volumes":[{"name":"data","$retainKeys":["name","configMap"],"configMap":{"name":"cm"}}]}})");
    EXPECT_EQ(result["spec"]["volumes"],
              json::parse(R"([{"name":"data","configMap":{"name":"cm"}}])"));
}

TEST(StrategicMergeDirectives, DirectiveKeysNeverReachTheStoredObject) {
    auto result = pod_patch(
        R"({"spec":{}})",
        R"({"spec":{"volumes":[{"name":"v","$retainKeys":["name"]}],"$setElementOrder/x":[1]},
            "metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})");
    EXPECT_EQ(result, json::parse(R"({"spec":{"volumes":[{"name":"v"}]},"metadata":{}})"));
    auto appended = pod_patch(
        kPod,
        R"({"spec":{"volumes":[{"name":"new","$retainKeys":["name","secret"],"secret":{}}]}})");
    EXPECT_EQ(appended["spec"]["volumes"][0], json::parse(R"({"name":"new","secret":{}})"));
}

TEST(StrategicMergeDirectives, RetainKeysMustCoverThePatch) {
    EXPECT_EQ(
        pod_patch_error(
            kPod, R"({"spec":{"volumes":[{"name":"data","$retainKeys":["name"],"hostPath":{}}]}})"),
        "invalid patch format of retainKeys");
}

TEST(StrategicMergeDirectives, DeploymentStrategyRetainKeys) {
    auto result = strategic_merge_patch(
        json::parse(
            R"({"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}})"),
        json::parse(R"({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}})"), "apps",
        "Deployment");
    EXPECT_EQ(result["spec"]["strategy"], json::parse(R"({"type":"Recreate"})"));
}

TEST(StrategicMergeDirectives, SetElementOrderReordersTheMergedList) {
    auto result = pod_patch(
        R"({"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}})",
        R"({"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"b"},{"name":"a"}],
                                "containers":[{"name":"b","image":"x"}]}})");
    EXPECT_EQ(result["spec"]["containers"],
              json::parse(R"([{"name":"c"},{"name":"b","image":"x"},{"name":"a"}])"));
}

TEST(StrategicMergeDirectives, SetElementOrderWithDeletionKeepsServerOnlyItemsInPlace) {
    // As kubectl apply sends it after removing container "a" and adding "c" while the
    // server had added "d": upstream yields b, d, c (server order seen through the
    // in-place edited original list).
    auto result =
        pod_patch(R"({"spec":{"containers":[{"name":"a"},{"name":"b","image":"1"},{"name":"d"}]}})",
                  R"({"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"c"}],
            "containers":[{"name":"c"},{"name":"a","$patch":"delete"}]}})");
    EXPECT_EQ(result["spec"]["containers"],
              json::parse(R"([{"name":"b","image":"1"},{"name":"d"},{"name":"c"}])"));
}

TEST(StrategicMergeDirectives, SetElementOrderForPrimitiveLists) {
    auto result = pod_patch(R"({"metadata":{"finalizers":["a","b","c"]}})",
                            R"({"metadata":{"$setElementOrder/finalizers":["c","a","b"]}})");
    EXPECT_EQ(result["metadata"]["finalizers"], json::parse(R"(["c","a","b"])"));
}

TEST(StrategicMergeDirectives, SetElementOrderMustMatchThePatchList) {
    auto error = pod_patch_error(R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
                                 R"({"spec":{"$setElementOrder/containers":[{"name":"a"}],
                                     "containers":[{"name":"b"}]}})");
    EXPECT_EQ(error.rfind("The order in patch list:", 0), 0u) << error;
}

// ------------------------------------------------------------------ explicit metadata

TEST(StrategicMergeWithMeta, DescribedFieldsMergeAndReplace) {
    const json meta = json::parse(R"({"fields":{
        "items":{"strategy":"merge,retainKeys","mergeKey":"id","fields":{"tags":{"strategy":"merge"}}},
        "blob":{"strategy":"replace"}}})");
    auto result = kopf::apiserver::strategic_merge_patch_with_meta(
        json::parse(
            R"({"items":[{"id":1,"tags":["x"]},{"id":2}],"blob":{"a":1,"b":2},"other":[1]})"),
        json::parse(R"({"items":[{"id":1,"tags":["y"]}],"blob":{"c":3},"other":[2]})"), meta);
    EXPECT_EQ(result, json::parse(R"({"items":[{"id":1,"tags":["y","x"]},{"id":2}],
        "blob":{"c":3},"other":[2]})"));
}

// ------------------------------------------------------------------ errors

TEST(StrategicMergeErrors, MissingMergeKey) {
    EXPECT_EQ(pod_patch_error(kPod, R"({"spec":{"containers":[{"image":"x"}]}})"),
              "map: map[image:x] does not contain declared merge key: name");
}

TEST(StrategicMergeErrors, MixedElementTypes) {
    auto error = pod_patch_error(R"({"metadata":{"finalizers":["a"]}})",
                                 R"({"metadata":{"finalizers":[1]}})");
    EXPECT_EQ(error.rfind("list element types are not identical", 0), 0u) << error;
}

TEST(StrategicMergeErrors, NonObjectPatch) {
    EXPECT_THROW(strategic_merge_patch(json::object(), json::array(), "", "Pod"), PatchError);
    EXPECT_THROW(strategic_merge_patch(json(5), json::object(), "", "Pod"), PatchError);
}

TEST(StrategicMergeErrors, BadDeleteListKey) {
    EXPECT_EQ(pod_patch_error(kPod, R"({"metadata":{"$deleteFromPrimitiveList":["a"]}})"),
              "invalid patch format of primitive list");
}

TEST(StrategicMergeErrors, MalformedInputsNeverCrash) {
    const char* patches[] = {
        R"({"spec":{"containers":[1,2]}})",
        R"({"spec":{"containers":[[1]]}})",
        R"({"spec":{"containers":{"$patch":"delete"}}})",
        R"({"spec":{"$setElementOrder/containers":5}})",
        R"({"spec":{"$setElementOrder/containers":[1],"containers":[{"name":"a"}]}})",
        R"({"spec":{"volumes":[{"name":"data","$retainKeys":5}]}})",
        R"({"metadata":{"$deleteFromPrimitiveList/finalizers":[{"a":1}]}})",
        R"({"$patch":"replace"})",
        R"({"$patch":5})",
    };
    for (const char* patch : patches) {
        try {
            pod_patch(kPod, patch);
        } catch (const PatchError&) {
        }
    }
    SUCCEED();
}

namespace {

json random_patch(std::mt19937& random, int depth) {
    static const char* keys[] = {"$patch",
                                 "$retainKeys",
                                 "$setElementOrder/containers",
                                 "$deleteFromPrimitiveList/finalizers",
                                 "$setElementOrder/finalizers",
                                 "containers",
                                 "name",
                                 "metadata",
                                 "finalizers",
                                 "spec",
                                 "ports",
                                 "containerPort",
                                 "env",
                                 "image",
                                 "volumes",
                                 "ownerReferences",
                                 "uid",
                                 "$setElementOrder/ports",
                                 "$deleteFromPrimitiveList"};
    static const char* strings[] = {"replace", "delete", "merge", "a", "b", "app", "sidecar", ""};
    const int choice = static_cast<int>(random() % (depth > 4 ? 5 : 8));
    switch (choice) {
        case 0:
            return nullptr;
        case 1:
            return static_cast<int>(random() % 3) + 80;
        case 2:
        case 3:
            return strings[random() % (sizeof strings / sizeof *strings)];
        case 4:
            return random() % 2 == 0;
        case 5: {
            json array = json::array();
            for (int i = static_cast<int>(random() % 4); i > 0; --i) {
                array.push_back(random_patch(random, depth + 1));
            }
            return array;
        }
        default: {
            json object = json::object();
            for (int i = static_cast<int>(random() % 5); i > 0; --i) {
                object[keys[random() % (sizeof keys / sizeof *keys)]] =
                    random_patch(random, depth + 1);
            }
            return object;
        }
    }
}

}  // namespace

TEST(StrategicMergeErrors, RandomPatchesOnlyEverThrowPatchError) {
    std::mt19937 random(7);
    const json pod = json::parse(kPod);
    for (int round = 0; round < 5000; ++round) {
        json patch = random_patch(random, 0);
        if (!patch.is_object()) patch = json{{"spec", patch}};
        json original = round % 3 == 0 ? random_patch(random, 0) : pod;
        if (!original.is_object()) original = pod;
        try {
            strategic_merge_patch(original, patch, round % 2 ? "" : "apps",
                                  round % 2 ? "Pod" : "Deployment");
        } catch (const PatchError&) {
        } catch (const std::exception& error) {
            ADD_FAILURE() << error.what() << "\n" << original.dump() << "\n" << patch.dump();
        }
    }
}
