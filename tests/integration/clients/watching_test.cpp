// Watching survives everything a long-lived operator meets: drops, 410s, stalls, 401s.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/detached.hpp>

#include "support/fixture.hpp"
#include "support/raw_server.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

// A watch running on the test's loop, recording what it saw.
struct Recorder {
    std::vector<WatchEvent> events;
    int listings = 0;
    bool finished = false;
    std::exception_ptr failure;
    StopSignal stop;

    bool saw(const std::string& type, const std::string& name, bool listed = false) const {
        for (const auto& e : events) {
            if (e.type == type && e.seen_by_listing == listed &&
                e.object["metadata"].value("name", "") == name) {
                return true;
            }
        }
        return false;
    }
    int count(const std::string& name) const {
        int n = 0;
        for (const auto& e : events) n += e.object["metadata"].value("name", "") == name;
        return n;
    }
};

// What a test's watch varies; the rest is the same for all: configmaps, recorded.
struct Watch {
    std::string ns = "default";
    WatchSettings settings{};
    TakeUnparsed take_unparsed{};
    std::size_t stop_after = 0;  // events; 0: until the test ends
};

// A client on the embedded server (admin) and the test's watches of configmaps through it.
// At the end, every watch is stopped and must end cleanly, before its client and recorder go.
class Watching : public ClientTest {
  protected:
    void SetUp() override {
        ClientTest::SetUp();
        api = make_client(admin());
    }
    void TearDown() override {
        for (auto& recorder : recorders) finish(*recorder);
        ClientTest::TearDown();
    }

    // Starts a watch on the test's loop, recording what it sees.
    Recorder& watch(Watch options = {}) {
        Recorder& recorder = *recorders.emplace_back(std::make_unique<Recorder>());
        WatchRequest request{
            .resource = configmaps(),
            .namespace_ = std::move(options.ns),
            .settings = options.settings,
            .on_event =
                [&recorder, stop_after = options.stop_after](WatchEvent&& event) {
                    recorder.events.push_back(std::move(event));
                    if (recorder.events.size() == stop_after) recorder.stop.stop();
                },
            .stop = &recorder.stop,
            .on_listed = [&recorder] { ++recorder.listings; },
            .take_unparsed = std::move(options.take_unparsed),
        };
        asio::co_spawn(io, api->watch_objs(std::move(request)),
                       [&recorder](std::exception_ptr failure) {
                           recorder.failure = failure;
                           recorder.finished = true;
                       });
        return recorder;
    }
    // Drives the loop until the watch has completed its `times`-th listing.
    bool listed(const Recorder& recorder, int times = 1) {
        return drive([&] { return recorder.listings == times; });
    }
    // Prove the watch streams are open: an object created now arrives as ADDED.
    void warm_up(const std::vector<Recorder*>& which, const std::string& name = "cm-warm-up") {
        run(api->create(configmaps(), "default", configmap(name)));
        ASSERT_TRUE(drive([&] {
            for (auto* recorder : which) {
                if (!recorder->saw("ADDED", name)) return false;
            }
            return true;
        }));
    }
    void finish(Recorder& recorder) {
        recorder.stop.stop();
        EXPECT_TRUE(drive([&] { return recorder.finished; }));
        EXPECT_FALSE(recorder.failure);
    }

    std::unique_ptr<ApiClient> api;
    std::vector<std::unique_ptr<Recorder>> recorders;
};

WatchSettings with_inactivity_timeout(double seconds) {
    WatchSettings settings;
    settings.inactivity_timeout = Seconds(seconds);
    return settings;
}

