// The real kubectl (the minor matching the server's /version) against the server on a
// free loopback port, with a kubeconfig written by the server and a fresh cache dir.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

using nlohmann::json;

std::string script(const std::string& name) {
    return (scripts_dir() / name).string();
}

#define EXPECT_SUCCESS(result) \
    EXPECT_EQ((result).exit_code, 0) << "stdout: " << (result).out << "\nstderr: " << (result).err
#define ASSERT_SUCCESS(result) \
    ASSERT_EQ((result).exit_code, 0) << "stdout: " << (result).out << "\nstderr: " << (result).err

json get_json(TestServer& test, const std::vector<std::string>& what) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    auto result = test.kubectl(args);
    if (result.exit_code != 0) return json();
    return json::parse(result.out, nullptr, false);
}

void install_crd(TestServer& test) {
    auto result = test.kubectl({"apply", "-f", script("kopfexample-crd.yaml")});
    ASSERT_SUCCESS(result);
    ASSERT_SUCCESS(test.kubectl(
        {"wait", "--for=condition=Established", "--timeout=30s", "crd/kopfexamples.kopf.dev"}));
}

TEST(Kubectl, VersionShowsTheServerVersionWithoutSkewWarnings) {
    TestServer test;
    auto result = test.kubectl({"version"});
    EXPECT_SUCCESS(result);
    EXPECT_NE(result.out.find("Server Version"), std::string::npos) << result.out;
    EXPECT_EQ(result.err.find("WARNING"), std::string::npos) << result.err;
}

TEST(Kubectl, ApiResourcesListsBuiltinKinds) {
    TestServer test;
    auto result = test.kubectl({"api-resources"});
    EXPECT_SUCCESS(result);
    for (const char* kind : {"ConfigMap", "Namespace", "Pod", "Secret", "Lease",
                             "CustomResourceDefinition", "Deployment"}) {
        EXPECT_NE(result.out.find(kind), std::string::npos) << kind;
    }
}

TEST(Kubectl, CreateWithDefaultValidationThenGetAsTableYamlAndJson) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    auto table = test.kubectl({"get", "configmaps"});
    EXPECT_SUCCESS(table);
    EXPECT_NE(table.out.find("NAME"), std::string::npos);
    EXPECT_NE(table.out.find("settings"), std::string::npos);
    auto yaml = test.kubectl({"get", "configmap", "settings", "-o", "yaml"});
    EXPECT_SUCCESS(yaml);
    EXPECT_NE(yaml.out.find("mode: fast"), std::string::npos) << yaml.out;
    auto object = get_json(test, {"configmap", "settings"});
    EXPECT_EQ(object["data"]["level"], "3");
    EXPECT_FALSE(object["metadata"]["uid"].get<std::string>().empty());
}

TEST(Kubectl, CreatingAnExistingObjectFailsWithAlreadyExists) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    auto again = test.kubectl({"create", "-f", script("configmap.yaml")});
    EXPECT_NE(again.exit_code, 0);
    EXPECT_NE(again.err.find("AlreadyExists"), std::string::npos) << again.err;
}

TEST(Kubectl, ApplyCreatesThenReportsUnchangedThenConfigured) {
    TestServer test;
    auto first = test.kubectl({"apply", "-f", script("configmap.yaml")});
    EXPECT_SUCCESS(first);
    EXPECT_NE(first.out.find("created"), std::string::npos) << first.out;
    auto second = test.kubectl({"apply", "-f", script("configmap.yaml")});
    EXPECT_SUCCESS(second);
    EXPECT_NE(second.out.find("unchanged"), std::string::npos) << second.out;
    std::string changed = read_file(scripts_dir() / "configmap.yaml");
    changed.replace(changed.find("fast"), 4, "slow");
    auto third = test.kubectl({"apply", "-f", "-"}, changed);
    EXPECT_SUCCESS(third);
    EXPECT_NE(third.out.find("configured"), std::string::npos) << third.out;
    EXPECT_EQ(get_json(test, {"configmap", "settings"})["data"]["mode"], "slow");
}

TEST(Kubectl, GetWatchPrintsObjectsCreatedLater) {
    TestServer test;
    Process watch(test.kubectl_argv({"get", "configmaps", "-w", "--request-timeout=60s"}),
                  {{"HOME", test.dir().path().string()}});
    int n = 0;
    bool seen = wait_for([&] {
        test.kubectl({"create", "-f", "-"},
                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched-" +
                         std::to_string(n++) + "\n");
        return watch.out().find("watched-") != std::string::npos;
    });
    EXPECT_TRUE(seen) << watch.out() << watch.err();
}

TEST(Kubectl, DescribeShowsLabelsAndData) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    auto result = test.kubectl({"describe", "configmap", "settings"});
    EXPECT_SUCCESS(result);
    EXPECT_NE(result.out.find("app=demo"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("fast"), std::string::npos) << result.out;
}

