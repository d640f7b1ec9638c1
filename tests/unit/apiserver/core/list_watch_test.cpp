// Lists (selectors, pagination, resourceVersion) and watches (history, 410,
// bookmarks, timeouts, selector transitions, initial events).
#include <gtest/gtest.h>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;
using namespace std::chrono_literals;

namespace {
const std::string kCms = "/api/v1/namespaces/default/configmaps";

json labelled(const std::string& name, const std::string& app) {
    json cm = configmap(name);
    cm["metadata"]["labels"] = {{"app", app}};
    return cm;
}
}  // namespace

TEST(List, ItemsAreOrderedAndCarryListKind) {
    ApiCore core({});
    post(core, kCms, configmap("b"));
    post(core, kCms, configmap("a"));
    auto r = get(core, kCms);
    EXPECT_EQ(r.body["kind"], "ConfigMapList");
    ASSERT_EQ(r.body["items"].size(), 2u);
    EXPECT_EQ(r.body["items"][0]["metadata"]["name"], "a");
    EXPECT_FALSE(r.body["metadata"]["resourceVersion"].get<std::string>().empty());
}

TEST(List, EmptyListHasItemsArray) {
    ApiCore core({});
    auto r = get(core, kCms);
    EXPECT_TRUE(r.body["items"].is_array());
}

TEST(List, AllNamespacesListing) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    post(core, "/api/v1/namespaces/kube-system/configmaps", configmap("b"));
    EXPECT_EQ(get(core, "/api/v1/configmaps").body["items"].size(), 2u);
    EXPECT_EQ(get(core, kCms).body["items"].size(), 1u);
}

TEST(List, LabelSelectorFilters) {
    ApiCore core({});
    post(core, kCms, labelled("a", "x"));
    post(core, kCms, labelled("b", "y"));
    auto r = get(core, kCms, {{"labelSelector", "app=x"}});
    ASSERT_EQ(r.body["items"].size(), 1u);
    EXPECT_EQ(r.body["items"][0]["metadata"]["name"], "a");
}

TEST(List, BadLabelSelectorIs400) {
    ApiCore core({});
    auto r = get(core, kCms, {{"labelSelector", "app in (x"}});
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.body["reason"], "BadRequest");
}

TEST(List, FieldSelectorOnName) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    post(core, kCms, configmap("b"));
    auto r = get(core, kCms, {{"fieldSelector", "metadata.name=b"}});
    ASSERT_EQ(r.body["items"].size(), 1u);
    EXPECT_EQ(r.body["items"][0]["metadata"]["name"], "b");
}

TEST(List, LimitAndContinuePaginate) {
    ApiCore core({});
    for (const char* n : {"a", "b", "c"}) post(core, kCms, configmap(n));
    auto p1 = get(core, kCms, {{"limit", "2"}});
    ASSERT_EQ(p1.body["items"].size(), 2u);
    ASSERT_TRUE(p1.body["metadata"].contains("continue"));
    EXPECT_EQ(p1.body["metadata"]["remainingItemCount"], 1);
    auto p2 = get(core, kCms, {{"limit", "2"}, {"continue", p1.body["metadata"]["continue"]}});
    ASSERT_EQ(p2.body["items"].size(), 1u);
    EXPECT_EQ(p2.body["items"][0]["metadata"]["name"], "c");
    EXPECT_FALSE(p2.body["metadata"].contains("continue"));
}

TEST(List, RemainingItemCountStaysExactAcrossPagesAndWrites) {
    ApiCore core({});
    for (const char* n : {"a", "b", "c", "d", "e", "f"}) post(core, kCms, configmap(n));
    auto p1 = get(core, kCms, {{"limit", "2"}});
    EXPECT_EQ(p1.body["metadata"]["remainingItemCount"], 4);
    auto p2 = get(core, kCms, {{"limit", "2"}, {"continue", p1.body["metadata"]["continue"]}});
    EXPECT_EQ(p2.body["metadata"]["remainingItemCount"], 2);
    // A write between the pages: the count is the collection's as it is now.
    post(core, kCms, configmap("g"));
    auto p3 = get(core, kCms, {{"limit", "1"}, {"continue", p2.body["metadata"]["continue"]}});
    ASSERT_EQ(p3.body["items"].size(), 1u);
    EXPECT_EQ(p3.body["items"][0]["metadata"]["name"], "e");
    EXPECT_EQ(p3.body["metadata"]["remainingItemCount"], 2);
    auto p4 = get(core, kCms, {{"limit", "1"}, {"continue", p3.body["metadata"]["continue"]}});
    EXPECT_EQ(p4.body["metadata"]["remainingItemCount"], 1);
}

