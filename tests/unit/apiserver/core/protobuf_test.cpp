// Protobuf request bodies as kubectl's typed clients send them.
#include <gtest/gtest.h>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

namespace {

std::string varint(uint64_t v) {
    std::string out;
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
    return out;
}

std::string field(int number, const std::string& bytes) {
    return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(bytes.size()) + bytes;
}

std::string entry(const std::string& k, const std::string& v) {
    return field(1, k) + field(2, v);
}

std::string envelope(const std::string& api_version, const std::string& kind,
                     const std::string& raw) {
    return std::string("k8s\0", 4) + field(1, field(1, api_version) + field(2, kind)) +
           field(2, raw) + field(4, "application/vnd.kubernetes.protobuf");
}

const std::string kProto = "application/vnd.kubernetes.protobuf";

}  // namespace

TEST(Protobuf, ConfigMapBodyIsDecoded) {
    ApiCore core({});
    std::string meta = field(1, "cm1") + field(11, entry("app", "x"));
    std::string raw = field(1, meta) + field(2, entry("a", "b"));
    auto r = call(core, request("POST", "/api/v1/namespaces/default/configmaps",
                                envelope("v1", "ConfigMap", raw), kProto));
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["data"]["a"], "b");
    EXPECT_EQ(r.body["metadata"]["labels"]["app"], "x");
}

TEST(Protobuf, SecretBytesBecomeBase64) {
    ApiCore core({});
    std::string raw = field(1, field(1, "s1")) + field(2, entry("pw", "abc")) + field(3, "Opaque");
    auto r = call(core, request("POST", "/api/v1/namespaces/default/secrets",
                                envelope("v1", "Secret", raw), kProto));
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["data"]["pw"], "YWJj");
}

TEST(Protobuf, UnsupportedKindIs415NamingIt) {
    ApiCore core({});
    auto r = call(core, request("POST", "/apis/apps/v1/namespaces/default/deployments",
                                envelope("apps/v1", "Deployment", ""), kProto));
    EXPECT_EQ(r.status, 415);
    EXPECT_NE(r.body["message"].get<std::string>().find("Kind=Deployment"), std::string::npos);
}

TEST(Protobuf, TruncatedBodyIsBadRequest) {
    ApiCore core({});
    std::string body = envelope("v1", "ConfigMap", field(1, field(1, "cm1")));
    body.resize(body.size() - 5);
    auto r = call(core, request("POST", "/api/v1/namespaces/default/configmaps", body, kProto));
    EXPECT_EQ(r.status, 400);
}
