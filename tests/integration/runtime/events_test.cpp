// Kubernetes Events: Kopf's body, message cut and level mapping; the posting contexts (one per
// operator) that kopf::info() & co. and the object loggers reach; and, against the embedded API
// server, the Events of a running operator: explicit kopf::info()/warn() and, when
// settings.posting.loggers is on, the object loggers' lines (reason "Logging").
#include "core/engines/events.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <kopf/kopf.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/engines/posting.hpp"
#include "integration/runtime/support/embedded_cluster.hpp"

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

namespace {

std::vector<std::string> reasons(EventQueue& queue) {
    std::vector<std::string> out;
    for (const auto& post : queue.take_all()) out.push_back(post.body["reason"]);
    return out;
}

}  // namespace

TEST(PostingContexts, EventsGoToTheContextOfTheCallingThreadsOperator) {
    auto operator_context = std::make_shared<PostingContext>();
    process_posting_context()->queue().take_all();
    {
        PostingScope scope(operator_context);
        kopf::info(example_object(), "Inside");
    }
    kopf::info(example_object(), "Outside");
    EXPECT_EQ(reasons(operator_context->queue()), std::vector<std::string>{"Inside"});
    EXPECT_EQ(reasons(process_posting_context()->queue()), std::vector<std::string>{"Outside"});
}

TEST(PostingContexts, EachContextPostsWithItsOwnIdentityAndLevel) {
    auto context_a = std::make_shared<PostingContext>();
    auto context_b = std::make_shared<PostingContext>();
    kopf::PostingSettings settings_a, settings_b;
    settings_a.reporting_component = "operator-a";
    settings_b.reporting_component = "operator-b";
    settings_b.level = kopf::LogLevel::WARNING;
    context_a->configure(settings_a);
    context_b->configure(settings_b);
    for (auto* context : {context_a.get(), context_b.get()}) {
        context->post(example_object(), "Normal", "InfoReason", "m", kopf::LogLevel::INFO);
        context->post(example_object(), "Warning", "WarnReason", "m", kopf::LogLevel::WARNING);
    }
    const auto posts_a = context_a->queue().take_all();
    const auto posts_b = context_b->queue().take_all();
    ASSERT_EQ(posts_a.size(), 2u);
    ASSERT_EQ(posts_b.size(), 1u);
    EXPECT_EQ(posts_a[0].body["reportingComponent"], "operator-a");
    EXPECT_EQ(posts_b[0].body["reportingComponent"], "operator-b");
    EXPECT_EQ(posts_b[0].body["reason"], "WarnReason");
}

TEST(PostingContexts, ThreadsOfNoOperatorPostIntoTheLatestRunningOperator) {
    auto older = std::make_shared<PostingContext>();
    auto newer = std::make_shared<PostingContext>();
    PostingFallback older_running(older);
    {
        PostingFallback newer_running(newer);
        std::thread([] { kopf::info(example_object(), "WhileBothRun"); }).join();
    }
    std::thread([] { kopf::info(example_object(), "AfterTheNewerStopped"); }).join();
    EXPECT_EQ(reasons(newer->queue()), std::vector<std::string>{"WhileBothRun"});
    EXPECT_EQ(reasons(older->queue()), std::vector<std::string>{"AfterTheNewerStopped"});
}

TEST(PostingContexts, ObjectLogLinesBelowTheContextsLevelAreNotEvenFormatted) {
    auto posting = std::make_shared<PostingContext>();
    kopf::PostingSettings settings;
    settings.loggers = true;
    settings.level = kopf::LogLevel::WARNING;
    posting->configure(settings);
    auto silent = std::make_shared<PostingContext>();  // loggers off: no hook at all
    EXPECT_TRUE(posting->object_log_hooks().wants(spdlog::level::warn));
    EXPECT_FALSE(posting->object_log_hooks().wants(spdlog::level::info));
    EXPECT_FALSE(silent->object_log_hooks().wants(spdlog::level::critical));
    EXPECT_FALSE(object_logging_enabled(spdlog::level::debug, posting->object_log_hooks()));
}

TEST(PostingContexts, ObjectLogLinesArePostedIntoTheirOperatorsContextOnly) {
    auto posting = std::make_shared<PostingContext>();
    kopf::PostingSettings settings;
    settings.loggers = true;
    settings.reporting_component = "operator-a";
    posting->configure(settings);
    const ObjectRef ref = ObjectRef::from_body(example_object());
    process_posting_context()->queue().take_all();
    log_object(spdlog::level::warn, ref, "Something odd.", posting->object_log_hooks());
    const auto posts = posting->queue().take_all();
    ASSERT_EQ(posts.size(), 1u);
    EXPECT_EQ(posts[0].body["reason"], "Logging");
    EXPECT_EQ(posts[0].body["type"], "Warning");
    EXPECT_EQ(posts[0].body["reportingComponent"], "operator-a");
    EXPECT_TRUE(process_posting_context()->queue().take_all().empty());
}

