// kopf::Client and kopf::Api (the client for operator code) against the embedded API server:
// every verb and option, the typed errors, paging, dry-run, server-side apply conflicts, watches
// through dropped streams and 410 Gone, re-login on 401, 429 with Retry-After, and the refusal
// of a blocking call on the client's own loop.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <kopf/api.hpp>
#include <kopf/run.hpp>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "clients/facade.hpp"
#include "support/fixture.hpp"

namespace kopf::testing {
namespace {

class PublicApiTest : public ClientTest {
  protected:
    void SetUp() override {
        ClientTest::SetUp();
        client = kopf::Client(admin());
        configmaps = client.api("configmaps", "default");
    }

    // A body with what users put in theirs: labels, annotations Kopf wrote, nested data.
    static json configmap_body(const std::string& name, const std::string& value = "one") {
        return {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata",
                 {{"name", name},
                  {"labels", {{"app", "web"}, {"tier", "front"}}},
                  {"annotations",
                   {{"kopf.zalando.org/last-handled-configuration",
                     R"({"spec":{"nested":{"deep":[1,2,{"x":"y"}]}}})"}}}}},
                {"data", {{"key", value}, {"other", "kept"}}}};
    }

    kopf::Client client;
    kopf::Api configmaps{nullptr, "configmaps", "default"};
};

TEST_F(PublicApiTest, CreateGetReplacePatchDelete) {
    json created = configmaps.create(configmap_body("crud")).wait();
    EXPECT_EQ(created["metadata"]["name"], "crud");
    EXPECT_EQ(created["metadata"]["namespace"], "default");

    json got = configmaps.get("crud").wait();
    EXPECT_EQ(got["data"]["key"], "one");
    EXPECT_EQ(got["metadata"]["annotations"].size(), 1u);

    json replacement = got;
    replacement["data"]["key"] = "two";
    json replaced = configmaps.replace("crud", replacement).wait();
    EXPECT_EQ(replaced["data"]["key"], "two");

    json merge = {{"data", {{"key", "three"}}}};
    EXPECT_EQ(configmaps.patch("crud", merge).wait()["data"]["key"], "three");
    json ops = json::array({{{"op", "replace"}, {"path", "/data/other"}, {"value", "four"}}});
    json patched = configmaps.patch("crud", ops, kopf::PatchType::Json).wait();
    EXPECT_EQ(patched["data"]["other"], "four");
    json strategic = {{"data", {{"added", "five"}}}};
    patched = configmaps.patch("crud", strategic, kopf::PatchType::StrategicMerge).wait();
    EXPECT_EQ(patched["data"]["added"], "five");
    EXPECT_EQ(patched["data"]["key"], "three");

    configmaps.delete_("crud").wait();
    try {
        configmaps.get("crud").wait();
        FAIL() << "a deleted object was found";
    } catch (const kopf::ApiError& error) {
        EXPECT_TRUE(error.not_found());
        EXPECT_EQ(error.code(), 404);
        EXPECT_EQ(error.reason(), "NotFound");
        EXPECT_EQ(error.verb(), "GET");
        EXPECT_EQ(error.path(), "/api/v1/namespaces/default/configmaps/crud");
        EXPECT_NE(error.message().find("crud"), std::string::npos) << error.message();
    }
}

TEST_F(PublicApiTest, ReplaceWithAStaleVersionIsAConflict) {
    json created = configmaps.create(configmap_body("stale")).wait();
    json merge = {{"data", {{"key", "changed meanwhile"}}}};
    configmaps.patch("stale", merge).wait();
    created["data"]["key"] = "mine";  // still at the first resourceVersion
    try {
        configmaps.replace("stale", created).wait();
        FAIL() << "a stale replacement was accepted";
    } catch (const kopf::ApiError& error) {
        EXPECT_TRUE(error.conflict());
        EXPECT_FALSE(error.already_exists());
        EXPECT_EQ(error.reason(), "Conflict");
        EXPECT_EQ(error.verb(), "PUT");
    }
    EXPECT_EQ(configmaps.get("stale").wait()["data"]["key"], "changed meanwhile");
}

TEST_F(PublicApiTest, CreatingTwiceIsAlreadyExistsAndTheEnsureHelpersAbsorbIt) {
    configmaps.create(configmap_body("twice", "first")).wait();
    try {
        configmaps.create(configmap_body("twice", "second")).wait();
        FAIL() << "a second create succeeded";
    } catch (const kopf::ApiError& error) {
        EXPECT_TRUE(error.already_exists());
        EXPECT_TRUE(error.conflict());
        EXPECT_EQ(error.verb(), "POST");
    }
    // create_or_get: the existing one, unchanged.
    EXPECT_EQ(configmaps.create_or_get(configmap_body("twice", "second")).wait()["data"]["key"],
              "first");
    // create_or_patch: the existing one, merged with the body.
    json merged = configmaps.create_or_patch(configmap_body("twice", "third")).wait();
    EXPECT_EQ(merged["data"]["key"], "third");
    EXPECT_EQ(merged["data"]["other"], "kept");
    // ... and both create what is missing.
    EXPECT_EQ(configmaps.create_or_patch(configmap_body("fresh", "new")).wait()["data"]["key"],
              "new");

    EXPECT_TRUE(configmaps.delete_if_exists("twice").wait());
    EXPECT_FALSE(configmaps.delete_if_exists("twice").wait());
}

TEST_F(PublicApiTest, InvalidObjectsNameTheirFields) {
    json body = configmap_body("Not_A_Valid_Name");
    try {
        configmaps.create(body).wait();
        FAIL() << "an invalid name was accepted";
    } catch (const kopf::ApiError& error) {
        EXPECT_TRUE(error.invalid());
        EXPECT_EQ(error.reason(), "Invalid");
        ASSERT_FALSE(error.causes().empty());
        EXPECT_EQ(error.causes().front().field, "metadata.name");
        EXPECT_FALSE(error.causes().front().reason.empty());
    }
}

TEST_F(PublicApiTest, ListsBySelectorsAndPages) {
    for (int i = 0; i < 7; ++i) {
        json body = configmap_body("paged-" + std::to_string(i));
        if (i % 2) body["metadata"]["labels"]["app"] = "db";
        configmaps.create(body).wait();
    }
    EXPECT_EQ(configmaps.list().labels("app=web").wait()["items"].size(), 4u);
    EXPECT_EQ(configmaps.list().labels("app=db,tier=front").wait()["items"].size(), 3u);
    EXPECT_EQ(configmaps.list().fields("metadata.name=paged-3").wait()["items"].size(), 1u);

    std::set<std::string> seen;
    json page = configmaps.list().limit(3).wait();
    int pages = 1;
    for (;;) {
        for (const auto& item : page["items"]) seen.insert(item["metadata"]["name"]);
        EXPECT_LE(page["items"].size(), 3u);
        const std::string token = page["metadata"].value("continue", "");
        if (token.empty()) break;
        page = configmaps.list().limit(3).continue_from(token).wait();
        ++pages;
    }
    EXPECT_EQ(pages, 3);
    EXPECT_EQ(seen.size(), 7u);

    // Cluster-wide: the same objects through a handle without a namespace.
    json all = client.api("configmaps").list().labels("tier=front").wait();
    EXPECT_EQ(all["items"].size(), 7u);
}

TEST_F(PublicApiTest, AWholeListingJoinsItsPages) {
    // More than one internal page (500 objects).
    constexpr int count = 520;
    for (int i = 0; i < count; ++i) {
        json body = {{"metadata", {{"name", "many-" + std::to_string(i)}}}};
        configmaps.create(body).wait();
    }
    json all = configmaps.list().wait();
    EXPECT_EQ(all["items"].size(), static_cast<std::size_t>(count));
    EXPECT_FALSE(all["metadata"].contains("continue"));
    EXPECT_FALSE(all["metadata"].value("resourceVersion", "").empty());
}

TEST_F(PublicApiTest, DryRunLeavesNothingBehind) {
    json created = configmaps.create(configmap_body("dry")).dry_run().wait();
    EXPECT_EQ(created["metadata"]["name"], "dry");
    EXPECT_THROW(configmaps.get("dry").wait(), kopf::ApiError);

    configmaps.create(configmap_body("kept")).wait();
    json merge = {{"data", {{"key", "dry"}}}};
    EXPECT_EQ(configmaps.patch("kept", merge).dry_run().wait()["data"]["key"], "dry");
    configmaps.delete_("kept").dry_run().wait();
    EXPECT_EQ(configmaps.get("kept").wait()["data"]["key"], "one");
}

TEST_F(PublicApiTest, ServerSideApplyConflictsUnlessForced) {
    json manifest = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "applied"}}},
                     {"data", {{"key", "by-alice"}}}};
    json applied = configmaps.apply(manifest).field_manager("alice").wait();
    EXPECT_EQ(applied["data"]["key"], "by-alice");

    json other = manifest;
    other["data"]["key"] = "by-bob";
    try {
        configmaps.apply(other).field_manager("bob").wait();
        FAIL() << "bob took alice's field without force";
    } catch (const kopf::ApiError& error) {
        EXPECT_TRUE(error.conflict());
        ASSERT_EQ(error.causes().size(), 1u);
        EXPECT_EQ(error.causes().front().field, ".data.key");
        EXPECT_NE(error.message().find("alice"), std::string::npos) << error.message();
    }
    EXPECT_EQ(configmaps.get("applied").wait()["data"]["key"], "by-alice");

    json forced = configmaps.apply(other).field_manager("bob").force().wait();
    EXPECT_EQ(forced["data"]["key"], "by-bob");
    // Alice re-applying her old value now conflicts with bob.
    EXPECT_THROW(configmaps.apply(manifest).field_manager("alice").wait(), kopf::ApiError);
}

