// Names, labels, annotations and object metadata: what kube-apiserver rejects and the
// exact messages (apimachinery validation) clients print.
#include "util/validation.hpp"

#include <gtest/gtest.h>

#include "util/go_format.hpp"

using namespace kopf::apiserver;
using nlohmann::json;

namespace {

const std::string kSubdomainMessage =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const std::string kLabelMessage =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

const std::string kNamePartMessage =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

std::vector<std::string> texts(const std::vector<FieldError>& errors) {
    std::vector<std::string> out;
    for (const auto& e : errors) out.push_back(e.to_string());
    return out;
}

json meta(const std::string& text) {
    return json::parse(text);
}

}  // namespace

// ------------------------------------------------------------------ DNS names

TEST(Dns1123Subdomain, AcceptsDottedLowercaseNames) {
    EXPECT_TRUE(validate_dns1123_subdomain("example.com").empty());
    EXPECT_TRUE(validate_dns1123_subdomain("a").empty());
    EXPECT_TRUE(validate_dns1123_subdomain("my-app-1.v2").empty());
}

TEST(Dns1123Subdomain, RejectsUppercaseWithTheUpstreamMessage) {
    EXPECT_EQ(validate_dns1123_subdomain("Example"), std::vector<std::string>{kSubdomainMessage});
}

TEST(Dns1123Subdomain, RejectsBadEdgesAndEmptyParts) {
    for (const char* bad : {"", "-a", "a-", "a..b", ".a", "a.", "a_b"}) {
        EXPECT_EQ(validate_dns1123_subdomain(bad).size(), 1u) << bad;
    }
}

TEST(Dns1123Subdomain, LengthLimit253) {
    std::string name(250, 'a');
    name += ".bc";
    EXPECT_TRUE(validate_dns1123_subdomain(name).empty());
    name += "d";
    EXPECT_EQ(validate_dns1123_subdomain(name),
              std::vector<std::string>{"must be no more than 253 characters"});
}

TEST(Dns1123Label, RejectsDotsWithAShortMessage) {
    EXPECT_EQ(validate_dns1123_label("a.b"), std::vector<std::string>{"must not contain dots"});
}

TEST(Dns1123Label, RejectsOtherCharactersWithTheRegexMessage) {
    EXPECT_EQ(validate_dns1123_label("A"), std::vector<std::string>{kLabelMessage});
}

TEST(Dns1123Label, LengthLimit63) {
    EXPECT_TRUE(validate_dns1123_label(std::string(63, 'a')).empty());
    EXPECT_EQ(validate_dns1123_label(std::string(64, 'a')),
              std::vector<std::string>{"must be no more than 63 characters"});
}

