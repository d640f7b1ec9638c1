// Handlers talking to the Kubernetes API through ctx.api(): children created from synchronous
// handlers (blocking calls on the worker pool) and from async handlers (co_await on the loop),
// owned by their parent and garbage-collected with it; a blocking call on the loop refused; the
// client in cleanup handlers and for the embedding application.
#include <kopf/api.hpp>
#include <kopf/connection.hpp>
#include <kopf/hierarchies.hpp>
#include <map>
#include <memory>
#include <string>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

class HandlerClient : public HandlingTest {};

bool owned_by(const json& child, const std::string& uid) {
    const auto& refs = child["metadata"].value("ownerReferences", json::array());
    return refs.size() == 1 && refs[0].value("uid", "") == uid &&
           refs[0].value("controller", false) && refs[0].value("kind", "") == "KopfExample";
}

bool gone(const kopf::Api& api, const std::string& name) {
    try {
        api.get(name).wait();
        return false;
    } catch (const kopf::ApiError& error) {
        return error.not_found();
    }
}

TEST_F(HandlerClient, ChildrenFromSyncAndAsyncHandlersAreOwnedAndCollected) {
    Registry registry;
    // Heap state in the handlers' captures, as users' handlers have.
    auto greeting = std::make_shared<std::string>("hello from a synchronous handler");
    on::create sync_child(registry, "kopfexamples", {.id = "configmap_fn"},
                          [greeting](Context& ctx) -> json {
                              json child = {{"apiVersion", "v1"},
                                            {"kind", "ConfigMap"},
                                            {"metadata", {{"name", ctx.name + "-config"}}},
                                            {"data", {{"greeting", *greeting}}}};
                              kopf::adopt(child, ctx.body);
                              json created = ctx.api("configmaps").create_or_get(child).wait();
                              return {{"configmap", created["metadata"]["name"]}};
                          });
    auto image = std::make_shared<std::string>("busybox:stable");
    on::create async_child(
        registry, "kopfexamples", {.id = "pod_fn"}, [image](Context& ctx) -> Task<json> {
            json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", ctx.name + "-pod"}}},
                        {"spec", {{"containers", {{{"name", "main"}, {"image", *image}}}}}}};
            kopf::adopt(pod, ctx.body);
            auto pods = ctx.api("pods", ctx.namespace_);
            json created = co_await pods.create(pod);
            json listed = co_await pods.list().labels("kopf.example/none!=x");
            co_return json{{"pod", created["metadata"]["name"]},
                           {"listed", listed["items"].size()}};
        });
    on::create blocking_on_loop(registry, "kopfexamples", {.id = "refused_fn"},
                                [](Context& ctx) -> Task<json> {
                                    std::string refusal;
                                    try {
                                        // On the loop: refused, not a deadlock.
                                        ctx.api("configmaps", ctx.namespace_).list().wait();
                                    } catch (const std::logic_error& error) {
                                        refusal = error.what();
                                    }
                                    co_return json{{"refusal", refusal}};
                                });
    on::cleanup cleanup(registry, {.id = "cleanup_fn"}, [](ActivityContext& ctx) {
        json marker = {{"metadata", {{"name", "cleaned-up"}}}, {"data", {{"by", "cleanup_fn"}}}};
        ctx.api("configmaps", "default").create(marker).wait();
    });
    auto operator_ = start_operator(registry);

    kopf::Client client(*login_with_kubeconfig());
    auto configmaps = client.api("configmaps", "default");
    auto pods = client.api("pods", "default");

    const json parent = create(example("kex-children", {{"field", "value"}}));
    const std::string uid = parent["metadata"]["uid"];
    std::optional<json> body;
    ASSERT_TRUE(eventually([&] {
        body = get("kex-children");
        return body && body->contains(json::json_pointer("/status/configmap_fn")) &&
               body->contains(json::json_pointer("/status/pod_fn"));
    })) << (body ? body->dump(2) : "no object");
    EXPECT_EQ((*body)["status"]["configmap_fn"]["configmap"], "kex-children-config");
    EXPECT_EQ((*body)["status"]["pod_fn"]["pod"], "kex-children-pod");
    EXPECT_EQ((*body)["status"]["pod_fn"]["listed"], 1);

    json configmap = configmaps.get("kex-children-config").wait();
    EXPECT_TRUE(owned_by(configmap, uid)) << configmap.dump(2);
    EXPECT_EQ(configmap["data"]["greeting"], "hello from a synchronous handler");
    json pod = pods.get("kex-children-pod").wait();
    EXPECT_TRUE(owned_by(pod, uid)) << pod.dump(2);

    // The blocking call on the loop was refused with the reason.
    ASSERT_TRUE(eventually([&] {
        body = get("kex-children");
        return body && body->contains(json::json_pointer("/status/refused_fn"));
    }));
    EXPECT_NE((*body)["status"]["refused_fn"].value("refusal", "").find("event loop"),
              std::string::npos)
        << body->dump(2);

    // The children go with their parent (the API server's garbage collector).
    remove("kex-children");
    EXPECT_TRUE(eventually([&] { return gone(pods, "kex-children-pod"); }));
    EXPECT_TRUE(eventually([&] { return gone(configmaps, "kex-children-config"); }));

    EXPECT_EQ(operator_->stop(), "");
    EXPECT_EQ(configmaps.get("cleaned-up").wait()["data"]["by"], "cleanup_fn");
}

