#include "runtime/events.hpp"

#include <gtest/gtest.h>

using kopf::json;
using namespace kopf::runtime;

namespace {
json example_object() {
    return {{"apiVersion", "kopf.dev/v1"},
            {"kind", "KopfExample"},
            {"metadata", {{"name", "kopf-example-1"}, {"namespace", "ns1"}, {"uid", "u-1"}}}};
}
}  // namespace

TEST(Events, BodyHasKopfsFields) {
    auto post = build_event(example_object(), "Normal", "SomeReason", "Some message");
    ASSERT_TRUE(post);
    EXPECT_EQ(post->namespace_, "ns1");
    const json& body = post->body;
    EXPECT_EQ(body["metadata"], (json{{"namespace", "ns1"}, {"generateName", "kopf-event-"}}));
    EXPECT_EQ(body["action"], "Action?");
    EXPECT_EQ(body["type"], "Normal");
    EXPECT_EQ(body["reason"], "SomeReason");
    EXPECT_EQ(body["message"], "Some message");
    EXPECT_EQ(body["reportingComponent"], "kopf");
    EXPECT_EQ(body["reportingInstance"], "dev");
    EXPECT_EQ(body["source"], (json{{"component", "kopf"}}));
    EXPECT_EQ(body["involvedObject"], (json{{"apiVersion", "kopf.dev/v1"},
                                            {"kind", "KopfExample"},
                                            {"name", "kopf-example-1"},
                                            {"uid", "u-1"},
                                            {"namespace", "ns1"}}));
    EXPECT_EQ(body["firstTimestamp"], body["eventTime"]);
    EXPECT_NE(body["eventTime"].get<std::string>().find("+00:00"), std::string::npos);
}

TEST(Events, ClusterScopedObjectsPostIntoTheDefaultNamespace) {
    json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}};
    auto post = build_event(node, "Warning", "R", "M");
    ASSERT_TRUE(post);
    EXPECT_EQ(post->namespace_, "default");
    EXPECT_EQ(post->body["involvedObject"]["namespace"], "");
}

TEST(Events, NoEventsAboutEvents) {
    json event = {{"apiVersion", "v1"}, {"kind", "Event"}, {"metadata", {{"name", "e"}}}};
    EXPECT_FALSE(build_event(event, "Normal", "R", "M"));
}

TEST(Events, LongMessagesAreCutToHeadEllipsisTail) {
    const std::string message = std::string(600, 'a') + std::string(600, 'b');
    const std::string cut = cut_event_message(message);
    EXPECT_EQ(cut.size(), 1024u);
    EXPECT_EQ(cut.substr(0, 3), "aaa");
    EXPECT_NE(cut.find("..."), std::string::npos);
    EXPECT_EQ(cut.substr(cut.size() - 3), "bbb");
    EXPECT_EQ(cut_event_message("short"), "short");
}

TEST(Events, LogLevelsMapToKopfsEventTypes) {
    EXPECT_EQ(event_type_for_level(kopf::LogLevel::DEBUG), "Debug");
    EXPECT_EQ(event_type_for_level(kopf::LogLevel::INFO), "Normal");
    EXPECT_EQ(event_type_for_level(kopf::LogLevel::WARNING), "Warning");
    EXPECT_EQ(event_type_for_level(kopf::LogLevel::ERROR), "Error");
    EXPECT_EQ(event_type_for_level(kopf::LogLevel::CRITICAL), "Fatal");
}

TEST(Events, QueueHandsOverEverythingPushedAndWakesThePoster) {
    EventQueue queue;
    int wakeups = 0;
    queue.set_wakeup([&] { ++wakeups; });
    queue.push(*build_event(example_object(), "Normal", "A", "1"));
    queue.push(*build_event(example_object(), "Normal", "B", "2"));
    EXPECT_EQ(wakeups, 2);
    auto posts = queue.take_all();
    ASSERT_EQ(posts.size(), 2u);
    EXPECT_EQ(posts[1].body["reason"], "B");
    EXPECT_TRUE(queue.take_all().empty());
}
