// Label and field selectors: the grammar kube-apiserver accepts, what matches, and the
// exact error texts clients see in 400 responses.
#include "util/selectors.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

using kopf::apiserver::FieldSelector;
using kopf::apiserver::LabelSelector;
using kopf::apiserver::SelectorError;
using nlohmann::json;

namespace {

bool label_match(const std::string& selector, const json& labels) {
    return LabelSelector::parse(selector).matches(labels);
}

std::string label_error(const std::string& selector) {
    try {
        LabelSelector::parse(selector);
    } catch (const SelectorError& error) {
        return error.what();
    }
    return "<no error>";
}

std::string field_error(const std::string& selector, const std::string& group = "",
                        const std::string& kind = "ConfigMap") {
    try {
        FieldSelector::parse(selector, group, kind);
    } catch (const SelectorError& error) {
        return error.what();
    }
    return "<no error>";
}

const json kLabels = {{"app", "web"}, {"tier", "front"}, {"replicas", "3"}};

}  // namespace

// ------------------------------------------------------------------ label selector grammar

TEST(LabelSelector, EmptySelectorMatchesEverything) {
    EXPECT_TRUE(LabelSelector::parse("").empty());
    EXPECT_TRUE(label_match("", kLabels));
    EXPECT_TRUE(label_match("   ", json(nullptr)));
}

TEST(LabelSelector, EqualityOperatorsRequireTheKey) {
    EXPECT_TRUE(label_match("app=web", kLabels));
    EXPECT_TRUE(label_match("app==web", kLabels));
    EXPECT_FALSE(label_match("app=db", kLabels));
    EXPECT_FALSE(label_match("missing=web", kLabels));
}

TEST(LabelSelector, InequalityMatchesObjectsLackingTheKey) {
    EXPECT_TRUE(label_match("app!=db", kLabels));
    EXPECT_FALSE(label_match("app!=web", kLabels));
    EXPECT_TRUE(label_match("missing!=x", kLabels));
    EXPECT_TRUE(label_match("missing!=x", json(nullptr)));
}

TEST(LabelSelector, SetBasedInAndNotin) {
    EXPECT_TRUE(label_match("app in (web, db)", kLabels));
    EXPECT_FALSE(label_match("app in (db,cache)", kLabels));
    EXPECT_FALSE(label_match("missing in (web)", kLabels));
    EXPECT_TRUE(label_match("app notin (db)", kLabels));
    EXPECT_FALSE(label_match("app notin (web,db)", kLabels));
    EXPECT_TRUE(label_match("missing notin (web)", kLabels));
}

TEST(LabelSelector, ExistsAndDoesNotExist) {
    EXPECT_TRUE(label_match("app", kLabels));
    EXPECT_FALSE(label_match("missing", kLabels));
    EXPECT_TRUE(label_match("!missing", kLabels));
    EXPECT_FALSE(label_match("!app", kLabels));
    EXPECT_TRUE(label_match("! missing", kLabels));
}

TEST(LabelSelector, GreaterAndLessThanCompareIntegers) {
    EXPECT_TRUE(label_match("replicas>2", kLabels));
    EXPECT_FALSE(label_match("replicas>3", kLabels));
    EXPECT_TRUE(label_match("replicas<4", kLabels));
    EXPECT_FALSE(label_match("app>1", kLabels));       // non-integer label value
    EXPECT_FALSE(label_match("missing<10", kLabels));  // key must exist
}

TEST(LabelSelector, CommaMeansAnd) {
    EXPECT_TRUE(label_match("app=web,tier=front", kLabels));
    EXPECT_FALSE(label_match("app=web,tier=back", kLabels));
    EXPECT_TRUE(label_match("app=web, !missing, tier in (front)", kLabels));
}

