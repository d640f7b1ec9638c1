// Diff-base storages: the essence of an object and its persisted form.
#include <gtest/gtest.h>

#include <kopf/settings.hpp>
#include <kopf/storage.hpp>

namespace {

using kopf::json;

json body() {
    return json::parse(R"({
        "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "n", "namespace": "ns", "uid": "u", "resourceVersion": "1",
                     "labels": {"somelabel": "somevalue"},
                     "annotations": {"kopf.zalando.org/create_fn": "{}",
                                     "kubectl.kubernetes.io/last-applied-configuration": "{}",
                                     "sub.kopf.zalando.org/x": "1",
                                     "someannotation": "v"}},
        "spec": {"field": "value", "items": ["item1", "item2"]},
        "status": {"create_fn": {"message": "hello"}}
    })");
}

TEST(DiffBase, EssenceKeepsSpecLabelsAndUserAnnotationsOnly) {
    kopf::AnnotationsDiffBaseStorage storage;
    json essence = storage.build(body());
    EXPECT_EQ(essence, json::parse(R"({"spec": {"field": "value", "items": ["item1", "item2"]},
        "metadata": {"labels": {"somelabel": "somevalue"}, "annotations": {"someannotation": "v"}}})"));
}

TEST(DiffBase, EssenceCarriesExtraFieldsOfFieldHandlers) {
    kopf::AnnotationsDiffBaseStorage storage;
    json essence = storage.build(body(), {{"status", "create_fn", "message"}});
    EXPECT_EQ(essence["status"]["create_fn"]["message"], "hello");
}

TEST(DiffBase, EssenceDropsIgnoredFieldsAndEmptyStanzas) {
    kopf::AnnotationsDiffBaseStorage storage;
    storage.ignored_fields = {{"spec", "field"}, {"spec", "items"}};
    json essence = storage.build(body());
    EXPECT_FALSE(essence.contains("spec"));
}

TEST(DiffBase, StoresCompactJsonWithSpecFirstAndATrailingNewline) {
    kopf::AnnotationsDiffBaseStorage storage;
    json b = body();
    b["metadata"].erase("annotations");
    kopf::Patch patch;
    storage.store(b, patch, storage.build(b));
    EXPECT_EQ(patch.merge["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"],
              "{\"spec\":{\"field\":\"value\",\"items\":[\"item1\",\"item2\"]},"
              "\"metadata\":{\"labels\":{\"somelabel\":\"somevalue\"}}}\n");
}

TEST(DiffBase, FetchesTheStoredEssence) {
    kopf::AnnotationsDiffBaseStorage storage;
    json b = {{"metadata",
               {{"annotations",
                 {{"kopf.zalando.org/last-handled-configuration", "{\"spec\":{\"a\":1}}\n"}}}}}};
    EXPECT_EQ(storage.fetch(b), (json{{"spec", {{"a", 1}}}}));
}

TEST(DiffBase, AbsentAnnotationMeansNeverHandled) {
    kopf::AnnotationsDiffBaseStorage storage;
    EXPECT_FALSE(storage.fetch(body()));
}

// The documented recipe for Secrets (docs/configuration.md): their values out of the diff base.
TEST(DiffBase, IgnoredFieldsStayOutOfTheStoredEssence) {
    kopf::AnnotationsDiffBaseStorage storage;
    storage.ignored_fields = {{"data"}, {"stringData"}};
    json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "db"}, {"labels", {{"app", "db"}}}}},
                   {"type", "Opaque"},
                   {"data", {{"password", "aHVudGVyMg=="}}}};
    kopf::Patch patch;
    storage.store(secret, patch, storage.build(secret));
    EXPECT_EQ(patch.merge["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"],
              "{\"type\":\"Opaque\",\"metadata\":{\"labels\":{\"app\":\"db\"}}}\n");
}

// Taken as absent, a corrupt diff base would run the creation handlers again.
TEST(DiffBase, CorruptAnnotationIsAnErrorNamingIt) {
    kopf::AnnotationsDiffBaseStorage storage;
    json b = {{"metadata",
               {{"annotations",
                 {{"kopf.zalando.org/last-handled-configuration", "{\"spec\": {\"a\""}}}}}};
    try {
        storage.fetch(b);
        FAIL() << "a corrupt diff base was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "the annotation 'kopf.zalando.org/last-handled-configuration' is not JSON"),
                  std::string::npos)
            << e.what();
    }
}