TEST_F(PublicApiTest, DeletePreconditionsAndCollections) {
    json created = configmaps.create(configmap_body("guarded")).wait();
    try {
        configmaps.delete_("guarded").precondition_uid("not-its-uid").wait();
        FAIL() << "a delete with a wrong uid precondition succeeded";
    } catch (const kopf::ApiError& error) {
        EXPECT_TRUE(error.conflict());
    }
    configmaps.delete_("guarded")
        .precondition_uid(created["metadata"]["uid"])
        .propagation("Foreground")
        .grace_period(0)
        .wait();
    EXPECT_FALSE(configmaps.delete_if_exists("guarded").wait());

    for (int i = 0; i < 4; ++i) {
        json body = configmap_body("bulk-" + std::to_string(i));
        if (i == 3) body["metadata"]["labels"]["app"] = "keep";
        configmaps.create(body).wait();
    }
    configmaps.delete_collection().labels("app=web").wait();
    json left = configmaps.list().wait();
    ASSERT_EQ(left["items"].size(), 1u);
    EXPECT_EQ(left["items"][0]["metadata"]["name"], "bulk-3");
}

TEST_F(PublicApiTest, StatusAndScaleSubresources) {
    auto deployments = client.api("apps/v1/deployments", "default");
    json deployment = {{"metadata", {{"name", "web"}}},
                       {"spec",
                        {{"replicas", 1},
                         {"selector", {{"matchLabels", {{"app", "web"}}}}},
                         {"template",
                          {{"metadata", {{"labels", {{"app", "web"}}}}},
                           {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}}}}}};
    deployments.create(deployment).wait();

    json status = {{"status", {{"observedGeneration", 1}, {"replicas", 1}}}};
    deployments.patch_status("web", status).wait();
    EXPECT_EQ(deployments.get_status("web").wait()["status"]["replicas"], 1);
    json spec_change = {{"spec", {{"replicas", 9}}}, {"status", {{"replicas", 5}}}};
    deployments.patch_status("web", spec_change).wait();  // /status ignores the spec
    EXPECT_EQ(deployments.get("web").wait()["spec"]["replicas"], 1);

    json scale = deployments.get_scale("web").wait();
    EXPECT_EQ(scale["kind"], "Scale");
    EXPECT_EQ(scale["spec"]["replicas"], 1);
    json replicas = {{"spec", {{"replicas", 3}}}};
    deployments.patch_scale("web", replicas).wait();
    EXPECT_EQ(deployments.get("web").wait()["spec"]["replicas"], 3);
}

