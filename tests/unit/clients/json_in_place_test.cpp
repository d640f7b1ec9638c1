// Parsing a watch event's object into an existing tree: the result equals a fresh parse, the
// unchanged nodes stay where they were, the changes are reported by key, and a malformed line
// leaves the tree exactly as it was.
#include "clients/json_in_place.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string_view>

#include "clients/json_codec.hpp"

namespace kopf::clients {
namespace {

constexpr std::array<std::string_view, 3> kKeptTop{"metadata", "spec", "status"};
constexpr std::array<std::string_view, 2> kKeptMeta{"annotations", "labels"};

std::string line_of(const std::string& object_text) {
    return R"({"type":"MODIFIED","object":)" + object_text + "}";
}

InPlaceChanges parse_into(const std::string& object_text, json& target) {
    return parse_event_object_in_place(line_of(object_text), target, {}, {});
}

// Random documents over a few keys (so that two of them share many), with every kind of value.
class Documents {
  public:
    explicit Documents(unsigned seed) : random_(seed) {}

    json make(int depth = 0) {
        const int kind = pick(depth >= 4 ? 7 : 9);
        switch (kind) {
            case 0:
                return nullptr;
            case 1:
                return pick(2) == 1;
            case 2:
                return static_cast<std::uint64_t>(pick(5));
            case 3:
                return -static_cast<std::int64_t>(pick(5)) - 1;
            case 4:
                return std::array<double, 4>{0.5, -0.0, 1e-300, 2.0}[pick(4)];
            case 5:
                return std::array<const char*, 4>{"", "a", "quote \" and \\ \u00e9",
                                                  "a long string over sixteen bytes"}[pick(4)];
            case 6:
                return 18446744073709551615ULL;
            case 7: {
                json array = json::array();
                for (int i = pick(4); i > 0; --i) array.push_back(make(depth + 1));
                return array;
            }
            default: {
                json object = json::object();
                for (int i = pick(5); i > 0; --i) object[key()] = make(depth + 1);
                return object;
            }
        }
    }

    // `document` with a few random edits (values replaced, keys added or removed).
    json mutate(json document, int depth = 0) {
        if (document.is_object()) {
            for (auto& [key, value] : document.items()) {
                if (pick(4) == 0) value = mutate(value, depth + 1);
            }
            if (pick(3) == 0) document[key()] = make(depth + 1);
            if (pick(3) == 0 && !document.empty()) document.erase(document.begin());
        } else if (document.is_array()) {
            for (auto& value : document)
                if (pick(4) == 0) value = mutate(value, depth + 1);
            if (pick(3) == 0) document.push_back(make(depth + 1));
            if (pick(3) == 0 && !document.empty()) document.erase(document.begin());
        } else if (pick(2) == 0) {
            return make(depth);
        }
        return document;
    }

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(random_); }

