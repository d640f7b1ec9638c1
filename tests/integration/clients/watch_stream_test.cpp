// kopf::WatchStream (Api::stream): a watch read one event at a time, against the embedded API
// server: the listing, then the changes across a dropped stream and a 410 Gone, its selectors,
// its ends (stop() from another thread while a reader waits, the operator's client closing), and
// a failing watch's error thrown from next().
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <future>
#include <iterator>
#include <kopf/api.hpp>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "clients/facade.hpp"
#include "support/fixture.hpp"

namespace kopf::testing {
namespace {

class WatchStreamTest : public ClientTest {
  protected:
    void SetUp() override {
        ClientTest::SetUp();
        client = kopf::Client(admin());
        configmaps = client.api("configmaps", "default");
    }
    // The client goes before the server (its streams have ended with the test's body).
    void TearDown() override {
        configmaps = kopf::Api(nullptr, "configmaps", "default");
        client = kopf::Client();
        ClientTest::TearDown();
    }

    // A body as users have them: labels, an annotation Kopf wrote, nested data.
    static json labelled(const std::string& name, const std::string& app = "web") {
        return {{"metadata",
                 {{"name", name},
                  {"labels", {{"app", app}}},
                  {"annotations",
                   {{"kopf.zalando.org/last-handled-configuration",
                     R"({"spec":{"nested":{"deep":[1,2,{"x":"y"}]}}})"}}}}},
                {"data", {{"key", "value"}}}};
    }

    // Reads events until one of `name` with `type` arrives (earlier ones are kept in `seen`).
    static bool read_until(const kopf::WatchStream& stream, const std::string& type,
                           const std::string& name, std::multimap<std::string, std::string>& seen) {
        while (auto event = stream.next().wait()) {
            const std::string event_name = event->object["metadata"].value("name", "");
            seen.emplace(event_name, event->type);
            if (event->type == type && event_name == name) return true;
        }
        return false;
    }

    kopf::Client client;
    kopf::Api configmaps{nullptr, "configmaps", "default"};
};

TEST_F(WatchStreamTest, ListsThenFollowsChangesAcrossDropsAndGone) {
    configmaps.create(labelled("s-0")).wait();
    auto stream = configmaps.stream({}, "app=web");
    std::multimap<std::string, std::string> seen;

    ASSERT_TRUE(read_until(stream, "ADDED", "s-0", seen));  // the initial listing
    configmaps.create(labelled("s-1")).wait();
    ASSERT_TRUE(read_until(stream, "ADDED", "s-1", seen));
    json relabel = {{"data", {{"key", "changed"}}}};
    configmaps.patch("s-1", relabel).wait();
    ASSERT_TRUE(read_until(stream, "MODIFIED", "s-1", seen));

    server->drop_watches();
    configmaps.create(labelled("s-2")).wait();
    ASSERT_TRUE(read_until(stream, "ADDED", "s-2", seen));

    server->compact_history();
    server->drop_watches();
    configmaps.create(labelled("s-3")).wait();
    configmaps.create(labelled("s-other", "db")).wait();  // not selected
    ASSERT_TRUE(read_until(stream, "ADDED", "s-3", seen));
    configmaps.delete_("s-0").wait();
    ASSERT_TRUE(read_until(stream, "DELETED", "s-0", seen));

    EXPECT_EQ(seen.count("s-other"), 0u);
    stream.stop();
    EXPECT_EQ(stream.next().wait(), std::nullopt);
}

std::size_t threads_of_this_process() {
    return static_cast<std::size_t>(
        std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                      std::filesystem::directory_iterator{}));
}

// A client of one's own, dropped with its stream while the watch still waits for the server:
// its thread ends then, not when the watch next hears from the server (a thread running on
// would log while the process exits and its logger is gone).
TEST_F(WatchStreamTest, DroppingAClientWithItsStreamEndsItsThreadAtOnce) {
    configmaps.create(labelled("held")).wait();
    const auto threads_before = threads_of_this_process();
    {
        kopf::Client own(admin());
        auto stream = own.api("configmaps", "default").stream({}, "app=web");
        auto first = stream.next().wait();
        ASSERT_TRUE(first.has_value());
        EXPECT_EQ(first->object["metadata"]["name"], "held");
    }
    EXPECT_EQ(threads_of_this_process(), threads_before);
    // The server is still there and the watch was never told by it: the client ended it.
    EXPECT_EQ(configmaps.get("held").wait()["metadata"]["name"], "held");
}

TEST_F(WatchStreamTest, StopFromAnotherThreadEndsAWaitingReader) {
    auto stream = configmaps.stream({}, "app=nothing-has-this");
    auto reader = std::async(std::launch::async, [&stream] { return stream.next().wait(); });
    EXPECT_EQ(reader.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
    stream.stop();
    EXPECT_EQ(reader.get(), std::nullopt);
}

TEST_F(WatchStreamTest, AFailingWatchThrowsFromNext) {
    auto stream = client.api("nosuchthings").stream();
    try {
        (void)stream.next().wait();
        FAIL() << "an unknown resource was streamed";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("nosuchthings"), std::string::npos)
            << error.what();
    }
}

// The operator's client closes at the operator's exit: its streams end, readers are not left
// waiting.
TEST_F(WatchStreamTest, TheOperatorsClientClosingEndsItsStreams) {
    auto api = make_client(admin(), fast_settings());
    auto work = boost::asio::make_work_guard(io);
    std::thread loop([this] { io.run(); });
    struct Joiner {
        std::thread& loop;
        asio::io_context& io;
        ~Joiner() {
            io.stop();
            loop.join();
        }
    } joiner{loop, io};
    auto core = clients::make_client_core(io, *api, {}, loop.get_id());
    kopf::Client operator_client(core);
    configmaps.create(labelled("closing")).wait();
    auto stream = operator_client.api("configmaps", "default").stream();
    std::optional<kopf::WatchEvent> first;
    try {
        first = stream.next().wait();
    } catch (const std::exception& error) {
        FAIL() << error.what();
    }
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->object["metadata"]["name"], "closing");

    auto reader = std::async(std::launch::async, [&stream] { return stream.next().wait(); });
    boost::asio::post(io, [core] { clients::close_client_core(*core); });
    EXPECT_EQ(reader.get(), std::nullopt);
    work.reset();
}

}  // namespace
}  // namespace kopf::testing