TEST_F(Watching, ListedObjectsAreFlaggedThenEventsFollow) {
    run(api->create(configmaps(), "default", configmap("cm-pre")));
    auto& recorder = watch();
    ASSERT_TRUE(listed(recorder));
    EXPECT_TRUE(recorder.saw("", "cm-pre", /*listed=*/true));

    run(api->create(configmaps(), "default", configmap("cm-new")));
    run(api->patch(configmaps(), "default", "cm-new", PatchType::Merge, {{"data", {{"k", "v"}}}}));
    run(api->remove(configmaps(), "default", "cm-new"));
    EXPECT_TRUE(drive([&] { return recorder.saw("DELETED", "cm-new"); }));
    EXPECT_TRUE(recorder.saw("ADDED", "cm-new"));
    EXPECT_TRUE(recorder.saw("MODIFIED", "cm-new"));
}

TEST_F(Watching, ModifiedEventsAreDroppedUnparsedWhenTheirVersionIsRefused) {
    std::vector<std::string> asked;
    std::vector<json> lines;
    bool refuse = false;
    auto& recorder =
        watch({.take_unparsed = [&](const std::string& version, std::string_view line) {
            asked.push_back(version);
            lines.push_back(json::parse(line));
            return refuse;
        }});
    ASSERT_TRUE(listed(recorder));
    run(api->create(configmaps(), "default", configmap("cm-echo")));
    auto patch = [&](const char* value) {
        const json patched = run(api->patch(configmaps(), "default", "cm-echo", PatchType::Merge,
                                            {{"data", {{"k", value}}}}));
        return patched["metadata"]["resourceVersion"].get<std::string>();
    };
    const std::string kept = patch("1");
    ASSERT_TRUE(drive([&] { return asked.size() == 1; }));
    refuse = true;
    const std::string dropped = patch("2");
    ASSERT_TRUE(drive([&] { return asked.size() == 2; }));
    // Asked only about MODIFIED events, with each event's own version and line.
    EXPECT_EQ(asked, (std::vector<std::string>{kept, dropped}));
    ASSERT_EQ(lines.size(), 2U);
    EXPECT_EQ(lines[1]["type"], "MODIFIED");
    EXPECT_EQ(lines[1]["object"]["data"]["k"], "2");
    EXPECT_EQ(lines[1]["object"]["metadata"]["resourceVersion"], dropped);

    // The dropped event is seen: a resumed stream starts after it, so it never comes again.
    refuse = false;
    server->drop_watches();
    warm_up({&recorder}, "cm-after-drop");
    EXPECT_EQ(asked, (std::vector<std::string>{kept, dropped}));
    EXPECT_EQ(recorder.listings, 1);
    std::vector<std::string> delivered;
    for (const auto& e : recorder.events) {
        if (e.type == "MODIFIED")
            delivered.push_back(e.object["metadata"]["resourceVersion"].get<std::string>());
    }
    EXPECT_EQ(delivered, (std::vector<std::string>{kept}));
}

TEST_F(Watching, StopEndsTheWatch) {
    auto& recorder = watch();
    ASSERT_TRUE(listed(recorder));
    finish(recorder);
}

// What the watch had read when it was stopped is not delivered: its owner may have forgotten
// the objects at the stop (a paused standby does), and a late event would bring one back.
TEST_F(Watching, NothingIsDeliveredAfterTheStopNotEvenWhatWasAlreadyRead) {
    for (const char* name : {"cm-first", "cm-second", "cm-third"})
        run(api->create(configmaps(), "default", configmap(name)));
    auto& recorder = watch({.stop_after = 1});  // all three come in the one listing's page
    EXPECT_TRUE(drive([&] { return recorder.finished; }));
    EXPECT_FALSE(recorder.failure);
    ASSERT_EQ(recorder.events.size(), 1u);
    EXPECT_TRUE(recorder.events[0].seen_by_listing);
    EXPECT_EQ(recorder.listings, 0);  // the listing's end is not announced either
}

