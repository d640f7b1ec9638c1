// A credentials vault given by the application (RunOptions::vault, Kopf's `vault=`): filled
// before the start, it is used with no login at all — the login handlers do not run while it
// holds usable credentials, as in Kopf — and they run when its credentials are refused (a
// server restarted with other tokens, credentials wrong from the start) or the application
// invalidates them; the operator carries on with what they return, and the application reads
// the same vault.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <kopf/vault.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "integration/runtime/support/embedded_cluster.hpp"

namespace {

using kopf::ConnectionInfo;

// What the login handlers hand out, changed by the test as a secret store would be; and what
// they were asked for. Shared with the handlers on the heap, as users' handlers hold state.
struct TokenStore {
    std::mutex mutex;
    std::string token;
    std::vector<std::string> handed_out;

    void set(std::string value) {
        std::lock_guard lock(mutex);
        token = std::move(value);
    }
    std::string take() {
        std::lock_guard lock(mutex);
        handed_out.push_back(token);
        return token;
    }
    std::vector<std::string> taken() {
        std::lock_guard lock(mutex);
        return handed_out;
    }
};

class GivenVault : public kopf::testing::EmbeddedCluster {
  protected:
    // The server knows the application's token (and any other): the user "app", with full
    // rights (the server authorises everyone), but an unknown token gets 401.
    void customize_server(kopf::apiserver::ServerOptions& options) override {
        options.token_auth_file = token_file("tokens-one.csv", "token-one");
    }

    std::filesystem::path token_file(const std::string& name, const std::string& token) {
        const auto path = dir_ / name;
        std::ofstream(path) << token << ",app,uid-app,\"system:masters\"\n";
        return path;
    }

    // A login handler handing out the store's current token for this server (Kopf's
    // `@kopf.on.login` reading a secret store), registered for the test's operator.
    std::unique_ptr<kopf::on::login> login_from(kopf::Registry& registry,
                                                std::shared_ptr<TokenStore> tokens,
                                                std::string default_namespace = "") const {
        return std::make_unique<kopf::on::login>(
            registry, kopf::ActivityOptions{.id = "login_fn"},
            [tokens = std::move(tokens), server = server_->url(),
             default_namespace = std::move(default_namespace)](
                kopf::ActivityContext&) -> std::optional<ConnectionInfo> {
                ConnectionInfo info;
                info.server = server;
                info.scheme = "Bearer";
                info.token = tokens->take();
                info.default_namespace = default_namespace;
                return info;
            });
    }

    // The credentials an application builds for itself.
    ConnectionInfo app_credentials(const std::string& token, int priority = 0) const {
        ConnectionInfo info;
        info.server = server_->url();
        info.scheme = "Bearer";
        info.token = token;
        info.default_namespace = "default";
        info.priority = priority;
        return info;
    }

    // No kubeconfig for the operator (kubectl is given the real one explicitly): a login with
    // Kopf's built-ins would find nothing.
    void hide_the_kubeconfig() {
        kubeconfig_ = server_options_.kubeconfig_out.string();
        setenv("KUBECONFIG", (dir_ / "absent-kubeconfig.yaml").c_str(), 1);
    }
    std::string kubectl_args(const std::string& args) const {
        return kubeconfig_.empty() ? args : "--kubeconfig=" + kubeconfig_ + " " + args;
    }
    void apply_named(const std::string& name) {
        const auto manifest = dir_ / (name + ".yaml");
        std::ofstream(manifest) << "apiVersion: kopf.dev/v1\nkind: KopfExample\nmetadata:\n"
                                << "  name: " << name << "\nspec:\n  field: value\n";
        kubectl(kubectl_args("apply -n default -f " + manifest.string()));
    }
    // Whether the operator handled the object (its create_fn's result in the status).
    bool handled(const std::string& name) {
        return eventually(
            kubectl_args("get kex " + name + " -o jsonpath={.status.create_fn.message}"),
            "handled " + name);
    }

    kopf::RunOptions run_options(kopf::Registry& registry, std::shared_ptr<kopf::Vault> vault) {
        settings_.networking.error_backoffs = {0.1, 0.1, 0.2, 0.3, 0.5, 1, 1, 2};
        settings_.networking.request_timeout = 30;
        settings_.queueing.exit_timeout = 2;
        kopf::RunOptions options;
        options.namespaces = {"default"};
        options.standalone = true;
        options.registry = &registry;
        options.settings = &settings_;
        options.vault = std::move(vault);
        return options;
    }

