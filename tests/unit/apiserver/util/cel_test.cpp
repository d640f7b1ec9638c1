// The CEL subset of x-kubernetes-validations: parsing, evaluation over JSON values, errors,
// refusal of constructs outside the subset, and the rules' verdicts on objects.
#include "util/cel.hpp"

#include <gtest/gtest.h>

#include "util/schema.hpp"

using namespace kopf::apiserver;
using nlohmann::json;

namespace {

json eval(const std::string& expression, const json& self = json::object(),
          const json* old_self = nullptr) {
    return cel::Program(expression).evaluate(self, old_self);
}

std::string compile_error(const std::string& expression) {
    try {
        cel::Program program(expression);
    } catch (const cel::CompileError& e) {
        return e.what();
    }
    return "<compiled>";
}

std::string eval_error(const std::string& expression, const json& self = json::object()) {
    try {
        eval(expression, self);
    } catch (const cel::EvalError& e) {
        return e.what();
    }
    return "<no error>";
}

const json kSelf = json::parse(R"({"replicas":3,"minReplicas":1,"maxReplicas":5,"name":"web-1",
  "ratio":0.5,"tags":["a","b"],"labels":{"app":"web"},"ports":[{"port":80},{"port":443}]})");

}  // namespace

TEST(Cel, ComparisonsArithmeticAndLogic) {
    EXPECT_EQ(eval("self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas", kSelf),
              true);
    EXPECT_EQ(eval("self.replicas * 2 + 1 == 7", kSelf), true);
    EXPECT_EQ(eval("self.replicas / 2 == 1 && self.replicas % 2 == 1", kSelf), true);
    EXPECT_EQ(eval("self.ratio < 1 && self.ratio * 2.0 == 1.0", kSelf), true);
    EXPECT_EQ(eval("!(self.replicas > 4) || false", kSelf), true);
    EXPECT_EQ(eval("self.replicas > 4 ? 'big' : 'small'", kSelf), "small");
    EXPECT_EQ(eval("-self.replicas == -3 && 1 != 2 && 'a' < 'b'", kSelf), true);
    EXPECT_EQ(eval("0x10 == 16 && 1e2 == 100.0"), true);
}

TEST(Cel, HasSizeInAndLiterals) {
    EXPECT_EQ(eval("has(self.labels) && !has(self.missing)", kSelf), true);
    EXPECT_EQ(eval("size(self.tags) == 2 && self.name.size() == 5 && size('héllo') == 5", kSelf),
              true);
    EXPECT_EQ(eval("'a' in self.tags && !('z' in self.tags) && 'app' in self.labels", kSelf), true);
    EXPECT_EQ(eval("self.labels['app'] == 'web' && self.tags[1] == 'b'", kSelf), true);
    EXPECT_EQ(eval("[1, 2] + [3] == [1, 2, 3] && {'k': 1}.k == 1"), true);
    EXPECT_EQ(eval("'web-1' in ['web-1', 'web-2']", kSelf), true);
    EXPECT_EQ(eval("null == null && self.replicas != null", kSelf), true);
}

TEST(Cel, StringFunctions) {
    EXPECT_EQ(eval("self.name.startsWith('web') && self.name.endsWith('-1')", kSelf), true);
    EXPECT_EQ(eval("self.name.contains('b-') && self.name.matches('^[a-z]+-[0-9]+$')", kSelf),
              true);
    EXPECT_EQ(eval("'ab'.matches('b')"), true) << "a match anywhere counts";
    EXPECT_EQ(eval("'AbC'.lowerAscii() == 'abc' && 'abc'.upperAscii() == 'ABC'"), true);
    EXPECT_EQ(eval(R"("tab\t".size() == 4 && r'\d'.size() == 2)"), true);
    EXPECT_EQ(eval("string(1) + string(true) == '1true' && int('42') == 42 && double(1) == 1.0"),
              true);
}

