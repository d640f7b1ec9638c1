// Kopf's admission example end to end (17-admission): `kopf run` with its own webhook server and
// managed webhook configurations, driven with kubectl as a user would — warnings shown, objects
// refused with the handlers' messages, a server-side dry run let through, the mutation on the
// stored object, the status subresource checked — and the configurations emptied at the exit.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <string>

#include "e2e/support/examples.hpp"

using namespace kopf::e2e;
using json = nlohmann::json;

namespace {

class AdmissionExample : public ExamplesTest {
  protected:
    // The example object with another spec.field, as a file for kubectl.
    std::string object_with(const std::string& name, const std::string& field) {
        const auto path = cluster_->workdir() / (name + ".yaml");
        std::ofstream(path) << "apiVersion: kopf.dev/v1\nkind: KopfExample\nmetadata:\n  name: "
                            << name
                            << "\n  labels:\n    somelabel: somevalue\nspec:\n  field: " << field
                            << "\n";
        return path.string();
    }
};

TEST_F(AdmissionExample, ValidatesAndMutatesThroughManagedWebhooks) {
    OperatorProcess op(*cluster_,
                       {example("17-admission"), "--all-namespaces", "--standalone", "--verbose"});
    ASSERT_TRUE(op.wait_for_log("Reconfiguring the mutating webhook auto.kopf.dev.")) << op.log();
    // Where each handler is served is in the log.
    EXPECT_NE(op.log().find("Webhook 'validate1' (validating) is served at https://localhost:"),
              std::string::npos)
        << op.log();
    ASSERT_TRUE(eventually([&] {
        auto configs = cluster_->get_json({"validatingwebhookconfigurations", "auto.kopf.dev"});
        return !configs.is_null() && configs.value("webhooks", json::array()).size() == 4;
    })) << op.log();

    // Accepted with the handlers' warnings, and mutated (the object has the label).
    auto created = kubectl({"apply", "-f", object_yaml()});
    ASSERT_EQ(created.exit_code, 0) << created.output << op.log();
    EXPECT_NE(created.output.find("Warning: Accessing as user-agent:"), std::string::npos)
        << created.output;
    EXPECT_NE(created.output.find("Warning: SSL peer is not identified."), std::string::npos)
        << created.output;
    EXPECT_NE(created.output.find("Warning: Also update status.field to match spec.field"),
              std::string::npos)
        << created.output;
    EXPECT_EQ(get_object().value("/spec/injected"_json_pointer, json()), 123);

    // Refused with the handlers' messages and codes.
    auto wrong = kubectl({"apply", "-f", object_with("kex-wrong", "wrong")});
    EXPECT_NE(wrong.exit_code, 0);
    EXPECT_NE(wrong.output.find("Meh! I don't like it. Change the field."), std::string::npos)
        << wrong.output;
    auto lazy = kubectl({"apply", "-f", object_with("kex-lazy", "not-allowed")});
    EXPECT_NE(lazy.exit_code, 0);
    EXPECT_NE(lazy.output.find("I'm too lazy anyway. Go away!"), std::string::npos) << lazy.output;
    EXPECT_TRUE(cluster_->get_json({"kex", "kex-wrong", "-n", "default"}).is_null());

    // A dry run of the wrong object passes validate1 (it checks only real requests), stores
    // nothing.
    auto dry = kubectl({"apply", "--dry-run=server", "-f", object_with("kex-dry", "wrong")});
    EXPECT_EQ(dry.exit_code, 0) << dry.output;
    EXPECT_NE(dry.output.find("(server dry run)"), std::string::npos) << dry.output;
    EXPECT_TRUE(cluster_->get_json({"kex", "kex-dry", "-n", "default"}).is_null());

    // The status subresource: status.field must equal spec.field.
    auto status = kubectl({"patch", "kex", kObjectName, "-n", "default", "--subresource=status",
                           "--type=merge", "-p", R"({"status": {"field": "other"}})"});
    EXPECT_NE(status.exit_code, 0) << status.output;
    EXPECT_NE(status.output.find("status.field MUST be equal to spec.field!"), std::string::npos)
        << status.output;

    // At the exit, the operator leaves no webhooks (none is persistent).
    stop_cleanly(op);
    auto configs = cluster_->get_json({"validatingwebhookconfigurations", "auto.kopf.dev"});
    EXPECT_EQ(configs.value("webhooks", json::array()).size(), 0u) << configs.dump(2);
}

}  // namespace