    // A create handler whose result names the object.
    static std::unique_ptr<kopf::on::create> handle_creations(kopf::Registry& registry) {
        return std::make_unique<kopf::on::create>(registry, kopf::Selector("kopfexamples"),
                                                  kopf::HandlerOptions{.id = "create_fn"},
                                                  [](kopf::Context& ctx) -> kopf::json {
                                                      return {{"message", "handled " + ctx.name}};
                                                  });
    }

    kopf::OperatorSettings settings_;
    std::string kubeconfig_;
};

TEST_F(GivenVault, AFilledVaultServesWithNoLoginAndNoKubeconfig) {
    hide_the_kubeconfig();
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    auto vault = std::make_shared<kopf::Vault>(
        std::map<std::string, ConnectionInfo>{{"app", app_credentials("token-one")}});

    kopf::testing::OperatorThread operator_thread(run_options(registry, vault));
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    apply_named("kex-given-vault");
    EXPECT_TRUE(handled("kex-given-vault"));

    EXPECT_EQ(operator_thread.stop(), "");
    // The vault is the application's: the same credentials, still usable after the operator.
    const auto credentials = vault->credentials();
    ASSERT_EQ(credentials.size(), 1u);
    EXPECT_EQ(credentials.at("app").token, "token-one");
}

// The counterpart: the same operator with an empty vault has nothing to log in with.
TEST_F(GivenVault, AnEmptyVaultWithNothingToLogInWithFailsTheStart) {
    hide_the_kubeconfig();
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    auto vault = std::make_shared<kopf::Vault>();
    try {
        kopf::operator_(run_options(registry, vault));
        FAIL() << "the operator started with no credentials";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("Ran out of valid credentials"), std::string::npos)
            << error.what();
    }
    EXPECT_TRUE(vault->empty());
}

// As Kopf: a vault that holds credentials is "ready"; the login handlers wait for it to run
// empty. Here the application empties it; the next API call runs them and goes on with theirs.
TEST_F(GivenVault, LoginHandlersRunOnlyOnceTheApplicationInvalidatesTheGivenCredentials) {
    hide_the_kubeconfig();
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    auto tokens = std::make_shared<TokenStore>();
    tokens->set("token-one");
    auto login = login_from(registry, tokens, "from-login");
    auto vault = std::make_shared<kopf::Vault>(std::map<std::string, ConnectionInfo>{
        {"app", app_credentials("token-one", 5)}, {"app-backup", app_credentials("token-one")}});

    kopf::testing::OperatorThread operator_thread(run_options(registry, vault));
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    apply_named("kex-before");
    ASSERT_TRUE(handled("kex-before"));
    EXPECT_TRUE(tokens->taken().empty()) << "the login handler ran with usable credentials";

    // One of two invalidated: the other carries on, still with no login.
    EXPECT_TRUE(vault->invalidate("app"));
    apply_named("kex-one-invalidated");
    ASSERT_TRUE(handled("kex-one-invalidated"));
    EXPECT_TRUE(tokens->taken().empty());
    EXPECT_EQ(vault->current()->first, "app-backup");

    // None left: the handling of the next object logs in first.
    vault->invalidate_all();
    apply_named("kex-after");
    ASSERT_TRUE(handled("kex-after"));
    EXPECT_EQ(tokens->taken(), std::vector<std::string>{"token-one"});
    const auto current = vault->current();
    ASSERT_TRUE(current.has_value());
    EXPECT_EQ(current->first, "login_fn");
    EXPECT_EQ(current->second.default_namespace, "from-login");
    EXPECT_EQ(operator_thread.stop(), "");
}

// Credentials in the vault that the server refuses from the start (a token revoked meanwhile):
// the first 401 makes the login handlers run, and the operator starts with their credentials.
TEST_F(GivenVault, RefusedCredentialsOfTheGivenVaultAreRenewedByTheLoginHandlers) {
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    auto tokens = std::make_shared<TokenStore>();
    tokens->set("token-one");
    auto login = login_from(registry, tokens);
    auto vault = std::make_shared<kopf::Vault>(
        std::map<std::string, ConnectionInfo>{{"app", app_credentials("revoked-token")}});

    kopf::testing::OperatorThread operator_thread(run_options(registry, vault));
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    EXPECT_EQ(tokens->taken(), std::vector<std::string>{"token-one"});
    apply_named("kex-renewed");
    EXPECT_TRUE(handled("kex-renewed"));
    const auto credentials = vault->credentials();
    EXPECT_EQ(credentials.count("app"), 0u) << "the refused credentials are forgotten";
    ASSERT_EQ(credentials.count("login_fn"), 1u);
    EXPECT_EQ(credentials.at("login_fn").token, "token-one");
    EXPECT_EQ(operator_thread.stop(), "");
}