TEST_F(PublicApiTest, ResourcesInEveryForm) {
    EXPECT_NO_THROW(client.api("v1/configmaps", "default").list().wait());
    EXPECT_NO_THROW(client.api("cm", "default").list().wait());
    EXPECT_NO_THROW(client.api("ConfigMap", "default").list().wait());
    EXPECT_NO_THROW(client.api(kopf::Selector("apps", "deployments"), "default").list().wait());
    EXPECT_NO_THROW(client.api("deployments.apps", "default").list().wait());
    EXPECT_EQ(client.api("namespaces").get("default").wait()["metadata"]["name"], "default");

    try {
        client.api("frobnicators", "default").list().wait();
        FAIL() << "an unknown resource was listed";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("frobnicators"), std::string::npos);
    }
    EXPECT_THROW(client.api(kopf::EVERYTHING), std::invalid_argument);
    EXPECT_THROW((void)configmaps.get("x").force(), std::invalid_argument);
    EXPECT_THROW((void)configmaps.list().propagation("Sideways"), std::invalid_argument);
    EXPECT_THROW((void)configmaps.delete_("x").propagation("Sideways"), std::invalid_argument);
    EXPECT_THROW(configmaps.get("").wait(), std::invalid_argument);
    EXPECT_THROW(client.api("configmaps").get("no-namespace").wait(), std::invalid_argument);
}