TEST(Dns1035Label, MustStartWithALetter) {
    EXPECT_TRUE(validate_dns1035_label("widgets").empty());
    EXPECT_EQ(validate_dns1035_label("1widgets"),
              std::vector<std::string>{
                  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                  "start with an alphabetic character, and end with an alphanumeric character "
                  "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                  "'[a-z]([-a-z0-9]*[a-z0-9])?')"});
}

TEST(PathSegmentName, DotsSlashesAndPercent) {
    EXPECT_EQ(validate_path_segment_name("."), std::vector<std::string>{"may not be '.'"});
    EXPECT_EQ(validate_path_segment_name(".."), std::vector<std::string>{"may not be '..'"});
    EXPECT_EQ(validate_path_segment_name("a/b%c"),
              (std::vector<std::string>{"may not contain '/'", "may not contain '%'"}));
    EXPECT_TRUE(validate_path_segment_name("Any_Thing:1").empty());
}

// ------------------------------------------------------------------ qualified names and values

TEST(QualifiedName, AcceptsPrefixedAndPlainKeys) {
    EXPECT_TRUE(validate_qualified_name("app").empty());
    EXPECT_TRUE(validate_qualified_name("kopf.zalando.org/last-handled-configuration").empty());
    EXPECT_TRUE(validate_qualified_name("My_Key.1").empty());
}

TEST(QualifiedName, BadNamePart) {
    EXPECT_EQ(validate_qualified_name("-x"), std::vector<std::string>{kNamePartMessage});
}

TEST(QualifiedName, EmptyPrefixAndName) {
    EXPECT_EQ(validate_qualified_name("/"),
              (std::vector<std::string>{"prefix part must be non-empty",
                                        "name part must be non-empty", kNamePartMessage}));
}

TEST(QualifiedName, BadPrefixIsReportedAsPrefixPart) {
    EXPECT_EQ(validate_qualified_name("Example.com/x"),
              std::vector<std::string>{"prefix part " + kSubdomainMessage});
}

TEST(QualifiedName, TooManySlashes) {
    EXPECT_EQ(validate_qualified_name("a/b/c"),
              std::vector<std::string>{
                  "a valid label key must consist of alphanumeric characters, '-', '_' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                  "'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                  "prefix and '/' (e.g. 'example.com/MyName')"});
}

TEST(QualifiedName, NamePartLengthLimit) {
    EXPECT_EQ(validate_qualified_name(std::string(64, 'a')),
              std::vector<std::string>{"name part must be no more than 63 bytes"});
}

TEST(LabelValue, EmptyIsValidAndEdgesMatter) {
    EXPECT_TRUE(validate_label_value("").empty());
    EXPECT_TRUE(validate_label_value("v1.2_3-x").empty());
    EXPECT_EQ(validate_label_value("x-").size(), 1u);
    EXPECT_EQ(validate_label_value(std::string(64, 'a')),
              std::vector<std::string>{"must be no more than 63 bytes"});
}

// ------------------------------------------------------------------ object metadata

TEST(ObjectMeta, ValidMetadataHasNoErrors) {
    EXPECT_TRUE(validate_object_meta(meta(R"({"name":"w1","namespace":"default",
        "labels":{"app":"web"},"annotations":{"Kopf.dev/X":"any value at all"},
        "finalizers":["kopf.zalando.org/KopfFinalizerMarker"],
        "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}]})"),
                                     "subdomain", true)
                    .empty());
}

TEST(ObjectMeta, NameOrGenerateNameRequired) {
    EXPECT_EQ(texts(validate_object_meta(meta(R"({"namespace":"ns"})"), "subdomain", true)),
              std::vector<std::string>{
                  "metadata.name: Required value: name or generateName is required"});
}

TEST(ObjectMeta, InvalidNameQuotesTheValue) {
    auto errors =
        validate_object_meta(meta(R"({"name":"Bad_Name","namespace":"ns"})"), "subdomain", true);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].reason, "FieldValueInvalid");
    EXPECT_EQ(errors[0].field, "metadata.name");
    EXPECT_EQ(errors[0].to_string(),
              "metadata.name: Invalid value: \"Bad_Name\": " + kSubdomainMessage);
}

TEST(ObjectMeta, NamespaceNamesUseTheLabelRule) {
    auto errors = validate_object_meta(meta(R"({"name":"a.b"})"), "label", false);
    EXPECT_EQ(texts(errors), std::vector<std::string>{
                                 "metadata.name: Invalid value: \"a.b\": must not contain dots"});
}

TEST(ObjectMeta, GenerateNameMayEndWithDash) {
    EXPECT_TRUE(
        validate_object_meta(meta(R"({"name":"ev-abcde","generateName":"ev-","namespace":"n"})"),
                             "subdomain", true)
            .empty());
    auto errors = validate_object_meta(meta(R"({"name":"x","generateName":"Ev-","namespace":"n"})"),
                                       "subdomain", true);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].field, "metadata.generateName");
}

TEST(ObjectMeta, NamespaceRequiredForNamespacedKinds) {
    EXPECT_EQ(texts(validate_object_meta(meta(R"({"name":"a"})"), "subdomain", true)),
              std::vector<std::string>{"metadata.namespace: Required value"});
}

