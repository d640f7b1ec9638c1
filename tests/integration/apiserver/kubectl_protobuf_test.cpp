// `kubectl create <kind>` subcommands, which send their object as a protobuf body, against the
// embedded API server: what `kubectl get -o json` then shows is what the command asked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

#define ASSERT_SUCCESS(result) \
    ASSERT_EQ((result).exit_code, 0) << "stdout: " << (result).out << "\nstderr: " << (result).err

// Runs `kubectl create ...`, then returns `kubectl get <what> -o json`, parsed.
json create_then_get(TestServer& test, const std::vector<std::string>& create,
                     const std::vector<std::string>& what) {
    std::vector<std::string> args = {"create"};
    args.insert(args.end(), create.begin(), create.end());
    auto created = test.kubectl(args);
    EXPECT_EQ(created.exit_code, 0) << "stdout: " << created.out << "\nstderr: " << created.err;
    if (created.exit_code != 0) return json();
    args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    auto got = test.kubectl(args);
    EXPECT_EQ(got.exit_code, 0) << got.err;
    return json::parse(got.out, nullptr, false);
}

TEST(KubectlProtobuf, CreateDeploymentKeepsImageLabelsAndReplicas) {
    TestServer test;
    json d = create_then_get(
        test, {"deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=8080"},
        {"deployment", "web"});
    ASSERT_TRUE(d.is_object());
    EXPECT_EQ(d["spec"]["replicas"], 3);
    EXPECT_EQ(d["spec"]["selector"]["matchLabels"], json({{"app", "web"}}));
    const json& pod = d["spec"]["template"];
    EXPECT_EQ(pod["metadata"]["labels"], json({{"app", "web"}}));
    ASSERT_EQ(pod["spec"]["containers"].size(), 1U) << d.dump();
    const json& container = pod["spec"]["containers"][0];
    EXPECT_EQ(container["name"], "nginx");
    EXPECT_EQ(container["image"], "nginx:1.27");
    EXPECT_EQ(container["ports"], json::parse(R"([{"containerPort": 8080}])"));
    // Zeros JSON would omit stay omitted; structs JSON always writes stay.
    EXPECT_FALSE(container.contains("stdin")) << container.dump();
    EXPECT_FALSE(container.contains("workingDir")) << container.dump();
    EXPECT_EQ(container["resources"], json::object());
    EXPECT_GT(d["metadata"]["generation"], 0);
}

TEST(KubectlProtobuf, CreateDeploymentWithZeroReplicasKeepsTheZero) {
    TestServer test;
    json d = create_then_get(test, {"deployment", "idle", "--image=busybox", "--replicas=0"},
                             {"deployment", "idle"});
    ASSERT_TRUE(d.is_object());
    ASSERT_TRUE(d["spec"].contains("replicas")) << d.dump();  // a pointer: JSON keeps its zero
    EXPECT_EQ(d["spec"]["replicas"], 0);
}

TEST(KubectlProtobuf, CreateServiceClusterIpNodePortAndExternalName) {
    TestServer test;
    json svc = create_then_get(test, {"service", "clusterip", "web", "--tcp=80:8080", "--tcp=443"},
                               {"service", "web"});
    ASSERT_TRUE(svc.is_object());
    EXPECT_EQ(svc["spec"]["type"], "ClusterIP");
    EXPECT_EQ(svc["spec"]["selector"], json({{"app", "web"}}));
    ASSERT_EQ(svc["spec"]["ports"].size(), 2U) << svc.dump();
    EXPECT_EQ(svc["spec"]["ports"][0]["name"], "80-8080");
    EXPECT_EQ(svc["spec"]["ports"][0]["port"], 80);
    EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"], 8080);  // IntOrString as an int
    EXPECT_EQ(svc["spec"]["ports"][0]["protocol"], "TCP");
    EXPECT_EQ(svc["spec"]["ports"][1]["port"], 443);

    json np =
        create_then_get(test, {"service", "nodeport", "np", "--tcp=5678:8080"}, {"service", "np"});
    ASSERT_TRUE(np.is_object());
    EXPECT_EQ(np["spec"]["type"], "NodePort");
    EXPECT_EQ(np["spec"]["ports"][0]["targetPort"], 8080);

    json ext = create_then_get(test, {"service", "externalname", "ext", "--external-name=x.org"},
                               {"service", "ext"});
    ASSERT_TRUE(ext.is_object());
    EXPECT_EQ(ext["spec"]["type"], "ExternalName");
    EXPECT_EQ(ext["spec"]["externalName"], "x.org");
}

