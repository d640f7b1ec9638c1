// Loggers format their messages: "{}" placeholders filled in order, each argument as a stream
// would print it.
#include <gtest/gtest.h>

#include <cstdint>
#include <kopf/logger.hpp>
#include <string>
#include <string_view>

namespace {

TEST(Logger, FormatsPlaceholdersInOrder) {
    EXPECT_EQ(kopf::Logger::format("a {} b {} c", 1, "two"), "a 1 b two c");
    EXPECT_EQ(kopf::Logger::format("no placeholders", 1), "no placeholders");
    EXPECT_EQ(kopf::Logger::format("{} {}", 1), "1 {}");
}

TEST(Logger, FormatsEachArgumentAsAStreamWould) {
    const std::string name = "obj";
    EXPECT_EQ(kopf::Logger::format("{} {} {}", name, std::string_view("view"), -42L),
              "obj view -42");
    EXPECT_EQ(kopf::Logger::format("{}|{}", 'x', std::uint64_t{18446744073709551615U}),
              "x|18446744073709551615");
    EXPECT_EQ(kopf::Logger::format("{} {}", 2.5, static_cast<unsigned char>('A')), "2.5 A");
}

// Booleans read as words, not as the stream's 1 and 0.
TEST(Logger, FormatsBooleansAsTrueAndFalse) {
    const bool ready = true;
    EXPECT_EQ(kopf::Logger::format("ready={} paused={}", ready, false), "ready=true paused=false");
}

}  // namespace
