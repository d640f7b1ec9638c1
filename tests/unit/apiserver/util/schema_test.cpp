// CRD structural schemas: which schemas are rejected, what pruning drops, what
// defaulting fills in, and the validation messages kube-apiserver returns for custom
// resources.
#include "util/schema.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace kopf::apiserver;
using nlohmann::json;

namespace {

std::vector<std::string> texts(const std::vector<FieldError>& errors) {
    std::vector<std::string> out;
    for (const auto& e : errors) out.push_back(e.to_string());
    return out;
}

std::vector<std::string> structural(const std::string& schema) {
    return texts(
        validate_structural_schema(json::parse(schema), "spec.validation.openAPIV3Schema"));
}

std::vector<std::string> check(const std::string& object, const std::string& schema) {
    return texts(validate(json::parse(object), json::parse(schema)));
}

const char* kWidgetSchema = R"({
  "type": "object",
  "properties": {
    "spec": {"type": "object", "properties": {
      "size": {"type": "integer", "minimum": 0, "default": 1},
      "color": {"type": "string", "enum": ["red", "blue"]},
      "tags": {"type": "array", "items": {"type": "string"}},
      "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                 "properties": {"mode": {"type": "string"},
                                "strict": {"type": "object", "properties": {"on": {"type": "boolean"}}}}},
      "labels": {"type": "object", "additionalProperties": {"type": "string"}},
      "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                   "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
      "anything": {"x-kubernetes-preserve-unknown-fields": true}
    }},
    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
  }
})";

}  // namespace

// ------------------------------------------------------------------ structural checks

TEST(StructuralSchema, WellFormedSchemaIsAccepted) {
    EXPECT_TRUE(structural(kWidgetSchema).empty());
}

TEST(StructuralSchema, RootTypeRequired) {
    EXPECT_EQ(
        structural(R"({"properties":{}})"),
        std::vector<std::string>{
            "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root"});
}

TEST(StructuralSchema, RootMustBeObject) {
    EXPECT_EQ(structural(R"({"type":"string"})"),
              std::vector<std::string>{"spec.validation.openAPIV3Schema.type: Invalid value: "
                                       "\"string\": must be object at the root"});
}

TEST(StructuralSchema, FieldsAndItemsNeedTypes) {
    EXPECT_EQ(structural(R"({"type":"object","properties":{
        "a":{},"b":{"type":"array","items":{}},"c":{"type":"array"}}})"),
              (std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be "
                  "empty for specified object fields",
                  "spec.validation.openAPIV3Schema.properties[b].items.type: Required value: must "
                  "not be empty for specified array items",
                  "spec.validation.openAPIV3Schema.properties[c].items: Required value: must be "
                  "specified"}));
}

TEST(StructuralSchema, PreserveUnknownAndIntOrStringMayOmitType) {
    EXPECT_TRUE(structural(R"({"type":"object","properties":{
        "a":{"x-kubernetes-preserve-unknown-fields":true},
        "b":{"x-kubernetes-int-or-string":true}}})")
                    .empty());
    EXPECT_TRUE(structural(R"({"type":"object","properties":{"b":{"x-kubernetes-int-or-string":true,
        "anyOf":[{"type":"integer"},{"type":"string"}]}}})")
                    .empty());
}

TEST(StructuralSchema, IntOrStringAllOfIdiomIsStructural) {
    EXPECT_TRUE(structural(R"({"type":"object","properties":{"v":{"x-kubernetes-int-or-string":true,
        "allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"pattern":"^[0-9]+%?$"}]}}})")
                    .empty());
    EXPECT_EQ(structural(R"({"type":"object","properties":{"v":{"type":"string",
        "allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]}]}}})")
                  .size(),
              2u);
}

TEST(StructuralSchema, AdditionalPropertiesForbiddenAtRootAndWithProperties) {
    auto errors = structural(R"({"type":"object","additionalProperties":{"type":"string"},
        "properties":{"m":{"type":"object","properties":{"a":{"type":"string"}},
                           "additionalProperties":{"type":"string"}}}})");
    EXPECT_EQ(errors, (std::vector<std::string>{
                          "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: "
                          "additionalProperties and properties are mutual exclusive",
                          "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must "
                          "not be used at the root",
                          "spec.validation.openAPIV3Schema.properties[m].additionalProperties: "
                          "Forbidden: additionalProperties and properties are mutual exclusive"}));
}

TEST(StructuralSchema, NestedValueValidationsMayNotDeclareTypes) {
    auto errors = structural(R"({"type":"object","properties":{"a":{"type":"string",
        "anyOf":[{"type":"string","nullable":true,"default":"x","description":"d"}]}}})");
    EXPECT_EQ(errors, (std::vector<std::string>{
                          "spec.validation.openAPIV3Schema.properties[a].anyOf[0].default: "
                          "Forbidden: must be undefined to be structural",
                          "spec.validation.openAPIV3Schema.properties[a].anyOf[0].description: "
                          "Forbidden: must be empty to be structural",
                          "spec.validation.openAPIV3Schema.properties[a].anyOf[0].nullable: "
                          "Forbidden: must be false to be structural",
                          "spec.validation.openAPIV3Schema.properties[a].anyOf[0].type: "
                          "Forbidden: must be empty to be structural"}));
}