TEST(List, InvalidContinueIs400) {
    ApiCore core({});
    EXPECT_EQ(get(core, kCms, {{"continue", "garbage!"}}).status, 400);
}

TEST(List, ResourceVersionMatchRequiresResourceVersion) {
    ApiCore core({});
    EXPECT_EQ(get(core, kCms, {{"resourceVersionMatch", "NotOlderThan"}}).status, 422);
}

TEST(List, NonNumericResourceVersionIs400) {
    ApiCore core({});
    EXPECT_EQ(get(core, kCms, {{"resourceVersion", "abc"}}).status, 400);
}

// A write's answer is the object exactly as its watchers were sent it (one serialisation for
// both) and as a read shows it; without watchers too.
TEST(Watch, AWritesAnswerIsTheObjectItsWatchersWereSentByteForByte) {
    ApiCore core({});
    const std::string configmaps = "/api/v1/namespaces/default/configmaps";
    const Reply unwatched = post(core, configmaps, configmap("quiet", {{"k", "v"}}));
    ASSERT_EQ(unwatched.status, 201) << unwatched.raw;
    EXPECT_EQ(unwatched.raw, get(core, configmaps + "/quiet").raw);

    auto sink = watch(core, configmaps,
                      {{"resourceVersion", unwatched.body["metadata"]["resourceVersion"]}});
    const Reply created = post(core, configmaps, configmap("c1", {{"k", "v"}}));
    const Reply patched = patch(core, configmaps + "/c1", {{"data", {{"k", "w"}, {"deep", "x"}}}});
    ASSERT_EQ(patched.status, 200) << patched.raw;
    ASSERT_TRUE(sink->wait_for_count(2));
    const auto lines = sink->lines();
    const std::string added = R"({"type":"ADDED","object":)";
    const std::string modified = R"({"type":"MODIFIED","object":)";
    ASSERT_EQ(lines[0].substr(0, added.size()), added);
    ASSERT_EQ(lines[1].substr(0, modified.size()), modified);
    EXPECT_EQ(created.raw, lines[0].substr(added.size(), lines[0].size() - added.size() - 2));
    EXPECT_EQ(patched.raw, lines[1].substr(modified.size(), lines[1].size() - modified.size() - 2));
    EXPECT_EQ(patched.raw, get(core, configmaps + "/c1").raw);
    EXPECT_EQ(patched.body["data"]["deep"], "x");
}

TEST(Watch, WithoutResourceVersionSendsSyntheticAdded) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    auto sink = watch(core, kCms, {});
    ASSERT_TRUE(sink->wait_for_count(1));
    auto ev = sink->events()[0];
    EXPECT_EQ(ev["type"], "ADDED");
    EXPECT_EQ(ev["object"]["kind"], "ConfigMap");
    EXPECT_EQ(sink->lines()[0].back(), '\n');
}

TEST(Watch, FromResourceVersionDeliversLaterChangesInOrder) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    auto sink = watch(core, kCms, {{"resourceVersion", rv}});
    patch(core, kCms + "/a", {{"data", {{"k", "2"}}}});
    del(core, kCms + "/a");
    ASSERT_TRUE(sink->wait_for_count(2));
    auto evs = sink->events();
    EXPECT_EQ(evs[0]["type"], "MODIFIED");
    EXPECT_EQ(evs[1]["type"], "DELETED");
    EXPECT_GT(std::stoull(evs[1]["object"]["metadata"]["resourceVersion"].get<std::string>()),
              std::stoull(evs[0]["object"]["metadata"]["resourceVersion"].get<std::string>()));
}

TEST(Watch, ResumeReplaysHistoryMissedWhileDisconnected) {
    ApiCore core({});
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    post(core, kCms, configmap("a"));
    auto sink = watch(core, kCms, {{"resourceVersion", rv}});
    ASSERT_TRUE(sink->wait_for_count(1));
    EXPECT_EQ(sink->events()[0]["type"], "ADDED");
}

TEST(Watch, CompactedHistoryGivesExpiredError) {
    ApiCore core({});
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    post(core, kCms, configmap("a"));
    core.compact_history();
    auto sink = watch(core, kCms, {{"resourceVersion", rv}});
    ASSERT_TRUE(sink->wait_closed());
    auto evs = sink->events();
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0]["type"], "ERROR");
    EXPECT_EQ(evs[0]["object"]["code"], 410);
    EXPECT_EQ(evs[0]["object"]["reason"], "Expired");
}