TEST_F(PublicApiTest, RawRequests) {
    json version = client.request("GET", "/version").wait();
    EXPECT_TRUE(version.contains("gitVersion"));
}

TEST_F(PublicApiTest, TooManyRequestsIsRetriedAfterRetryAfter) {
    configmaps.create(configmap_body("busy")).wait();
    server->fail_next_requests(1, 429, 1);
    EXPECT_EQ(configmaps.get("busy").wait()["data"]["key"], "one");
}

TEST_F(PublicApiTest, CallsAfterTheClientIsGoneFailClearly) {
    auto api = client.api("configmaps", "default");
    client = kopf::Client();
    // The handle keeps the client alive; a default client refuses calls.
    EXPECT_NO_THROW(api.list().wait());
    EXPECT_THROW(kopf::Client().api("configmaps").list().wait(), std::logic_error);
}

// A one-off client in one expression: its last handle goes away either on the caller's thread or
// on the client's own loop thread (whichever lets go last); both shut down cleanly.
TEST_F(PublicApiTest, OneOffClientsShutDownWhereverTheirLastHandleGoes) {
    configmaps.create(configmap_body("one-off")).wait();
    for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(
            kopf::Client(admin()).api("configmaps", "default").get("one-off").wait()["data"]["key"],
            "one");
    }
}

// A watch from the client: events across a dropped stream and a 410 Gone, stopped by a flag;
// and a blocking call from the watch callback (on the client's loop) is refused.
TEST_F(PublicApiTest, WatchSurvivesDropsAndGoneAndStopsByFlag) {
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> events;  // type, name
    std::string refusal;
    kopf::OperatorFlag stop;
    auto on_event = [&](const kopf::WatchEvent& event) {
        std::lock_guard lock(mutex);
        events.emplace_back(event.type, event.object["metadata"].value("name", ""));
        if (refusal.empty()) {
            try {
                configmaps.get("w-0").wait();
            } catch (const std::logic_error& error) {
                refusal = error.what();
            }
        }
    };
    auto count = [&](const std::string& name) {
        std::lock_guard lock(mutex);
        return std::count_if(events.begin(), events.end(),
                             [&](const auto& event) { return event.second == name; });
    };
    auto wait_for = [&](const std::string& name) {
        for (int i = 0; i < 400 && count(name) == 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        return count(name) > 0;
    };

    configmaps.create(configmap_body("w-0")).wait();
    std::thread watcher([&] { configmaps.watch(on_event, &stop).labels("app=web").wait(); });
    ASSERT_TRUE(wait_for("w-0"));  // from the initial listing
    configmaps.create(configmap_body("w-1")).wait();
    ASSERT_TRUE(wait_for("w-1"));
    server->drop_watches();
    configmaps.create(configmap_body("w-2")).wait();
    ASSERT_TRUE(wait_for("w-2"));
    server->compact_history();
    server->drop_watches();
    configmaps.create(configmap_body("w-3")).wait();
    ASSERT_TRUE(wait_for("w-3"));
    json unlabelled = {{"metadata", {{"name", "w-other"}}}};
    configmaps.create(unlabelled).wait();

    stop.set();
    watcher.join();  // the flag ends the watch
    EXPECT_EQ(count("w-other"), 0);
    EXPECT_NE(refusal.find("event loop"), std::string::npos) << refusal;
}

// The operator's own client shares its ApiClient: a 401 mid-way is answered by re-login.
TEST_F(PublicApiTest, UnauthorizedIsAnsweredByRelogin) {
    auto api = make_client(admin(), fast_settings());
    auto work = boost::asio::make_work_guard(io);
    std::thread loop([this] { io.run(); });
    auto core = clients::make_client_core(io, *api, {}, loop.get_id());
    kopf::Client operator_client(core);
    auto own = operator_client.api("configmaps", "default");
    own.create(configmap_body("relogged")).wait();

    server->fail_next_requests(1, 401);
    EXPECT_EQ(own.get("relogged").wait()["data"]["key"], "one");
    EXPECT_EQ(relogins.load(), 1);

    // Closed (as at the operator's exit): calls fail with a clear error, nothing hangs.
    boost::asio::post(io, [core] { clients::close_client_core(*core); });
    try {
        own.get("relogged").wait();
        FAIL() << "a closed client answered";
    } catch (const kopf::ApiConnectionError& error) {
        EXPECT_NE(std::string(error.what()).find("closed"), std::string::npos);
    }
    work.reset();
    io.stop();
    loop.join();
}

}  // namespace
}  // namespace kopf::testing