TEST(KubectlProtobuf, CreateJobAndCronJob) {
    TestServer test;
    json job = create_then_get(test, {"job", "once", "--image=busybox", "--", "echo", "hi"},
                               {"job", "once"});
    ASSERT_TRUE(job.is_object());
    const json& container = job["spec"]["template"]["spec"]["containers"][0];
    EXPECT_EQ(container["image"], "busybox");
    EXPECT_EQ(container["command"], json({"echo", "hi"}));
    EXPECT_EQ(job["spec"]["template"]["spec"]["restartPolicy"], "Never");

    json cron = create_then_get(
        test, {"cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "date"},
        {"cronjob", "nightly"});
    ASSERT_TRUE(cron.is_object());
    EXPECT_EQ(cron["spec"]["schedule"], "0 3 * * *");
    const json& job_spec = cron["spec"]["jobTemplate"]["spec"];
    EXPECT_EQ(job_spec["template"]["spec"]["containers"][0]["command"], json({"date"}));
    EXPECT_EQ(job_spec["template"]["spec"]["restartPolicy"], "OnFailure");
}

TEST(KubectlProtobuf, CreateRoleAndRoleBinding) {
    TestServer test;
    json role = create_then_get(
        test, {"role", "reader", "--verb=get,list", "--resource=pods,deployments.apps"},
        {"role", "reader"});
    ASSERT_TRUE(role.is_object());
    ASSERT_EQ(role["rules"].size(), 2U) << role.dump();
    EXPECT_EQ(role["rules"][0]["verbs"], json({"get", "list"}));
    EXPECT_EQ(role["rules"][0]["apiGroups"], json({""}));  // an empty string in a list stays
    EXPECT_EQ(role["rules"][0]["resources"], json({"pods"}));
    EXPECT_EQ(role["rules"][1]["apiGroups"], json({"apps"}));

    json binding = create_then_get(
        test,
        {"rolebinding", "readers", "--role=reader", "--user=alice", "--serviceaccount=default:bot"},
        {"rolebinding", "readers"});
    ASSERT_TRUE(binding.is_object());
    EXPECT_EQ(binding["roleRef"], json::parse(R"({"apiGroup": "rbac.authorization.k8s.io",
                                                  "kind": "Role", "name": "reader"})"));
    ASSERT_EQ(binding["subjects"].size(), 2U) << binding.dump();
    EXPECT_EQ(binding["subjects"][0]["kind"], "User");
    EXPECT_EQ(binding["subjects"][0]["name"], "alice");
    EXPECT_EQ(binding["subjects"][1]["kind"], "ServiceAccount");
    EXPECT_EQ(binding["subjects"][1]["namespace"], "default");
}

TEST(KubectlProtobuf, CreateClusterRoleAndClusterRoleBinding) {
    TestServer test;
    json role = create_then_get(test, {"clusterrole", "viewer", "--verb=get", "--resource=pods"},
                                {"clusterrole", "viewer"});
    ASSERT_TRUE(role.is_object());
    EXPECT_EQ(role["rules"][0]["resources"], json({"pods"}));
    json binding = create_then_get(
        test, {"clusterrolebinding", "viewers", "--clusterrole=viewer", "--group=ops"},
        {"clusterrolebinding", "viewers"});
    ASSERT_TRUE(binding.is_object());
    EXPECT_EQ(binding["roleRef"]["kind"], "ClusterRole");
    EXPECT_EQ(binding["subjects"][0]["kind"], "Group");
}

TEST(KubectlProtobuf, CreateQuotaKeepsQuantitiesAsStrings) {
    TestServer test;
    json quota = create_then_get(test, {"quota", "small", "--hard=cpu=1500m,memory=1Gi,pods=10"},
                                 {"quota", "small"});
    ASSERT_TRUE(quota.is_object());
    EXPECT_EQ(quota["spec"]["hard"],
              json::parse(R"({"cpu": "1500m", "memory": "1Gi", "pods": "10"})"));
}

TEST(KubectlProtobuf, CreateIngress) {
    TestServer test;
    json ing =
        create_then_get(test, {"ingress", "site", "--class=nginx", "--rule=foo.com/path*=svc:8080"},
                        {"ingress", "site"});
    ASSERT_TRUE(ing.is_object());
    EXPECT_EQ(ing["spec"]["ingressClassName"], "nginx");
    const json& rule = ing["spec"]["rules"][0];
    EXPECT_EQ(rule["host"], "foo.com");
    const json& path = rule["http"]["paths"][0];
    EXPECT_EQ(path["path"], "/path");
    EXPECT_EQ(path["pathType"], "Prefix");
    EXPECT_EQ(path["backend"]["service"]["name"], "svc");
    EXPECT_EQ(path["backend"]["service"]["port"]["number"], 8080);
}

TEST(KubectlProtobuf, CreatePodDisruptionBudgetWithPercentOrCount) {
    TestServer test;
    json pdb = create_then_get(
        test, {"poddisruptionbudget", "half", "--selector=app=web", "--min-available=50%"},
        {"pdb", "half"});
    ASSERT_TRUE(pdb.is_object());
    EXPECT_EQ(pdb["spec"]["minAvailable"], "50%");  // IntOrString as a string
    EXPECT_EQ(pdb["spec"]["selector"]["matchLabels"], json({{"app", "web"}}));
    json one = create_then_get(test, {"pdb", "one", "--selector=app=db", "--max-unavailable=1"},
                               {"pdb", "one"});
    ASSERT_TRUE(one.is_object());
    EXPECT_EQ(one["spec"]["maxUnavailable"], 1);
}

TEST(KubectlProtobuf, CreatePriorityClassKeepsAZeroValue) {
    TestServer test;
    json high = create_then_get(
        test, {"priorityclass", "high", "--value=1000", "--description=urgent", "--global-default"},
        {"priorityclass", "high"});
    ASSERT_TRUE(high.is_object());
    EXPECT_EQ(high["value"], 1000);
    EXPECT_EQ(high["description"], "urgent");
    EXPECT_EQ(high["globalDefault"], true);
    EXPECT_EQ(high["preemptionPolicy"], "PreemptLowerPriority");
    json zero =
        create_then_get(test, {"priorityclass", "zero", "--value=0"}, {"priorityclass", "zero"});
    ASSERT_TRUE(zero.is_object());
    ASSERT_TRUE(zero.contains("value")) << zero.dump();  // `value` has no omitempty
    EXPECT_EQ(zero["value"], 0);
}

TEST(KubectlProtobuf, CreateDockerRegistrySecret) {
    TestServer test;
    json reg = create_then_get(test,
                               {"secret", "docker-registry", "pull", "--docker-server=r.io",
                                "--docker-username=u", "--docker-password=p"},
                               {"secret", "pull"});
    ASSERT_TRUE(reg.is_object());
    EXPECT_EQ(reg["type"], "kubernetes.io/dockerconfigjson");
    EXPECT_TRUE(reg["data"].contains(".dockerconfigjson")) << reg.dump();
}

// The strongest check: the stored object, server-set metadata and status aside, is exactly what
// kubectl prints for `--dry-run=client -o json`, i.e. what it would have sent as JSON.
TEST(KubectlProtobuf, StoredObjectsEqualWhatKubectlWouldSendAsJson) {
    TestServer test;
    const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
        {{"deployment", "web", "--image=nginx", "--port=80"}, {"deployment", "web"}},
        {{"service", "loadbalancer", "lb", "--tcp=443:8443"}, {"service", "lb"}},
        {{"job", "once", "--image=busybox", "--", "echo", "hi"}, {"job", "once"}},
        {{"cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"}, {"cronjob", "cj"}},
        {{"role", "r", "--verb=get,watch", "--resource=pods", "--resource-name=a"}, {"role", "r"}},
        {{"rolebinding", "rb", "--clusterrole=view", "--group=devs"}, {"rolebinding", "rb"}},
        {{"quota", "q", "--hard=cpu=1,pods=2", "--scopes=BestEffort"}, {"quota", "q"}},
        {{"ingress", "ing", "--rule=foo.com/p=svc:http", "--default-backend=def:80"},
         {"ingress", "ing"}},
        {{"poddisruptionbudget", "p", "--selector=app=x", "--min-available=1"}, {"pdb", "p"}},
        {{"priorityclass", "pc", "--value=5", "--preemption-policy=Never"},
         {"priorityclass", "pc"}},
        {{"serviceaccount", "sa"}, {"serviceaccount", "sa"}},
    };
    auto without_server_fields = [](json o) {
        o.erase("metadata");
        o.erase("status");
        return o;
    };
    for (const auto& [create, what] : cases) {
        SCOPED_TRACE(create[0] + " " + create[1]);
        std::vector<std::string> dry_run = {"create"};
        dry_run.insert(dry_run.end(), create.begin(), create.end());
        auto dashes = std::find(dry_run.begin(), dry_run.end(), "--");
        dry_run.insert(dashes, {"--dry-run=client", "-o", "json"});
        auto printed = test.kubectl(dry_run);
        ASSERT_SUCCESS(printed);
        json sent_as_json = json::parse(printed.out, nullptr, false);
        json stored = create_then_get(test, create, what);
        ASSERT_TRUE(stored.is_object());
        EXPECT_EQ(without_server_fields(stored), without_server_fields(sent_as_json));
        EXPECT_EQ(stored["metadata"].value("labels", json()),
                  sent_as_json["metadata"].value("labels", json()));
    }
}

}  // namespace
}  // namespace kopf::apiserver::testing