TEST_F(Watching, DroppedStreamResumesWithoutRelisting) {
    auto& recorder = watch();
    ASSERT_TRUE(listed(recorder));
    warm_up({&recorder});
    server->drop_watches();
    run(api->create(configmaps(), "default", configmap("cm-after-drop")));
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "cm-after-drop"); }));
    EXPECT_EQ(recorder.listings, 1);
    EXPECT_EQ(recorder.count("cm-after-drop"), 1);
}

TEST_F(Watching, GoneOnResumeRelists) {
    auto& recorder = watch();
    ASSERT_TRUE(listed(recorder));
    warm_up({&recorder});
    server->stall_watches(true);
    run(api->create(configmaps(), "default", configmap("cm-missed")));
    server->compact_history();  // the watch's resourceVersion is now too old
    server->drop_watches();
    server->stall_watches(false);
    EXPECT_TRUE(listed(recorder, 2));
    EXPECT_TRUE(recorder.saw("", "cm-missed", /*listed=*/true));
}

TEST_F(Watching, StalledStreamIsReplacedAfterTheInactivityTimeout) {
    auto& recorder = watch({.settings = with_inactivity_timeout(1.5)});
    ASSERT_TRUE(listed(recorder));
    warm_up({&recorder});
    server->stall_watches(true);  // the open stream goes silent: no events, no bookmarks
    run(api->create(configmaps(), "default", configmap("cm-during-stall")));
    // Only a new stream (resumed from the last resourceVersion) can deliver the event.
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "cm-during-stall"); }));
    EXPECT_EQ(recorder.listings, 1);
    server->stall_watches(false);
}

TEST_F(Watching, EveryWatchSurvivesUnauthorizedAndRelogin) {
    auto& in_default = watch({.ns = "default"});
    auto& everywhere = watch({.ns = ""});
    ASSERT_TRUE(drive([&] { return in_default.listings == 1 && everywhere.listings == 1; }));
    warm_up({&in_default, &everywhere});
    server->fail_next_requests(2, 401);
    server->drop_watches();
    ASSERT_TRUE(drive([&] { return relogins >= 1; }));
    run(api->create(configmaps(), "default", configmap("cm-after-relogin")));
    EXPECT_TRUE(drive([&] {
        return in_default.saw("ADDED", "cm-after-relogin") &&
               everywhere.saw("ADDED", "cm-after-relogin");
    }));
    EXPECT_FALSE(in_default.finished);
    EXPECT_FALSE(everywhere.finished);
}

TEST_F(Watching, ServerErrorOnWatchIsRetried) {
    auto& recorder = watch();
    ASSERT_TRUE(listed(recorder));
    warm_up({&recorder});
    server->fail_next_requests(2, 500);
    server->drop_watches();
    run(api->create(configmaps(), "default", configmap("cm-after-500")));
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "cm-after-500"); }));
}

// A failing API server is not hammered: after an error the watch waits for the next of the
// error backoffs (here a very long one), not the short reconnect pause.
TEST_F(Watching, FailedReconnectsBackOffPerTheErrorBackoffs) {
    auto settings = fast_settings();
    settings.error_backoffs = {600};
    api = make_client(admin(), settings);
    auto& recorder = watch();
    ASSERT_TRUE(listed(recorder));
    warm_up({&recorder});
    server->fail_next_requests(1, 503);
    server->drop_watches();  // the reconnection gets the 503, then pauses for 600 s
    drive([] { return false; }, std::chrono::seconds(1));  // the reconnection meets the 503
    run(api->create(configmaps(), "default", configmap("cm-during-backoff")));
    EXPECT_FALSE(
        drive([&] { return recorder.saw("ADDED", "cm-during-backoff"); }, std::chrono::seconds(2)))
        << "the watch reconnected before its error backoff";
    finish(recorder);  // the stop flag ends the pause at once
}

// Raw peers: faults that a correct server never produces.

std::string list_body() {
    return R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]})";
}
std::string added(const std::string& name, int rv) {
    return fmt::format(
               R"({{"type":"ADDED","object":{{"kind":"ConfigMap","metadata":{{"name":"{}","namespace":"default","resourceVersion":"{}"}}}}}})",
               name, rv) +
           "\n";
}