TEST(StructuralSchema, ValueValidationPropertiesMustExistStructurally) {
    // Upstream checks this for the root's value validations only.
    auto errors = structural(R"({"type":"object","properties":{"x":{"type":"string"}},
        "oneOf":[{"required":["x"]},{"properties":{"y":{"minLength":1}}}]})");
    EXPECT_EQ(errors,
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[y]: Required value: because "
                  "it is defined in spec.validation.openAPIV3Schema.oneOf[1].properties[y]"});
}

TEST(StructuralSchema, RootMetadataMayOnlyConstrainNames) {
    EXPECT_TRUE(structural(R"({"type":"object","properties":{"metadata":{"type":"object",
        "properties":{"name":{"type":"string","maxLength":10}}}}})")
                    .empty());
    EXPECT_EQ(structural(R"({"type":"object","properties":{"metadata":{"type":"object",
        "properties":{"labels":{"type":"object"}}}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not "
                  "specify anything other than name and generateName, but metadata is implicitly "
                  "specified"});
}

TEST(StructuralSchema, EmbeddedResourceMustBeObjectWithProperties) {
    EXPECT_EQ(structural(R"({"type":"object","properties":{"e":{"type":"object",
        "x-kubernetes-embedded-resource":true}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[e].properties: Required value: must "
                  "not be empty if x-kubernetes-embedded-resource is true without "
                  "x-kubernetes-preserve-unknown-fields"});
    EXPECT_EQ(structural(R"({"type":"object","properties":{"e":{"type":"string",
        "x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[e].type: Invalid value: \"string\": "
                  "must be object if x-kubernetes-embedded-resource is true"});
}

TEST(StructuralSchema, UniqueItemsIsForbidden) {
    EXPECT_EQ(structural(R"({"type":"object","properties":{"l":{"type":"array","uniqueItems":true,
        "items":{"type":"string"}}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[l].uniqueItems: Forbidden: "
                  "uniqueItems cannot be set to true since the runtime complexity becomes "
                  "quadratic"});
}

TEST(StructuralSchema, PreserveUnknownFieldsFalseIsInvalid) {
    EXPECT_EQ(structural(R"({"type":"object","x-kubernetes-preserve-unknown-fields":false})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.x-kubernetes-preserve-unknown-fields: Invalid "
                  "value: false: must be true or undefined"});
}

TEST(StructuralSchema, IntOrStringConflictsWithPreserveUnknown) {
    EXPECT_EQ(structural(R"({"type":"object","properties":{"v":{"x-kubernetes-int-or-string":true,
        "x-kubernetes-preserve-unknown-fields":true}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[v].x-kubernetes-preserve-unknown-"
                  "fields: Invalid value: true: must be false if x-kubernetes-int-or-string is "
                  "true"});
}

TEST(StructuralSchema, ListTypeMapNeedsKeys) {
    EXPECT_EQ(structural(R"({"type":"object","properties":{"l":{"type":"array",
        "x-kubernetes-list-type":"map","items":{"type":"object"}}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[l].x-kubernetes-list-map-keys: "
                  "Required value: must not be empty if x-kubernetes-list-type is map"});
}

TEST(StructuralSchema, InvalidPatternIsReported) {
    auto errors =
        structural(R"({"type":"object","properties":{"s":{"type":"string","pattern":"(a"}}})");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].rfind("spec.validation.openAPIV3Schema.properties[s].pattern: Invalid "
                              "value: \"(a\": must be a valid regular expression, but isn't: ",
                              0),
              0u);
}

TEST(StructuralSchema, Re2OnlyPatternSpellingsAreAccepted) {
    EXPECT_TRUE(structural(R"({"type":"object","properties":{"s":{"type":"string",
        "pattern":"(?i)^(?P<word>[a-z]+)\\z"}}})")
                    .empty());
    EXPECT_TRUE(check(R"({"s":"ABC"})", R"({"type":"object","properties":{"s":{"type":"string",
        "pattern":"(?i)^(?P<word>[a-z]+)\\z"}}})")
                    .empty());
}

TEST(StructuralSchema, DefaultsMustValidate) {
    EXPECT_EQ(
        structural(R"({"type":"object","properties":{"n":{"type":"integer","default":"x"}}})"),
        std::vector<std::string>{
            "spec.validation.openAPIV3Schema.properties[n].default: Invalid value: "
            "\"string\":  in body must be of type integer: \"string\""});
}

