// The fast JSON codec must be indistinguishable from nlohmann's parse() and dump().
#include "clients/json_codec.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

using kopf::json;
using kopf::clients::dump_json;
using kopf::clients::parse_json;
using kopf::clients::parse_json_or_discarded;

namespace {

std::string random_text(std::mt19937& rng) {
    static const std::vector<std::string> pieces = {"a",
                                                    "Z",
                                                    "9",
                                                    " ",
                                                    "\"",
                                                    "\\",
                                                    "/",
                                                    "\n",
                                                    "\t",
                                                    "\r",
                                                    "\b",
                                                    "\f",
                                                    std::string(1, '\x01'),
                                                    std::string(1, '\x1f'),
                                                    "\x7f",
                                                    "é",
                                                    "ü",
                                                    "日本",
                                                    "🙂",
                                                    "kopf.zalando.org/",
                                                    "{}",
                                                    "[]"};
    std::uniform_int_distribution<std::size_t> length(0, 12), piece(0, pieces.size() - 1);
    std::string out;
    for (std::size_t i = length(rng); i > 0; --i) out += pieces[piece(rng)];
    return out;
}

json random_value(std::mt19937& rng, int depth) {
    std::uniform_int_distribution<int> kind(0, depth > 4 ? 5 : 7);
    switch (kind(rng)) {
        case 0:
            return nullptr;
        case 1:
            return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
        case 2:
            return std::uniform_int_distribution<std::int64_t>(-1'000'000'000'000,
                                                               1'000'000'000'000)(rng);
        case 3:
            return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
        case 4:
            return std::uniform_int_distribution<std::uint64_t>()(rng);
        case 5:
            return random_text(rng);
        case 6: {
            json array = json::array();
            for (int i = std::uniform_int_distribution<int>(0, 4)(rng); i > 0; --i)
                array.push_back(random_value(rng, depth + 1));
            return array;
        }
        default: {
            json object = json::object();
            for (int i = std::uniform_int_distribution<int>(0, 5)(rng); i > 0; --i)
                object[random_text(rng)] = random_value(rng, depth + 1);
            return object;
        }
    }
}

}  // namespace

TEST(JsonCodec, DumpsExactlyAsNlohmannDoes) {
    std::mt19937 rng(20261122);
    for (int i = 0; i < 2000; ++i) {
        const json value = random_value(rng, 0);
        ASSERT_EQ(dump_json(value), value.dump()) << "value #" << i;
    }
}

// Integers, booleans and null are written without nlohmann's serializer: the extremes of each
// integer type, as values and inside containers, must still read as nlohmann writes them.
TEST(JsonCodec, DumpsIntegersAndLiteralsAtTheirExtremesAsNlohmannDoes) {
    const json values[] = {
        0,
        -1,
        std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::int64_t>::max(),
        std::numeric_limits<std::uint64_t>::max(),
        std::uint64_t{0},
        true,
        false,
        nullptr,
        json::array({std::numeric_limits<std::int64_t>::min(), true, nullptr, -0.0, 1e300}),
        json::object({{"tick", 1234567}, {"ok", false}, {"none", nullptr}}),
        json(json::value_t::discarded),
    };
    for (const json& value : values) EXPECT_EQ(dump_json(value), value.dump());
}

TEST(JsonCodec, ParsesToTheSameValuesAndTypesAsNlohmann) {
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; ++i) {
        const std::string text = random_value(rng, 0).dump();
        const json ours = parse_json(text);
        const json theirs = json::parse(text);
        ASSERT_EQ(ours, theirs) << text;
        ASSERT_EQ(ours.dump(), theirs.dump()) << text;  // same types: unsigned stays unsigned
    }
}

TEST(JsonCodec, NonNegativeIntegersAreUnsignedAsInNlohmann) {
    EXPECT_TRUE(parse_json("5").is_number_unsigned());
    EXPECT_TRUE(parse_json("-5").is_number_integer());
    EXPECT_FALSE(parse_json("-5").is_number_unsigned());
    EXPECT_EQ(parse_json("18446744073709551615").get<std::uint64_t>(), 18446744073709551615ULL);
    EXPECT_EQ(parse_json("0.1").get<double>(), json::parse("0.1").get<double>());
    EXPECT_TRUE(parse_json_or_discarded("1e400").is_discarded());  // overflow, as in nlohmann
    EXPECT_TRUE(json::parse("1e400", nullptr, false).is_discarded());
    EXPECT_EQ(parse_json("1e-400"), json::parse("1e-400"));  // underflow is zero in both
}

