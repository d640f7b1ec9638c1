// Protobuf request bodies as kubectl's typed clients send them.
#include <gtest/gtest.h>

#include <string_view>

#include "core/engine.hpp"
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

// Bodies captured from kubectl 1.32 (a logging proxy between it and the embedded server), and
// the JSON the same command prints with `--dry-run=client -o json`: what a JSON body carries.
struct Captured {
    const char* kind;
    const char* hex;
    const char* json;
};

const Captured kCaptured[] = {
    {"Deployment",
     // kubectl create deployment web --image=nginx:1.27 --port=8080 --replicas=2 -n default
     "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412c5010a260a0377656212001a07646566"
     "61756c7422002a003200380042005a0a0a036170701203776562128c010802120c0a0a0a0361707012037765"
     "621a720a1c0a0012001a0022002a003200380042005a0a0a036170701203776562125212340a056e67696e78"
     "120a6e67696e783a312e32372a00320b0a00100018903f22002a0042006a007200800100880100900100a201"
     "001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c0800100018"
     "002000280038001a002200",
     R"({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "web", "namespace": "default", "creationTimestamp": null, "labels": {"app": "web"}}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 8080}], "resources": {}}]}}, "strategy": {}}, "status": {}})"},
    {"ResourceQuota",
     // kubectl create quota small --hard=cpu=1500m,memory=1Gi
     "6b3873000a130a027631120d5265736f7572636551756f7461123c0a150a05736d616c6c12001a0022002a00"
     "32003800420012210a0e0a0363707512070a05313530306d0a0f0a066d656d6f727912050a033147691a001a"
     "002200",
     R"({"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": "small", "creationTimestamp": null}, "spec": {"hard": {"cpu": "1500m", "memory": "1Gi"}}, "status": {}})"},
    {"Service",
     // kubectl create service clusterip api --tcp=80:8080
     "6b3873000a0d0a02763112075365727669636512690a1f0a0361706912001a0022002a003200380042005a0a"
     "0a03617070120361706912420a1b0a0738302d38303830120354435018502207080010903f1a002800120a0a"
     "0361707012036170691a002209436c757374657249503a00420052005a00600068001a020a001a002200",
     R"({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "api", "creationTimestamp": null, "labels": {"app": "api"}}, "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}], "selector": {"app": "api"}, "type": "ClusterIP"}, "status": {"loadBalancer": {}}})"},
    {"PodDisruptionBudget",
     // kubectl create pdb half --selector=app=web --min-available=50%
     "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e427564676574123d0a140a04"
     "68616c6612001a0022002a0032003800420012190a09080110001a03353025120c0a0a0a0361707012037765"
     "621a0a080018002000280030001a002200",
     R"({"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "half", "creationTimestamp": null}, "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}, "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}})"},
    {"CronJob",
     // kubectl create cronjob nightly --image=busybox '--schedule=0 3 * * *' -- date
     "6b3873000a130a0862617463682f7631120743726f6e4a6f6212b2010a170a076e696768746c7912001a0022"
     "002a003200380042001294010a09302033202a202a202a1a002a84010a170a076e696768746c7912001a0022"
     "002a00320038004200126932670a100a0012001a0022002a003200380042001253122c0a076e696768746c79"
     "120762757379626f781a04646174652a0042006a007200800100880100900100a201001a094f6e4661696c75"
     "7265320042004a0052005800600068008201008a01009a0100c201001a001a002200",
     R"({"kind": "CronJob", "apiVersion": "batch/v1", "metadata": {"name": "nightly", "creationTimestamp": null}, "spec": {"schedule": "0 3 * * *", "jobTemplate": {"metadata": {"name": "nightly", "creationTimestamp": null}, "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"name": "nightly", "image": "busybox", "command": ["date"], "resources": {}}], "restartPolicy": "OnFailure"}}}}}, "status": {}})"},
};

std::string unhex(std::string_view hex) {
    std::string out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
}

std::string captured(const std::string& kind) {
    for (const auto& c : kCaptured)
        if (kind == c.kind) return unhex(c.hex);
    return "";
}

// Replaces the first `from` (hex) in the captured `kind`'s body by `to` (hex).
std::string altered(const std::string& kind, const std::string& from, const std::string& to) {
    std::string hex;
    for (const auto& c : kCaptured)
        if (kind == c.kind) hex = c.hex;
    auto at = hex.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return unhex(hex.replace(at, from.size(), to));
}

std::string message_of(const Reply& r) {
    return r.body.is_object() ? r.body.value("message", "") : r.raw;
}

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

TEST(Protobuf, CapturedKubectlBodiesDecodeToTheJsonOfAJsonBody) {
    for (const auto& c : kCaptured) {
        SCOPED_TRACE(c.kind);
        json decoded = core::decode_protobuf_body(unhex(c.hex));
        EXPECT_EQ(decoded, json::parse(c.json)) << decoded.dump();
    }
}

TEST(Protobuf, CapturedDeploymentIsCreated) {
    ApiCore core({});
    auto r = call(core, request("POST", "/apis/apps/v1/namespaces/default/deployments",
                                captured("Deployment"), kProto));
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    EXPECT_EQ(r.body["metadata"]["labels"]["app"], "web");
    EXPECT_EQ(r.body["metadata"]["managedFields"][0]["manager"], "core-test");
}

TEST(Protobuf, CustomResourceIs415NamingItsKind) {
    ApiCore core({});
    install_widgets(core);
    auto r = call(core, request("POST", "/apis/example.com/v1/namespaces/default/widgets",
                                envelope("example.com/v1", "Widget", ""), kProto));
    EXPECT_EQ(r.status, 415);
    EXPECT_NE(message_of(r).find("got example.com/v1, Kind=Widget"), std::string::npos)
        << message_of(r);
}