TEST(Kubectl, LabelAndAnnotateChangeMetadata) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    EXPECT_SUCCESS(test.kubectl({"label", "configmap", "settings", "tier=backend"}));
    EXPECT_SUCCESS(test.kubectl({"annotate", "configmap", "settings", "note=hello"}));
    auto object = get_json(test, {"configmap", "settings"});
    EXPECT_EQ(object["metadata"]["labels"]["tier"], "backend");
    EXPECT_EQ(object["metadata"]["annotations"]["note"], "hello");
    auto selected = test.kubectl({"get", "configmaps", "-l", "tier=backend", "-o", "name"});
    EXPECT_EQ(selected.out, "configmap/settings\n");
}

TEST(Kubectl, PatchMergeJsonAndStrategic) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("pod.yaml")}));
    EXPECT_SUCCESS(test.kubectl(
        {"patch", "configmap", "settings", "--type=merge", "-p", R"({"data":{"mode":"merged"}})"}));
    EXPECT_SUCCESS(test.kubectl({"patch", "configmap", "settings", "--type=json", "-p",
                                 R"([{"op":"replace","path":"/data/level","value":"9"}])"}));
    // Strategic merge on a built-in: containers merge by name instead of being replaced.
    EXPECT_SUCCESS(
        test.kubectl({"patch", "pod", "web", "--type=strategic", "-p",
                      R"({"spec":{"containers":[{"name":"main","image":"nginx:1.26"}]}})"}));
    auto cm = get_json(test, {"configmap", "settings"});
    EXPECT_EQ(cm["data"]["mode"], "merged");
    EXPECT_EQ(cm["data"]["level"], "9");
    auto pod = get_json(test, {"pod", "web"});
    ASSERT_EQ(pod["spec"]["containers"].size(), 2u) << pod.dump();
    EXPECT_EQ(pod["spec"]["containers"][0]["image"], "nginx:1.26");
}

TEST(Kubectl, AFailedJsonPatchTestIsReportedAsInvalid) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    auto result = test.kubectl({"patch", "configmap", "settings", "--type=json", "-p",
                                R"([{"op":"test","path":"/data/mode","value":"other"}])"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("is invalid"), std::string::npos) << result.err;
}

TEST(Kubectl, EditWithAScriptedEditorSavesTheChange) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    auto editor = test.dir() / "editor.sh";
    write_file(editor, "#!/bin/sh\nsed -i 's/mode: fast/mode: edited/' \"$1\"\n");
    ::chmod(editor.c_str(), 0755);
    auto result =
        test.kubectl({"edit", "configmap", "settings"}, "", {{"KUBE_EDITOR", editor.string()}});
    EXPECT_SUCCESS(result);
    EXPECT_EQ(get_json(test, {"configmap", "settings"})["data"]["mode"], "edited");
}

TEST(Kubectl, DeleteWithoutFinalizersRemovesTheObject) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    EXPECT_SUCCESS(test.kubectl({"delete", "configmap", "settings", "--wait=true"}));
    auto gone = test.kubectl({"get", "configmap", "settings"});
    EXPECT_NE(gone.exit_code, 0);
    EXPECT_NE(gone.err.find("NotFound"), std::string::npos) << gone.err;
}

TEST(Kubectl, DeleteWithAFinalizerWaitsUntilTheFinalizerIsRemoved) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    ASSERT_SUCCESS(test.kubectl({"patch", "configmap", "settings", "--type=merge", "-p",
                                 R"({"metadata":{"finalizers":["example.com/keep"]}})"}));
    Process deletion(
        test.kubectl_argv({"delete", "configmap", "settings", "--wait=true", "--timeout=60s"}),
        {{"HOME", test.dir().path().string()}});
    ASSERT_TRUE(wait_for([&] {
        auto object = get_json(test, {"configmap", "settings"});
        return object.is_object() && object["metadata"].contains("deletionTimestamp");
    }));
    EXPECT_TRUE(deletion.running());
    ASSERT_SUCCESS(test.kubectl({"patch", "configmap", "settings", "--type=merge", "-p",
                                 R"({"metadata":{"finalizers":null}})"}));
    auto result = deletion.wait(60s);
    EXPECT_SUCCESS(result);
    EXPECT_NE(test.kubectl({"get", "configmap", "settings"}).exit_code, 0);
}

TEST(Kubectl, CrdInstallThenCreateGetAndPrinterColumns) {
    TestServer test;
    install_crd(test);
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("kopfexample.yaml")}));
    auto table = test.kubectl({"get", "kopfexamples"});
    EXPECT_SUCCESS(table);
    EXPECT_NE(table.out.find("DURATION"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("1m"), std::string::npos) << table.out;
    auto by_short_name = test.kubectl({"get", "kex", "kopf-example-1", "-o", "name"});
    EXPECT_EQ(by_short_name.out, "kopfexample.kopf.dev/kopf-example-1\n") << by_short_name.err;
}

