// API operations against the embedded API server over HTTPS, and their typed errors.
#include <gtest/gtest.h>

#include <kopf/version.hpp>
#include <memory>
#include <optional>
#include <string>

#include "support/fixture.hpp"
#include "support/raw_server.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

class Operations : public ClientTest {};

TEST_F(Operations, CreateThenGetReturnsTheObject) {
    auto api = make_client(admin());
    auto created = run(api->create(configmaps(), "default", configmap("cm-create", {{"a", "1"}})));
    EXPECT_EQ(created["metadata"]["name"], "cm-create");
    auto fetched = run(api->get(configmaps(), "default", "cm-create"));
    EXPECT_EQ(fetched["data"]["a"], "1");
    EXPECT_FALSE(fetched["metadata"]["uid"].get<std::string>().empty());
}

TEST_F(Operations, ALineBreakInAHeaderValueIsRefusedBeforeAnythingIsSent) {
    auto info = admin();
    info.token = *info.token + "\r\nX-Injected: yes";
    auto api = make_client(info);
    try {
        run(api->create(configmaps(), "default", configmap("cm-injected")));
        FAIL() << "the request was sent";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("Authorization"), std::string::npos) << e.what();
    }
    auto admin_api = make_client(admin());
    EXPECT_THROW(run(admin_api->get(configmaps(), "default", "cm-injected")), NotFoundError);
}

// What a write puts on the wire before its body, byte for byte: the request line with the
// server URL's path prefix, then Host (with the port), User-Agent, Accept, the token,
// Content-Type and Content-Length, each once, as Beast's serializer would write them.
TEST_F(Operations, AWriteSendsTheRequestLineAndEveryHeaderOnce) {
    const std::string answer = R"({"metadata":{"name":"cm-head","resourceVersion":"7"}})";
    RawServer peer(
        [&](const std::string&) -> RawReply { return {RawServer::json_response(answer)}; });
    ConnectionInfo info;
    info.server = peer.url() + "/prefix/";
    info.token = "t0ken";
    auto settings = fast_settings();
    settings.field_manager = "";
    auto api = make_client(info, settings);
    const json patch = {{"data", {{"a", "b"}}}};
    run(api->patch(configmaps(), "default", "cm-head", PatchType::Merge, patch));
    const auto heads = peer.heads();
    ASSERT_EQ(heads.size(), 1u);
    const std::string host = peer.url().substr(std::string("http://").size());
    EXPECT_EQ(heads[0],
              "PATCH /prefix/api/v1/namespaces/default/configmaps/cm-head HTTP/1.1\r\n"
              "Host: " +
                  host +
                  "\r\n"
                  "User-Agent: kopf++/" +
                  std::string(kopf::version()) +
                  "\r\n"
                  "Accept: application/json\r\n"
                  "Authorization: Bearer t0ken\r\n"
                  "Content-Type: application/merge-patch+json\r\n"
                  "Content-Length: " +
                  std::to_string(patch.dump().size()) +
                  "\r\n"
                  "\r\n");
}

// An answer's header fields are kept in a small space per connection, the rest on the heap:
// answers with kilobytes of fields (proxies and gateways add them) are read whole, Retry-After
// last among them included.
TEST_F(Operations, AnswersWithKilobytesOfHeaderFieldsAreReadWhole) {
    std::string padding;
    for (int i = 0; i < 40; ++i)
        padding +=
            "X-Padding-" + std::to_string(i) + ": " + std::string(100, 'a' + i % 26) + "\r\n";
    const std::string object =
        R"({"metadata":{"name":"cm-fields","resourceVersion":"9"},"data":{"k":"v"}})";
    const std::string throttled = R"({"kind":"Status","code":429,"reason":"TooManyRequests"})";
    int answered = 0;
    RawServer peer([&](const std::string&) -> RawReply {
        const bool first = answered++ == 0;
        const std::string& body = first ? throttled : object;
        return {(first ? "HTTP/1.1 429 Too Many Requests\r\n" : "HTTP/1.1 200 OK\r\n") + padding +
                "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\n" + (first ? "Retry-After: 2\r\n" : "") + "Connection: close\r\n\r\n" + body};
    });
    ConnectionInfo info;
    info.server = peer.url();
    auto settings = fast_settings();
    settings.error_backoffs = {};
    auto api = make_client(info, settings);
    try {
        run(api->get(configmaps(), "default", "cm-fields"));
        FAIL() << "no error";
    } catch (const TooManyRequestsError& e) {
        EXPECT_EQ(e.retry_after(), 2.0);
    }
    const json fetched = run(api->get(configmaps(), "default", "cm-fields"));
    EXPECT_EQ(fetched["data"]["k"], "v");
    EXPECT_EQ(fetched["metadata"]["resourceVersion"], "9");
}

