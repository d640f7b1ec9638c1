// The API server under hostile input, as every user's tests run against it: each request is
// answered with a Kubernetes Status and bounded memory, never a crash, a hang, or a request
// smuggled past the one that was refused.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "integration/apiserver/support/harness.hpp"
#include "sanitizers.hpp"

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

// Under AddressSanitizer, freed memory stays in its quarantine (256 MiB by default) and counts
// in the RSS: the memory bounds allow for it.
#if defined(KOPF_UNDER_ADDRESS_SANITIZER)
constexpr long kFreedMemoryKeptKib = 256 * 1024;
#else
constexpr long kFreedMemoryKeptKib = 0;
#endif

// The Status in the body of a raw HTTP answer ({} when there is none).
json raw_status(const std::string& answer) {
    const auto body = answer.find("\r\n\r\n");
    if (body == std::string::npos) return json::object();
    json status = json::parse(answer.substr(body + 4), nullptr, false);
    return status.is_object() ? status : json::object();
}

// This process's resident memory (the server under test runs in it), in KiB.
long resident_kib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
}

int open_descriptors() {
    int count = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++count;
    return count;
}

// A loopback connection that sent `request`; -1 if it cannot connect.
int connect_and_send(int port, const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size())) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Reads from all `fds` until each one's text contains `needle` or `timeout` passes; returns how
// many have it.
int read_until_all_have(const std::vector<int>& fds, std::vector<std::string>& texts,
                        const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto have = [&] {
        int count = 0;
        for (const auto& text : texts) count += text.find(needle) != std::string::npos;
        return count;
    };
    std::vector<pollfd> polled;
    while (have() < static_cast<int>(fds.size()) && std::chrono::steady_clock::now() < deadline) {
        polled.clear();
        for (int fd : fds) polled.push_back({fd, POLLIN, 0});
        if (::poll(polled.data(), polled.size(), 100) <= 0) continue;
        char buffer[4096];
        for (std::size_t i = 0; i < polled.size(); ++i) {
            if (!(polled[i].revents & POLLIN)) continue;
            const ssize_t got = ::recv(fds[i], buffer, sizeof buffer, MSG_DONTWAIT);
            if (got > 0) texts[i].append(buffer, static_cast<std::size_t>(got));
        }
    }
    return have();
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

// Invalid JSON of every shape: a 400 Status naming the problem, never a 500 or a crash.
TEST_F(HostileInput, MalformedJsonGetsA400Status) {
    for (const std::string& body :
         {std::string(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m")"),
          std::string(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}} trail)"),
          std::string(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"},"x":NaN})"),
          std::string(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"},"x":01})"),
          std::string("[1, 2, 3]"), std::string(R"("a string")"), std::string("null"),
          std::string("{\"a\":\"\\ud800\"}"), std::string(4096, '{')}) {
        auto result =
            test->http("POST", "/api/v1/namespaces/default/configmaps", body, "application/json");
        EXPECT_EQ(result.status, 400) << body.substr(0, 80) << " -> " << result.body;
        status_of(result);
    }
    expect_still_serving();
}

// A pod's container name or image of the wrong type (the fuzzer's find: a strategic merge patch
// making the image a list was answered 500): a 422 naming the field, on create and on patch.
TEST_F(HostileInput, PodContainerFieldsOfTheWrongTypeGet422NamingThem) {
    const std::string pods = "/api/v1/namespaces/default/pods";
    const auto pod = [](const std::string& container) {
        return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},)"
               R"("spec":{"containers":[)" +
               container + "]}}";
    };
    auto created =
        test->http("POST", pods, pod(R"({"name":"app","image":["nginx"]})"), "application/json");
    EXPECT_EQ(created.status, 422) << created.body;
    EXPECT_NE(created.body.find("spec.containers[0].image"), std::string::npos) << created.body;
    EXPECT_NE(created.body.find("must be a string"), std::string::npos) << created.body;
    created = test->http("POST", pods, pod(R"({"name":7,"image":"nginx"})"), "application/json");
    EXPECT_EQ(created.status, 422) << created.body;
    EXPECT_NE(created.body.find("spec.containers[0].name"), std::string::npos) << created.body;

    ASSERT_EQ(test->http("POST", pods, pod(R"({"name":"app","image":"nginx"})"), "application/json")
                  .status,
              201);
    auto patched = test->http("PATCH", pods + "/p",
                              R"({"spec":{"containers":[{"name":"app","image":[{"port":8080}]}]}})",
                              "application/strategic-merge-patch+json");
    EXPECT_EQ(patched.status, 422) << patched.body;
    EXPECT_NE(patched.body.find("spec.containers[0].image"), std::string::npos) << patched.body;
    expect_still_serving();
}