TEST(LabelSelector, RequirementsAreSortedByKeyWithOperators) {
    auto selector = LabelSelector::parse("z=1,a in (y,x),!m,k,n>5");
    const auto& r = selector.requirements();
    ASSERT_EQ(r.size(), 5u);
    EXPECT_EQ(r[0].key, "a");
    EXPECT_EQ(r[0].op, "in");
    EXPECT_EQ(r[0].values, (std::vector<std::string>{"x", "y"}));  // sorted set
    EXPECT_EQ(r[1].op, "exists");
    EXPECT_EQ(r[2].op, "!");
    EXPECT_EQ(r[3].op, "gt");
    EXPECT_EQ(r[4].op, "=");
}

TEST(LabelSelector, EmptyValuesAreAllowed) {
    EXPECT_TRUE(label_match("app=", json{{"app", ""}}));
    EXPECT_TRUE(label_match("app in ()", json{{"app", ""}}));
    EXPECT_TRUE(label_match("app in (,x)", json{{"app", ""}}));
    EXPECT_FALSE(label_match("app=", kLabels));
}

TEST(LabelSelector, KeywordsAreValuesInsideSets) {
    EXPECT_TRUE(label_match("app in (in,notin)", json{{"app", "notin"}}));
    EXPECT_TRUE(label_match("app=in", json{{"app", "in"}}));
}

TEST(LabelSelector, PrefixedKeys) {
    EXPECT_TRUE(label_match("example.com/role=db", json{{"example.com/role", "db"}}));
}

// ------------------------------------------------------------------ label selector errors

TEST(LabelSelectorErrors, MissingCommaBetweenRequirements) {
    EXPECT_EQ(label_error("a=b c=d"), "found 'c', expected: ',' or 'end of string'");
}

TEST(LabelSelectorErrors, TrailingComma) {
    EXPECT_EQ(label_error("a=b,"), "found '', expected: identifier after ','");
}

TEST(LabelSelectorErrors, StartsWithOperator) {
    EXPECT_EQ(label_error("=b"), "found '=', expected: !, identifier, or 'end of string'");
}

TEST(LabelSelectorErrors, InvalidKeyReportsNilPath) {
    EXPECT_EQ(label_error("-bad=x"),
              "unable to parse requirement: <nil>: Invalid value: \"-bad\": name part must "
              "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
              "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
              "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
}

TEST(LabelSelectorErrors, InvalidValueNamesTheValuePath) {
    EXPECT_EQ(label_error("app=-x"),
              "unable to parse requirement: values[0][app]: Invalid value: \"-x\": a valid label "
              "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
              "and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
              "'my_value',  or '12345', regex used for validation is "
              "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
}

TEST(LabelSelectorErrors, NonIntegerForGreaterThan) {
    EXPECT_EQ(label_error("n>x"),
              "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
              "operators, the value must be an integer");
}

TEST(LabelSelectorErrors, MissingOpeningParenthesis) {
    EXPECT_EQ(label_error("a in b"), "unable to parse requirement: found 'b' expected: '('");
}

TEST(LabelSelectorErrors, UnclosedSet) {
    EXPECT_EQ(label_error("a in (b"),
              "unable to parse requirement: found '', expected: ',' or ')'");
}

TEST(LabelSelectorErrors, UnknownOperator) {
    EXPECT_EQ(label_error("a x"),
              "unable to parse requirement: found 'x', expected: in, notin, =, ==, !=, gt, lt");
}

TEST(LabelSelectorErrors, DoubleNegation) {
    EXPECT_EQ(label_error("!!a"), "unable to parse requirement: found '!', expected: identifier");
}

TEST(LabelSelectorErrors, OperatorWithoutValueInSet) {
    EXPECT_EQ(label_error("a in (=)"),
              "unable to parse requirement: found '=', expected: ',', ')' or identifier");
}

TEST(LabelSelectorErrors, KeyTooLong) {
    const std::string key(64, 'a');
    EXPECT_NE(label_error(key).find("name part must be no more than 63 bytes"), std::string::npos);
}

// ------------------------------------------------------------------ metav1.LabelSelector

TEST(LabelSelectorJson, NullAndEmptyMatchEverything) {
    EXPECT_TRUE(LabelSelector::from_json(nullptr).matches(kLabels));
    EXPECT_TRUE(LabelSelector::from_json(json::object()).matches(kLabels));
}

TEST(LabelSelectorJson, MatchLabelsAndExpressions) {
    auto selector = LabelSelector::from_json(json::parse(R"({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "edge"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "replicas", "operator": "Exists"},
            {"key": "zone", "operator": "NotIn", "values": ["a"]}]})"));
    EXPECT_TRUE(selector.matches(kLabels));
    EXPECT_FALSE(selector.matches(json{{"app", "web"}, {"tier", "back"}, {"replicas", "1"}}));
}

TEST(LabelSelectorJson, UnknownOperatorIsRejected) {
    try {
        LabelSelector::from_json(
            json::parse(R"({"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]})"));
        FAIL() << "expected an error";
    } catch (const SelectorError& error) {
        EXPECT_STREQ(error.what(), "\"Gt\" is not a valid label selector operator");
    }
}