TEST(Protobuf, KindWithoutASchemaIs415NamingIt) {
    ApiCore core({});
    auto r = call(core, request("POST", "/apis/apps/v1/namespaces/default/deployments",
                                envelope("apps/v1", "StatefulSet", ""), kProto));
    EXPECT_EQ(r.status, 415);
    EXPECT_NE(message_of(r).find("got apps/v1, Kind=StatefulSet"), std::string::npos)
        << message_of(r);
}

TEST(Protobuf, TruncatedBodyIsBadRequest) {
    ApiCore core({});
    std::string body = envelope("v1", "ConfigMap", field(1, field(1, "cm1")));
    body.resize(body.size() - 5);
    auto r = call(core, request("POST", "/api/v1/namespaces/default/configmaps", body, kProto));
    EXPECT_EQ(r.status, 400);
}

TEST(Protobuf, TruncatedCapturedBodyIs400NamingTheEnvelope) {
    ApiCore core({});
    std::string body = captured("Deployment");
    body.resize(body.size() / 2);
    auto r =
        call(core, request("POST", "/apis/apps/v1/namespaces/default/deployments", body, kProto));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(message_of(r).find("truncated field (197 bytes announced, "), std::string::npos)
        << message_of(r);
    EXPECT_NE(message_of(r).find("in the envelope"), std::string::npos) << message_of(r);
}

TEST(Protobuf, NestedLengthBeyondItsMessageIs400NamingThePath) {
    ApiCore core({});
    // The container's length (0x34) raised to 0x7f, beyond the 80 bytes of its PodSpec.
    std::string body = altered("Deployment", "125212340a056e67696e78", "1252127f0a056e67696e78");
    auto r =
        call(core, request("POST", "/apis/apps/v1/namespaces/default/deployments", body, kProto));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(message_of(r),
              "couldn't decode the Deployment in the protobuf request body: truncated field (127 "
              "bytes announced, 80 left) in spec.template.spec");
}

TEST(Protobuf, WrongWireTypeIs400NamingTheField) {
    ApiCore core({});
    // spec.replicas (field 1, a varint 2) turned into an empty length-delimited field.
    std::string body = altered("Deployment", "128c010802", "128c010a00");
    auto r =
        call(core, request("POST", "/apis/apps/v1/namespaces/default/deployments", body, kProto));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(message_of(r),
              "couldn't decode the Deployment in the protobuf request body: field spec.replicas is "
              "length-delimited where varint was expected");
}

TEST(Protobuf, InvalidUtf8IsBadRequest) {
    ApiCore core({});
    std::string raw = field(1, field(1, "cm1")) + field(2, entry("a", "\xff\xfe"));
    auto r = call(core, request("POST", "/api/v1/namespaces/default/configmaps",
                                envelope("v1", "ConfigMap", raw), kProto));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(message_of(r).find("not valid UTF-8"), std::string::npos) << message_of(r);
}

TEST(Protobuf, ZerosFollowGoJsonOmitempty) {
    // A Pod whose container sets stdin=false (omitempty: dropped) and whose spec sets
    // terminationGracePeriodSeconds=0 (a pointer: kept) and an empty nodeName (dropped).
    std::string container = field(1, "c") + field(2, "busybox") + varint(16 << 3) + varint(0);
    std::string spec = field(2, container) + varint(4 << 3) + varint(0) + field(10, "");
    std::string raw = field(1, field(1, "p")) + field(2, spec);
    json pod = core::decode_protobuf_body(envelope("v1", "Pod", raw));
    EXPECT_EQ(pod["spec"], json::parse(R"({"containers": [{"name": "c", "image": "busybox"}],
                                          "terminationGracePeriodSeconds": 0})"));
}

TEST(Protobuf, TimesAreRfc3339AndZeroTimesNull) {
    // firstTimestamp (a Time: seconds only), lastTimestamp empty (the zero time: JSON null),
    // eventTime (a MicroTime: microseconds of the nanos), count (omitempty int).
    std::string first = varint(1 << 3) + varint(1700000000);
    std::string event_time =
        varint(1 << 3) + varint(1700000001) + varint(2 << 3) + varint(123456789);
    std::string raw = field(1, field(1, "e")) + field(3, "Started") + field(6, first) +
                      field(7, "") + field(10, event_time) + varint(8 << 3) + varint(0);
    json event = core::decode_protobuf_body(envelope("v1", "Event", raw));
    EXPECT_EQ(event["firstTimestamp"], "2023-11-14T22:13:20Z");
    EXPECT_TRUE(event.contains("lastTimestamp") && event["lastTimestamp"].is_null()) << event;
    EXPECT_EQ(event["eventTime"], "2023-11-14T22:13:21.123456Z");
    EXPECT_FALSE(event.contains("count")) << event;
    EXPECT_EQ(event["reason"], "Started");
}

TEST(Protobuf, TimestampOutOfRangeIs400) {
    std::string first = varint(1 << 3) + varint(uint64_t{1} << 62);
    std::string raw = field(1, field(1, "e")) + field(6, first);
    try {
        core::decode_protobuf_body(envelope("v1", "Event", raw));
        ADD_FAILURE() << "no error";
    } catch (const core::ApiError& e) {
        EXPECT_EQ(e.code, 400);
        EXPECT_EQ(e.status["message"],
                  "couldn't decode the Event in the protobuf request body: timestamp out of range "
                  "in firstTimestamp");
    }
}
