// Resource selectors resolve the way Kopf's do (kopf/_cogs/structs/references.py).
#include "structs/references.hpp"

#include <gtest/gtest.h>

using kopf::structs::AmbiguousResourceError;
using kopf::structs::EVERYTHING;
using kopf::structs::Resource;
using kopf::structs::Selector;
using kopf::structs::SelectorFields;

namespace {

Resource make(std::string group, std::string version, std::string plural, std::string kind,
              std::set<std::string> shortcuts = {}, std::set<std::string> categories = {},
              bool preferred = true) {
    Resource r;
    r.group = std::move(group);
    r.version = std::move(version);
    r.plural = plural;
    r.kind = std::move(kind);
    r.singular = plural.substr(0, plural.size() - 1);
    r.shortcuts = std::move(shortcuts);
    r.categories = std::move(categories);
    r.preferred = preferred;
    return r;
}

std::vector<Resource> cluster() {
    return {
        make("", "v1", "pods", "Pod", {"po"}, {"all"}),
        make("metrics.k8s.io", "v1beta1", "pods", "PodMetrics"),
        make("kopf.dev", "v1", "kopfexamples", "KopfExample", {"kex", "kexes"}, {"all"}),
        make("kopf.dev", "v1beta1", "kopfexamples", "KopfExample", {"kex"}, {}, false),
        make("zalando.org", "v1", "kopfexamples", "KopfExample"),
        make("", "v1", "events", "Event", {"ev"}),
        make("events.k8s.io", "v1", "events", "Event", {"ev"}),
        make("apps", "v1", "deployments", "Deployment", {"deploy"}, {"all"}),
    };
}

std::vector<std::string> names(const std::vector<Resource>& resources) {
    std::vector<std::string> result;
    for (const auto& r : resources) result.push_back(r.to_string());
    std::sort(result.begin(), result.end());
    return result;
}

}  // namespace

TEST(Selector, PluralMatchesEveryGroupWithThatPlural) {
    EXPECT_EQ(
        names(Selector("kopfexamples").select(cluster())),
        (std::vector<std::string>{"kopfexamples.v1.kopf.dev", "kopfexamples.v1.zalando.org"}));
}

TEST(Selector, PluralDotGroupSelectsThatGroupOnly) {
    EXPECT_EQ(names(Selector("kopfexamples.kopf.dev").select(cluster())),
              (std::vector<std::string>{"kopfexamples.v1.kopf.dev"}));
}

TEST(Selector, VersionlessSelectorSeesOnlyPreferredVersions) {
    auto selected = Selector("kopf.dev", "kopfexamples").select(cluster());
    ASSERT_EQ(selected.size(), 1u);
    EXPECT_EQ(selected[0].version, "v1");
}

TEST(Selector, ExplicitVersionSelectsNonPreferredVersion) {
    auto selected = Selector("kopf.dev/v1beta1", "kopfexamples").select(cluster());
    ASSERT_EQ(selected.size(), 1u);
    EXPECT_EQ(selected[0].version, "v1beta1");
    EXPECT_EQ(names(Selector("kopf.dev", "v1beta1", "kopfexamples").select(cluster())),
              (std::vector<std::string>{"kopfexamples.v1beta1.kopf.dev"}));
}

TEST(Selector, DottedNameWithConventionalVersionIsParsed) {
    EXPECT_EQ(names(Selector("kopfexamples.v1beta1.kopf.dev").select(cluster())),
              (std::vector<std::string>{"kopfexamples.v1beta1.kopf.dev"}));
    Selector core("pods.v1");
    EXPECT_EQ(core.fields().version, "v1");
    EXPECT_FALSE(core.fields().group.has_value());
}

TEST(Selector, KindAndShortNamesMatch) {
    EXPECT_EQ(
        names(Selector("KopfExample").select(cluster())),
        (std::vector<std::string>{"kopfexamples.v1.kopf.dev", "kopfexamples.v1.zalando.org"}));
    EXPECT_EQ(names(Selector("kexes").select(cluster())),
              (std::vector<std::string>{"kopfexamples.v1.kopf.dev"}));
    EXPECT_EQ(names(Selector(SelectorFields{.shortcut = "deploy"}).select(cluster())),
              (std::vector<std::string>{"deployments.v1.apps"}));
}

TEST(Selector, CoreV1WinsOverOtherGroupsForSpecificNames) {
    EXPECT_EQ(names(Selector("pods").select(cluster())), (std::vector<std::string>{"pods.v1"}));
}

TEST(Selector, CategorySelectsAllMembersWithoutCorePriority) {
    EXPECT_EQ(
        names(Selector(SelectorFields{.category = "all"}).select(cluster())),
        (std::vector<std::string>{"deployments.v1.apps", "kopfexamples.v1.kopf.dev", "pods.v1"}));
}