TEST(LabelSelectorJson, InWithoutValuesIsRejected) {
    try {
        LabelSelector::from_json(
            json::parse(R"({"matchExpressions":[{"key":"a","operator":"In"}]})"));
        FAIL() << "expected an error";
    } catch (const SelectorError& error) {
        EXPECT_STREQ(error.what(),
                     "values: Invalid value: []: for 'in', 'notin' operators, values set can't be "
                     "empty");
    }
}

// Found by the fuzzer: a key or operator that is not a string is a selector error naming the
// field, not a JSON type error that ends the server.
TEST(LabelSelectorJson, AKeyOrOperatorThatIsNotAStringIsRejectedByName) {
    for (
        const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
            {R"({"matchLabels":{"app":"web"},"matchExpressions":[{"key":["0"]},{"key":"x","operator":"DoesNotExist"}]})",
             "key"},
            {R"({"matchExpressions":[{"key":"a","operator":{"In":true},"values":["1"]}]})",
             "operator"}}) {
        try {
            LabelSelector::from_json(json::parse(text));
            FAIL() << "expected an error for " << text;
        } catch (const SelectorError& error) {
            EXPECT_NE(
                std::string(error.what()).find("matchExpressions " + field + " must be a string"),
                std::string::npos)
                << error.what();
        }
    }
}

// ------------------------------------------------------------------ field selectors

TEST(FieldSelector, MetadataNameAndNamespaceEverywhere) {
    auto selector =
        FieldSelector::parse("metadata.name=cm1,metadata.namespace==ns", "", "ConfigMap");
    EXPECT_TRUE(selector.matches(json::parse(R"({"metadata":{"name":"cm1","namespace":"ns"}})")));
    EXPECT_FALSE(selector.matches(json::parse(R"({"metadata":{"name":"cm2","namespace":"ns"}})")));
}

TEST(FieldSelector, NotEqualsMatchesAbsentFields) {
    auto selector = FieldSelector::parse("metadata.namespace!=kube-system", "", "ConfigMap");
    EXPECT_TRUE(selector.matches(json::parse(R"({"metadata":{"name":"a"}})")));
    EXPECT_FALSE(selector.matches(json::parse(R"({"metadata":{"namespace":"kube-system"}})")));
}

TEST(FieldSelector, EmptySelectorMatchesEverything) {
    auto selector = FieldSelector::parse("", "", "Pod");
    EXPECT_TRUE(selector.empty());
    EXPECT_TRUE(selector.matches(json::object()));
}

TEST(FieldSelector, BuiltinDefaultKindsRejectOtherFields) {
    EXPECT_EQ(field_error("spec.x=1", "", "ConfigMap"),
              "\"spec.x\" is not a known field selector: only \"metadata.name\", "
              "\"metadata.namespace\"");
    EXPECT_EQ(field_error("spec.replicas=1", "apps", "Deployment"),
              "\"spec.replicas\" is not a known field selector: only \"metadata.name\", "
              "\"metadata.namespace\"");
}