// Any built-in kind's fields of the wrong JSON type (kube-apiserver's decoder refuses them):
// a 422 naming each field, on create and on patch, and nothing stored. Before, a Lease with a
// number for its holder was stored, and an operator electing its leader on it read it with a
// type error at every attempt.
TEST_F(HostileInput, BuiltinFieldsOfTheWrongTypeGet422NamingThem) {
    const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    const auto lease = [](const std::string& spec) {
        return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},)"
               R"("spec":)" +
               spec + "}";
    };
    auto created = test->http(
        "POST", leases,
        lease(R"({"holderIdentity":5,"leaseDurationSeconds":"15","renewTime":7,"x-extra":1})"),
        "application/json");
    EXPECT_EQ(created.status, 422) << created.body;
    for (const std::string expected :
         {"spec.holderIdentity: Invalid value: 5: must be a string",
          "spec.leaseDurationSeconds: Invalid value: \\\"15\\\": must be an integer",
          "spec.renewTime: Invalid value: 7: must be a string"})
        EXPECT_NE(created.body.find(expected), std::string::npos) << expected << "\n"
                                                                  << created.body;
    EXPECT_EQ(test->http("GET", leases + "/l").status, 404);
    created = test->http("POST", leases, lease(R"("garbage")"), "application/json");
    EXPECT_EQ(created.status, 422) << created.body;
    EXPECT_NE(created.body.find("spec: Invalid value: \\\"garbage\\\": must be an object"),
              std::string::npos)
        << created.body;

    // A well-typed one (an unknown field is dropped, not refused), then a patch that breaks it.
    ASSERT_EQ(test->http("POST", leases,
                         lease(R"({"holderIdentity":"a","leaseDurationSeconds":15,"x-extra":1})"),
                         "application/json")
                  .status,
              201);
    auto patched = test->http("PATCH", leases + "/l", R"({"spec":{"leaseTransitions":[1]}})",
                              "application/merge-patch+json");
    EXPECT_EQ(patched.status, 422) << patched.body;
    EXPECT_NE(patched.body.find("spec.leaseTransitions: Invalid value: [1]: must be an integer"),
              std::string::npos)
        << patched.body;
    const auto stored = test->http("GET", leases + "/l");
    EXPECT_NE(stored.body.find(R"("leaseDurationSeconds":15)"), std::string::npos) << stored.body;
    EXPECT_EQ(stored.body.find("leaseTransitions"), std::string::npos) << stored.body;

    // Deep in a Deployment: maps of quantities, lists of messages, int-or-strings.
    const std::string deployments = "/apis/apps/v1/namespaces/default/deployments";
    const auto deployment = [](const std::string& replicas, const std::string& container) {
        return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},)"
               R"("spec":{"replicas":)" +
               replicas +
               R"(,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":)"
               R"({"a":"b"}},"spec":{"containers":[)" +
               container + "]}}}}";
    };
    created =
        test->http("POST", deployments,
                   deployment(R"("3")", R"({"name":"c","image":"i","ports":[{"containerPort":)"
                                        R"(80.5}],"resources":{"limits":{"cpu":true}}})"),
                   "application/json");
    EXPECT_EQ(created.status, 422) << created.body;
    for (const std::string expected :
         {"spec.replicas: Invalid value: \\\"3\\\": must be an integer",
          "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 80.5: must be "
          "an integer",
          "spec.template.spec.containers[0].resources.limits[cpu]: Invalid value: true: must be a "
          "quantity"})
        EXPECT_NE(created.body.find(expected), std::string::npos) << expected << "\n"
                                                                  << created.body;
    EXPECT_EQ(
        test->http("POST", deployments,
                   deployment("3", R"({"name":"c","image":"i","ports":[{"containerPort":80}],)"
                                   R"("resources":{"limits":{"cpu":"500m","memory":1024}}})"),
                   "application/json")
            .status,
        201);
    expect_still_serving();
}