// A scripted peer: every listing gets an empty list at resourceVersion 10, and the n-th watch
// request (from 1) gets `stream(n)`. The test's client talks to the peer only.
class RawWatching : public Watching {
  protected:
    void SetUp() override { ClientTest::SetUp(); }  // no admin client: serve() makes the client

    void serve(std::function<RawReply(int watch)> stream) {
        peer = std::make_unique<RawServer>(
            [this, stream = std::move(stream)](const std::string& line) -> RawReply {
                if (line.find("watch=true") == std::string::npos)
                    return {RawServer::json_response(list_body())};
                return stream(++watches);
            });
        ConnectionInfo info;
        info.server = peer->url();
        api = make_client(info);
    }
    // The watch request after the listing and the first stream resumed from `version`.
    void expect_resumed_from(int version) {
        const auto requests = peer->requests();
        ASSERT_GE(requests.size(), 3u);
        EXPECT_NE(requests[2].find(fmt::format("resourceVersion={}", version)), std::string::npos)
            << requests[2];
    }

    std::atomic<int> watches{0};
    std::unique_ptr<RawServer> peer;
};

TEST_F(RawWatching, MalformedLineRestartsTheStreamFromTheLastVersion) {
    serve([](int watch) -> RawReply {
        if (watch == 1) {
            return {RawServer::chunked_head() + RawServer::chunk(added("a", 11)) +
                        RawServer::chunk("this is {not json\n"),
                    true};
        }
        return {RawServer::chunked_head() + RawServer::chunk(added("b", 12)), true};
    });
    auto& recorder = watch();
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "b"); }));
    EXPECT_TRUE(recorder.saw("ADDED", "a"));
    EXPECT_EQ(recorder.listings, 1);
    expect_resumed_from(11);
}

TEST_F(RawWatching, KubernetesOrderedModifiedLinesAreAlsoRecognisedBeforeParsing) {
    // Kubernetes writes "type" first; the embedded server (sorted keys) writes it last.
    const auto modified = [](const std::string& name, int rv, const std::string& spec) {
        return fmt::format(
                   R"({{"type":"MODIFIED","object":{{"kind":"ConfigMap","metadata":{{"name":"{}","namespace":"default","resourceVersion":"{}"}}{}}}}})",
                   name, rv, spec) +
               "\n";
    };
    serve([modified](int watch) -> RawReply {
        if (watch > 1) return {RawServer::chunked_head(), true};
        return {RawServer::chunked_head() + RawServer::chunk(modified("a", 21, "")) +
                    RawServer::chunk(modified("b", 22, R"(,"spec":{"resourceVersion":"x"})")) +
                    RawServer::chunk(added("c", 23)),
                true};
    });
    std::vector<std::string> asked;
    auto& recorder = watch({.take_unparsed = [&](const std::string& version, std::string_view) {
        asked.push_back(version);
        return true;
    }});
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "c"); }));
    // "a" was dropped unparsed; "b" names the key twice, so it was parsed and delivered.
    EXPECT_EQ(asked, std::vector<std::string>{"21"});
    EXPECT_FALSE(recorder.saw("MODIFIED", "a"));
    EXPECT_TRUE(recorder.saw("MODIFIED", "b"));
}

TEST_F(RawWatching, StreamCutInTheMiddleOfAChunkResumes) {
    serve([](int watch) -> RawReply {
        if (watch == 1) {
            // A chunk announced as 0x100 bytes, cut after a line and a half.
            std::string partial = added("a", 11) + R"({"type":"ADDED","obj)";
            return {RawServer::chunked_head() + "100\r\n" + partial, false};
        }
        return {RawServer::chunked_head() + RawServer::chunk(added("b", 12)), true};
    });
    auto& recorder = watch();
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "b"); }));
    EXPECT_TRUE(recorder.saw("ADDED", "a"));
    EXPECT_EQ(recorder.events.size(), 2u);
    expect_resumed_from(11);
}