TEST(StructuralSchema, DefaultsMustBePruned) {
    EXPECT_EQ(structural(R"({"type":"object","properties":{"o":{"type":"object",
        "properties":{"a":{"type":"string"}},"default":{"a":"x","b":1}}}})"),
              std::vector<std::string>{
                  "spec.validation.openAPIV3Schema.properties[o].default: Invalid value: "
                  "{\"a\":\"x\",\"b\":1}: must not have unknown fields"});
}

TEST(StructuralSchema, UnsupportedOpenApiKeywords) {
    EXPECT_EQ(
        structural(R"({"type":"object","properties":{"r":{"$ref":"#/x"},
        "n":{"type":"null"},"l":{"type":"array","items":[{"type":"string"}]},
        "p":{"type":"object","patternProperties":{"a":{}}}}})"),
        (std::vector<std::string>{
            "spec.validation.openAPIV3Schema.properties[l].items: Forbidden: items must be a "
            "schema object and not an array",
            "spec.validation.openAPIV3Schema.properties[l].items: Required value: must be "
            "specified",
            "spec.validation.openAPIV3Schema.properties[n].type: Forbidden: type cannot be "
            "set to null, use nullable as an alternative",
            "spec.validation.openAPIV3Schema.properties[n].type: Unsupported value: \"null\": "
            "supported values: \"array\", \"boolean\", \"integer\", \"number\", "
            "\"object\", \"string\"",
            "spec.validation.openAPIV3Schema.properties[p].patternProperties: Forbidden: "
            "patternProperties is not supported",
            "spec.validation.openAPIV3Schema.properties[r].$ref: Forbidden: $ref is not "
            "supported",
            "spec.validation.openAPIV3Schema.properties[r].type: Required value: must not be "
            "empty for specified object fields"}));
}

TEST(StructuralSchema, NonObjectSchemaIsAnError) {
    EXPECT_EQ(structural("5").size(), 1u);
}

// ------------------------------------------------------------------ pruning

TEST(Pruning, UnknownFieldsAreDroppedAndReported) {
    json object = json::parse(R"({"apiVersion":"example.com/v1","kind":"Widget",
        "metadata":{"name":"w","junk":1},
        "spec":{"size":2,"extra":true,"tags":["a"]},"top":1})");
    auto unknown = prune(object, json::parse(kWidgetSchema));
    EXPECT_EQ(unknown, (std::vector<std::string>{"metadata.junk", "spec.extra", "top"}));
    EXPECT_EQ(object, json::parse(R"({"apiVersion":"example.com/v1","kind":"Widget",
        "metadata":{"name":"w"},"spec":{"size":2,"tags":["a"]}})"));
}

TEST(Pruning, PreserveUnknownFieldsKeepsEverythingBelow) {
    json object =
        json::parse(R"({"status":{"kopf":{"progress":{"h1":{"retries":1}}},"x":[1,{"y":2}]}})");
    const json expected = object;
    EXPECT_TRUE(prune(object, json::parse(kWidgetSchema)).empty());
    EXPECT_EQ(object, expected);
}

TEST(Pruning, PreservedNodeStillPrunesItsDeclaredProperties) {
    json object = json::parse(R"({"spec":{"config":{"mode":"a","free":{"z":1},
        "strict":{"on":true,"off":false}}}})");
    auto unknown = prune(object, json::parse(kWidgetSchema));
    EXPECT_EQ(unknown, std::vector<std::string>{"spec.config.strict.off"});
    EXPECT_EQ(object["spec"]["config"],
              json::parse(R"({"mode":"a","free":{"z":1},"strict":{"on":true}})"));
}

TEST(Pruning, PreserveUnknownWithoutTypeKeepsScalarsAndObjects) {
    json object = json::parse(R"({"spec":{"anything":{"deep":{"er":[1,2]}}}})");
    EXPECT_TRUE(prune(object, json::parse(kWidgetSchema)).empty());
    EXPECT_EQ(object["spec"]["anything"]["deep"]["er"], json::parse("[1,2]"));
}

TEST(Pruning, RootPreserveUnknownFieldsKeepsEverything) {
    json object = json::parse(R"({"spec":{"a":1},"other":{"b":2}})");
    EXPECT_TRUE(
        prune(object,
              json::parse(R"({"type":"object","x-kubernetes-preserve-unknown-fields":true})"))
            .empty());
    EXPECT_EQ(object["other"]["b"], 2);
}

TEST(Pruning, AdditionalPropertiesPruneMapValues) {
    json object = json::parse(R"({"spec":{"labels":{"a":"x","b":"y"}}})");
    EXPECT_TRUE(prune(object, json::parse(kWidgetSchema)).empty());
    EXPECT_EQ(object["spec"]["labels"].size(), 2u);

    json nested = json::parse(R"({"m":{"k1":{"keep":1,"drop":2}}})");
    auto unknown = prune(nested, json::parse(R"({"type":"object","properties":{"m":{"type":"object",
        "additionalProperties":{"type":"object","properties":{"keep":{"type":"integer"}}}}}})"));
    EXPECT_EQ(unknown, std::vector<std::string>{"m.k1.drop"});
    EXPECT_EQ(nested, json::parse(R"({"m":{"k1":{"keep":1}}})"));
}

