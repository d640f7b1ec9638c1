// The API server under hostile input, as every user's tests run against it: each request is
// answered with a Kubernetes Status and bounded memory, never a crash, a hang, or a request
// smuggled past the one that was refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const char* kCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
           "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
           "versions": [{"name": "v1", "served": true, "storage": true,
                         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                             "spec": {"type": "object",
                                      "x-kubernetes-preserve-unknown-fields": true}}}}}]}})";

const char* kWidgets = "/apis/example.com/v1/namespaces/default/widgets";

// {"a":{"a":...{"a":1}...}} nested `depth` levels below "spec".
std::string widget_nested(int depth, const std::string& name) {
    std::string body = R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":")" +
                       name + R"("},"spec":)";
    for (int i = 0; i < depth; ++i) body += R"({"a":)";
    body += "1";
    body += std::string(static_cast<std::size_t>(depth), '}');
    body += "}";
    return body;
}

json status_of(const HttpResult& result) {
    json status = json::parse(result.body, nullptr, false);
    EXPECT_FALSE(status.is_discarded()) << "not JSON: " << result.body;
    if (status.is_discarded()) return json::object();
    EXPECT_EQ(status.value("kind", ""), "Status") << result.body;
    EXPECT_EQ(status.value("code", 0), result.status) << result.body;
    return status;
}

class HostileInput : public ::testing::Test {
  protected:
    void SetUp() override {
        test = std::make_unique<TestServer>(options());
        auto crd = test->http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              kCrd, "application/json");
        ASSERT_EQ(crd.status, 201) << crd.body;
        ASSERT_TRUE(wait_for([&] { return test->http("GET", kWidgets).status == 200; }));
    }
    virtual ServerOptions options() { return {}; }
    void expect_still_serving() {
        auto version = test->http("GET", "/version");
        EXPECT_EQ(version.status, 200) << version.body;
    }
    std::unique_ptr<TestServer> test;
};