TEST(Cel, Macros) {
    EXPECT_EQ(eval("self.ports.all(p, p.port > 0 && p.port < 65536)", kSelf), true);
    EXPECT_EQ(eval("self.ports.exists(p, p.port == 443)", kSelf), true);
    EXPECT_EQ(eval("self.ports.exists_one(p, p.port > 100)", kSelf), true);
    EXPECT_EQ(eval("self.tags.exists_one(t, t != '')", kSelf), false);
    EXPECT_EQ(eval("self.ports.map(p, p.port) == [80, 443]", kSelf), true);
    EXPECT_EQ(eval("self.ports.filter(p, p.port > 100).size() == 1", kSelf), true);
    EXPECT_EQ(eval("self.labels.all(k, k.startsWith('a'))", kSelf), true) << "maps range over keys";
}

TEST(Cel, TransitionRulesSeeOldSelf) {
    const json old = json::parse(R"({"replicas":2,"mode":"a"})");
    const json now = json::parse(R"({"replicas":3,"mode":"b"})");
    cel::Program immutable("self.mode == oldSelf.mode");
    EXPECT_TRUE(immutable.uses_old_self());
    EXPECT_EQ(immutable.evaluate(now, &old), false);
    EXPECT_EQ(eval("self.replicas >= oldSelf.replicas", now, &old), true);
    EXPECT_FALSE(cel::Program("self.replicas > 0").uses_old_self());
}

TEST(Cel, ErrorsOnEvaluation) {
    EXPECT_EQ(eval_error("self.missing == 1", kSelf), "no such key: missing");
    EXPECT_EQ(eval_error("self.replicas / 0 == 1", kSelf), "division by zero");
    EXPECT_EQ(eval_error("self.name + 1 == 'x'", kSelf), "no such overload: string + int");
    EXPECT_EQ(eval_error("self.tags[5] == 'a'", kSelf), "index out of bounds: 5");
    EXPECT_EQ(eval_error("self.tags[1e300] == 'a'", kSelf), "index out of bounds: 1e+300");
    EXPECT_EQ(eval_error("9223372036854775807 + 1 > 0"), "integer overflow");
    EXPECT_EQ(eval_error("self.name ? 1 : 2", kSelf), "no such overload: ?:(string)");
    // An error on one side of || or && gives way to a decisive other side, as in CEL.
    EXPECT_EQ(eval("self.missing == 1 || true", kSelf), true);
    EXPECT_EQ(eval("false && self.missing == 1", kSelf), false);
}

TEST(Cel, ConstructsOutsideTheSubsetAreRefusedByName) {
    EXPECT_EQ(compile_error("self.tags.sort() == self.tags"),
              "the function sort() is outside the supported CEL subset at column 11");
    EXPECT_EQ(compile_error("quantity(self.memory).isLessThan(quantity('1Gi'))"),
              "the function quantity() is outside the supported CEL subset at column 1");
    EXPECT_EQ(compile_error("self.n == 1u"),
              "uint literals are outside the supported CEL subset at column 11");
    EXPECT_EQ(compile_error("self.?x"),
              "optional field selection (.?) is outside the supported CEL subset at column 5");
    EXPECT_EQ(compile_error("self.data == b'x'"),
              "bytes literals are outside the supported CEL subset at column 14");
    EXPECT_EQ(compile_error("other.x == 1"), "undeclared reference to 'other'");
    EXPECT_EQ(compile_error("self.x == "), "unexpected end of the expression at column 11");
    EXPECT_EQ(compile_error("(self.x == 1"), "expected ')' at the end at column 13");
    EXPECT_EQ(compile_error("self.ports.map(p, p > 1, p)"),
              "the macro map() takes two arguments (a variable and an expression); map() with a "
              "filter is outside the supported CEL subset at column 28");
    EXPECT_EQ(compile_error(std::string(500, '(') + "1" + std::string(500, ')')),
              "the expression nests too deeply at column 102");
}

