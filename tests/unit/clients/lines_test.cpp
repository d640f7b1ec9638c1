// Watch streams arrive in arbitrary chunks; lines come out whole and as soon as they end.
#include "clients/lines.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