// Large objects leave the history by its size limit, not only by its count: deleted, they no
// longer hold memory. Resuming from before them is then 410, as after a compaction.
TEST(Watch, HistoryIsBoundedByTheSizeOfItsObjects) {
    CoreOptions options;
    options.history_bytes = 64 * 1024;
    ApiCore core(options);
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    for (int i = 0; i < 8; ++i) {
        std::string name = "big" + std::to_string(i);
        post(core, kCms, configmap(name, {{"blob", std::string(16 * 1024, 'x')}}));
        del(core, kCms + "/" + name);
    }
    auto expired = watch(core, kCms, {{"resourceVersion", rv}});
    ASSERT_TRUE(expired->wait_closed());
    ASSERT_EQ(expired->events().size(), 1u);
    EXPECT_EQ(expired->events()[0]["object"]["code"], 410);

    // The newest events are still there to resume from.
    std::string recent = get(core, kCms).body["metadata"]["resourceVersion"];
    post(core, kCms, configmap("small"));
    auto resumed = watch(core, kCms, {{"resourceVersion", recent}});
    ASSERT_TRUE(resumed->wait_for_count(1));
    EXPECT_EQ(resumed->events()[0]["object"]["metadata"]["name"], "small");
}

TEST(Watch, BookmarksArriveWhenAllowed) {
    CoreOptions opts;
    opts.bookmark_interval = 50ms;
    ApiCore core(opts);
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    auto sink = watch(core, kCms, {{"resourceVersion", rv}, {"allowWatchBookmarks", "true"}});
    ASSERT_TRUE(sink->wait_for_count(1));
    auto ev = sink->events()[0];
    EXPECT_EQ(ev["type"], "BOOKMARK");
    EXPECT_EQ(ev["object"]["kind"], "ConfigMap");
    EXPECT_TRUE(ev["object"]["metadata"].contains("resourceVersion"));
}

TEST(Watch, TimeoutSecondsEndsTheStream) {
    ApiCore core({});
    auto sink = watch(core, kCms, {{"timeoutSeconds", "1"}});
    EXPECT_TRUE(sink->wait_closed(10s));
}

TEST(Watch, DropWatchesClosesStreams) {
    ApiCore core({});
    auto sink = watch(core, kCms, {});
    core.drop_watches();
    EXPECT_TRUE(sink->closed());
}

// A stalled stream is a slow one: what happens meanwhile arrives late, in order, none lost.
TEST(Watch, StalledWatchesReceiveNothingButStayOpenThenCatchUp) {
    ApiCore core({});
    auto sink = watch(core, kCms, {});
    core.stall_watches(true);
    post(core, kCms, configmap("a"));
    EXPECT_FALSE(sink->wait_for_count(1, 200ms));
    EXPECT_FALSE(sink->closed());
    core.stall_watches(false);
    post(core, kCms, configmap("b"));
    ASSERT_TRUE(sink->wait_for_count(2));
    auto evs = sink->events();
    EXPECT_EQ(evs[0]["object"]["metadata"]["name"], "a");
    EXPECT_EQ(evs[1]["object"]["metadata"]["name"], "b");
}

// Resuming after the held-back events left the history: 410, so that the client relists.
TEST(Watch, StalledWatchesWhoseEventsLeftTheHistoryGetGone) {
    ApiCore core({});
    auto sink = watch(core, kCms, {});
    core.stall_watches(true);
    post(core, kCms, configmap("a"));
    core.compact_history();
    core.stall_watches(false);
    ASSERT_TRUE(sink->wait_for_count(1));
    auto evs = sink->events();
    EXPECT_EQ(evs[0]["type"], "ERROR");
    EXPECT_EQ(evs[0]["object"]["code"], 410);
    EXPECT_TRUE(sink->closed());
}

TEST(Watch, SelectorTransitionsBecomeAddedAndDeleted) {
    ApiCore core({});
    post(core, kCms, labelled("a", "y"));
    std::string rv = get(core, kCms).body["metadata"]["resourceVersion"];
    auto sink = watch(core, kCms, {{"resourceVersion", rv}, {"labelSelector", "app=x"}});
    patch(core, kCms + "/a", {{"metadata", {{"labels", {{"app", "x"}}}}}});
    patch(core, kCms + "/a", {{"metadata", {{"labels", {{"app", "z"}}}}}});
    ASSERT_TRUE(sink->wait_for_count(2));
    auto evs = sink->events();
    EXPECT_EQ(evs[0]["type"], "ADDED");
    EXPECT_EQ(evs[1]["type"], "DELETED");
}