TEST(Pruning, EmbeddedResourcesKeepTypeMetaAndCoerceMetadata) {
    json object = json::parse(R"({"spec":{"template":{"apiVersion":"v1","kind":"Pod",
        "metadata":{"name":"p","labels":{"a":"b"},"bogus":1},"spec":{"x":"1","y":"2"},"extra":3}}})");
    auto unknown = prune(object, json::parse(kWidgetSchema));
    EXPECT_EQ(unknown,
              (std::vector<std::string>{"spec.template.extra", "spec.template.metadata.bogus",
                                        "spec.template.spec.y"}));
    EXPECT_EQ(object["spec"]["template"], json::parse(R"({"apiVersion":"v1","kind":"Pod",
        "metadata":{"name":"p","labels":{"a":"b"}},"spec":{"x":"1"}})"));
}

TEST(Pruning, ArrayItemsArePrunedWithIndexedPaths) {
    json object = json::parse(R"({"items":[{"a":1,"b":2},{"b":3}]})");
    auto unknown =
        prune(object, json::parse(R"({"type":"object","properties":{"items":{"type":"array",
        "items":{"type":"object","properties":{"a":{"type":"integer"}}}}}})"));
    EXPECT_EQ(unknown, (std::vector<std::string>{"items[0].b", "items[1].b"}));
    EXPECT_EQ(object, json::parse(R"({"items":[{"a":1},{}]})"));
}

TEST(Pruning, BooleanAdditionalPropertiesKeepKeysButNotNestedFields) {
    json object = json::parse(R"({"m":{"a":1,"b":{"c":2}}})");
    auto unknown = prune(
        object,
        json::parse(
            R"({"type":"object","properties":{"m":{"type":"object","additionalProperties":true}}})"));
    EXPECT_EQ(unknown, std::vector<std::string>{"m.b.c"});
    EXPECT_EQ(object, json::parse(R"({"m":{"a":1,"b":{}}})"));
}

TEST(Pruning, NullsOfNonNullableFieldsWithoutDefaultsAreDropped) {
    json object = json::parse(R"({"spec":{"color":null,"size":null,"tags":null}})");
    prune(object, json::parse(kWidgetSchema));
    // size has a default (kept for defaulting), the others are dropped.
    EXPECT_EQ(object, json::parse(R"({"spec":{"size":null}})"));
    json nullable = json::parse(R"({"n":null})");
    prune(nullable,
          json::parse(R"({"type":"object","properties":{"n":{"type":"string","nullable":true}}})"));
    EXPECT_EQ(nullable, json::parse(R"({"n":null})"));
}

TEST(Pruning, NullInsidePreservedMapSurvives) {
    json object = json::parse(R"({"status":{"peer-1":null}})");
    prune(object, json::parse(kWidgetSchema));
    EXPECT_TRUE(object["status"].contains("peer-1"));
}

// ------------------------------------------------------------------ defaulting

TEST(Defaulting, MissingFieldsGetDefaults) {
    json object = json::parse(R"({"spec":{}})");
    apply_defaults(object, json::parse(kWidgetSchema));
    EXPECT_EQ(object["spec"]["size"], 1);
}

TEST(Defaulting, PresentValuesAreKept) {
    json object = json::parse(R"({"spec":{"size":5}})");
    apply_defaults(object, json::parse(kWidgetSchema));
    EXPECT_EQ(object["spec"]["size"], 5);
}

TEST(Defaulting, NestedDefaultsNeedAnExistingParent) {
    json object = json::object();
    apply_defaults(object, json::parse(kWidgetSchema));
    EXPECT_EQ(object, json::object());
}

TEST(Defaulting, DefaultedParentMaterialisesNestedDefaults) {
    const json schema = json::parse(R"({"type":"object","properties":{"spec":{"type":"object",
        "default":{},"properties":{"a":{"type":"object","default":{"x":1},
        "properties":{"x":{"type":"integer"},"y":{"type":"string","default":"z"}}}}}}})");
    json object = json::object();
    apply_defaults(object, schema);
    EXPECT_EQ(object, json::parse(R"({"spec":{"a":{"x":1,"y":"z"}}})"));
}

TEST(Defaulting, ArrayItemsAreDefaulted) {
    const json schema = json::parse(R"({"type":"object","properties":{"l":{"type":"array",
        "items":{"type":"object","properties":{"p":{"type":"integer","default":80}}}}}})");
    json object = json::parse(R"({"l":[{},{"p":1}]})");
    apply_defaults(object, schema);
    EXPECT_EQ(object, json::parse(R"({"l":[{"p":80},{"p":1}]})"));
}

