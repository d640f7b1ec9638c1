// Kopf's examples end to end, in the style of Kopf's own tests/e2e/test_examples.py: start the
// embedded API server, `kopf run` the example, `kubectl apply` the object, wait for the expected
// log lines, check status and events with kubectl, `kubectl delete`, and check that every handler
// succeeded exactly the expected number of times and that the operator exits cleanly.
#include "e2e/support/examples.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

using namespace kopf::e2e;
using json = nlohmann::json;

namespace {

// Sets an environment variable for the operators started in its lifetime (they inherit it).
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
    ~ScopedEnv() { unsetenv(name_); }

  private:
    const char* name_;
};

class Examples : public ExamplesTest {
  protected:
    // The Events about the example object (core v1), in the order the server lists them.
    std::vector<json> object_events() const {
        std::vector<json> found;
        const json list = cluster_->get_json({"events", "-n", "default"});
        if (!list.is_object() || !list.contains("items")) return found;
        for (const auto& item : list["items"]) {
            if (item.value("/involvedObject/name"_json_pointer, "") == kObjectName) {
                found.push_back(item);
            }
        }
        return found;
    }
};

}  // namespace

TEST_F(Examples, ChildrenPodIsCreatedAdoptedAndCollectedWithItsParent) {
    auto op = start("02-children");
    create_object();
    ASSERT_TRUE(op->wait_for_log("Handler 'create_fn' succeeded.")) << op->log();
    EXPECT_NE(op->log().find(kObjectPrefix + "Creation is in progress:"), std::string::npos);

    const json parent = get_object();
    ASSERT_TRUE(parent.is_object());
    const json children = parent.value("/status/create_fn/children"_json_pointer, json());
    ASSERT_TRUE(children.is_array() && children.size() == 1) << parent.dump(2);
    EXPECT_FALSE(parent["metadata"].contains("finalizers"));  // no deletion handlers

    const json pods = cluster_->get_json({"pods", "-n", "default"});
    ASSERT_TRUE(pods.is_object());
    json pod;
    for (const auto& item : pods["items"]) {
        if (item["metadata"]["uid"] == children[0]) pod = item;
    }
    ASSERT_TRUE(pod.is_object()) << pods.dump(2);
    EXPECT_EQ(pod["metadata"]["generateName"], "kopf-example-1-");
    EXPECT_EQ(pod["metadata"]["labels"]["somelabel"], "somevalue");
    const json& owner = pod["metadata"]["ownerReferences"][0];
    EXPECT_EQ(owner["kind"], "KopfExample");
    EXPECT_EQ(owner["apiVersion"], "kopf.dev/v1");
    EXPECT_EQ(owner["name"], kObjectName);
    EXPECT_EQ(owner["uid"], parent["metadata"]["uid"]);
    EXPECT_EQ(owner["controller"], true);
    EXPECT_EQ(owner["blockOwnerDeletion"], true);
    EXPECT_EQ(pod["spec"]["containers"][0]["env"][0]["value"], "value");  // spec.field

    delete_object();
    ASSERT_TRUE(op->wait_for_log("Deleted, really deleted, and we are notified.")) << op->log();
    const std::string pod_name = pod["metadata"]["name"].get<std::string>();
    EXPECT_TRUE(eventually([&] {
        return cluster_->get_json({"pod", pod_name, "-n", "default"}).is_null();
    })) << "the garbage collector did not delete the child Pod "
        << pod_name;

    stop_cleanly(*op);
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"create_fn", 1}})) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