TEST(Kubectl, WaitForAConditionSetThroughTheStatusSubresource) {
    TestServer test;
    install_crd(test);
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("kopfexample.yaml")}));
    Process waiting(test.kubectl_argv({"wait", "--for=condition=Ready", "--timeout=60s",
                                       "kopfexample/kopf-example-1"}),
                    {{"HOME", test.dir().path().string()}});
    ASSERT_SUCCESS(test.kubectl(
        {"patch", "kopfexample", "kopf-example-1", "--subresource=status", "--type=merge", "-p",
         R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})"}));
    auto result = waiting.wait(60s);
    EXPECT_SUCCESS(result);
    EXPECT_NE(result.out.find("condition met"), std::string::npos) << result.out;
}

TEST(Kubectl, WaitForDeleteReturnsOnceTheObjectIsGone) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    Process waiting(
        test.kubectl_argv({"wait", "--for=delete", "--timeout=60s", "configmap/settings"}),
        {{"HOME", test.dir().path().string()}});
    ASSERT_SUCCESS(test.kubectl({"delete", "configmap", "settings", "--wait=false"}));
    EXPECT_SUCCESS(waiting.wait(60s));
}

TEST(Kubectl, NamespacesScopeObjectsAndDeleteTheirContent) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"create", "-f", "-"},
                                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"));
    ASSERT_SUCCESS(test.kubectl({"create", "-n", "team-a", "-f", script("configmap.yaml")}));
    EXPECT_EQ(test.kubectl({"get", "configmaps", "-n", "team-a", "-o", "name"}).out,
              "configmap/settings\n");
    EXPECT_EQ(test.kubectl({"get", "configmap", "settings"}).exit_code, 1);
    auto everywhere = test.kubectl({"get", "configmaps", "-A"});
    EXPECT_NE(everywhere.out.find("team-a"), std::string::npos) << everywhere.out;
    EXPECT_SUCCESS(test.kubectl({"delete", "namespace", "team-a", "--wait=true", "--timeout=60s"}));
    EXPECT_NE(test.kubectl({"get", "namespace", "team-a"}).exit_code, 0);
}

TEST(Kubectl, WorksOverTlsWithTheGeneratedKubeconfig) {
    TestServer test(tls_options());
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("configmap.yaml")}));
    auto result = test.kubectl({"get", "configmap", "settings", "-o", "name"});
    EXPECT_SUCCESS(result);
    EXPECT_EQ(result.out, "configmap/settings\n");
}

TEST(Kubectl, OverTlsWithoutCredentialsReportsUnauthorized) {
    TestServer test(tls_options());
    auto config = read_file(test.kubeconfig());
    auto token_at = config.find("token: ");
    ASSERT_NE(token_at, std::string::npos);
    config.replace(token_at, config.find('\n', token_at) - token_at, "token: wrong");
    write_file(test.kubeconfig(), config);
    auto result = test.kubectl({"get", "configmaps"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("You must be logged in to the server"), std::string::npos)
        << result.err;
}

}  // namespace
}  // namespace kopf::apiserver::testing

namespace kopf::apiserver::testing {
namespace {

// kubectl 1.32 asks for aggregated discovery first; with it served, it needs no
// per-group-version documents at all.
TEST(KubectlDiscovery, ApiResourcesUsesAggregatedDiscoveryWithoutPerGroupRequests) {
    TestServer test;
    auto result = test.kubectl({"api-resources", "-v=6"});
    ASSERT_SUCCESS(result);
    EXPECT_NE(result.out.find("Deployment"), std::string::npos) << result.out;
    EXPECT_NE(result.err.find("/apis?timeout"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("/api/v1?timeout"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("/apis/apps/v1?timeout"), std::string::npos) << result.err;
}

TEST(KubectlDiscovery, ACrdIsUsableRightAfterCreationWithAWarmDiscoveryCache) {
    TestServer test;
    ASSERT_SUCCESS(test.kubectl({"api-resources"}));  // discovery is cached now
    ASSERT_SUCCESS(test.kubectl({"create", "-f", script("kopfexample-crd.yaml")}));
    auto listed = test.kubectl({"get", "kopfexamples"});
    EXPECT_SUCCESS(listed);
    EXPECT_NE(listed.err.find("No resources found"), std::string::npos) << listed.err;
    auto resources = test.kubectl({"api-resources", "--api-group=kopf.dev"});
    EXPECT_NE(resources.out.find("KopfExample"), std::string::npos) << resources.out;
}

TEST(KubectlDiscovery, ADeletedCrdLeavesDiscovery) {
    TestServer test;
    install_crd(test);
    ASSERT_SUCCESS(test.kubectl({"delete", "crd", "kopfexamples.kopf.dev", "--wait=true"}));
    auto resources = test.kubectl({"api-resources"});
    EXPECT_SUCCESS(resources);
    EXPECT_EQ(resources.out.find("KopfExample"), std::string::npos) << resources.out;
    EXPECT_NE(test.kubectl({"get", "kopfexamples"}).exit_code, 0);
}

}  // namespace
}  // namespace kopf::apiserver::testing