  private:
    std::string key() { return std::string(1, static_cast<char>('a' + pick(6))); }
    std::mt19937 random_;
};

TEST(JsonInPlace, TheTreeBecomesWhatAFreshParseGivesWhateverChanged) {
    Documents documents(7);
    for (int round = 0; round < 3000; ++round) {
        json before = json::object();
        before["a"] = documents.make();
        before["b"] = documents.make();
        const json after = documents.mutate(before);
        json tree = parse_json(before.dump());
        // Cut short anywhere, the line changes nothing.
        const std::string line = line_of(after.dump());
        const auto cut = static_cast<std::size_t>(documents.pick(static_cast<int>(line.size())));
        EXPECT_THROW(parse_event_object_in_place(line.substr(0, cut), tree, {}, {}),
                     std::invalid_argument);
        ASSERT_EQ(tree.dump(), parse_json(before.dump()).dump()) << line.substr(0, cut);
        parse_into(after.dump(), tree);
        // As text: nlohmann's == takes 1 and 1.0 (and 0.0 and -0.0) for equal.
        ASSERT_EQ(tree.dump(), parse_json(after.dump()).dump())
            << "before: " << before.dump() << "\nafter: " << after.dump();
    }
}

TEST(JsonInPlace, UnchangedNodesStayWhereTheyWereAndChangesAreReportedByKey) {
    json tree = parse_json(
        R"({"apiVersion":"v1","metadata":{"labels":{"a":"1"},"resourceVersion":"1","managedFields":[{"time":"t1","fieldsV1":{"f:status":{}}}]},"spec":{"deep":{"er":[1,2,{"x":true}]}},"status":{"tick":1}})");
    const json* spec = &tree["spec"];
    const json* deep = &tree["spec"]["deep"]["er"][2];
    const json* labels = &tree["metadata"]["labels"];
    const json* fields = &tree["metadata"]["managedFields"][0]["fieldsV1"];
    const json* tick = &tree["status"]["tick"];
    const auto changes = parse_into(
        R"({"apiVersion":"v1","metadata":{"labels":{"a":"1"},"resourceVersion":"2","managedFields":[{"time":"t2","fieldsV1":{"f:status":{}}}]},"spec":{"deep":{"er":[1,2,{"x":true}]}},"status":{"tick":2}})",
        tree);
    EXPECT_EQ(&tree["spec"], spec);
    EXPECT_EQ(&tree["spec"]["deep"]["er"][2], deep);
    EXPECT_EQ(&tree["metadata"]["labels"], labels);
    EXPECT_EQ(&tree["metadata"]["managedFields"][0]["fieldsV1"], fields);
    EXPECT_EQ(&tree["status"]["tick"], tick);
    EXPECT_EQ(tree["status"]["tick"], 2);
    EXPECT_EQ(changes.top, (std::vector<std::string>{"metadata", "status"}));
    EXPECT_EQ(changes.metadata, (std::vector<std::string>{"resourceVersion", "managedFields"}));

    // Unsorted keys (Kubernetes writes Go's field order), a label gone, a spec key added.
    const auto more = parse_into(
        R"({"status":{"tick":2},"spec":{"new":1,"deep":{"er":[1,2,{"x":true}]}},"metadata":{"resourceVersion":"3","labels":{},"managedFields":[{"time":"t2","fieldsV1":{"f:status":{}}}]},"apiVersion":"v1"})",
        tree);
    EXPECT_EQ(more.top, (std::vector<std::string>{"spec", "metadata"}));
    EXPECT_EQ(more.metadata, (std::vector<std::string>{"resourceVersion", "labels"}));
    EXPECT_EQ(&tree["spec"]["deep"]["er"][2], deep);
    EXPECT_EQ(tree["metadata"]["labels"], json::object());

    // Nothing changed: nothing reported.
    const std::string same = tree.dump();
    const auto none = parse_into(same, tree);
    EXPECT_TRUE(none.top.empty());
    EXPECT_TRUE(none.metadata.empty());
    EXPECT_EQ(tree.dump(), same);
}

TEST(JsonInPlace, KeptKeysAreEmptiedInPlaceAndAMetadataReplacedIsReportedWhole) {
    json tree = parse_json(
        R"({"metadata":{"name":"x","labels":{"a":"1"},"annotations":{"n":"v"}},"spec":{"f":1},"status":{"s":1},"other":1})");
    const json* spec = &tree["spec"];
    const json* labels = &tree["metadata"]["labels"];
    const auto changes = parse_event_object_in_place(line_of(R"({"metadata":{"name":"x"}})"), tree,
                                                     kKeptTop, kKeptMeta);
    EXPECT_EQ(tree.dump(),
              R"({"metadata":{"annotations":{},"labels":{},"name":"x"},"spec":{},"status":{}})");
    EXPECT_EQ(&tree["spec"], spec);
    EXPECT_EQ(&tree["metadata"]["labels"], labels);
    EXPECT_EQ(changes.top, (std::vector<std::string>{"metadata", "other", "spec", "status"}));
    EXPECT_EQ(changes.metadata, (std::vector<std::string>{"annotations", "labels"}));

    // Kept keys empty already and absent again: no change.
    const auto again = parse_event_object_in_place(line_of(R"({"metadata":{"name":"x"}})"), tree,
                                                   kKeptTop, kKeptMeta);
    EXPECT_TRUE(again.top.empty()) << json(again.top).dump();
    EXPECT_TRUE(again.metadata.empty()) << json(again.metadata).dump();

    const auto whole =
        parse_event_object_in_place(line_of(R"({"metadata":"broken"})"), tree, kKeptTop, kKeptMeta);
    EXPECT_EQ(tree["metadata"], "broken");
    EXPECT_NE(std::find(whole.metadata.begin(), whole.metadata.end(), "*"), whole.metadata.end());
}

TEST(JsonInPlace, AMalformedLineLeavesTheTreeAsItWasNodesIncluded) {
    const std::string original =
        R"({"a":{"b":[1,2,{"c":"d"}],"e":"f"},"g":[1,2,3],"h":{"i":1},"status":{"tick":1}})";
    for (const std::string bad :
         {line_of(R"({"status":{"tick":2},"a":{"e":"changed","b":[9]},"g":[],"x":1)"),
          line_of(R"({"g":[1,2,3,4,5],"h":{},"a":7,"status":{"tick":1e400}})"),
          line_of(R"({"a":{"b":[1,2,{"c":"e"}]}} trailing)"), line_of(R"("not an object")"),
          std::string(R"({"type":"MODIFIED"})"), std::string(R"(["not","an","event"])"),
          line_of(
              R"({"a":{"b":[1,2,{"c":"d"}],"e":"f"},"g":[1,2,3],"h":{"i":1},"status":{"tick":)")}) {
        json tree = parse_json(original);
        const json* kept = &tree["h"]["i"];
        const json* nested = &tree["a"]["b"][2];
        EXPECT_THROW(parse_event_object_in_place(bad, tree, kKeptTop, kKeptMeta),
                     std::invalid_argument)
            << bad;
        EXPECT_EQ(tree.dump(), parse_json(original).dump()) << bad;
        EXPECT_EQ(&tree["h"]["i"], kept) << bad;
        EXPECT_EQ(&tree["a"]["b"][2], nested) << bad;
    }
}

TEST(JsonInPlace, RepeatedKeysKeepTheLastValueAndTypesAreParseJsons) {
    json tree = parse_json(R"({"a":1,"b":{"c":2}})");
    parse_into(R"({"b":{"c":2,"c":3},"a":-1,"a":1.0,"d":5,"e":18446744073709551615})", tree);
    const json fresh =
        parse_json(R"({"b":{"c":2,"c":3},"a":-1,"a":1.0,"d":5,"e":18446744073709551615})");
    EXPECT_EQ(tree.dump(), fresh.dump());
    EXPECT_TRUE(tree["a"].is_number_float());
    EXPECT_TRUE(tree["d"].is_number_unsigned());
}

}  // namespace
}  // namespace kopf::clients