namespace {

class PostingEvents : public kopf::testing::EmbeddedCluster {
  protected:
    // Serves `registry` in "default", creates the example object, and waits for an Event with
    // `marker_reason` about it: everything posted before the marker has been posted by then.
    json events_until_marker(kopf::Registry& registry, const kopf::OperatorSettings& settings,
                             const std::string& marker_reason) {
        kopf::RunOptions options;
        options.namespaces = {"default"};
        options.registry = &registry;
        options.settings = &settings;
        kopf::testing::OperatorThread operator_thread(options);
        EXPECT_TRUE(operator_thread.ready()) << operator_thread.failure();
        apply_example();
        bool marked = false;
        for (int i = 0; i < 300 && !marked; ++i) {
            for (const auto& event : events_about("kopf-example-1")) {
                marked = marked || event.value("reason", "") == marker_reason;
            }
            if (!marked) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        EXPECT_TRUE(marked) << "no " << marker_reason << " event";
        EXPECT_EQ(operator_thread.stop(), "");
        return events_about("kopf-example-1");
    }

    static bool has_event(const json& events, const std::string& type, const std::string& reason,
                          const std::string& message) {
        for (const auto& event : events) {
            if (event.value("type", "") == type && event.value("reason", "") == reason &&
                event.value("message", "") == message) {
                return true;
            }
        }
        return false;
    }
    static bool has_reason(const json& events, const std::string& reason) {
        for (const auto& event : events) {
            if (event.value("reason", "") == reason) return true;
        }
        return false;
    }
};

}  // namespace

TEST_F(PostingEvents, ObjectLogLinesArePostedAsLoggingEventsWhenLoggersAreOn) {
    kopf::Registry registry;
    kopf::on::create create(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                            [](kopf::Context& ctx) { ctx.logger.warning("Something odd."); });
    kopf::on::create marker(registry, kopf::Selector("kopfexamples"), {.id = "marker_fn"},
                            [](kopf::Context& ctx) { kopf::warn(ctx.body, "Marker", "done"); });
    kopf::OperatorSettings settings;
    settings.posting.loggers = true;
    const json events = events_until_marker(registry, settings, "Marker");
    EXPECT_TRUE(has_event(events, "Normal", "Logging", "Handler 'create_fn' succeeded."))
        << events.dump(2);
    EXPECT_TRUE(has_event(events, "Warning", "Logging", "Something odd.")) << events.dump(2);
    for (const auto& event : events) {
        EXPECT_EQ(event["involvedObject"]["kind"], "KopfExample");
        EXPECT_EQ(event["involvedObject"]["namespace"], "default");
        EXPECT_EQ(event["reportingComponent"], "kopf");
    }
}

TEST_F(PostingEvents, PostingLevelWarningSuppressesInfoLogLinesAndInfoEvents) {
    kopf::Registry registry;
    kopf::on::create create(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                            [](kopf::Context& ctx) {
                                ctx.logger.warning("Something odd.");
                                kopf::info(ctx.body, "InfoReason", "informational");
                            });
    kopf::on::create marker(registry, kopf::Selector("kopfexamples"), {.id = "marker_fn"},
                            [](kopf::Context& ctx) { kopf::warn(ctx.body, "Marker", "done"); });
    kopf::OperatorSettings settings;
    settings.posting.loggers = true;
    settings.posting.level = kopf::LogLevel::WARNING;
    const json events = events_until_marker(registry, settings, "Marker");
    EXPECT_TRUE(has_event(events, "Warning", "Logging", "Something odd.")) << events.dump(2);
    EXPECT_FALSE(has_event(events, "Normal", "Logging", "Handler 'create_fn' succeeded."))
        << events.dump(2);
    EXPECT_FALSE(has_reason(events, "InfoReason")) << events.dump(2);
}

TEST_F(PostingEvents, LogLinesAreNotPostedByDefaultAsInKopf144) {
    kopf::Registry registry;
    kopf::on::create create(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                            [](kopf::Context& ctx) {
                                ctx.logger.warning("Something odd.");
                                kopf::info(ctx.body, "Marker", "done");
                            });
    const json events = events_until_marker(registry, kopf::OperatorSettings{}, "Marker");
    EXPECT_FALSE(has_reason(events, "Logging")) << events.dump(2);
}

TEST_F(PostingEvents, DisabledPostingPostsNothingNotEvenExplicitEvents) {
    kopf::Registry registry;
    kopf::on::create create(registry, kopf::Selector("kopfexamples"), {.id = "create_fn"},
                            [](kopf::Context& ctx) -> kopf::json {
                                kopf::info(ctx.body, "InfoReason", "informational");
                                kopf::warn(ctx.body, "WarnReason", "warning");
                                return {{"message", "handled"}};
                            });
    kopf::OperatorSettings settings;
    settings.posting.enabled = false;
    settings.posting.loggers = true;
    kopf::RunOptions options;
    options.namespaces = {"default"};
    options.registry = &registry;
    options.settings = &settings;
    kopf::testing::OperatorThread operator_thread(options);
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    apply_example();
    EXPECT_TRUE(
        eventually("get kex kopf-example-1 -o jsonpath={.status.create_fn.message}", "handled"));
    EXPECT_EQ(operator_thread.stop(), "");
    EXPECT_EQ(events_about("kopf-example-1"), json::array());
}
