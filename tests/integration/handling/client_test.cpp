// Handlers talking to the Kubernetes API through ctx.api(): children created from synchronous
// handlers (blocking calls on the worker pool) and from async handlers (co_await on the loop),
// owned by their parent and garbage-collected with it; a blocking call on the loop refused; the
// client in cleanup handlers and for the embedding application.
#include <kopf/api.hpp>
#include <kopf/connection.hpp>
#include <kopf/hierarchies.hpp>
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

}  // namespace
}  // namespace kopf::testing