TEST(FieldSelector, CustomResourcesRejectOtherFields) {
    EXPECT_EQ(field_error("spec.color=red", "example.com", "Widget"),
              "field label not supported: spec.color");
}

TEST(FieldSelector, CustomResourceSelectableFields) {
    auto selector =
        FieldSelector::parse("spec.color=red", "example.com", "Widget", {".spec.color"});
    EXPECT_TRUE(selector.matches(json::parse(R"({"spec":{"color":"red"}})")));
    EXPECT_FALSE(selector.matches(json::parse(R"({"spec":{"color":"blue"}})")));
}

TEST(FieldSelector, SelectableIntegerAndBooleanFieldsCompareAsText) {
    auto selector = FieldSelector::parse("spec.size=3,spec.on=true", "example.com", "Widget",
                                         {".spec.size", ".spec.on"});
    EXPECT_TRUE(selector.matches(json::parse(R"({"spec":{"size":3,"on":true}})")));
}

TEST(FieldSelector, ClusterScopedCustomResourcesHaveNoNamespaceField) {
    EXPECT_NO_THROW(FieldSelector::parse("metadata.namespace=a", "example.com", "W", {}, false));
    EXPECT_THROW(FieldSelector::parse("metadata.namespace=a", "example.com", "W", {}, true),
                 SelectorError);
}

TEST(FieldSelector, EventFieldsAsKubectlDescribeSends) {
    auto selector = FieldSelector::parse(
        "involvedObject.name=w1,involvedObject.namespace=ns,involvedObject.kind=Widget,"
        "involvedObject.uid=u-1",
        "", "Event");
    const json event = json::parse(R"({"involvedObject":{"name":"w1","namespace":"ns",
        "kind":"Widget","uid":"u-1","apiVersion":"example.com/v1"},"reason":"Logging",
        "type":"Normal","source":{"component":"kopf"}})");
    EXPECT_TRUE(selector.matches(event));
    EXPECT_TRUE(FieldSelector::parse("reason=Logging,type=Normal", "", "Event").matches(event));
    EXPECT_TRUE(FieldSelector::parse("involvedObject.apiVersion=example.com/v1", "", "Event")
                    .matches(event));
}

TEST(FieldSelector, EventSourceFallsBackToReportingComponent) {
    const json event = json::parse(R"({"reportingComponent":"kopf","source":{}})");
    EXPECT_TRUE(FieldSelector::parse("source=kopf", "", "Event").matches(event));
    EXPECT_TRUE(FieldSelector::parse("reportingComponent=kopf", "", "Event").matches(event));
}

TEST(FieldSelector, EventRejectsUnknownFields) {
    EXPECT_EQ(field_error("message=x", "", "Event"), "field label not supported: message");
}

TEST(FieldSelector, PodFields) {
    const json pod = json::parse(R"({"metadata":{"name":"p"},
        "spec":{"nodeName":"n1","restartPolicy":"Always","schedulerName":"default-scheduler",
                "serviceAccountName":"sa","hostNetwork":true},
        "status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}],
                  "nominatedNodeName":"n2"}})");
    for (const char* text :
         {"spec.nodeName=n1", "spec.restartPolicy=Always", "spec.schedulerName=default-scheduler",
          "spec.serviceAccountName=sa", "status.phase=Running", "status.podIP=10.0.0.1",
          "status.nominatedNodeName=n2", "spec.hostNetwork=true", "spec.host=n1"}) {
        EXPECT_TRUE(FieldSelector::parse(text, "", "Pod").matches(pod)) << text;
    }
    EXPECT_TRUE(FieldSelector::parse("spec.hostNetwork=false", "", "Pod")
                    .matches(json::parse(R"({"spec":{}})")));
    EXPECT_EQ(field_error("spec.containers=x", "", "Pod"),
              "field label not supported: spec.containers");
}