TEST(Defaulting, NullItemsAndMapValuesTakeTheDefault) {
    const json schema = json::parse(R"({"type":"object","properties":{
        "l":{"type":"array","items":{"type":"string","default":"d"}},
        "m":{"type":"object","additionalProperties":{"type":"integer","default":7}}}})");
    json object = json::parse(R"({"l":["a",null],"m":{"k":null}})");
    apply_defaults(object, schema);
    EXPECT_EQ(object, json::parse(R"({"l":["a","d"],"m":{"k":7}})"));
}

TEST(Defaulting, NullOfNonNullableFieldIsReplaced) {
    json object = json::parse(R"({"spec":{"size":null}})");
    apply_defaults(object, json::parse(kWidgetSchema));
    EXPECT_EQ(object["spec"]["size"], 1);
}

TEST(Defaulting, NullOfNullableFieldIsKept) {
    const json schema = json::parse(
        R"({"type":"object","properties":{"n":{"type":"string","nullable":true,"default":"x"}}})");
    json object = json::parse(R"({"n":null})");
    apply_defaults(object, schema);
    EXPECT_TRUE(object["n"].is_null());
}

// ------------------------------------------------------------------ validation

TEST(Validation, ValidObjectHasNoErrors) {
    EXPECT_TRUE(check(R"({"spec":{"size":3,"color":"red","tags":["a"]}})", kWidgetSchema).empty());
}

TEST(Validation, WrongTypeNamesTheActualType) {
    auto errors = validate(json::parse(R"({"spec":{"size":"big"}})"), json::parse(kWidgetSchema));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].reason, "FieldValueTypeInvalid");
    EXPECT_EQ(errors[0].field, "spec.size");
    EXPECT_EQ(errors[0].to_string(),
              "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: "
              "\"string\"");
}

TEST(Validation, IntegralFloatsAreIntegers) {
    EXPECT_TRUE(check(R"({"n":2.0})", R"({"type":"object","properties":{"n":{"type":"integer"}}})")
                    .empty());
    EXPECT_EQ(check(R"({"n":2.5})", R"({"type":"object","properties":{"n":{"type":"integer"}}})"),
              std::vector<std::string>{
                  "n: Invalid value: \"number\": n in body must be of type integer: \"number\""});
    EXPECT_TRUE(
        check(R"({"n":2})", R"({"type":"object","properties":{"n":{"type":"number"}}})").empty());
}

TEST(Validation, Minimum) {
    EXPECT_EQ(check(R"({"spec":{"size":-1}})", kWidgetSchema),
              std::vector<std::string>{"spec.size: Invalid value: -1: spec.size in body should be "
                                       "greater than or equal to 0"});
}

TEST(Validation, ExclusiveBoundsAndMaximum) {
    const char* schema = R"({"type":"object","properties":{"n":{"type":"number",
        "minimum":1,"exclusiveMinimum":true,"maximum":2.5,"exclusiveMaximum":true}}})";
    EXPECT_EQ(check(R"({"n":1})", schema),
              std::vector<std::string>{"n: Invalid value: 1: n in body should be greater than 1"});
    EXPECT_EQ(check(R"({"n":2.5})", schema),
              std::vector<std::string>{"n: Invalid value: 2.5: n in body should be less than 2.5"});
    EXPECT_EQ(check(R"({"n":7})",
                    R"({"type":"object","properties":{"n":{"type":"integer","maximum":5}}})"),
              std::vector<std::string>{
                  "n: Invalid value: 7: n in body should be less than or equal to 5"});
}

TEST(Validation, MultipleOf) {
    EXPECT_EQ(check(R"({"n":7})",
                    R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":5}}})"),
              std::vector<std::string>{"n: Invalid value: 7: n in body should be a multiple of 5"});
    EXPECT_TRUE(check(R"({"n":10})",
                      R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":5}}})")
                    .empty());
}

TEST(Validation, EnumListsSupportedValues) {
    auto errors =
        validate(json::parse(R"({"spec":{"color":"green"}})"), json::parse(kWidgetSchema));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].reason, "FieldValueNotSupported");
    EXPECT_EQ(errors[0].to_string(),
              "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"");
    EXPECT_EQ(check(R"({"n":3})",
                    R"({"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}})"),
              std::vector<std::string>{"n: Unsupported value: 3: supported values: \"1\", \"2\""});
}

TEST(Validation, StringLengthAndPattern) {
    const char* schema = R"({"type":"object","properties":{"s":{"type":"string",
        "minLength":2,"maxLength":4,"pattern":"^[a-z]+$"}}})";
    EXPECT_EQ(check(R"({"s":"abcde"})", schema),
              std::vector<std::string>{"s: Too long: may not be more than 4 bytes"});
    EXPECT_EQ(check(R"({"s":"a"})", schema),
              std::vector<std::string>{
                  "s: Invalid value: \"a\": s in body should be at least 2 chars long"});
    EXPECT_EQ(
        check(R"({"s":"AB"})", schema),
        std::vector<std::string>{"s: Invalid value: \"AB\": s in body should match '^[a-z]+$'"});
    EXPECT_TRUE(check(R"({"s":"héé"})", schema).size() == 1u);  // runes counted, pattern fails
}