// An empty vault: the operator logs in at its start, into the application's vault, where the
// application reads the credentials the login handler made (and still can once it stopped).
TEST_F(GivenVault, TheApplicationReadsTheCredentialsTheOperatorLoggedInWith) {
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    const std::string server = server_->url();
    auto logins = std::make_shared<std::vector<std::string>>();  // written by the handler only
    kopf::on::login login(
        registry, {.id = "login_fn"},
        [logins, server](kopf::ActivityContext& ctx) -> std::optional<ConnectionInfo> {
            logins->push_back(ctx.activity);
            ConnectionInfo info;
            info.server = server;
            info.scheme = "Bearer";
            info.token = "token-one";
            info.default_namespace = "logged-in-" + std::string(100, 'x');
            info.priority = 7;
            info.expiration = std::chrono::system_clock::now() + std::chrono::hours(1);
            return info;
        });
    auto vault = std::make_shared<kopf::Vault>();

    kopf::testing::OperatorThread operator_thread(run_options(registry, vault));
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    // Filled before the ready flag was set.
    EXPECT_FALSE(vault->empty());
    const auto current = vault->current();
    ASSERT_TRUE(current.has_value());
    EXPECT_EQ(current->first, "login_fn");
    EXPECT_EQ(current->second.server, server);
    EXPECT_EQ(current->second.token, "token-one");
    EXPECT_EQ(current->second.priority, 7);
    EXPECT_EQ(current->second.default_namespace, "logged-in-" + std::string(100, 'x'));
    EXPECT_TRUE(current->second.expiration.has_value());
    apply_named("kex-logged-in");
    EXPECT_TRUE(handled("kex-logged-in"));

    EXPECT_EQ(operator_thread.stop(), "");
    EXPECT_EQ(*logins, std::vector<std::string>{"login"});
    EXPECT_EQ(vault->credentials().size(), 1u);
}

// The same with Kopf's built-in login (no login handler): the kubeconfig's credentials go into
// the application's vault under the built-in's name.
TEST_F(GivenVault, TheBuiltInLoginFillsTheGivenVaultToo) {
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    auto vault = std::make_shared<kopf::Vault>();
    kopf::testing::OperatorThread operator_thread(run_options(registry, vault));
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    const auto credentials = vault->credentials();
    ASSERT_EQ(credentials.count("login_with_kubeconfig"), 1u);
    EXPECT_EQ(credentials.at("login_with_kubeconfig").server, server_->url());
    EXPECT_EQ(operator_thread.stop(), "");
}

// A server that keeps its objects across restarts (on disk).
class GivenVaultAcrossRestarts : public GivenVault {
  protected:
    void customize_server(kopf::apiserver::ServerOptions& options) override {
        GivenVault::customize_server(options);
        options.data_dir = dir_ / "data";
    }
};

// The server restarts with other tokens: the vault's credentials are refused (401), so the
// login handlers run and the operator goes on with the new token, in the application's vault.
TEST_F(GivenVaultAcrossRestarts, CredentialsRefusedAfterARestartWithAnotherTokenAreRenewed) {
    kopf::Registry registry;
    auto creations = handle_creations(registry);
    auto tokens = std::make_shared<TokenStore>();
    auto login = login_from(registry, tokens);
    auto vault = std::make_shared<kopf::Vault>(
        std::map<std::string, ConnectionInfo>{{"app", app_credentials("token-one")}});
    kopf::testing::OperatorThread operator_thread(run_options(registry, vault));
    ASSERT_TRUE(operator_thread.ready()) << operator_thread.failure();
    apply_named("kex-first-server");
    ASSERT_TRUE(handled("kex-first-server"));
    EXPECT_TRUE(tokens->taken().empty());

    // The token is rotated: the store hands out the new one, the server knows only that one.
    tokens->set("token-two");
    auto options = server_options_;
    options.token_auth_file = token_file("tokens-two.csv", "token-two");
    restart_server(options);

    apply_named("kex-second-server");
    ASSERT_TRUE(handled("kex-second-server"));
    const auto taken = tokens->taken();
    ASSERT_FALSE(taken.empty());
    EXPECT_EQ(taken.front(), "token-two");
    const auto current = vault->current();
    ASSERT_TRUE(current.has_value());
    EXPECT_EQ(current->first, "login_fn");
    EXPECT_EQ(current->second.token, "token-two");
    EXPECT_EQ(vault->credentials().count("app"), 0u);
    EXPECT_EQ(operator_thread.stop(), "");
}

}  // namespace