// A target with a space would split the request line: refused, named, nothing sent.
TEST_F(Operations, ASpaceInTheRequestTargetIsRefusedBeforeAnythingIsSent) {
    RawServer peer([](const std::string&) -> RawReply { return {RawServer::json_response("{}")}; });
    ConnectionInfo info;
    info.server = peer.url();
    auto api = make_client(info);
    try {
        run(api->request("GET", "/api/v1/namespaces/a b"));
        FAIL() << "the request was sent";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("/api/v1/namespaces/a b"), std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(peer.heads().empty());
}

TEST_F(Operations, GetOfMissingObjectRaisesNotFoundWithTheStatus) {
    auto api = make_client(admin());
    try {
        run(api->get(configmaps(), "default", "nope"));
        FAIL() << "no error";
    } catch (const NotFoundError& e) {
        EXPECT_EQ(e.code(), 404);
        EXPECT_EQ(e.reason(), "NotFound");
        EXPECT_FALSE(e.message().empty());
    }
}

TEST_F(Operations, CreatingTwiceRaisesAlreadyExists) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-twice")));
    EXPECT_THROW(run(api->create(configmaps(), "default", configmap("cm-twice"))),
                 AlreadyExistsError);
}

TEST_F(Operations, UpdateWithStaleResourceVersionRaisesConflict) {
    auto api = make_client(admin());
    auto created = run(api->create(configmaps(), "default", configmap("cm-conflict")));
    auto first = created;
    first["data"] = {{"x", "1"}};
    run(api->update(configmaps(), "default", "cm-conflict", first));
    auto stale = created;
    stale["data"] = {{"x", "2"}};
    EXPECT_THROW(run(api->update(configmaps(), "default", "cm-conflict", stale)), ConflictError);
}

TEST_F(Operations, MergePatchChangesFields) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-merge", {{"a", "1"}, {"b", "2"}})));
    auto patched = run(api->patch(configmaps(), "default", "cm-merge", PatchType::Merge,
                                  {{"data", {{"a", nullptr}, {"c", "3"}}}}));
    EXPECT_EQ(patched["data"], (json{{"b", "2"}, {"c", "3"}}));
}

TEST_F(Operations, PatchReturningOnlyTheVersionAnswersTheWrittenVersion) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-version", {{"a", "1"}})));
    const auto patched = run(api->patch_version(configmaps(), "default", "cm-version",
                                                PatchType::Merge, {{"data", {{"a", "2"}}}}));
    const auto stored = run(api->get(configmaps(), "default", "cm-version"));
    ASSERT_TRUE(patched.resource_version.has_value());
    EXPECT_EQ(stored["metadata"]["resourceVersion"], *patched.resource_version);
    EXPECT_EQ(stored["data"]["a"], "2");
    EXPECT_EQ(json::parse(patched.object), stored);  // the answer's text, unparsed
    EXPECT_THROW(run(api->patch_version(configmaps(), "default", "cm-absent", PatchType::Merge,
                                        {{"data", {{"a", "2"}}}})),
                 NotFoundError);
}

// The operator builds the patch, asks for the request, and lets the patch go before the
// request is awaited: everything is taken when the call is made (ASan would catch a late read).
TEST_F(Operations, PatchReturningOnlyTheVersionNeedsItsArgumentsOnlyDuringTheCall) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-early", {{"a", "1"}})));
    std::optional<kopf::clients::Awaitable<kopf::clients::PatchedVersion>> request;
    {
        const auto resource = std::make_unique<kopf::structs::Resource>(configmaps());
        const auto name = std::make_unique<std::string>("cm-early");
        const auto patch = std::make_unique<json>(json{{"data", {{"a", "early"}}}});
        request.emplace(api->patch_version(*resource, "default", *name, PatchType::Merge, *patch));
    }
    const auto patched = run(std::move(*request));
    const auto stored = run(api->get(configmaps(), "default", "cm-early"));
    ASSERT_TRUE(patched.resource_version.has_value());
    EXPECT_EQ(stored["metadata"]["resourceVersion"], *patched.resource_version);
    EXPECT_EQ(stored["data"]["a"], "early");
}

TEST_F(Operations, JsonPatchWithFailingTestRaisesUnprocessable) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-json", {{"a", "1"}})));
    auto ok =
        run(api->patch(configmaps(), "default", "cm-json", PatchType::Json,
                       json::array({{{"op", "replace"}, {"path", "/data/a"}, {"value", "2"}}})));
    EXPECT_EQ(ok["data"]["a"], "2");
    json failing = json::array({{{"op", "test"}, {"path", "/data/a"}, {"value", "999"}},
                                {{"op", "remove"}, {"path", "/data/a"}}});
    EXPECT_THROW(run(api->patch(configmaps(), "default", "cm-json", PatchType::Json, failing)),
                 UnprocessableEntityError);
}

TEST_F(Operations, StrategicMergeAndApplyPatchesWork) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-smp", {{"a", "1"}})));
    auto smp = run(api->patch(configmaps(), "default", "cm-smp", PatchType::StrategicMerge,
                              {{"metadata", {{"labels", {{"l", "v"}}}}}}));
    EXPECT_EQ(smp["metadata"]["labels"]["l"], "v");
    auto applied = run(api->patch(configmaps(), "default", "cm-applied", PatchType::Apply,
                                  configmap("cm-applied", {{"k", "v"}}), "", /*force=*/true));
    EXPECT_EQ(applied["data"]["k"], "v");
}