TEST(JsonCodec, DuplicateKeysKeepTheLastValueAsNlohmannDoes) {
    EXPECT_EQ(parse_json(R"({"a":1,"a":2})"), json::parse(R"({"a":1,"a":2})"));
    // Unsorted, repeated out of order, nested: the same tree as nlohmann's.
    const char* shuffled = R"({"b":1,"a":[2],"b":{"z":1,"y":2,"z":[4],"x":null},"c":3,"a":5})";
    EXPECT_EQ(parse_json(shuffled), json::parse(shuffled));
    EXPECT_EQ(parse_json(shuffled).dump(), R"({"a":5,"b":{"x":null,"y":2,"z":[4]},"c":3})");
}

TEST(JsonCodec, DeeplyNestedDocumentsParse) {
    std::string text = std::string(5000, '[') + std::string(5000, ']');
    EXPECT_EQ(parse_json(text), json::parse(text));
}

TEST(JsonCodec, MalformedInputIsRejectedWithTheOffset) {
    for (const char* bad : {"", "{", "{\"a\":}", "[1,2", "tru", "{\"a\":1} x", "\"\xff\"",
                            "{\"a\":1,}", "// comment\n{}", "NaN"}) {
        EXPECT_THROW(parse_json(bad), std::invalid_argument) << bad;
        EXPECT_TRUE(parse_json_or_discarded(bad).is_discarded()) << bad;
        EXPECT_TRUE(json::parse(bad, nullptr, false).is_discarded()) << bad;  // as nlohmann
    }
    try {
        parse_json("{\"a\": nope}");
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
    }
}

TEST(JsonCodec, TrailingWhitespaceIsAccepted) {
    EXPECT_EQ(parse_json("{\"a\":1}\r\n  "), json({{"a", 1}}));
}

TEST(JsonCodec, InvalidUtf8IsRefusedWhenDumping) {
    const json value = std::string("\xff\xfe");
    EXPECT_THROW(dump_json(value), json::type_error);
}

TEST(JsonCodec, EscapesEverySpecialCharacterAtEveryPositionOfALongString) {
    for (const char special : {'"', '\\', '\n', '\x01', '\x1f', '\x7f', ' '}) {
        for (std::size_t position = 0; position < 40; ++position) {
            std::string text(40, 'x');
            text[position] = special;
            const json value = text;
            ASSERT_EQ(dump_json(value), value.dump())
                << "character " << int(special) << " at " << position;
        }
    }
    for (std::size_t position = 0; position < 40; ++position) {
        const json non_ascii = std::string(position, 'x') + "é" + std::string(40 - position, 'y');
        ASSERT_EQ(dump_json(non_ascii), non_ascii.dump()) << "non-ASCII at " << position;
    }
}

TEST(JsonCodec, FindsTheResourceVersionOfAnObjectWithoutParsingTheRest) {
    using kopf::clients::find_resource_version;
    EXPECT_EQ(find_resource_version(
                  R"({"kind":"X","metadata":{"name":"a","labels":{"resourceVersion":"no"},)"
                  R"("resourceVersion":"42"},"spec":{"resourceVersion":"no"}})"),
              "42");
    // What follows the version is never read: even if it is cut off.
    EXPECT_EQ(find_resource_version(R"({"metadata":{"resourceVersion":"7"},"spec":{"x":)"), "7");
    // Only metadata's own key counts, wherever metadata is.
    EXPECT_EQ(find_resource_version(R"({"spec":{"resourceVersion":"1"},"resourceVersion":"2",)"
                                    R"("metadata":{"resourceVersion":"3"}})"),
              "3");
    EXPECT_EQ(find_resource_version(R"({"metadata":{"name":"a"}})"), std::nullopt);
    EXPECT_EQ(find_resource_version(R"({"metadata":{"resourceVersion":5}})"), std::nullopt);
    EXPECT_EQ(find_resource_version("not json"), std::nullopt);
    EXPECT_EQ(find_resource_version(""), std::nullopt);
}

