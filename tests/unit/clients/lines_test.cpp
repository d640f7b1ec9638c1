// Watch streams arrive in arbitrary chunks; lines come out whole and as soon as they end.
#include "clients/lines.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "clients/errors.hpp"

using kopf::clients::LineSplitter;

namespace {

std::vector<std::string> feed_all(LineSplitter& splitter, const std::vector<std::string>& chunks) {
    std::vector<std::string> lines;
    for (const auto& chunk : chunks) {
        splitter.feed(chunk, [&](std::string_view line) { lines.emplace_back(line); });
    }
    return lines;
}

}  // namespace

TEST(LineSplitter, WholeLinesInOneChunk) {
    LineSplitter splitter;
    EXPECT_EQ(feed_all(splitter, {"{\"a\":1}\n{\"b\":2}\n"}),
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
    EXPECT_TRUE(splitter.tail().empty());
}

TEST(LineSplitter, LineSplitAcrossManyChunksIsJoined) {
    LineSplitter splitter;
    EXPECT_EQ(feed_all(splitter, {"{\"a\"", ":", "1}", "\n{\"b", "\":2}\n"}),
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
}

TEST(LineSplitter, CompleteLineIsDeliveredBeforeTheRestArrives) {
    LineSplitter splitter;
    std::vector<std::string> lines;
    splitter.feed("first\nsec", [&](std::string_view line) { lines.emplace_back(line); });
    EXPECT_EQ(lines, (std::vector<std::string>{"first"}));
    EXPECT_EQ(splitter.tail(), "sec");
}

TEST(LineSplitter, CarriageReturnsAndEmptyLinesAreDropped) {
    LineSplitter splitter;
    EXPECT_EQ(feed_all(splitter, {"a\r\n\n\r\nb\n"}), (std::vector<std::string>{"a", "b"}));
}

TEST(LineSplitter, UnterminatedTailStaysInTheBuffer) {
    LineSplitter splitter;
    EXPECT_TRUE(feed_all(splitter, {"{\"partial\":"}).empty());
    EXPECT_EQ(splitter.tail(), "{\"partial\":");
    splitter.reset();
    EXPECT_TRUE(splitter.tail().empty());
}

TEST(LineSplitter, OverlongLineIsAnError) {
    LineSplitter splitter(8);
    EXPECT_THROW(feed_all(splitter, {"0123456789"}), std::length_error);
}

// Watch lines come from the network: a field of an unexpected type is taken as absent (the
// event is then ignored or has no version), never an exception other than WatchingError.
TEST(WatchLines, AnEventIsDecodedWithItsObjectAndVersion) {
    const auto event = kopf::clients::decode_watch_line(
        R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"}}})", "pods");
    EXPECT_EQ(event.type, "ADDED");
    EXPECT_EQ(event.object["metadata"]["name"], "a");
    EXPECT_EQ(event.resource_version, "7");
}

TEST(WatchLines, FieldsOfOtherTypesAreTakenAsAbsent) {
    const auto event = kopf::clients::decode_watch_line(
        R"({"type":5,"object":{"metadata":{"resourceVersion":7}}})", "pods");
    EXPECT_EQ(event.type, "");
    EXPECT_EQ(event.resource_version, "");
    EXPECT_EQ(kopf::clients::decode_watch_line(R"({"object":{"metadata":[]}})", "pods").type, "");
    EXPECT_EQ(kopf::clients::watch_error_status(kopf::json::parse(R"({"code":"410","message":1})")),
              (std::pair<int, std::string>{0, ""}));
    EXPECT_EQ(kopf::clients::watch_error_status(kopf::json::array()),
              (std::pair<int, std::string>{0, ""}));
    EXPECT_EQ(
        kopf::clients::watch_error_status(kopf::json::parse(R"({"code":410,"message":"old"})")),
        (std::pair<int, std::string>{410, "old"}));
}

TEST(WatchLines, ALineThatIsNotAnEventIsAWatchingErrorNamingTheStream) {
    for (const char* line : {"not json", "[1,2]", R"({"type":"ADDED"})", "\"\xff\""}) {
        try {
            kopf::clients::decode_watch_line(line, "pods in default");
            ADD_FAILURE() << line;
        } catch (const kopf::clients::WatchingError& e) {
            EXPECT_NE(std::string(e.what()).find("pods in default"), std::string::npos) << e.what();
        }
    }
}