TEST(ObjectMeta, NamespaceForbiddenOnClusterScopedKinds) {
    auto errors = validate_object_meta(meta(R"({"name":"a","namespace":"x"})"), "subdomain", false);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].reason, "FieldValueForbidden");
    EXPECT_EQ(errors[0].to_string(), "metadata.namespace: Forbidden: not allowed on this type");
}

TEST(ObjectMeta, NegativeGeneration) {
    EXPECT_EQ(
        texts(validate_object_meta(meta(R"({"name":"a","generation":-1})"), "subdomain", false)),
        std::vector<std::string>{
            "metadata.generation: Invalid value: -1: must be greater than or equal to 0"});
}

TEST(ObjectMeta, BadLabelKeyAndValue) {
    auto errors =
        validate_object_meta(meta(R"({"name":"a","labels":{"-k":"v-"}})"), "subdomain", false);
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0].to_string(), "metadata.labels: Invalid value: \"-k\": " + kNamePartMessage);
    EXPECT_EQ(errors[1].field, "metadata.labels");
    EXPECT_NE(errors[1].message.find("Invalid value: \"v-\": a valid label must be"),
              std::string::npos);
}

TEST(ObjectMeta, AnnotationKeysAreCaseInsensitiveButStillChecked) {
    EXPECT_TRUE(validate_object_meta(meta(R"({"name":"a","annotations":{"A.B/C":"x"}})"),
                                     "subdomain", false)
                    .empty());
    EXPECT_EQ(
        validate_object_meta(meta(R"({"name":"a","annotations":{"a b":"x"}})"), "subdomain", false)
            .size(),
        1u);
}

TEST(ObjectMeta, AnnotationsTotalSizeLimit) {
    json metadata = {{"name", "a"}, {"annotations", {{"k", std::string(256 * 1024 - 1, 'x')}}}};
    EXPECT_TRUE(validate_object_meta(metadata, "subdomain", false).empty());
    metadata["annotations"]["k2"] = "y";
    auto errors = validate_object_meta(metadata, "subdomain", false);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].reason, "FieldValueTooLong");
    EXPECT_EQ(errors[0].to_string(),
              "metadata.annotations: Too long: may not be more than 262144 bytes");
}

TEST(ObjectMeta, FinalizersMustBeQualifiedNames) {
    auto errors = validate_object_meta(meta(R"({"name":"a","finalizers":["bad finalizer"]})"),
                                       "subdomain", false);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].to_string(),
              "metadata.finalizers: Invalid value: \"bad finalizer\": " + kNamePartMessage);
}

TEST(ObjectMeta, OrphanAndForegroundTogetherAreInvalid) {
    auto errors = validate_object_meta(
        meta(R"({"name":"a","finalizers":["orphan","foregroundDeletion"]})"), "subdomain", false);
    EXPECT_EQ(texts(errors),
              std::vector<std::string>{
                  "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: "
                  "finalizer orphan and foregroundDeletion cannot be both set"});
}

TEST(ObjectMeta, OwnerReferenceRequiredFields) {
    auto errors =
        validate_object_meta(meta(R"({"name":"a","ownerReferences":[{}]})"), "subdomain", false);
    EXPECT_EQ(texts(errors),
              (std::vector<std::string>{
                  "metadata.ownerReferences[0].apiVersion: Required value: must not be empty",
                  "metadata.ownerReferences[0].kind: Required value: must not be empty",
                  "metadata.ownerReferences[0].name: Required value: must not be empty",
                  "metadata.ownerReferences[0].uid: Required value: must not be empty"}));
}

TEST(ObjectMeta, OwnerReferenceBadApiVersion) {
    auto errors = validate_object_meta(
        meta(
            R"({"name":"a","ownerReferences":[{"apiVersion":"a/b/c","kind":"K","name":"n","uid":"u"}]})"),
        "subdomain", false);
    EXPECT_EQ(texts(errors),
              std::vector<std::string>{"metadata.ownerReferences[0].apiVersion: Invalid value: "
                                       "\"a/b/c\": must be <group>/<version> or <version>"});
}