TEST(FieldSelector, SecretType) {
    EXPECT_TRUE(FieldSelector::parse("type=Opaque", "", "Secret")
                    .matches(json::parse(R"({"type":"Opaque"})")));
    EXPECT_EQ(field_error("data=x", "", "Secret"), "field label not supported: data");
}

TEST(FieldSelector, NamespacePhaseAndLegacyName) {
    const json ns = json::parse(R"({"metadata":{"name":"default"},"status":{"phase":"Active"}})");
    EXPECT_TRUE(FieldSelector::parse("status.phase=Active", "", "Namespace").matches(ns));
    EXPECT_TRUE(FieldSelector::parse("name=default", "", "Namespace").matches(ns));
    EXPECT_EQ(field_error("metadata.namespace=x", "", "Namespace"),
              "field label not supported: metadata.namespace");
}

TEST(FieldSelector, EscapedValues) {
    auto selector = FieldSelector::parse(R"(metadata.name=a\,b\=c\\d)", "", "ConfigMap");
    ASSERT_EQ(selector.terms().size(), 1u);
    EXPECT_EQ(selector.terms()[0].value, R"(a,b=c\d)");
}

TEST(FieldSelector, EscapeValueRoundTrips) {
    const std::string name = R"(odd,name=with\slash)";
    auto selector =
        FieldSelector::parse("metadata.name=" + FieldSelector::escape_value(name), "", "ConfigMap");
    EXPECT_TRUE(selector.matches(json{{"metadata", {{"name", name}}}}));
}

TEST(FieldSelectorErrors, TermWithoutOperator) {
    EXPECT_EQ(field_error("metadata.name"),
              "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
}

TEST(FieldSelectorErrors, InvalidEscapeSequence) {
    EXPECT_EQ(field_error(R"(metadata.name=a\b)"),
              R"(invalid field selector: invalid escape sequence: \b)");
    EXPECT_EQ(field_error("metadata.name=a\\"),
              R"(invalid field selector: invalid escape sequence: \)");
}

TEST(FieldSelectorErrors, UnescapedEqualsInValueShowsCodePoint) {
    EXPECT_EQ(field_error("metadata.name=a=b"),
              "invalid field selector: unescaped character in value: 61");
}

// ------------------------------------------------------------------ robustness

TEST(SelectorRobustness, RandomInputsNeverCrash) {
    std::mt19937 random(12345);
    const std::string alphabet = "ab=!(),<> \t-_./\\0123456789innotinxyz\x01\xff";
    for (int round = 0; round < 20000; ++round) {
        std::string text;
        const int length = static_cast<int>(random() % 24);
        for (int i = 0; i < length; ++i) text.push_back(alphabet[random() % alphabet.size()]);
        if (round % 97 == 0) text.push_back('\0');
        try {
            auto selector = LabelSelector::parse(text);
            selector.matches(kLabels);
        } catch (const SelectorError&) {
        }
        try {
            auto selector = FieldSelector::parse(text, "", "Pod");
            selector.matches(json::object());
        } catch (const SelectorError&) {
        }
        try {
            FieldSelector::parse(text, "example.com", "Widget", {".spec.x"}).matches(json(5));
        } catch (const SelectorError&) {
        }
    }
    SUCCEED();
}

TEST(SelectorRobustness, MalformedJsonSelectorsAreErrorsNotCrashes) {
    for (const char* text :
         {R"([])", R"({"matchLabels": 5})", R"({"matchLabels": {"a": 1}})",
          R"({"matchExpressions": {}})", R"({"matchExpressions": [5]})",
          R"({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})"}) {
        EXPECT_THROW(LabelSelector::from_json(json::parse(text)), SelectorError) << text;
    }
}