TEST(Watch, OneNamespaceWatchIgnoresOtherNamespaces) {
    ApiCore core({});
    auto sink = watch(core, kCms, {{"resourceVersion", "1"}});
    post(core, "/api/v1/namespaces/kube-system/configmaps", configmap("other"));
    post(core, kCms, configmap("mine"));
    ASSERT_TRUE(sink->wait_for_count(1));
    EXPECT_EQ(sink->events()[0]["object"]["metadata"]["name"], "mine");
    EXPECT_EQ(sink->events().size(), 1u);
}

TEST(Watch, SendInitialEventsEndsWithAnnotatedBookmark) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    auto sink = watch(core, kCms,
                      {{"sendInitialEvents", "true"},
                       {"resourceVersionMatch", "NotOlderThan"},
                       {"allowWatchBookmarks", "true"}});
    ASSERT_TRUE(sink->wait_for_count(2));
    auto evs = sink->events();
    EXPECT_EQ(evs[0]["type"], "ADDED");
    EXPECT_EQ(evs[1]["type"], "BOOKMARK");
    EXPECT_EQ(evs[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

TEST(Watch, SendInitialEventsWithoutNotOlderThanIs422) {
    ApiCore core({});
    auto r = core.handle(
        request("GET", kCms, "", "", {{"watch", "true"}, {"sendInitialEvents", "true"}}));
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(r.watch, nullptr);
}

TEST(Watch, CancelStopsDelivery) {
    ApiCore core({});
    std::shared_ptr<WatchStream> stream;
    auto sink = watch(core, kCms, {{"resourceVersion", "1"}}, &stream);
    stream->cancel();
    post(core, kCms, configmap("a"));
    EXPECT_FALSE(sink->wait_for_count(1, 100ms));
}

TEST(Table, ListAsTableHasColumnsAndRows) {
    ApiCore core({});
    post(core, kCms, configmap("a"));
    HttpRequest r = request("GET", kCms);
    r.accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    auto reply = call(core, r);
    EXPECT_EQ(reply.body["kind"], "Table");
    EXPECT_EQ(reply.body["columnDefinitions"][0]["name"], "Name");
    ASSERT_EQ(reply.body["rows"].size(), 1u);
    EXPECT_EQ(reply.body["rows"][0]["cells"][0], "a");
    EXPECT_EQ(reply.body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

TEST(ListStreaming, AListShowsTheStateWhenItWasTakenEvenIfObjectsChangeWhileItIsRead) {
    ApiCore core({});
    for (int i = 0; i < 600; ++i) post(core, kCms, configmap("cm-" + std::to_string(i)));
    HttpResponse list = core.handle(request("GET", kCms));
    ASSERT_NE(list.body_stream, nullptr);
    std::string body, piece;
    ASSERT_TRUE(list.body_stream->next(piece));  // part of the list is out already
    body += piece;
    for (int i = 0; i < 600; ++i)
        patch(core, kCms + "/cm-" + std::to_string(i), {{"data", {{"k", "changed"}}}});
    del(core, kCms + "/cm-599");
    while (list.body_stream->next(piece)) body += piece;
    json parsed = json::parse(body);
    ASSERT_EQ(parsed["items"].size(), 600u);
    std::string list_rv = parsed["metadata"]["resourceVersion"];
    for (const auto& item : parsed["items"]) {
        EXPECT_EQ(item["data"]["k"], "v");
        EXPECT_LE(std::stoull(item["metadata"]["resourceVersion"].get<std::string>()),
                  std::stoull(list_rv));
    }
}

TEST(ListStreaming, ALargeListComesInSeveralPiecesThatFormOneDocument) {
    ApiCore core({});
    for (int i = 0; i < 1000; ++i) post(core, kCms, configmap("cm-" + std::to_string(i)));
    HttpResponse list = core.handle(request("GET", kCms));
    ASSERT_NE(list.body_stream, nullptr);
    std::string body, piece;
    int pieces = 0;
    while (list.body_stream->next(piece)) {
        body += piece;
        ++pieces;
    }
    EXPECT_GT(pieces, 1);
    json parsed = json::parse(body);
    EXPECT_EQ(parsed["kind"], "ConfigMapList");
    EXPECT_EQ(parsed["apiVersion"], "v1");
    EXPECT_EQ(parsed["items"].size(), 1000u);
}

TEST(ListStreaming, AnEmptyListIsAValidDocument) {
    ApiCore core({});
    auto r = get(core, "/api/v1/namespaces/empty/configmaps");
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["items"], json::array());
}

TEST(ListStreaming, AnUnknownIncludeObjectIsRejectedBeforeAnyBody) {
    ApiCore core({});
    auto rq = request("GET", kCms, "", "", {{"includeObject", "Everything"}});
    rq.accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
    auto r = call(core, rq);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.response.body_stream, nullptr);
}