// Deep bodies crashed this server (recursion in pruning, defaulting and validation). It refuses
// JSON nested deeper than 2,000 levels (kube-apiserver: 10,000; see docs/apiserver.md).
TEST_F(HostileInput, BodiesNestedTooDeeplyGet400AndTheServerKeepsServing) {
    auto deep = test->http("POST", kWidgets, widget_nested(20'000, "deep"), "application/json");
    EXPECT_EQ(deep.status, 400) << deep.body.substr(0, 300);
    EXPECT_NE(status_of(deep).value("message", "").find("max depth"), std::string::npos)
        << deep.body.substr(0, 300);
    auto deep_configmap =
        test->http("POST", "/api/v1/namespaces/default/configmaps",
                   R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":)" +
                       std::string(20'000, '[') + std::string(20'000, ']') + "}",
                   "application/json");
    EXPECT_EQ(deep_configmap.status, 400) << deep_configmap.body.substr(0, 300);
    expect_still_serving();

    auto just_too_deep =
        test->http("POST", kWidgets, widget_nested(2'001, "too-deep"), "application/json");
    EXPECT_EQ(just_too_deep.status, 400) << just_too_deep.body.substr(0, 300);

    // Up to the limit, a body is accepted and served back.
    auto deepest =
        test->http("POST", kWidgets, widget_nested(1'990, "deepest"), "application/json");
    EXPECT_EQ(deepest.status, 201) << deepest.body.substr(0, 300);
    EXPECT_EQ(test->http("GET", std::string(kWidgets) + "/deepest").status, 200);

    // What real objects have is kept, and served back whole.
    auto nested = test->http("POST", kWidgets, widget_nested(100, "nested"), "application/json");
    ASSERT_EQ(nested.status, 201) << nested.body.substr(0, 300);
    auto got = test->http("GET", std::string(kWidgets) + "/nested");
    ASSERT_EQ(got.status, 200);
    EXPECT_EQ(json::parse(got.body)["spec"], json::parse(widget_nested(100, "x"))["spec"]);
}

// A few hundred bytes of YAML whose aliases expand exponentially (the class of CVE-2019-11253).
TEST_F(HostileInput, YamlAliasBombsAreRefused) {
    std::string bomb = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nx0: &x0 [lol]\n";
    for (int i = 1; i <= 30; ++i) {
        const std::string prev = "*x" + std::to_string(i - 1);
        bomb += "x" + std::to_string(i) + ": &x" + std::to_string(i) + " [" + prev + ", " + prev +
                ", " + prev + "]\n";
    }
    bomb += "data: {a: b}\n";
    auto result =
        test->http("POST", "/api/v1/namespaces/default/configmaps", bomb, "application/yaml");
    EXPECT_EQ(result.status, 400) << result.body.substr(0, 300);
    EXPECT_NE(status_of(result).value("message", "").find("alias"), std::string::npos)
        << result.body.substr(0, 300);
    expect_still_serving();

    // Aliases in ordinary use still work.
    auto plain = test->http("POST", "/api/v1/namespaces/default/configmaps",
                            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: anchors, labels: "
                            "&l {app: x}}\ndata: {a: b}\nx: *l\n",
                            "application/yaml");
    EXPECT_EQ(plain.status, 201) << plain.body;
}

TEST_F(HostileInput, InvalidUtf8GetsA400Status) {
    const std::string bad = "\xff\xfe\xc3\x28";
    auto as_json = test->http(
        "POST", "/api/v1/namespaces/default/configmaps",
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u1"},"data":{"k":")" + bad +
            R"("}})",
        "application/json");
    EXPECT_EQ(as_json.status, 400) << as_json.body;
    status_of(as_json);
    auto as_yaml = test->http(
        "POST", "/api/v1/namespaces/default/configmaps",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u2}\ndata: {k: " + bad + "}\n",
        "application/yaml");
    EXPECT_EQ(as_yaml.status, 400) << as_yaml.body;
    status_of(as_yaml);
    auto in_a_key = test->http(
        "POST", "/api/v1/namespaces/default/configmaps",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u3, labels: {" + bad + ": x}}\n",
        "application/yaml");
    EXPECT_EQ(in_a_key.status, 400) << in_a_key.body;
    status_of(in_a_key);
    expect_still_serving();
}

// A Transfer-Encoding the server does not speak, without Content-Length: the body's length is
// unknown, so the connection must end with the refusal, or its bytes run as the next request.
TEST_F(HostileInput, UnknownTransferEncodingIsRefusedAndNothingIsSmuggled) {
    const std::string smuggled =
        "GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: x\r\n\r\n";
    auto session = raw_session(test->server().port(),
                               "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n"
                               "Host: x\r\nTransfer-Encoding: gzip\r\n\r\n" +
                                   smuggled,
                               3s);
    EXPECT_EQ(session.answer.rfind("HTTP/1.1 4", 0), 0u) << session.answer;
    EXPECT_EQ(session.answer.find("HTTP/1.1", 1), std::string::npos)
        << "a second response: " << session.answer;
    EXPECT_TRUE(session.closed_by_server) << session.answer;
    expect_still_serving();
}

class HostileConnections : public HostileInput {
  protected:
    ServerOptions options() override {
        ServerOptions options;
        options.header_timeout = 1s;
        options.idle_timeout = 2s;
        return options;
    }
};

// kube-apiserver closes a connection whose request head does not arrive in time, and idle
// keep-alive connections after a while; held-open connections exhausted this server.
TEST_F(HostileConnections, SlowAndIdleConnectionsAreClosed) {
    auto silent = raw_session(test->server().port(), "", 10s);
    EXPECT_TRUE(silent.closed_by_server) << "a connection that sent nothing stayed open";

    auto partial = raw_session(test->server().port(), "GET /version HTTP/1.1\r\nHost: x\r\n", 10s);
    EXPECT_TRUE(partial.closed_by_server) << "a partial request head kept its connection";

    auto idle = raw_session(test->server().port(), "GET /version HTTP/1.1\r\nHost: x\r\n\r\n", 10s);
    EXPECT_EQ(idle.answer.rfind("HTTP/1.1 200", 0), 0u) << idle.answer;
    EXPECT_TRUE(idle.closed_by_server) << "an idle keep-alive connection stayed open";

    // Long requests are not requests that are slow to arrive: a watch outlives both timeouts.
    auto watch = raw_session(test->server().port(),
                             "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\n"
                             "Host: x\r\n\r\n",
                             4s);
    EXPECT_EQ(watch.answer.rfind("HTTP/1.1 200", 0), 0u) << watch.answer;
    EXPECT_FALSE(watch.closed_by_server) << "a watch was closed by the idle timeout";
    expect_still_serving();
}

}  // namespace
}  // namespace kopf::apiserver::testing
