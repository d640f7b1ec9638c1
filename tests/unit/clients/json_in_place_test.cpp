// Parsing a watch event's object into an existing tree: the result equals a fresh parse, the
// unchanged nodes stay where they were, the changes are reported by key, and a malformed line
// leaves the tree exactly as it was.
#include "clients/json_in_place.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
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

// The two trees hold the same values of the same types (nlohmann's == and dump() take 1 and 1u
// for the same; a parse that made one where the other made the other would pass them).
bool same_typed_tree(const json& a, const json& b) {
    if (a.type() != b.type()) return false;
    if (a.is_object()) {
        if (a.size() != b.size()) return false;
        for (auto it = a.begin(), other = b.begin(); it != a.end(); ++it, ++other) {
            if (it.key() != other.key() || !same_typed_tree(*it, *other)) return false;
        }
        return true;
    }
    if (a.is_array()) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (!same_typed_tree(a[i], b[i])) return false;
        }
        return true;
    }
    return a.dump() == b.dump();
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
                // Integers of every length, the limits of each type among them.
                switch (pick(6)) {
                    case 0:
                        return 18446744073709551615ULL;
                    case 1:
                        return std::numeric_limits<std::int64_t>::min();
                    case 2:
                        return std::numeric_limits<std::int64_t>::max();
                    case 3:
                        return -999'999'999'999'999'999LL;  // the longest read without a parser
                    default:
                        return std::uniform_int_distribution<std::int64_t>(
                                   -1'000'000'000'000'000'000LL,
                                   1'000'000'000'000'000'000LL)(random_) /
                               (std::int64_t{1} << pick(60));
                }
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

    // `document` with a few random edits (values replaced; keys and elements added or removed
    // if `reshape`).
    json mutate(json document, int depth = 0, bool reshape = true) {
        if (document.is_object()) {
            for (auto& [key, value] : document.items()) {
                if (pick(4) == 0) value = mutate(value, depth + 1, reshape);
            }
            if (!reshape) return document;
            if (pick(3) == 0) document[key()] = make(depth + 1);
            if (pick(3) == 0 && !document.empty()) document.erase(document.begin());
        } else if (document.is_array()) {
            for (auto& value : document)
                if (pick(4) == 0) value = mutate(value, depth + 1, reshape);
            if (!reshape) return document;
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
    for (const std::string& bad :
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

// ---- with the object's text remembered -----------------------------------------------------

// The same document as text in the forms servers and people write: compact, indented, with a
// key named twice, with a key escaped.
std::string text_of(const json& document, int form) {
    switch (form) {
        case 1:
            return document.dump(2);
        case 2: {
            std::string text = document.dump();
            if (text.size() > 2 && text.front() == '{') text.insert(1, R"("a":0,)");
            return text;
        }
        case 3: {
            std::string text = document.dump();
            const auto key = text.find(R"("b":)");
            if (key != std::string::npos) text.replace(key, 4, R"("\u0062":)");
            return text;
        }
        default:
            return document.dump();
    }
}

std::vector<std::string> sorted(std::vector<std::string> keys) {
    std::sort(keys.begin(), keys.end());
    return keys;
}

TEST(JsonInPlaceRemembered, TheTreeAndTheChangesAreAWholeParsesWhateverChanged) {
    Documents documents(11);
    for (int round = 0; round < 3000; ++round) {
        // Shaped like an object: the kept views, metadata with lists of entries, deep values.
        json before = json::object();
        before["metadata"] = {{"labels", documents.make()},
                              {"managedFields", json::array({documents.make(), documents.make()})},
                              {"resourceVersion", std::to_string(round)}};
        before["spec"] = documents.make();
        if (documents.pick(2) == 0) before["status"] = documents.make();
        before["a"] = documents.make();
        before["b"] = documents.make();
        // Most echoes change values only; some add or remove keys.
        const json after = documents.mutate(before, 0, documents.pick(3) == 0);
        const int before_form = documents.pick(4);
        const int after_form = documents.pick(4) == 0 ? documents.pick(4) : before_form;
        const std::string before_text = text_of(before, before_form);
        const std::string after_text = text_of(after, after_form);

        json whole = json::object();
        parse_event_object_in_place(line_of(before_text), whole, kKeptTop, kKeptMeta);
        json walked = json::object();
        RememberedText remembered;
        parse_event_object_in_place(line_of(before_text), walked, kKeptTop, kKeptMeta, &remembered);
        ASSERT_EQ(remembered.text, before_text);

        const auto expected =
            parse_event_object_in_place(line_of(after_text), whole, kKeptTop, kKeptMeta);
        const auto changes = parse_event_object_in_place(line_of(after_text), walked, kKeptTop,
                                                         kKeptMeta, &remembered);
        ASSERT_EQ(walked.dump(), whole.dump())
            << "before: " << before_text << "\nafter: " << after_text;
        ASSERT_TRUE(same_typed_tree(walked, whole))
            << "before: " << before_text << "\nafter: " << after_text;
        EXPECT_EQ(remembered.text, after_text);
        // Where its objects and arrays are, carried over from the text before: as if found anew.
        json fresh = json::object();
        RememberedText found;
        parse_event_object_in_place(line_of(after_text), fresh, kKeptTop, kKeptMeta, &found);
        EXPECT_EQ(remembered.containers, found.containers) << after_text;
        // A key named twice is reported as changed by the whole parse (it assigns the first
        // value, then the last), not when the text of both is the same as before.
        if (before_form == 2 && after_form == 2) continue;
        EXPECT_EQ(sorted(changes.top), sorted(expected.top)) << after_text;
        EXPECT_EQ(sorted(changes.metadata), sorted(expected.metadata)) << after_text;
    }
}

TEST(JsonInPlaceRemembered, AValueWhoseTextIsTheSameIsNotReadAndTheRestStaysInPlace) {
    const std::string before =
        R"({"apiVersion":"v1","metadata":{"labels":{"a":"1"},"managedFields":[{"manager":"kubectl","time":"t0","fieldsV1":{"f:spec":{"f:x":{}}}},{"manager":"kopf","time":"t1","fieldsV1":{"f:status":{"f:tick":{}}}}],"resourceVersion":"1"},"spec":{"deep":{"er":[1,2,{"x":true}]}},"status":{"tick":1}})";
    const std::string after =
        R"({"apiVersion":"v1","metadata":{"labels":{"a":"1"},"managedFields":[{"manager":"kubectl","time":"t0","fieldsV1":{"f:spec":{"f:x":{}}}},{"manager":"kopf","time":"t2","fieldsV1":{"f:status":{"f:tick":{}}}}],"resourceVersion":"2"},"spec":{"deep":{"er":[1,2,{"x":true}]}},"status":{"tick":2}})";
    json tree = json::object();
    RememberedText remembered;
    parse_event_object_in_place(line_of(before), tree, kKeptTop, kKeptMeta, &remembered);
    const json* creator = &tree["metadata"]["managedFields"][0];
    const json* deep = &tree["spec"]["deep"]["er"][2];
    const json* time = &tree["metadata"]["managedFields"][1]["time"];
    // The tree made to differ from the remembered text where the text will not change: what is
    // passed over keeps the tree's value (no one but this test changes a tree behind its text).
    tree["spec"]["deep"]["er"][0] = "not read";

    const auto changes =
        parse_event_object_in_place(line_of(after), tree, kKeptTop, kKeptMeta, &remembered);
    EXPECT_EQ(tree["spec"]["deep"]["er"][0], "not read");
    EXPECT_EQ(tree["metadata"]["managedFields"][1]["time"], "t2");
    EXPECT_EQ(tree["metadata"]["resourceVersion"], "2");
    EXPECT_EQ(tree["status"]["tick"], 2);
    EXPECT_EQ(&tree["metadata"]["managedFields"][0], creator);
    EXPECT_EQ(&tree["spec"]["deep"]["er"][2], deep);
    EXPECT_EQ(&tree["metadata"]["managedFields"][1]["time"], time);
    EXPECT_EQ(sorted(changes.top), (std::vector<std::string>{"metadata", "status"}));
    EXPECT_EQ(sorted(changes.metadata),
              (std::vector<std::string>{"managedFields", "resourceVersion"}));

    // Without the text, the same line is read whole.
    parse_event_object_in_place(line_of(after), tree, kKeptTop, kKeptMeta);
    EXPECT_EQ(tree["spec"]["deep"]["er"][0], 1);
}

TEST(JsonInPlaceRemembered, AMalformedLineLeavesTheTreeAndTheTextAsTheyWere) {
    const std::string original =
        R"({"a":{"b":[1,2,{"c":"d"}],"e":"f","long":"a value long enough to be walked into"},"g":[1,2,3],"h":{"i":1},"status":{"tick":1}})";
    Documents documents(5);
    std::vector<std::string> bad_lines{
        line_of(
            R"({"a":{"b":[1,2,{"c":"e"}],"e":"f","long":"a value long enough to be walked into"},"g":[1,2,3],"h":{"i":1},"status":{"tick":1e400}})"),
        line_of(
            R"({"a":{"b":[1,2,{"c":"e"}],"e":"f","long":"a value long enough to be walked into"},"g":[1,2,3],"h":{"i":1},"status":{"tick":1}} trailing)"),
        line_of(
            R"({"a":{"b":[1,2,{"c":"e"}],"e":"f","long":"a value long enough to be walked into"},"g":[1,2,3],"h":{"i":1},"status":{"tick":1})"),
        line_of(
            R"({"a":{"b":[1,2,{"c":"e"]}],"e":"f","long":"a value long enough to be walked into"},"g":[1,2,3],"h":{"i":1},"status":{"tick":1}})"),
    };
    const std::string changed = line_of(
        R"({"a":{"b":[1,2,{"c":"x"}],"e":"f","long":"a value long enough to be walked into"},"g":[1,2,3],"h":{"i":2},"status":{"tick":3}})");
    // A type that is not valid JSON text (invalid UTF-8, a control character): found by fuzzing,
    // the walk beside the remembered text took such a line that the whole line's parse refuses.
    const std::string object_part = changed.substr(changed.find(R"(,"object":)"));
    bad_lines.push_back(
        "{\"type\":\"M\xe3"
        "E\"" +
        object_part);
    bad_lines.push_back("{\"type\":\"MODI\x01FIED\"" + object_part);
    for (int cut = 0; cut < 40; ++cut)
        bad_lines.push_back(changed.substr(
            0, static_cast<std::size_t>(documents.pick(static_cast<int>(changed.size())))));
    for (const std::string& bad : bad_lines) {
        json tree = json::object();
        RememberedText remembered;
        parse_event_object_in_place(line_of(original), tree, kKeptTop, kKeptMeta, &remembered);
        const auto containers = remembered.containers;
        const json* nested = &tree["a"]["b"][2];
        std::string expected_error;
        try {
            json other = parse_json(original);
            parse_event_object_in_place(bad, other, kKeptTop, kKeptMeta);
        } catch (const std::invalid_argument& e) {
            expected_error = e.what();
        }
        ASSERT_FALSE(expected_error.empty()) << bad;
        try {
            parse_event_object_in_place(bad, tree, kKeptTop, kKeptMeta, &remembered);
            ADD_FAILURE() << "no error for " << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(e.what(), expected_error);
        }
        EXPECT_EQ(tree.dump(), parse_json(original).dump()) << bad;
        EXPECT_EQ(&tree["a"]["b"][2], nested) << bad;
        EXPECT_EQ(remembered.text, original) << bad;
        EXPECT_EQ(remembered.containers, containers) << bad;
    }
}

}  // namespace
}  // namespace kopf::clients
