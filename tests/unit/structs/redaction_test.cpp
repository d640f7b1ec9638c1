// Secrets' values stay out of log lines: their keys are shown, their values are not.
#include "structs/redaction.hpp"

#include <gtest/gtest.h>

namespace kopf::structs {
namespace {

json secret() {
    return json::parse(R"({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db", "namespace": "default",
                     "labels": {"app": "db"},
                     "annotations": {
                         "kubectl.kubernetes.io/last-applied-configuration":
                             "{\"data\":{\"password\":\"aHVudGVyMg==\"}}",
                         "kopf.zalando.org/last-handled-configuration":
                             "{\"data\":{\"password\":\"aHVudGVyMg==\"}}\n",
                         "team": "storage"}},
        "type": "Opaque",
        "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="},
        "stringData": {"token": "s3cr3t"}
    })");
}

TEST(Redaction, OnlyCoreSecretsAreRedacted) {
    EXPECT_TRUE(is_secret(Resource{.group = "", .version = "v1", .plural = "secrets"}));
    EXPECT_FALSE(is_secret(Resource{.group = "", .version = "v1", .plural = "configmaps"}));
    EXPECT_FALSE(is_secret(Resource{.group = "example.com", .version = "v1", .plural = "secrets"}));
}

TEST(Redaction, BodyKeepsKeysAndHidesValuesAndCopies) {
    const json redacted = redact_secret_values(secret());
    const std::string text = redacted.dump();
    for (const char* value : {"aHVudGVyMg==", "YWRtaW4=", "s3cr3t"})
        EXPECT_EQ(text.find(value), std::string::npos) << value << " in " << text;
    EXPECT_EQ(redacted["data"], (json{{"password", "<redacted>"}, {"user", "<redacted>"}}));
    EXPECT_EQ(redacted["stringData"], (json{{"token", "<redacted>"}}));
    EXPECT_EQ(redacted["metadata"]["annotations"]["team"], "storage");
    EXPECT_EQ(redacted["metadata"]["labels"]["app"], "db");
    EXPECT_EQ(redacted["metadata"]["name"], "db");
}

TEST(Redaction, DiffKeepsPathsAndHidesValues) {
    json old = secret();
    json changed = secret();
    changed["data"]["password"] = "bmV3";
    changed["data"]["extra"] = "ZXh0cmE=";
    changed["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        "{\"data\":{\"password\":\"bmV3\"}}";
    changed["metadata"]["labels"]["app"] = "db2";
    const Diff redacted = redact_secret_values(diff(old, changed));
    const std::string text = redacted.to_json().dump();
    for (const char* value : {"aHVudGVyMg==", "bmV3", "ZXh0cmE="})
        EXPECT_EQ(text.find(value), std::string::npos) << value << " in " << text;
    EXPECT_NE(text.find(R"(["change",["metadata","labels","app"],"db","db2"])"), std::string::npos)
        << text;
    EXPECT_NE(text.find(R"(["add",["data","extra"],null,"<redacted>"])"), std::string::npos)
        << text;
    EXPECT_NE(text.find(R"(["change",["data","password"],"<redacted>","<redacted>"])"),
              std::string::npos)
        << text;

    // A whole-object diff (creation) and one of the whole data map.
    const std::string created = redact_secret_values(diff(json(), secret())).to_json().dump();
    EXPECT_EQ(created.find("aHVudGVyMg=="), std::string::npos) << created;
    json no_data = secret();
    no_data.erase("data");
    const std::string removed = redact_secret_values(diff(secret(), no_data)).to_json().dump();
    EXPECT_EQ(removed.find("YWRtaW4="), std::string::npos) << removed;
    EXPECT_NE(removed.find("\"user\":\"<redacted>\""), std::string::npos) << removed;
}

TEST(Redaction, JsonPatchValuesWrittenToDataAreHidden) {
    const json ops = json::parse(R"([
        {"op": "add", "path": "/data/password", "value": "aHVudGVyMg=="},
        {"op": "replace", "path": "/data", "value": {"user": "YWRtaW4="}},
        {"op": "add", "path": "/metadata/labels/app", "value": "db"},
        {"op": "remove", "path": "/stringData/token"},
        {"op": "add", "path": "not a pointer", "value": "s3cr3t"}
    ])");
    const json redacted = redact_secret_json_patch(ops);
    const std::string text = redacted.dump();
    for (const char* value : {"aHVudGVyMg==", "YWRtaW4=", "s3cr3t"})
        EXPECT_EQ(text.find(value), std::string::npos) << value << " in " << text;
    EXPECT_EQ(redacted[1]["value"], (json{{"user", "<redacted>"}}));
    EXPECT_EQ(redacted[2]["value"], "db");
    EXPECT_EQ(redacted[3], ops[3]);
}

}  // namespace
}  // namespace kopf::structs
