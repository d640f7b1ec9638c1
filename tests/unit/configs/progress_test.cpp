// Progress storages: Kopf's record format in annotations, the legacy status, smart reading.
#include <gtest/gtest.h>

#include <kopf/storage.hpp>

#include "core/actions/execution.hpp"

namespace {

using kopf::json;

json record() {
    return {{"started", "2026-11-21T23:21:38.929772+00:00"},
            {"stopped", nullptr},
            {"delayed", "2026-11-21T23:21:40.946233+00:00"},
            {"purpose", "create"},
            {"retries", 2},
            {"success", false},
            {"failure", false},
            {"message", "not yet"},
            {"subrefs", nullptr}};
}

TEST(AnnotationsProgress, StoresCompactJsonInKopfFieldOrderWithoutNulls) {
    kopf::AnnotationsProgressStorage storage;
    kopf::Patch patch;
    storage.store("create_fn", record(), json::object(), patch);
    EXPECT_EQ(
        patch.merge["metadata"]["annotations"]["kopf.zalando.org/create_fn"],
        R"({"started":"2026-11-21T23:21:38.929772+00:00","delayed":"2026-11-21T23:21:40.946233+00:00","purpose":"create","retries":2,"success":false,"failure":false,"message":"not yet"})");
}

TEST(AnnotationsProgress, VerboseModeKeepsNulls) {
    kopf::AnnotationsProgressStorage storage("kopf.zalando.org", true);
    kopf::Patch patch;
    storage.store("fn", record(), json::object(), patch);
    auto text = patch.merge["metadata"]["annotations"]["kopf.zalando.org/fn"].get<std::string>();
    EXPECT_NE(text.find(R"("stopped":null)"), std::string::npos);
}

TEST(AnnotationsProgress, FetchesWhatKopfWrote) {
    kopf::AnnotationsProgressStorage storage;
    json body = {
        {"metadata",
         {{"annotations",
           {{"kopf.zalando.org/create_fn",
             R"({"started":"2026-11-21T23:21:38.929772+00:00","retries":1,"success":true})"}}}}}};
    auto r = storage.fetch("create_fn", body);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["retries"], 1);
    EXPECT_EQ((*r)["success"], true);
}

TEST(AnnotationsProgress, FetchIgnoresUnparseableValues) {
    kopf::AnnotationsProgressStorage storage;
    json body = {{"metadata", {{"annotations", {{"kopf.zalando.org/fn", "not json"}}}}}};
    EXPECT_FALSE(storage.fetch("fn", body));
}

TEST(AnnotationsProgress, PurgeNullsExistingKeysAndDropsPatchOnlyKeys) {
    kopf::AnnotationsProgressStorage storage;
    json body = {{"metadata", {{"annotations", {{"kopf.zalando.org/a", "{}"}}}}}};
    kopf::Patch patch;
    patch.merge["metadata"]["annotations"]["kopf.zalando.org/b"] = "{}";
    storage.purge("a", body, patch);
    storage.purge("b", body, patch);
    EXPECT_EQ(patch.merge["metadata"]["annotations"], (json{{"kopf.zalando.org/a", nullptr}}));
}

TEST(AnnotationsProgress, TouchWritesTheDummyOnlyWhenDifferent) {
    kopf::AnnotationsProgressStorage storage;
    json body = {{"metadata", {{"annotations", {{"kopf.zalando.org/touch-dummy", "x"}}}}}};
    kopf::Patch same;
    storage.touch(body, same, "x");
    EXPECT_TRUE(same.merge.empty());
    kopf::Patch cleared;
    storage.touch(body, cleared, std::nullopt);
    EXPECT_EQ(cleared.merge,
              (json{{"metadata", {{"annotations", {{"kopf.zalando.org/touch-dummy", nullptr}}}}}}));
}

TEST(AnnotationsProgress, ForeignPrefixesGetTheKopfManagedMarker) {
    kopf::AnnotationsProgressStorage storage("my-op.example.com");
    kopf::Patch patch;
    storage.store("fn", record(), json::object(), patch);
    EXPECT_EQ(patch.merge["metadata"]["annotations"]["my-op.example.com/kopf-managed"], "yes");
}

