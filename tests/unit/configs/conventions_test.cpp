// Annotation keys of progress records: Kopf's safe keys, V1/V2 shapes and hash suffixes.
#include <gtest/gtest.h>

#include <kopf/storage.hpp>

#include "configs/blake2b.hpp"

namespace {

const std::string ID80 =
    "handler-with-a-long-id-handler-with-a-long-id-handler-with-a-long-id-handler-wit";

kopf::StorageKeyConvention convention() {
    return kopf::StorageKeyConvention("kopf.zalando.org", true);
}

TEST(Blake2b, FourByteDigestMatchesPythonHashlib) {
    auto d = kopf::configs::blake2b("abc", 4);
    ASSERT_EQ(d.size(), 4u);
    EXPECT_EQ(d[0], 0x63);
    EXPECT_EQ(d[1], 0x90);
    EXPECT_EQ(d[2], 0x62);
    EXPECT_EQ(d[3], 0x48);
}

TEST(Blake2b, EmptyInputHasItsOwnDigest) {
    auto d = kopf::configs::blake2b("", 4);
    EXPECT_EQ(d, (std::vector<std::uint8_t>{0x12, 0x71, 0xcf, 0x25}));
}

TEST(Blake2b, InputsLongerThanOneBlockAreHashed) {
    std::string long_input(300, 'x');
    EXPECT_NE(kopf::configs::blake2b(long_input, 4),
              kopf::configs::blake2b(std::string(299, 'x'), 4));
}

TEST(StorageKeys, SuffixIsBase64OfBlake2bWithDashDotAltchars) {
    EXPECT_EQ(kopf::StorageKeyConvention::make_suffix("abc"), "-Y5BiSA");
    EXPECT_EQ(kopf::StorageKeyConvention::make_suffix(ID80), "-f.XAUA");
}

TEST(StorageKeys, SafeKeyReplacesSlashesAndAngleBrackets) {
    EXPECT_EQ(kopf::StorageKeyConvention::make_safe_key("create_with_subs/item1"),
              "create_with_subs.item1");
    EXPECT_EQ(kopf::StorageKeyConvention::make_safe_key("lambda:<x>"), "lambda:_x_");
}

TEST(StorageKeys, SubHandlerAndFieldIdsBecomeDottedKeys) {
    EXPECT_EQ(convention().make_keys("create_with_subs/item1"),
              std::vector<std::string>{"kopf.zalando.org/create_with_subs.item1"});
    EXPECT_EQ(convention().make_keys("field_fn/spec.field"),
              std::vector<std::string>{"kopf.zalando.org/field_fn.spec.field"});
}

TEST(StorageKeys, FortyCharacterIdHasOneUnshortenedKey) {
    std::string id = ID80.substr(0, 40);
    EXPECT_EQ(
        convention().make_keys(id),
        std::vector<std::string>{"kopf.zalando.org/handler-with-a-long-id-handler-with-a-lo"});
}

TEST(StorageKeys, SixtyThreeCharacterIdKeepsV2AndShortensV1) {
    std::string id = ID80.substr(0, 63);
    EXPECT_EQ(
        convention().make_keys(id),
        (std::vector<std::string>{
            "kopf.zalando.org/handler-with-a-long-id-handler-with-a-long-id-handler-with-a-lo",
            "kopf.zalando.org/handler-with-a-long-id-handler-with-a-l-epXCuQ"}));
}

TEST(StorageKeys, SixtyFourCharacterIdShortensBothKeysDifferently) {
    std::string id = ID80.substr(0, 64);
    EXPECT_EQ(
        convention().make_keys(id),
        (std::vector<std::string>{
            "kopf.zalando.org/handler-with-a-long-id-handler-with-a-long-id-handler-wi-P6u9QQ",
            "kopf.zalando.org/handler-with-a-long-id-handler-with-a-l-P6u9QQ"}));
}

TEST(StorageKeys, EightyCharacterIdShortensBothKeys) {
    EXPECT_EQ(
        convention().make_keys(ID80),
        (std::vector<std::string>{
            "kopf.zalando.org/handler-with-a-long-id-handler-with-a-long-id-handler-wi-f.XAUA",
            "kopf.zalando.org/handler-with-a-long-id-handler-with-a-l-f.XAUA"}));
}

TEST(StorageKeys, V1KeysCanBeDisabled) {
    kopf::StorageKeyConvention c("kopf.zalando.org", false);
    EXPECT_EQ(c.make_keys(ID80).size(), 1u);
}

TEST(StorageKeys, ReplicaSetsOwnedByDeploymentsGetACollisionMark) {
    kopf::json body = {{"kind", "ReplicaSet"},
                       {"metadata", {{"ownerReferences", {{{"kind", "Deployment"}}}}}}};
    EXPECT_EQ(convention().make_keys("fn", &body),
              std::vector<std::string>{"kopf.zalando.org/fn-ofDRS"});
}

TEST(StorageKeys, StoragesUseTheMarkedKeysOnlyForDeploymentsReplicaSets) {
    // Keys are built once per storage: a marked body and a plain one must not share them.
    const kopf::AnnotationsProgressStorage storage("kopf.zalando.org", false, "touch-dummy", false);
    const kopf::json replicaset = {{"kind", "ReplicaSet"},
                                   {"metadata", {{"ownerReferences", {{{"kind", "Deployment"}}}}}}};
    const kopf::json plain = {{"kind", "Pod"}, {"metadata", kopf::json::object()}};
    for (int round = 0; round < 2; ++round) {
        kopf::Patch marked, unmarked;
        storage.store("fn", {{"started", "now"}}, replicaset, marked);
        storage.store("fn", {{"started", "now"}}, plain, unmarked);
        const auto& marked_keys = marked.merge["metadata"]["annotations"];
        const auto& plain_keys = unmarked.merge["metadata"]["annotations"];
        EXPECT_TRUE(marked_keys.contains("kopf.zalando.org/fn-ofDRS")) << marked_keys.dump();
        EXPECT_FALSE(marked_keys.contains("kopf.zalando.org/fn"));
        EXPECT_TRUE(plain_keys.contains("kopf.zalando.org/fn")) << plain_keys.dump();
        EXPECT_FALSE(plain_keys.contains("kopf.zalando.org/fn-ofDRS"));
    }
    // A copy of the storage finds the same keys.
    const kopf::AnnotationsProgressStorage copy = storage;
    kopf::Patch copied;
    copy.store("fn", {{"started", "now"}}, replicaset, copied);
    EXPECT_TRUE(copied.merge["metadata"]["annotations"].contains("kopf.zalando.org/fn-ofDRS"));
}

TEST(StorageKeys, EmptyPrefixIsRejected) {
    EXPECT_THROW(kopf::StorageKeyConvention("", true), std::invalid_argument);
}

}  // namespace
