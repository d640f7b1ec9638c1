// Resource selectors in the forms of Kopf's "Resource specification".
#include <gtest/gtest.h>

#include <kopf/resource.hpp>

namespace {

kopf::Resource kex() {
    return {.group = "kopf.dev",
            .version = "v1",
            .plural = "kopfexamples",
            .kind = "KopfExample",
            .singular = "kopfexample",
            .shortcuts = {"kex"},
            .categories = {"all"}};
}
kopf::Resource pods() {
    return {.group = "",
            .version = "v1",
            .plural = "pods",
            .kind = "Pod",
            .singular = "pod",
            .shortcuts = {"po"}};
}

TEST(Selectors, PluralSingularKindAndShortNamesMatch) {
    for (auto name : {"kopfexamples", "kopfexample", "KopfExample", "kex"}) {
        EXPECT_TRUE(kopf::Selector(name).check(kex())) << name;
        EXPECT_FALSE(kopf::Selector(name).check(pods())) << name;
    }
}

TEST(Selectors, PluralDotGroupMatchesOnlyThatGroup) {
    kopf::Selector s("kopfexamples.kopf.dev");
    EXPECT_EQ(s.plural, "kopfexamples");
    EXPECT_EQ(s.group, "kopf.dev");
    EXPECT_TRUE(s.check(kex()));
    auto other = kex();
    other.group = "zalando.org";
    EXPECT_FALSE(s.check(other));
}

TEST(Selectors, PluralVersionGroupIsParsed) {
    kopf::Selector s("kopfexamples.v1.kopf.dev");
    EXPECT_EQ(s.version, "v1");
    EXPECT_EQ(s.group, "kopf.dev");
    EXPECT_TRUE(s.check(kex()));
}

TEST(Selectors, GroupVersionAndNameForms) {
    EXPECT_TRUE(kopf::Selector("kopf.dev/v1", "kopfexamples").check(kex()));
    EXPECT_TRUE(kopf::Selector("kopf.dev", "kopfexamples").check(kex()));
    EXPECT_TRUE(kopf::Selector("kopf.dev", "v1", "kopfexamples").check(kex()));
    EXPECT_FALSE(kopf::Selector("kopf.dev", "v2", "kopfexamples").check(kex()));
    EXPECT_TRUE(kopf::Selector("v1", "pods").check(pods()));
}

TEST(Selectors, KeywordFormsAndEverything) {
    kopf::Selector by_category;
    by_category.category = "all";
    EXPECT_TRUE(by_category.check(kex()));
    EXPECT_FALSE(by_category.check(pods()));
    EXPECT_TRUE(kopf::Selector(kopf::EVERYTHING).check(pods()));
}

TEST(Selectors, InvalidInputIsRejectedWithTheInputNamed) {
    EXPECT_THROW(kopf::Selector(""), std::invalid_argument);
    try {
        kopf::Selector("kopf.dev", "kopfexamples.kopf.dev");
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("kopfexamples.kopf.dev"), std::string::npos);
    }
}

TEST(Selectors, StatusSubresourceIsDetected) {
    auto r = kex();
    EXPECT_FALSE(r.has_status_subresource());
    r.subresources = {"status"};
    EXPECT_TRUE(r.has_status_subresource());
}

}  // namespace