// Not a port of Kopf's: children owned with the operator's client (server-side apply), kept in
// line with the parent's spec, and collected with it.
TEST_F(Examples, OwnedChildrenFollowTheirParentAndGoWithIt) {
    auto op = start("20-owned-children");
    create_object();
    ASSERT_TRUE(op->wait_for_log("Handler 'reconcile_fn' succeeded.")) << op->log();
    EXPECT_NE(op->log().find(kObjectPrefix + "Children are reconciled: configmap "
                                             "kopf-example-1-settings and deployment "
                                             "kopf-example-1-app with 2 replicas."),
              std::string::npos)
        << op->log();

    const json parent = get_object();
    ASSERT_TRUE(parent.is_object());
    EXPECT_EQ(parent["status"]["reconcile_fn"]["replicas"], 2) << parent.dump(2);
    auto owned_by_parent = [&](const json& child) {
        const json& refs = child["metadata"].value("ownerReferences", json::array());
        return refs.size() == 1 && refs[0]["uid"] == parent["metadata"]["uid"] &&
               refs[0]["kind"] == "KopfExample" && refs[0]["controller"] == true;
    };
    json configmap = cluster_->get_json({"configmap", "kopf-example-1-settings", "-n", "default"});
    json deployment = cluster_->get_json({"deployment", "kopf-example-1-app", "-n", "default"});
    ASSERT_TRUE(configmap.is_object() && deployment.is_object());
    EXPECT_TRUE(owned_by_parent(configmap)) << configmap.dump(2);
    EXPECT_TRUE(owned_by_parent(deployment)) << deployment.dump(2);
    EXPECT_EQ(configmap["data"]["field"], "value");
    EXPECT_EQ(configmap["data"]["duration"], "1m");
    EXPECT_EQ(deployment["spec"]["replicas"], 2);
    EXPECT_EQ(deployment["metadata"]["labels"]["somelabel"], "somevalue");

    // A change of the parent's spec reaches the children.
    auto patched = kubectl({"patch", "kex", kObjectName, "-n", "default", "--type=merge", "-p",
                            R"({"spec":{"field":"changed","items":["a","b","c"]}})"});
    ASSERT_EQ(patched.exit_code, 0) << patched.output;
    ASSERT_TRUE(eventually([&] {
        deployment = cluster_->get_json({"deployment", "kopf-example-1-app", "-n", "default"});
        return deployment.is_object() && deployment["spec"]["replicas"] == 3;
    })) << deployment.dump(2)
        << op->log();
    configmap = cluster_->get_json({"configmap", "kopf-example-1-settings", "-n", "default"});
    EXPECT_EQ(configmap["data"]["field"], "changed");
    EXPECT_TRUE(owned_by_parent(deployment));

    delete_object();
    EXPECT_TRUE(eventually([&] {
        return cluster_->get_json({"configmap", "kopf-example-1-settings", "-n", "default"})
                   .is_null() &&
               cluster_->get_json({"deployment", "kopf-example-1-app", "-n", "default"}).is_null();
    })) << "the garbage collector did not delete the children";

    stop_cleanly(*op);
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"reconcile_fn", 2}})) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(Examples, EventsOfEveryTypeArePostedAboutTheObject) {
    auto op = start("04-events");
    create_object();
    ASSERT_TRUE(op->wait_for_log("Handler 'create_fn' succeeded.")) << op->log();

    // Posting is asynchronous: wait for the four explicit Events.
    auto explicit_events = [&] {
        std::vector<json> found;
        for (auto& event : object_events()) {
            if (event.value("reason", "") == "SomeReason") found.push_back(event);
        }
        return found;
    };
    ASSERT_TRUE(eventually([&] { return explicit_events().size() >= 4; }))
        << json(object_events()).dump(2);
    std::map<std::string, std::string> message_by_type;
    for (const auto& event : explicit_events()) {
        message_by_type[event.value("type", "")] = event.value("message", "");
        EXPECT_EQ(event["involvedObject"]["kind"], "KopfExample");
        EXPECT_EQ(event["involvedObject"]["namespace"], "default");
    }
    EXPECT_EQ(message_by_type["SomeType"], "Some message");
    EXPECT_EQ(message_by_type["Normal"], "Some message");
    EXPECT_EQ(message_by_type["Warning"], "Some message");
    EXPECT_NE(message_by_type["Error"].find("Some exception:"), std::string::npos);
    EXPECT_NE(message_by_type["Error"].find("Exception text."), std::string::npos);

    delete_object();
    ASSERT_TRUE(op->wait_for_log("Deleted, really deleted, and we are notified.")) << op->log();
    stop_cleanly(*op);
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"create_fn", 1}})) << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(Examples, SubhandlersRunOncePerItemAndFinishTheirParent) {
    auto op = start("07-subhandlers");
    create_object();
    ASSERT_TRUE(op->wait_for_log("Handler 'create_fn' succeeded.")) << op->log();
    const std::string log = op->log();
    EXPECT_NE(log.find(kObjectPrefix + "=== Handling creation for item1. ==="), std::string::npos);
    EXPECT_NE(log.find(kObjectPrefix + "=== Handling creation for item2. ==="), std::string::npos);
    // The parent finishes only after all of its sub-handlers.
    EXPECT_LT(log.find("Handler 'create_fn/item1' succeeded."),
              log.find("Handler 'create_fn' succeeded."));
    EXPECT_LT(log.find("Handler 'create_fn/item2' succeeded."),
              log.find("Handler 'create_fn' succeeded."));

    delete_object();
    ASSERT_TRUE(op->wait_for_log("Deleted, really deleted, and we are notified.")) << op->log();
    stop_cleanly(*op);
    EXPECT_EQ(op->count_in_log("=== Handling creation for item1. ==="), 1);
    EXPECT_EQ(op->count_in_log("=== Handling creation for item2. ==="), 1);
    EXPECT_EQ(successes(*op),
              (std::map<std::string, int>{
                  {"create_fn", 1}, {"create_fn/item1", 1}, {"create_fn/item2", 1}}))
        << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(Examples, EventHandlersSeeEveryWatchEventAndTheirErrorsAreIgnored) {
    auto op = start("08-events");
    create_object();
    ASSERT_TRUE(op->wait_for_log("Handler 'normal_event_fn' succeeded.")) << op->log();
    EXPECT_NE(op->log().find(kObjectPrefix + "Event received: "), std::string::npos);
    EXPECT_NE(op->log().find(R"("type":"ADDED")"), std::string::npos) << op->log();
    // Nothing to persist for event handlers: no finalizer, no progress annotations.
    const json object = get_object();
    ASSERT_TRUE(object.is_object());
    EXPECT_FALSE(object["metadata"].contains("finalizers"));

    auto deleted = kubectl({"delete", "-f", object_yaml(), "--timeout=60s"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(eventually([&] {
        return op->count_in_log("Handler 'normal_event_fn' succeeded.") >= 2;
    })) << op->log();
    EXPECT_NE(op->log().find(R"("type":"DELETED")"), std::string::npos) << op->log();

    stop_cleanly(*op);
    // One ADDED and one DELETED event: the failing handler never stops the other one.
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"normal_event_fn", 2}})) << op->log();
    EXPECT_EQ(
        op->count_in_log(
            "Handler 'event_fn_with_error' failed with an exception and will ignore it: Oops!"),
        2)
        << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(Examples, BuiltinPodKillingIsScheduledAndCancelledByTheDeletion) {
    auto op = start("10-builtins", "pods.v1");
    auto created = kubectl({"run", "kopf-pod", "-n", "default", "--image=busybox",
                            "--restart=Never", "--command", "--", "sh", "-x", "-c", "sleep 1"});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op->wait_for_log("[default/kopf-pod] === Pod killing happens in 30s."))
        << op->log();
    ASSERT_TRUE(op->wait_for_log("Handler 'pod_in_sight' succeeded.")) << op->log();
    EXPECT_NE(op->log().find("[default/kopf-pod] Creation is in progress:"), std::string::npos);
    const json pod = cluster_->get_json({"pod", "kopf-pod", "-n", "default"});
    ASSERT_TRUE(pod.is_object());
    EXPECT_EQ(pod["metadata"]["finalizers"], json::array({kFinalizer}));

    auto deleted = kubectl({"delete", "pod", "kopf-pod", "-n", "default", "--timeout=60s"});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
    ASSERT_TRUE(op->wait_for_log("[default/kopf-pod] === Pod killing is cancelled!")) << op->log();
    EXPECT_NE(op->log().find("[default/kopf-pod] Deletion is in progress:"), std::string::npos);
    EXPECT_TRUE(cluster_->get_json({"pod", "kopf-pod", "-n", "default"}).is_null());

    stop_cleanly(*op);
    EXPECT_EQ(successes(*op), (std::map<std::string, int>{{"pod_in_sight", 1}, {"pod_deleted", 1}}))
        << op->log();
    EXPECT_TRUE(final_failures(*op).empty()) << op->log();
}