TEST(Validation, PatternOnVeryLongStringsDoesNotCrash) {
    const char* schema =
        R"({"type":"object","properties":{"s":{"type":"string","pattern":"^(a|b)*$"}}})";
    json object = {{"s", std::string(200000, 'a')}};
    EXPECT_TRUE(validate(object, json::parse(schema)).empty());
    object["s"] = std::string(200000, 'a') + "c";
    EXPECT_EQ(validate(object, json::parse(schema)).size(), 1u);
}

TEST(Validation, ItemsCountAndUniqueness) {
    const char* schema = R"({"type":"object","properties":{"l":{"type":"array","minItems":1,
        "maxItems":2,"uniqueItems":true,"items":{"type":"integer"}}}})";
    EXPECT_EQ(
        check(R"({"l":[]})", schema),
        std::vector<std::string>{"l: Invalid value: 0: l in body should have at least 1 items"});
    EXPECT_EQ(check(R"({"l":[1,2,3]})", schema),
              std::vector<std::string>{"l: Too many: 3: must have at most 2 items"});
    EXPECT_EQ(
        check(R"({"l":[1,1]})", schema),
        std::vector<std::string>{"l: Invalid value: \"\": l in body shouldn't contain duplicates"});
}

TEST(Validation, ItemErrorsCarryIndexes) {
    EXPECT_EQ(check(R"({"spec":{"tags":["a",5]}})", kWidgetSchema),
              std::vector<std::string>{"spec.tags[1]: Invalid value: \"integer\": spec.tags[1] in "
                                       "body must be of type string: \"integer\""});
}

TEST(Validation, PropertiesCount) {
    const char* schema = R"({"type":"object","properties":{"m":{"type":"object","minProperties":1,
        "maxProperties":2,"additionalProperties":{"type":"string"}}}})";
    EXPECT_EQ(check(R"({"m":{}})", schema),
              std::vector<std::string>{
                  "m: Invalid value: 0: m in body should have at least 1 properties"});
    EXPECT_EQ(check(R"({"m":{"a":"1","b":"2","c":"3"}})", schema),
              std::vector<std::string>{"m: Too many: 3: must have at most 2 items"});
}

TEST(Validation, RequiredFields) {
    const char* schema =
        R"({"type":"object","required":["spec"],"properties":{"spec":{"type":"object",
        "required":["name"],"properties":{"name":{"type":"string"}}}}})";
    EXPECT_EQ(check(R"({})", schema), std::vector<std::string>{"spec: Required value"});
    auto errors = validate(json::parse(R"({"spec":{}})"), json::parse(schema));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].reason, "FieldValueRequired");
    EXPECT_EQ(errors[0].to_string(), "spec.name: Required value");
}

TEST(Validation, AdditionalPropertiesValidateMapValues) {
    EXPECT_EQ(
        check(R"({"spec":{"labels":{"a":1}}})", kWidgetSchema),
        std::vector<std::string>{"spec.labels.a: Invalid value: \"integer\": spec.labels.a in "
                                 "body must be of type string: \"integer\""});
}

TEST(Validation, AdditionalPropertiesFalseForbidsKeys) {
    EXPECT_EQ(
        check(
            R"({"m":{"x":1}})",
            R"({"type":"object","properties":{"m":{"type":"object","additionalProperties":false}}})"),
        std::vector<std::string>{"m: Invalid value: \"x\": m.x in body is a forbidden property"});
}

TEST(Validation, NullableAllowsNull) {
    EXPECT_TRUE(check(R"({"n":null})",
                      R"({"type":"object","properties":{"n":{"type":"string","nullable":true}}})")
                    .empty());
    EXPECT_EQ(check(R"({"n":null})", R"({"type":"object","properties":{"n":{"type":"string"}}})"),
              std::vector<std::string>{
                  "n: Invalid value: \"null\": n in body must be of type string: \"null\""});
}

TEST(Validation, IntOrString) {
    const char* schema =
        R"({"type":"object","properties":{"port":{"x-kubernetes-int-or-string":true}}})";
    EXPECT_TRUE(check(R"({"port":80})", schema).empty());
    EXPECT_TRUE(check(R"({"port":"http"})", schema).empty());
    EXPECT_EQ(check(R"({"port":true})", schema),
              std::vector<std::string>{"port: Invalid value: \"boolean\": port in body must be of "
                                       "type integer,string: \"boolean\""});
}

TEST(Validation, AnyOf) {
    const char* schema = R"({"type":"object","properties":{"s":{"type":"string",
        "anyOf":[{"minLength":3},{"pattern":"^x"}]}}})";
    EXPECT_TRUE(check(R"({"s":"xy"})", schema).empty());
    auto errors = check(R"({"s":"ab"})", schema);
    ASSERT_FALSE(errors.empty());
    EXPECT_EQ(errors[0],
              "<nil>: Invalid value: \"\": \"s\" must validate at least one schema (anyOf)");
}