namespace {

const json kCrdSchema = json::parse(R"J({"type":"object","properties":{"spec":{"type":"object",
  "x-kubernetes-validations":[
    {"rule":"self.minReplicas <= self.replicas","message":"replicas must be >= minReplicas"},
    {"rule":"self.replicas < 100","messageExpression":"'too many: ' + string(self.replicas)",
     "fieldPath":".replicas","reason":"FieldValueForbidden"
}],
  "properties":{
    "replicas" : {"type" : "integer"},
                 "minReplicas" : {"type" : "integer"},
                                 "mode"
        : {
            "type" : "string",
            "x-kubernetes-validations" :
                [ {"rule" : "self == oldSelf", "message" : "mode is immutable"} ]
        },
          "hosts" : {
        "type" : "array", "items" : {
            "type" : "string",
                     "x-kubernetes-validations" : [ {"rule" : "self.endsWith('.example.com')"} ]
        }
    }
}
}
}
})J");

}  // namespace

TEST(CelRules, ViolationsGiveKubernetesFieldErrors) {
    const json object = json::parse(
        R"({"spec":{"replicas":200,"minReplicas":300,"mode":"a","hosts":["a.example.com","b.org"]}})");
    auto errors = validate_rules(object, nullptr, kCrdSchema);
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors[0].to_string(),
              "spec: Invalid value: \"object\": replicas must be >= minReplicas");
    EXPECT_EQ(errors[0].reason, "FieldValueInvalid");
    EXPECT_EQ(errors[1].to_string(), "spec.replicas: Forbidden: too many: 200");
    EXPECT_EQ(errors[1].reason, "FieldValueForbidden");
    EXPECT_EQ(
        errors[2].to_string(),
        "spec.hosts[1]: Invalid value: \"string\": failed rule: self.endsWith('.example.com')");
}

TEST(CelRules, TransitionRulesRunOnUpdateAndUnchangedValuesAreNotJudgedAgain) {
    const json old = json::parse(R"({"spec":{"replicas":1,"minReplicas":5,"mode":"a"}})");
    const json now = json::parse(R"({"spec":{"replicas":1,"minReplicas":5,"mode":"b"}})");
    EXPECT_TRUE(validate_rules(now, nullptr, kCrdSchema).size() == 1u)
        << "on create only the replicas rule fails; the transition rule does not run";
    auto errors = validate_rules(now, &old, kCrdSchema);
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[1].to_string(), "spec.mode: Invalid value: \"string\": mode is immutable");
    EXPECT_TRUE(validate_rules(old, &old, kCrdSchema).empty()) << "ratcheting: nothing changed";
}

TEST(CelRules, EvaluationErrorsSayWhichRule) {
    const json object = json::parse(R"({"spec":{"replicas":1}})");
    auto errors = validate_rules(object, nullptr, kCrdSchema);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].to_string(),
              "spec: Invalid value: \"object\": no such key: minReplicas evaluating rule: "
              "self.minReplicas <= self.replicas");
}

TEST(CelRules, CrdRulesOutsideTheSubsetAreRefusedWithTheirPath) {
    const json schema = json::parse(R"J({"type":"object","properties":{"spec":{"type":"object",
      "x-kubernetes-validations":[{"rule":"self.x.isSorted()"},{"rule":"self.y > 0"},
                                  {"rule":"self.y > 0","reason":"Bogus"}]
}
}
})J");
    auto errors = check_validation_rules(schema, "spec.versions[0].schema.openAPIV3Schema");
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0].to_string(),
              "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
              ".rule: Invalid value: \"self.x.isSorted()\": compilation failed: the function "
              "isSorted() is outside the supported CEL subset at column 8");
    EXPECT_EQ(errors[1].field,
              "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[2]"
              ".reason");
    EXPECT_TRUE(check_validation_rules(kCrdSchema, "s").empty());
}