TEST_F(Operations, DeleteWithPropagationPolicyRemovesTheObject) {
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-delete")));
    run(api->remove(configmaps(), "default", "cm-delete", {.propagation_policy = "Foreground"}));
    EXPECT_THROW(run(api->get(configmaps(), "default", "cm-delete")), NotFoundError);
    EXPECT_THROW(run(api->remove(configmaps(), "default", "cm-delete")), NotFoundError);
}

TEST_F(Operations, ListIsReadPageByPage) {
    auto api = make_client(admin());
    for (int i = 0; i < 7; ++i) {
        run(api->create(configmaps(), "default", configmap("cm-page-" + std::to_string(i))));
    }
    std::vector<std::size_t> pages;
    std::size_t total = 0;
    auto version =
        run(api->list_pages(configmaps(), "default", {}, 3, [&](std::vector<json>&& items) {
            pages.push_back(items.size());
            total += items.size();
        }));
    EXPECT_FALSE(version.empty());
    EXPECT_GE(pages.size(), 3u);
    for (auto size : pages) EXPECT_LE(size, 3u);
    EXPECT_GE(total, 7u);
    auto whole = run(api->list(configmaps(), "default"));
    EXPECT_EQ(whole["items"].size(), total);
}

TEST_F(Operations, LabelSelectorFiltersTheList) {
    auto api = make_client(admin());
    auto labelled = configmap("cm-labelled");
    labelled["metadata"]["labels"] = {{"app", "kopf"}};
    run(api->create(configmaps(), "default", labelled));
    run(api->create(configmaps(), "default", configmap("cm-unlabelled")));
    auto list = run(api->list(configmaps(), "default", {.label_selector = "app=kopf"}));
    ASSERT_EQ(list["items"].size(), 1u);
    EXPECT_EQ(list["items"][0]["metadata"]["name"], "cm-labelled");
}

TEST_F(Operations, PostedEventRefersToTheObject) {
    auto api = make_client(admin());
    auto object = run(api->create(configmaps(), "default", configmap("cm-event")));
    auto event = run(api->post_event(object, "Normal", "Logging", std::string(2000, 'x')));
    EXPECT_EQ(event["involvedObject"]["name"], "cm-event");
    EXPECT_EQ(event["involvedObject"]["uid"], object["metadata"]["uid"]);
    EXPECT_EQ(event["reason"], "Logging");
    EXPECT_EQ(event["message"].get<std::string>().size(), 1024u);
    EXPECT_EQ(event["source"]["component"], "kopf");
}

TEST_F(Operations, DiscoveryFindsBuiltinsAndSelectorsResolveThem) {
    auto api = make_client(admin());
    auto resources = run(api->discover());
    auto pods = structs::Selector("pods").select_one(resources);
    ASSERT_TRUE(pods.has_value());
    EXPECT_EQ(pods->kind, "Pod");
    EXPECT_TRUE(pods->namespaced);
    EXPECT_TRUE(pods->subresources.count("status"));
    auto namespaces = structs::namespaces_selector().select_one(resources);
    ASSERT_TRUE(namespaces.has_value());
    EXPECT_FALSE(namespaces->namespaced);
    EXPECT_TRUE(structs::crds_selector().select_one(resources).has_value());
}

TEST_F(Operations, StatusSubresourceIsWrittenSeparately) {
    auto api = make_client(admin());
    auto resources = run(api->discover());
    auto crds = *structs::crds_selector().select_one(resources);
    json crd = json::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "kopfexamples.kopf.dev"},
      "spec": {"group": "kopf.dev", "scope": "Namespaced",
        "names": {"plural": "kopfexamples", "singular": "kopfexample", "kind": "KopfExample",
                  "shortNames": ["kex"]},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "subresources": {"status": {}},
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})");
    run(api->create(crds, "", crd));
    std::optional<structs::Resource> kex;
    for (int i = 0; i < 50 && !kex; ++i) {
        kex = structs::Selector("kex").select_one(run(api->discover()));
        if (!kex) run(api->sleep(Seconds(0.1)));
    }
    ASSERT_TRUE(kex.has_value());
    run(api->create(*kex, "default",
                    {{"apiVersion", "kopf.dev/v1"},
                     {"kind", "KopfExample"},
                     {"metadata", {{"name", "kex1"}}},
                     {"spec", {{"field", "value"}}}}));
    run(api->patch(*kex, "default", "kex1", PatchType::Merge, {{"status", {{"ok", true}}}},
                   "status"));
    auto fetched = run(api->get(*kex, "default", "kex1"));
    EXPECT_EQ(fetched["status"]["ok"], true);
    // A status write through the main endpoint is ignored when the status subresource exists.
    run(api->patch(*kex, "default", "kex1", PatchType::Merge, {{"status", {{"ok", false}}}}));
    EXPECT_EQ(run(api->get(*kex, "default", "kex1"))["status"]["ok"], true);
}

TEST_F(Operations, VersionIsRead) {
    auto api = make_client(admin());
    auto version = run(api->read_version());
    EXPECT_TRUE(version.contains("gitVersion"));
}

}  // namespace
}  // namespace kopf::testing
