// `kopf rbac` end to end: the generated manifests, applied to `kopf apiserver --tls
// --authorization-mode=RBAC`, let the operator run under its ServiceAccount's token, and each
// of their rules is needed: without any one of them, a named request fails with 403 in the log.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <thread>

#include "kopf/apiserver/server.hpp"
#include "support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

class GeneratedRbac : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_program("kubectl")) GTEST_SKIP() << "kubectl is not installed";
        char name[] = "/tmp/kopf-e2e-rbac-XXXXXX";
        dir_ = mkdtemp(name);
        cluster_ = rbac_cluster(dir_);
        for (const char* crd : {"examples/crd.yaml", "deploy/peering.yaml"}) {
            auto applied = cluster_->kubectl({"apply", "-f", (source_dir() / crd).string()});
            ASSERT_EQ(applied.exit_code, 0) << applied.output;
        }
        // The operator's kubeconfig: the admin's server and CA with the operator's token.
        YAML::Node config = YAML::LoadFile(cluster_->kubeconfig().string());
        config["users"][0]["user"]["token"] = kOperatorToken;
        std::ofstream(dir_ / "operator.kubeconfig") << YAML::Dump(config) << "\n";
        write_operator();

        auto generated =
            run({kopf_binary().string(), "rbac", example().string(), "-n", "default", "--crd",
                 (source_dir() / "examples/crd.yaml").string()},
                {{"KOPF_CACHE_DIR", (fs::temp_directory_path() / "kopf-e2e-cache").string()}});
        ASSERT_EQ(generated.exit_code, 0) << generated.output;
        manifests_ = YAML::LoadAll(generated.output);
    }
    void TearDown() override {
        cluster_.reset();
        std::error_code ec;
        if (!dir_.empty()) fs::remove_all(dir_, ec);
    }

    // An operator that needs every kind of rule: it watches and patches its objects, writes a
    // result to their status, and posts an Event.
    fs::path example() const { return dir_ / "operator.cpp"; }
    void write_operator() const {
        std::ofstream(example()) << R"(#include <kopf/events.hpp>
#include <kopf/kopf.hpp>
kopf::json create_fn(kopf::Context& ctx) {
    kopf::info(ctx.body, "Created", "Seen by the operator");
    return {{"message", "hello world"}};
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
)";
    }

    // Applies the manifests, replacing what was applied before (kubectl replace --force
    // deletes and recreates, so that rules taken out are gone).
    void apply(const std::vector<YAML::Node>& documents) {
        YAML::Emitter out;
        for (const auto& doc : documents) out << YAML::BeginDoc << doc;
        std::ofstream(dir_ / "rbac.yaml") << out.c_str() << "\n";
        auto applied =
            cluster_->kubectl({"replace", "--force", "-f", (dir_ / "rbac.yaml").string()});
        if (applied.exit_code != 0) {
            applied = cluster_->kubectl({"create", "-f", (dir_ / "rbac.yaml").string()});
        }
        ASSERT_EQ(applied.exit_code, 0) << applied.output;
    }

    // The manifests without the rule `index` of the role `kind`.
    std::vector<YAML::Node> without_rule(const std::string& kind, std::size_t index) const {
        std::vector<YAML::Node> out;
        for (const auto& doc : manifests_) {
            YAML::Node copy = YAML::Clone(doc);
            if (copy["kind"].as<std::string>() == kind) {
                YAML::Node rules;
                for (std::size_t i = 0; i < copy["rules"].size(); ++i)
                    if (i != index) rules.push_back(copy["rules"][i]);
                copy["rules"] = rules.IsNull() ? YAML::Node(YAML::NodeType::Sequence) : rules;
            }
            out.push_back(copy);
        }
        return out;
    }

    std::unique_ptr<OperatorProcess> start_operator() {
        return std::make_unique<OperatorProcess>(
            dir_ / "operator.kubeconfig",
            std::vector<std::string>{example().string(), "-n", "default", "--verbose"});
    }

    fs::path dir_;
    std::unique_ptr<Cluster> cluster_;
    std::vector<YAML::Node> manifests_;
};

TEST_F(GeneratedRbac, TheOperatorRunsUnderItsServiceAccountWithExactlyTheGeneratedRules) {
    apply(manifests_);
    auto op = start_operator();
    ASSERT_TRUE(
        op->wait_for_log("Serving resource kopfexamples.v1.kopf.dev", std::chrono::seconds(60)))
        << op->log();
    auto created =
        cluster_->kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    ASSERT_TRUE(op->wait_for_log("Handler 'create_fn' succeeded.", std::chrono::seconds(60)))
        << op->log();
    auto object = cluster_->get_json({"kex", "kopf-example-1", "-n", "default"});
    ASSERT_TRUE(object.is_object());
    // Written to the status subresource, which needs its own rule.
    EXPECT_EQ(object["status"]["create_fn"]["message"], "hello world") << object.dump();
    // Events are posted in batches, a moment later.
    std::string events;
    for (int i = 0; i < 100 && events.find("event/") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        events = cluster_->kubectl({"get", "events", "-n", "default", "-o", "name"}).output;
    }
    EXPECT_NE(events.find("event/"), std::string::npos) << events;
    EXPECT_EQ(op->log().find("HTTP 403"), std::string::npos) << op->log();
    EXPECT_EQ(op->stop(SIGINT), 0) << op->log();
}

TEST_F(GeneratedRbac, WithoutAnyOneOfTheRulesANamedRequestIsForbidden) {
    // Each role's rules, and what the operator's log names when that rule is missing.
    struct Case {
        std::string kind;
        std::string resource;  // the rule's only resource
        std::string logged;    // the 403's message, as the operator logs it
    };
    std::vector<Case> cases;
    for (const auto& doc : manifests_) {
        const std::string kind = doc["kind"].as<std::string>();
        if (kind != "Role" && kind != "ClusterRole") continue;
        for (const auto& rule : doc["rules"]) {
            const std::string resource = rule["resources"][0].as<std::string>();
            const std::string verb = rule["verbs"].size() == 1 ? rule["verbs"][0].as<std::string>()
                                                               : std::string("list");
            cases.push_back({kind, resource, "cannot " + verb + " resource \"" + resource + "\""});
        }
    }
    ASSERT_EQ(cases.size(), 5U);  // CRDs; events, kopfexamples, their status, kopfpeerings
    int object = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        SCOPED_TRACE(c.kind + " without " + c.resource);
        std::size_t index = 0;
        for (const auto& doc : manifests_) {
            if (doc["kind"].as<std::string>() != c.kind) continue;
            for (std::size_t r = 0; r < doc["rules"].size(); ++r)
                if (doc["rules"][r]["resources"][0].as<std::string>() == c.resource) index = r;
        }
        apply(without_rule(c.kind, index));
        auto op = start_operator();
        const std::string name = "rbac-" + std::to_string(++object);
        std::ofstream(dir_ / "obj.yaml") << "apiVersion: kopf.dev/v1\nkind: KopfExample\n"
                                         << "metadata: {name: " << name << "}\nspec: {}\n";
        auto applied =
            cluster_->kubectl({"apply", "-n", "default", "-f", (dir_ / "obj.yaml").string()});
        ASSERT_EQ(applied.exit_code, 0) << applied.output;
        EXPECT_TRUE(op->wait_for_log(c.logged, std::chrono::seconds(30))) << op->log();
        op->stop(SIGKILL, std::chrono::seconds(10));
    }
}

}  // namespace