TEST(ObjectMeta, EventsCannotBeOwners) {
    auto errors = validate_object_meta(
        meta(
            R"({"name":"a","ownerReferences":[{"apiVersion":"v1","kind":"Event","name":"n","uid":"u"}]})"),
        "subdomain", false);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].message.find("/v1, Kind=Event is disallowed from being an owner"),
              std::string::npos);
}

TEST(ObjectMeta, OnlyOneControllerOwner) {
    auto errors = validate_object_meta(meta(R"({"name":"a","ownerReferences":[
        {"apiVersion":"v1","kind":"A","name":"x","uid":"1","controller":true},
        {"apiVersion":"v1","kind":"B","name":"y","uid":"2","controller":true}]})"),
                                       "subdomain", false);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].field, "metadata.ownerReferences");
    EXPECT_NE(errors[0].message.find("Only one reference can have Controller set to true. Found "
                                     "\"true\" in references for A/x and B/y"),
              std::string::npos);
}

TEST(ObjectMeta, WrongJsonTypesAreTypeErrorsNotCrashes) {
    auto errors = validate_object_meta(meta(R"({"name":5,"labels":[],"finalizers":"x"})"),
                                       "subdomain", false);
    ASSERT_GE(errors.size(), 3u);
    EXPECT_EQ(errors[0].reason, "FieldValueTypeInvalid");
    EXPECT_EQ(errors[0].to_string(),
              "metadata.name: Invalid value: \"integer\": metadata.name in body must be of type "
              "string: \"integer\"");
    EXPECT_FALSE(validate_object_meta(json("text"), "subdomain", false).empty());
}

TEST(ObjectMeta, NoneRuleSkipsNameChecks) {
    EXPECT_TRUE(
        validate_object_meta(meta(R"({"name":"Any Name","namespace":"n"})"), "none", true).empty());
}

// ------------------------------------------------------------------ field error rendering

TEST(FieldErrors, ReasonsAndBodies) {
    EXPECT_EQ(field_required("spec.x").to_string(), "spec.x: Required value");
    EXPECT_EQ(field_not_supported("spec.c", "x", {"red", "blue"}).to_string(),
              "spec.c: Unsupported value: \"x\": supported values: \"red\", \"blue\"");
    EXPECT_EQ(field_too_many("spec.l", 3, 2).to_string(),
              "spec.l: Too many: 3: must have at most 2 items");
    EXPECT_EQ(field_too_many("spec.l", 3, 1).to_string(),
              "spec.l: Too many: 3: must have at most 1 item");
    EXPECT_EQ(field_too_long("spec.s", 1).to_string(),
              "spec.s: Too long: may not be more than 1 byte");
    EXPECT_EQ(field_duplicate("spec.l[1]", "a").to_string(), "spec.l[1]: Duplicate value: \"a\"");
    EXPECT_EQ(field_not_supported("spec.c", "x", {}).reason, "FieldValueNotSupported");
}

TEST(FieldErrors, JoinLikeApimachineryAggregate) {
    EXPECT_EQ(join_field_errors({field_required("a")}), "a: Required value");
    EXPECT_EQ(join_field_errors({field_required("a"), field_required("b"), field_required("a")}),
              "[a: Required value, b: Required value]");
}

TEST(GoFormat, QuotesLikeStrconvQuote) {
    EXPECT_EQ(go_quote("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\x01\"");
    EXPECT_EQ(go_quote("\xff"), "\"\\xff\"");
    EXPECT_EQ(go_quote("héllo"), "\"héllo\"");
}

TEST(GoFormat, FloatsLikePercentV) {
    EXPECT_EQ(go_float(0), "0");
    EXPECT_EQ(go_float(1.5), "1.5");
    EXPECT_EQ(go_float(-2), "-2");
    EXPECT_EQ(go_float(100000), "100000");
    EXPECT_EQ(go_float(1000000), "1e+06");
    EXPECT_EQ(go_float(1234567), "1.234567e+06");
    EXPECT_EQ(go_float(0.0001), "0.0001");
    EXPECT_EQ(go_float(0.00001), "1e-05");
}