TEST(StatusProgress, StoresTheFullRecordUnderRawId) {
    kopf::StatusProgressStorage storage;
    kopf::Patch patch;
    storage.store("field_fn/spec.field", record(), json::object(), patch);
    auto stored = patch.merge["status"]["kopf"]["progress"]["field_fn/spec.field"];
    EXPECT_TRUE(stored.contains("stopped"));
    EXPECT_TRUE(stored["stopped"].is_null());
    EXPECT_EQ(stored["retries"], 2);
}

TEST(SmartProgress, ReadsLegacyStatusButWritesOnlyAnnotations) {
    kopf::SmartProgressStorage storage;
    json body = {{"status", {{"kopf", {{"progress", {{"fn", {{"retries", 3}}}}}}}}}};
    auto r = storage.fetch("fn", body);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["retries"], 3);
    kopf::Patch patch;
    storage.store("fn", record(), body, patch);
    EXPECT_FALSE(patch.merge.contains("status"));
    EXPECT_TRUE(patch.merge["metadata"]["annotations"].contains("kopf.zalando.org/fn"));
}

TEST(SmartProgress, AnnotationsWinOverStatus) {
    kopf::SmartProgressStorage storage;
    json body = {{"metadata", {{"annotations", {{"kopf.zalando.org/fn", R"({"retries":1})"}}}}},
                 {"status", {{"kopf", {{"progress", {{"fn", {{"retries", 3}}}}}}}}}};
    EXPECT_EQ((*storage.fetch("fn", body))["retries"], 1);
}

TEST(SmartProgress, PurgeNullsLegacyStatusRecords) {
    kopf::SmartProgressStorage storage;
    json body = {{"status", {{"kopf", {{"progress", {{"fn", {{"retries", 3}}}}}}}}}};
    kopf::Patch patch;
    storage.purge("fn", body, patch);
    EXPECT_TRUE(patch.merge["status"]["kopf"]["progress"].contains("fn"));
    EXPECT_TRUE(patch.merge["status"]["kopf"]["progress"]["fn"].is_null());
}

TEST(ProgressRecord, TimestampsAreUtcWithMicrosecondsAndOffset) {
    auto t = kopf::actions::Clock::from_time_t(1795735298) + std::chrono::microseconds(929772);
    EXPECT_EQ(kopf::actions::format_iso8601(t), "2026-11-26T23:21:38.929772+00:00");
}

TEST(ProgressRecord, ParsesNaiveZuluAndOffsetTimestamps) {
    auto expected =
        kopf::actions::Clock::from_time_t(1795735298) + std::chrono::microseconds(929772);
    EXPECT_EQ(kopf::actions::parse_iso8601("2026-11-26T23:21:38.929772+00:00"), expected);
    EXPECT_EQ(kopf::actions::parse_iso8601("2026-11-26T23:21:38.929772"), expected);
    EXPECT_EQ(kopf::actions::parse_iso8601("2026-11-26T23:21:38.929772Z"), expected);
    EXPECT_EQ(kopf::actions::parse_iso8601("2026-11-27T01:21:38.929772+02:00"), expected);
    EXPECT_FALSE(kopf::actions::parse_iso8601("yesterday"));
}

// Anyone may edit an annotation: a time beyond the clock's range is no timestamp (found by
// fuzzing; converting it overflowed).
TEST(ProgressRecord, TimestampsBeyondTheClocksRangeAreNotParsed) {
    EXPECT_EQ(kopf::actions::parse_iso8601("4052-01-02T03:04:06Z"), std::nullopt);
    EXPECT_EQ(kopf::actions::parse_iso8601("2261-99-02T03:04:06Z"), std::nullopt);
    EXPECT_NE(kopf::actions::parse_iso8601("2261-01-02T03:04:06Z"), std::nullopt);
}

}  // namespace