TEST(Validation, OneOf) {
    const char* schema = R"({"type":"object","properties":{"n":{"type":"integer",
        "oneOf":[{"minimum":0},{"maximum":10}]}}})";
    EXPECT_TRUE(check(R"({"n":-5})", schema).empty());
    EXPECT_EQ(
        check(R"({"n":5})", schema),
        std::vector<std::string>{"<nil>: Invalid value: \"\": \"n\" must validate one and only "
                                 "one schema (oneOf). Found 2 valid alternatives"});
}

TEST(Validation, AllOf) {
    const char* schema = R"({"type":"object","properties":{"n":{"type":"integer",
        "allOf":[{"minimum":0},{"maximum":10}]}}})";
    EXPECT_TRUE(check(R"({"n":5})", schema).empty());
    EXPECT_EQ(check(R"({"n":11})", schema),
              (std::vector<std::string>{
                  "n: Invalid value: 11: n in body should be less than or equal to 10",
                  "<nil>: Invalid value: \"\": \"n\" must validate all the schemas (allOf)"}));
}

TEST(Validation, Not) {
    const char* schema =
        R"({"type":"object","properties":{"s":{"type":"string","not":{"enum":["root"]}}}})";
    EXPECT_TRUE(check(R"({"s":"user"})", schema).empty());
    EXPECT_EQ(check(R"({"s":"root"})", schema),
              std::vector<std::string>{
                  "<nil>: Invalid value: \"\": \"s\" must not validate the schema (not)"});
}

TEST(Validation, Formats) {
    const auto fmt = [](const char* format, const char* value) {
        return check(
            std::string(R"({"v":")") + value + "\"}",
            std::string(R"({"type":"object","properties":{"v":{"type":"string","format":")") +
                format + "\"}}}");
    };
    EXPECT_TRUE(fmt("date-time", "2024-01-02T03:04:05Z").empty());
    EXPECT_EQ(fmt("date-time", "yesterday"),
              std::vector<std::string>{"v: Invalid value: \"yesterday\": v in body must be of type "
                                       "date-time: \"yesterday\""});
    EXPECT_TRUE(fmt("date", "2024-02-29").empty());
    EXPECT_EQ(fmt("date", "2024-13-01").size(), 1u);
    EXPECT_TRUE(fmt("uuid", "123e4567-e89b-12d3-a456-426614174000").empty());
    EXPECT_EQ(fmt("uuid", "nope").size(), 1u);
    EXPECT_TRUE(fmt("ipv4", "10.0.0.1").empty());
    EXPECT_EQ(fmt("ipv4", "10.0.0.300").size(), 1u);
    EXPECT_TRUE(fmt("ipv6", "fd00::1").empty());
    EXPECT_TRUE(fmt("cidr", "10.0.0.0/8").empty());
    EXPECT_EQ(fmt("cidr", "10.0.0.0/33").size(), 1u);
    EXPECT_TRUE(fmt("hostname", "example.com").empty());
    EXPECT_TRUE(fmt("byte", "aGVsbG8=").empty());
    EXPECT_EQ(fmt("byte", "not base64!").size(), 1u);
    EXPECT_TRUE(fmt("duration", "1h30m").empty());
    EXPECT_TRUE(fmt("unknown-format", "anything").empty());
    EXPECT_TRUE(fmt("uuid", "123E4567E89B12D3A456426614174000").empty());  // case, no dashes
    EXPECT_EQ(fmt("uuid4", "123e4567-e89b-12d3-a456-426614174000").size(), 1u);
    EXPECT_TRUE(fmt("datetime", "2024-01-02T03:04:05.123+0100").empty());
    EXPECT_TRUE(fmt("k8s-short-name", "my-name").empty());
    EXPECT_EQ(fmt("k8s-short-name", "My-Name").size(), 1u);
    EXPECT_TRUE(fmt("duration", "22 ns").empty());
    EXPECT_TRUE(fmt("mac", "00:1a:2b:3c:4d:5e").empty());
    EXPECT_TRUE(fmt("email", "a@example.com").empty());
}

TEST(Validation, FormatsOnlyApplyToStrings) {
    EXPECT_TRUE(check(R"({"n":5})",
                      R"({"type":"object","properties":{"n":{"type":"integer","format":"int32"}}})")
                    .empty());
}

TEST(Validation, ListTypeSetAndMapUniqueness) {
    EXPECT_EQ(check(R"({"l":["a","b","a"]})", R"({"type":"object","properties":{"l":{"type":"array",
        "x-kubernetes-list-type":"set","items":{"type":"string"}}}})"),
              std::vector<std::string>{"l[2]: Duplicate value: \"a\""});
    EXPECT_EQ(check(R"({"l":[{"k":"a","v":1},{"k":"a","v":2}]})", R"({"type":"object","properties":{
        "l":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],
        "items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"integer"}}}}}})"),
              std::vector<std::string>{"l[1]: Duplicate value: {\"k\":\"a\"}"});
}