// Content-Length and chunked Transfer-Encoding together (RFC 9112 §6.3: a smuggling vector): the
// request is refused with a Status, the connection ends, and the bytes after it never run.
TEST_F(HostileInput, ContentLengthWithChunkedIsRefusedAndNothingIsSmuggled) {
    const std::string smuggled =
        "GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: x\r\n\r\n";
    for (const std::string& headers :
         {std::string("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
          std::string("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n")}) {
        auto session = raw_session(test->server().port(),
                                   "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n"
                                   "Host: x\r\nContent-Type: application/json\r\n" +
                                       headers + "\r\n0\r\n\r\n" + smuggled,
                                   3s);
        EXPECT_EQ(session.answer.rfind("HTTP/1.1 400", 0), 0u) << headers << session.answer;
        EXPECT_EQ(raw_status(session.answer).value("kind", ""), "Status") << session.answer;
        EXPECT_EQ(session.answer.find("HTTP/1.1", 1), std::string::npos)
            << "a second response: " << session.answer;
        EXPECT_TRUE(session.closed_by_server) << session.answer;
    }
    expect_still_serving();
}

// Two Content-Lengths that disagree: which body length holds is ambiguous, so neither does.
TEST_F(HostileInput, DuplicateContentLengthsAreRefusedAndNothingIsSmuggled) {
    const std::string smuggled =
        "GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}})";
    auto session = raw_session(test->server().port(),
                               "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\nContent-Length: " +
                                   std::to_string(body.size()) + "\r\nContent-Length: " +
                                   std::to_string(body.size() + smuggled.size()) + "\r\n\r\n" +
                                   body + smuggled,
                               3s);
    EXPECT_EQ(session.answer.rfind("HTTP/1.1 400", 0), 0u) << session.answer;
    EXPECT_EQ(raw_status(session.answer).value("kind", ""), "Status") << session.answer;
    EXPECT_EQ(session.answer.find("HTTP/1.1", 1), std::string::npos)
        << "a second response: " << session.answer;
    EXPECT_TRUE(session.closed_by_server) << session.answer;
    EXPECT_EQ(test->http("GET", "/api/v1/namespaces/default/configmaps/d").status, 404);
    expect_still_serving();
}

// Bodies beyond the limit (3 MiB by default, as kube-apiserver's): a 413 Status, at once when the
// declared length is too big (nothing is read or held for it), and with memory bounded when the
// bytes do come.
TEST_F(HostileInput, HugeBodiesGet413WithAStatusAndBoundedMemory) {
    const long before = resident_kib();
    auto declared = raw_session(test->server().port(),
                                "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                                "Content-Type: application/json\r\n"
                                "Content-Length: 10737418240\r\n\r\n{\"a\":",
                                5s);
    EXPECT_EQ(declared.answer.rfind("HTTP/1.1 413", 0), 0u) << declared.answer;
    EXPECT_EQ(raw_status(declared.answer).value("reason", ""), "RequestEntityTooLarge")
        << declared.answer;
    EXPECT_TRUE(declared.closed_by_server) << declared.answer;

    std::string huge = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},)"
                       R"("data":{"k":")";
    huge += std::string(16 * 1024 * 1024, 'x') + R"("}})";
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{},
          std::vector<std::string>{"-H", "Transfer-Encoding: chunked"}}) {
        auto sent = test->http("POST", "/api/v1/namespaces/default/configmaps", huge,
                               "application/json", extra);
        EXPECT_EQ(sent.status, 413) << sent.body.substr(0, 300);
        EXPECT_EQ(status_of(sent).value("reason", ""), "RequestEntityTooLarge");
    }
    const long after = resident_kib();
    std::cout << "hostile-input: RSS " << before / 1024 << " MiB before, " << after / 1024
              << " MiB after a 10 GiB declared body and two 16 MiB bodies" << std::endl;
    EXPECT_LT(after - before, kFreedMemoryKeptKib + 64 * 1024)
        << "KiB held after refusing huge bodies";
    EXPECT_EQ(test->http("GET", "/api/v1/namespaces/default/configmaps/huge").status, 404);
    expect_still_serving();
}

// Thousands of concurrent watches are each served (the response head, then the event of a new
// object) in bounded memory, and released (their sockets closed) once their clients leave.
TEST_F(HostileInput, ThousandsOfConcurrentWatchesAreServedAndReleasedInBoundedMemory) {
    constexpr int kWatches = 2000;
    const int port = test->server().port();
    const std::string watch =
        "GET /api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true "
        "HTTP/1.1\r\nHost: x\r\n\r\n";
    expect_still_serving();
    const long before = resident_kib();
    const int descriptors_before = open_descriptors();
    std::vector<int> fds;
    for (int i = 0; i < kWatches; ++i) {
        const int fd = connect_and_send(port, watch);
        ASSERT_GE(fd, 0) << "watch " << i << " could not connect";
        fds.push_back(fd);
    }
    std::vector<std::string> texts(fds.size());
    EXPECT_EQ(read_until_all_have(fds, texts, "HTTP/1.1 200", 20s), kWatches);
    auto created = test->http("POST", "/api/v1/namespaces/default/configmaps",
                              R"({"apiVersion":"v1","kind":"ConfigMap","metadata":)"
                              R"({"name":"seen-by-all"}})",
                              "application/json");
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(read_until_all_have(fds, texts, "seen-by-all", 20s), kWatches);
    const long peak = resident_kib();
    expect_still_serving();

    for (int fd : fds) ::close(fd);
    // The server notices a departed client when it next writes to it: give it something to say.
    test->http("POST", "/api/v1/namespaces/default/configmaps",
               R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}})",
               "application/json");
    EXPECT_TRUE(wait_for([&] { return open_descriptors() <= descriptors_before + 10; }, 20s))
        << open_descriptors() - descriptors_before << " descriptors still open";
    const long after = resident_kib();
    std::cout << "hostile-input: RSS " << before / 1024 << " MiB before " << kWatches
              << " watches, " << peak / 1024 << " MiB with them open (+"
              << (peak - before) / kWatches << " KiB per watch), " << after / 1024
              << " MiB after they left" << std::endl;
    EXPECT_LT(peak - before, kFreedMemoryKeptKib + 256 * 1024)
        << "KiB for " << kWatches << " watches";
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