TEST_F(Examples, BuiltinPodIsKilledWhenItsTimeoutPasses) {
    const ScopedEnv short_timeout("EXAMPLE_POD_KILLER_TIMEOUT", "1");
    auto op = start("10-builtins", "pods.v1");
    auto created =
        kubectl({"run", "kopf-pod", "-n", "default", "--image=busybox", "--restart=Never"});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op->wait_for_log("[default/kopf-pod] === Pod killing happens in 1s.")) << op->log();

    // The operator deletes the Pod itself; its own deletion handler then lets it go.
    ASSERT_TRUE(op->wait_for_log("[default/kopf-pod] === Pod killing happens NOW!")) << op->log();
    EXPECT_TRUE(eventually([&] {
        return cluster_->get_json({"pod", "kopf-pod", "-n", "default"}).is_null();
    }));
    stop_cleanly(*op);
    EXPECT_EQ(op->count_in_log("Pod killing is cancelled!"), 0);
}

TEST_F(Examples, FilteringHandlersRunOnlyWhenTheirFiltersMatch) {
    auto op = start("11-filtering-handlers");
    auto created = kubectl({"create", "-f", object_yaml()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op->wait_for_log("Creation is processed")) << op->log();

    auto patched = kubectl(
        {"patch", "-f", object_yaml(), "--type", "merge", "-p", R"({"spec":{"field":"changed"}})"});
    ASSERT_EQ(patched.exit_code, 0) << patched.output;
    ASSERT_TRUE(op->wait_for_log(kObjectPrefix + "Field change is satisfied.")) << op->log();

    delete_object();
    ASSERT_TRUE(op->wait_for_log("Deleted, really deleted, and we are notified.")) << op->log();
    stop_cleanly(*op);

    const std::string log = op->log();
    for (const char* line :
         {"Label is matching.", "Label is present.", "Label is absent.", "Label callback matching.",
          "Annotation is matching.", "Annotation is present.", "Annotation is absent.",
          "Filter satisfied.", "Field value is satisfied.", "Field presence is satisfied.",
          "Field change is satisfied."}) {
        EXPECT_EQ(op->count_in_log(kObjectPrefix + line), 1) << line;
    }
    for (const char* line : {"Annotation callback mismatch.", "Filter not satisfied.",
                             "Field value is not satisfied.", "Field presence is not satisfied."}) {
        EXPECT_EQ(log.find(line), std::string::npos) << line;
    }
    const auto counts = successes(*op);
    for (const auto& [id, count] : counts) EXPECT_EQ(count, 1) << id;
    EXPECT_EQ(counts.size(), 12u) << log;  // the field daemon included, once at its exit
    EXPECT_TRUE(final_failures(*op).empty()) << log;
}