// Kopf's implicit owner: inside a handler, kopf::adopt(child) with no owner adopts the child
// to the handled object, in synchronous handlers and in coroutines after kopf's awaitables
// (which resume the coroutine on the loop, maybe after other handlers ran there).
TEST_F(HandlerClient, ChildrenAdoptedWithoutAnOwnerBelongToTheHandledObject) {
    Registry registry;
    on::create sync_child(registry, "kopfexamples", {.id = "sync_fn"}, [](Context& ctx) -> json {
        json child = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", {{"by", "sync"}}}};
        kopf::adopt(child, {.strict = true});
        child["metadata"]["name"] = ctx.name + "-sync";
        ctx.api("configmaps").create(child).wait();
        return {{"reference", kopf::build_object_reference(ctx.body)}};
    });
    on::create async_child(
        registry, "kopfexamples", {.id = "async_fn"}, [](Context& ctx) -> Task<json> {
            auto configmaps = ctx.api("configmaps", ctx.namespace_);
            co_await kopf::sleep(0.2);  // other objects' handlers run on the loop meanwhile
            json before = co_await configmaps.list();
            json child = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", {{"by", "async"}}}};
            kopf::adopt(child);
            child["metadata"]["name"] = ctx.name + "-async";
            co_await configmaps.create(child);
            co_return json{{"listed", before["items"].size() > 0}};
        });
    auto operator_ = start_operator(registry);

    kopf::Client client(*login_with_kubeconfig());
    auto configmaps = client.api("configmaps", "default");
    std::map<std::string, std::string> uids;
    for (const std::string name : {"kex-implicit-1", "kex-implicit-2"}) {
        json parent = example(name, {{"field", "value"}});
        parent["metadata"]["labels"] = {{"parent", name}};
        uids[name] = create(parent)["metadata"]["uid"];
    }
    for (const auto& [name, uid] : uids) {
        std::optional<json> body;
        ASSERT_TRUE(eventually([&] {
            body = get(name);
            return body && body->contains(json::json_pointer("/status/sync_fn")) &&
                   body->contains(json::json_pointer("/status/async_fn"));
        })) << (body ? body->dump(2) : "no object");
        EXPECT_EQ((*body)["status"]["sync_fn"]["reference"], (json{{"apiVersion", "kopf.dev/v1"},
                                                                   {"kind", "KopfExample"},
                                                                   {"name", name},
                                                                   {"namespace", "default"},
                                                                   {"uid", uid}}));
        for (const std::string suffix : {"-sync", "-async"}) {
            json child = configmaps.get(name + suffix).wait();
            EXPECT_TRUE(owned_by(child, uid)) << child.dump(2);
            EXPECT_EQ(child["metadata"]["labels"]["parent"], name) << child.dump(2);
            EXPECT_EQ(child["metadata"]["namespace"], "default") << child.dump(2);
        }
    }
}

}  // namespace
}  // namespace kopf::testing