TEST_F(RawWatching, StreamWithoutChunkedEncodingIsReadToItsEnd) {
    // Chunked bodies are handed over from the receive buffer; a plain body takes another path.
    serve([](int watch) -> RawReply {
        if (watch == 1) {
            const std::string lines = added("a", 11) + added("b", 12);
            return {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(lines.size()) + "\r\n\r\n" + lines,
                    false};
        }
        return {RawServer::chunked_head() + RawServer::chunk(added("c", 13)), true};
    });
    auto& recorder = watch();
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "c"); }));
    EXPECT_TRUE(recorder.saw("ADDED", "a"));
    EXPECT_TRUE(recorder.saw("ADDED", "b"));
    EXPECT_EQ(recorder.events.size(), 3u);
    expect_resumed_from(12);
}

TEST_F(RawWatching, StreamThatKeepsTalkingOutlivesItsInactivityTimeout) {
    // The inactivity deadline moves with every read: a stream never silent for as long as the
    // timeout is kept, however long it lasts.
    serve([](int watch) -> RawReply {
        if (watch > 1) return {RawServer::chunked_head(), true};
        RawReply reply{RawServer::chunked_head() + RawServer::chunk(added("a0", 11)), true};
        for (int i = 1; i <= 6; ++i)
            reply.trickle.push_back(RawServer::chunk(added("a" + std::to_string(i), 11 + i)));
        reply.trickle_every = std::chrono::milliseconds(300);
        return reply;
    });
    auto& recorder = watch({.settings = with_inactivity_timeout(1.0)});
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "a6"); }));
    EXPECT_EQ(watches.load(), 1);  // 1.8 s of events 0.3 s apart on the one stream
    EXPECT_EQ(recorder.events.size(), 7u);
}

// settings.watching.server_timeout: the server is asked to end each stream after that long.
TEST_F(RawWatching, TheServerTimeoutIsAskedOfTheServer) {
    serve([](int) -> RawReply {
        return {RawServer::chunked_head() + RawServer::chunk(added("a", 11)), true};
    });
    WatchSettings settings;
    settings.server_timeout = Seconds(120);
    auto& recorder = watch({.settings = settings});
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "a"); }));
    const auto requests = peer->requests();
    ASSERT_GE(requests.size(), 2u);
    EXPECT_NE(requests[1].find("timeoutSeconds=120"), std::string::npos) << requests[1];
}

// settings.watching.client_timeout: the client ends a stream that lasts longer itself, and
// resumes from the last version it saw.
TEST_F(RawWatching, TheClientTimeoutEndsAStreamWhichIsThenResumed) {
    serve([](int watch) -> RawReply {
        if (watch == 1) return {RawServer::chunked_head() + RawServer::chunk(added("a", 11)), true};
        return {RawServer::chunked_head() + RawServer::chunk(added("b", 12)), true};
    });
    WatchSettings settings;
    settings.client_timeout = Seconds(0.5);
    auto& recorder = watch({.settings = settings});
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "b"); }));
    EXPECT_EQ(recorder.listings, 1);
    expect_resumed_from(11);
}

TEST_F(RawWatching, ErrorEventWithGoneRelists) {
    serve([](int watch) -> RawReply {
        if (watch == 1) {
            return {
                RawServer::chunked_head() +
                    RawServer::chunk(
                        R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
                        "\n"),
                true};
        }
        return {RawServer::chunked_head() + RawServer::chunk(added("b", 12)), true};
    });
    auto& recorder = watch();
    EXPECT_TRUE(drive([&] { return recorder.saw("ADDED", "b"); }));
    EXPECT_EQ(recorder.listings, 2);
}

}  // namespace
}  // namespace kopf::testing