TEST(JsonCodec, FindsTheOnlyResourceVersionKeyBySearchingAndGivesUpOnAnyDoubt) {
    using kopf::clients::sole_resource_version;
    // Kopf's diff-base annotation holds JSON in a string: its escaped keys are not keys.
    const std::string watch_line =
        R"({"object":{"metadata":{"annotations":{"last-handled":"{\"resourceVersion\":\"1\"}"},)"
        R"("name":"a","resourceVersion" : "1234"},"spec":{"note":"resourceVersion"}},)"
        R"("type":"MODIFIED"})";
    EXPECT_EQ(sole_resource_version(watch_line), "1234");
    // An escaped backslash, then an escaped quote: still inside the string.
    EXPECT_EQ(
        sole_resource_version(R"({"a":"x\\\"resourceVersion\":\"8\"","resourceVersion":"9"})"),
        "9");
    // Named twice (a nested key of the same name): only a parser can tell which is metadata's.
    EXPECT_EQ(sole_resource_version(
                  R"({"metadata":{"resourceVersion":"1"},"spec":{"resourceVersion":"2"}})"),
              std::nullopt);
    EXPECT_EQ(sole_resource_version(R"({"metadata":{"resourceVersion":5}})"), std::nullopt);
    EXPECT_EQ(sole_resource_version(R"({"metadata":{"resourceVersion":"a\"b"}})"), std::nullopt);
    EXPECT_EQ(sole_resource_version(R"({"metadata":{"resourceVersion":"12)"), std::nullopt);
    EXPECT_EQ(sole_resource_version(R"({"metadata":{"name":"resourceVersion"}})"), std::nullopt);
    EXPECT_EQ(sole_resource_version(""), std::nullopt);
    // When the search gives up, the parser still finds metadata's own.
    EXPECT_EQ(kopf::clients::find_resource_version(
                  R"({"metadata":{"resourceVersion":"1"},"spec":{"resourceVersion":"2"}})"),
              "1");
}

// The key of an event kept unparsed (an object without owner references): found by the same
// search, and given up on as readily.
TEST(JsonCodec, FindsTheOnlyUidKeyBySearchingAndGivesUpOnAnyDoubt) {
    using kopf::clients::sole_uid;
    // managedFields name it in keys of their own ("f:uid"), escaped keys are inside strings.
    const std::string watch_line =
        R"({"object":{"metadata":{"annotations":{"note":"{\"uid\":\"x\"}"},"managedFields":)"
        R"([{"fieldsV1":{"f:spec":{"f:uid":{}}}}],"name":"a","uid" : "u-1"},"spec":{"uid2":1}},)"
        R"("type":"MODIFIED"})";
    EXPECT_EQ(sole_uid(watch_line), "u-1");
    // An owner reference names another uid: only a parser can tell which is metadata's.
    EXPECT_EQ(sole_uid(R"({"metadata":{"ownerReferences":[{"uid":"o-1"}],"uid":"u-1"}})"),
              std::nullopt);
    EXPECT_EQ(sole_uid(R"({"metadata":{"uid":7}})"), std::nullopt);
    EXPECT_EQ(sole_uid(R"({"metadata":{"name":"uid"}})"), std::nullopt);
    EXPECT_EQ(sole_uid(R"({"metadata":{"uid":"u-)"), std::nullopt);
    EXPECT_EQ(sole_uid(""), std::nullopt);
    // Searched 16 bytes at a time: the key found wherever it falls in a block or after the
    // last one, and a second naming too, before it or in the tail.
    for (std::size_t pad = 0; pad < 48; ++pad) {
        const std::string before = R"({"metadata":{"a":")" + std::string(pad, 'u') + R"(",)";
        const std::string line = before + R"("uid":"u-1"},"status":{"q":"uuu"}})";
        EXPECT_EQ(sole_uid(line), "u-1") << line;
        EXPECT_EQ(sole_uid(line + R"({"uid":"u-2"})"), std::nullopt) << line;
        EXPECT_EQ(sole_uid(R"({"uid":"u-0",)" + line.substr(1)), std::nullopt) << line;
        EXPECT_EQ(sole_uid(before + R"("\"uid\"":"u-1"}})"), std::nullopt) << line;
    }
}