TEST(Selector, EverythingExcludesEvents) {
    auto selected = names(Selector(EVERYTHING).select(cluster()));
    EXPECT_EQ(std::count(selected.begin(), selected.end(), "events.v1"), 0);
    EXPECT_EQ(std::count(selected.begin(), selected.end(), "events.v1.events.k8s.io"), 0);
    EXPECT_EQ(std::count(selected.begin(), selected.end(), "pods.v1"), 1);
    EXPECT_FALSE(Selector(EVERYTHING).is_specific());
}

TEST(Selector, SelectOneRaisesKopfAmbiguityError) {
    try {
        Selector("kopfexamples").select_one(cluster());
        FAIL() << "no error";
    } catch (const AmbiguousResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("Ambiguous resources will not be served"),
                  std::string::npos);
        EXPECT_NE(std::string(e.what()).find("kopfexamples.v1.zalando.org"), std::string::npos);
    }
}

TEST(Selector, SelectOneReturnsNothingForUnknownNames) {
    EXPECT_FALSE(Selector("unicorns").select_one(cluster()).has_value());
}

TEST(Selector, EmptyOrConflictingNamesAreRejected) {
    EXPECT_THROW(Selector(SelectorFields{}), std::invalid_argument);
    EXPECT_THROW(Selector(SelectorFields{.kind = "Pod", .plural = "pods"}), std::invalid_argument);
    EXPECT_THROW(Selector(SelectorFields{.plural = ""}), std::invalid_argument);
}

TEST(Selector, PredicateNeverMatchesEvents) {
    Selector any([](const Resource&) { return true; });
    auto selected = names(any.select(cluster()));
    EXPECT_EQ(std::count(selected.begin(), selected.end(), "events.v1"), 0);
    EXPECT_EQ(std::count(selected.begin(), selected.end(), "kopfexamples.v1beta1.kopf.dev"), 1);
}

TEST(Resource, PathsForCollectionsObjectsAndSubresources) {
    auto pods = make("", "v1", "pods", "Pod");
    auto kex = make("kopf.dev", "v1", "kopfexamples", "KopfExample");
    EXPECT_EQ(pods.path(), "/api/v1/pods");
    EXPECT_EQ(pods.path("ns1"), "/api/v1/namespaces/ns1/pods");
    EXPECT_EQ(kex.path("ns1", "x", "status"),
              "/apis/kopf.dev/v1/namespaces/ns1/kopfexamples/x/status");
    EXPECT_EQ(pods.path("", "", "", {{"labelSelector", "a=b,c in (d)"}}),
              "/api/v1/pods?labelSelector=a%3Db%2Cc%20in%20%28d%29");
    // Bytes beyond ASCII and reserved characters at either end: each byte escaped.
    EXPECT_EQ(pods.path("ns", "\u00e9-x/"), "/api/v1/namespaces/ns/pods/%C3%A9-x%2F");
}

TEST(Resource, ImpossiblePathsAreRejected) {
    auto pods = make("", "v1", "pods", "Pod");
    EXPECT_THROW(pods.path("", "p1"), std::invalid_argument);
    EXPECT_THROW(pods.path("ns", "", "status"), std::invalid_argument);
}

TEST(Discovery, ApiResourceListBecomesResourcesWithSubresources) {
    auto list = nlohmann::json::parse(R"({
      "kind": "APIResourceList", "groupVersion": "kopf.dev/v1",
      "resources": [
        {"name": "kopfexamples", "singularName": "kopfexample", "namespaced": true,
         "kind": "KopfExample", "verbs": ["get", "list", "watch"], "shortNames": ["kex"],
         "categories": ["all"]},
        {"name": "kopfexamples/status", "singularName": "", "namespaced": true,
         "kind": "KopfExample", "verbs": ["get", "patch"]}
      ]})");
    auto resources = kopf::structs::parse_api_resource_list(list, "kopf.dev", "v1", true);
    ASSERT_EQ(resources.size(), 1u);
    EXPECT_EQ(resources[0].kind, "KopfExample");
    EXPECT_EQ(resources[0].singular, "kopfexample");
    EXPECT_TRUE(resources[0].namespaced);
    EXPECT_EQ(resources[0].subresources, (std::set<std::string>{"status"}));
    EXPECT_EQ(resources[0].shortcuts, (std::set<std::string>{"kex"}));
    EXPECT_TRUE(resources[0].verbs.count("watch"));
}

TEST(Discovery, ListWithoutResourcesIsAnError) {
    EXPECT_THROW(kopf::structs::parse_api_resource_list(nlohmann::json::object(), "g", "v1", true),
                 std::runtime_error);
}