TEST(DiffBase, CorruptStatusFieldIsAnErrorNamingIt) {
    kopf::StatusDiffBaseStorage storage;
    json b = {{"status", {{"kopf", {{"last-handled-configuration", "not json"}}}}}};
    try {
        storage.fetch(b);
        FAIL() << "a corrupt diff base was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("status.kopf.last-handled-configuration"),
                  std::string::npos)
            << e.what();
    }
}

// Kopf reads a stored JSON null as no diff base.
TEST(DiffBase, StoredNullMeansNeverHandled) {
    kopf::AnnotationsDiffBaseStorage storage;
    json b = {
        {"metadata", {{"annotations", {{"kopf.zalando.org/last-handled-configuration", "null"}}}}}};
    EXPECT_FALSE(storage.fetch(b));
}

TEST(DiffBase, StatusStorageWritesJsonWithoutNewline) {
    kopf::StatusDiffBaseStorage storage;
    kopf::Patch patch;
    storage.store(json::object(), patch, json{{"spec", {{"a", 1}}}});
    EXPECT_EQ(patch.merge["status"]["kopf"]["last-handled-configuration"], "{\"spec\":{\"a\":1}}");
    json b = {{"status", {{"kopf", {{"last-handled-configuration", "{\"spec\":{\"a\":1}}"}}}}}};
    EXPECT_EQ(storage.fetch(b), (json{{"spec", {{"a", 1}}}}));
}

TEST(DiffBase, MultiStorageReadsFirstAvailableAndWritesAll) {
    auto a = std::make_shared<kopf::AnnotationsDiffBaseStorage>();
    auto s = std::make_shared<kopf::StatusDiffBaseStorage>();
    kopf::MultiDiffBaseStorage multi({a, s});
    json b = {{"status", {{"kopf", {{"last-handled-configuration", "{\"spec\":{\"a\":2}}"}}}}}};
    EXPECT_EQ(multi.fetch(b), (json{{"spec", {{"a", 2}}}}));
    kopf::Patch patch;
    multi.store(b, patch, json{{"spec", {{"a", 3}}}});
    EXPECT_TRUE(patch.merge["metadata"]["annotations"].contains(
        "kopf.zalando.org/last-handled-configuration"));
    EXPECT_TRUE(patch.merge["status"]["kopf"].contains("last-handled-configuration"));
}

TEST(Settings, DefaultsAreKopfs) {
    kopf::OperatorSettings s;
    EXPECT_EQ(s.persistence.finalizer, "kopf.zalando.org/KopfFinalizerMarker");
    EXPECT_EQ(s.persistence.consistency_timeout, 5.0);
    EXPECT_EQ(s.execution.default_backoff, 60);
    EXPECT_EQ(s.queueing.idle_timeout, 5.0);
    EXPECT_EQ(s.queueing.exit_timeout, 2.0);
    EXPECT_EQ(s.queueing.error_delays.back(), 610);
    EXPECT_EQ(s.watching.inactivity_timeout, 70.0);
    EXPECT_EQ(s.watching.reconnect_backoff, 0.1);
    EXPECT_EQ(s.networking.request_timeout, 300);
    EXPECT_EQ(s.networking.error_backoffs, (std::vector<double>{1, 1, 2, 3, 5, 8, 13, 21}));
    EXPECT_EQ(s.peering.name, "default");
    EXPECT_EQ(s.peering.lifetime, 60);
    EXPECT_FALSE(s.posting.loggers);
    EXPECT_EQ(s.posting.event_name_prefix, "kopf-event-");
    EXPECT_EQ(s.process.ultimate_exiting_timeout, 600);
    EXPECT_EQ(s.background.cancellation_polling, 60);
}

TEST(Settings, BatchingIsAnAliasOfQueueingAlsoInCopies) {
    kopf::OperatorSettings s;
    s.batching.idle_timeout = 9;
    EXPECT_EQ(s.queueing.idle_timeout, 9);
    kopf::OperatorSettings copy = s;
    copy.batching.idle_timeout = 3;
    EXPECT_EQ(copy.queueing.idle_timeout, 3);
    EXPECT_EQ(s.queueing.idle_timeout, 9);
}

}  // namespace