TEST(Validation, PreservedFieldsAreNotTypeChecked) {
    EXPECT_TRUE(check(R"({"spec":{"anything":[1,"x",{"a":null}]}})", kWidgetSchema).empty());
}

TEST(Validation, EmbeddedResourcesNeedTypeMeta) {
    EXPECT_EQ(check(R"({"spec":{"template":{"spec":{"x":"1"}}}})", kWidgetSchema),
              (std::vector<std::string>{"spec.template.apiVersion: Required value",
                                        "spec.template.kind: Required value"}));
}

TEST(Validation, EmbeddedResourceKindAndMetadataAreChecked) {
    auto errors = check(R"({"spec":{"template":{"apiVersion":"a/b/c","kind":"My_Kind",
        "metadata":{"name":"x/y","labels":{"k":"-v"}}}}})",
                        kWidgetSchema);
    ASSERT_EQ(errors.size(), 4u);
    EXPECT_EQ(errors[0],
              "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected "
              "GroupVersion string: a/b/c");
    EXPECT_EQ(errors[1].rfind("spec.template.kind: Invalid value: \"My_Kind\": may have mixed "
                              "case, but should otherwise match: a DNS-1035 label",
                              0),
              0u);
    EXPECT_EQ(errors[2],
              "spec.template.metadata.name: Invalid value: \"x/y\": may not contain '/'");
    EXPECT_EQ(errors[3].rfind("spec.template.metadata.labels: Invalid value: \"-v\"", 0), 0u);
}

TEST(Validation, TheRootIsNotCheckedAsAnEmbeddedResource) {
    EXPECT_TRUE(check(R"({"spec":{}})", kWidgetSchema).empty());
}

TEST(Validation, RootTypeMismatchUsesNilField) {
    EXPECT_EQ(check(R"([1])", R"({"type":"object"})"),
              std::vector<std::string>{
                  "<nil>: Invalid value: \"array\":  in body must be of type object: \"array\""});
}

// ------------------------------------------------------------------ robustness

namespace {

// Random JSON biased towards schema keywords, so that malformed schemas reach every branch.
json random_json(std::mt19937& random, int depth) {
    static const char* keys[] = {"type",
                                 "properties",
                                 "items",
                                 "additionalProperties",
                                 "required",
                                 "enum",
                                 "default",
                                 "nullable",
                                 "minimum",
                                 "maximum",
                                 "exclusiveMinimum",
                                 "multipleOf",
                                 "minLength",
                                 "maxLength",
                                 "pattern",
                                 "format",
                                 "minItems",
                                 "maxItems",
                                 "uniqueItems",
                                 "minProperties",
                                 "maxProperties",
                                 "allOf",
                                 "anyOf",
                                 "oneOf",
                                 "not",
                                 "x-kubernetes-preserve-unknown-fields",
                                 "x-kubernetes-embedded-resource",
                                 "x-kubernetes-int-or-string",
                                 "x-kubernetes-list-type",
                                 "x-kubernetes-list-map-keys",
                                 "metadata",
                                 "apiVersion",
                                 "kind",
                                 "spec",
                                 "a"};
    static const char* strings[] = {"object",  "array", "string", "integer",   "number",
                                    "boolean", "set",   "map",    "date-time", "uuid",
                                    "^a+$",    "(",     "a",      ""};
    const int choice = static_cast<int>(random() % (depth > 3 ? 6 : 9));
    switch (choice) {
        case 0:
            return nullptr;
        case 1:
            return random() % 2 == 0;
        case 2:
            return static_cast<int>(random() % 20) - 5;
        case 3:
            return (static_cast<double>(random() % 1000) - 100) / 7.0;
        case 4:
        case 5:
            return strings[random() % (sizeof strings / sizeof *strings)];
        case 6: {
            json array = json::array();
            for (int i = static_cast<int>(random() % 4); i > 0; --i) {
                array.push_back(random_json(random, depth + 1));
            }
            return array;
        }
        default: {
            json object = json::object();
            for (int i = static_cast<int>(random() % 5); i > 0; --i) {
                object[keys[random() % (sizeof keys / sizeof *keys)]] =
                    random_json(random, depth + 1);
            }
            return object;
        }
    }
}

}  // namespace

TEST(SchemaRobustness, RandomSchemasAndObjectsNeverThrowOrCrash) {
    std::mt19937 random(2024);
    for (int round = 0; round < 3000; ++round) {
        const json schema = random_json(random, 0);
        json object = random_json(random, 0);
        EXPECT_NO_THROW({
            validate_structural_schema(schema, "s");
            prune(object, schema);
            apply_defaults(object, schema);
            validate(object, schema);
        }) << schema.dump()
           << "\n"
           << object.dump();
    }
}
