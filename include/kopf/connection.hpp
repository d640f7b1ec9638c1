// Connection credentials, as Kopf's login handlers return them.
//
// A login handler (`kopf::on::login`) returns a `kopf::ConnectionInfo`; the framework keeps every
// returned connection in its credentials vault, uses the one with the highest priority, and
// re-runs the login handlers when the API answers 401 Unauthorized or the credentials expire.
//
//   kopf::ConnectionInfo info;
//   info.server = "https://10.0.0.1:6443";
//   info.ca_path = "/etc/ssl/my-ca.pem";
//   info.scheme = "Bearer";
//   info.token = read_my_token();
//   info.expiration = std::chrono::system_clock::now() + std::chrono::hours(1);
//
// The built-in login functions are available for reuse from your own login handlers.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace kopf {

struct ConnectionInfo {
    std::string server{};  // "https://host:port", with an optional path prefix

    // Server verification: a CA file or PEM data; `insecure` skips verification entirely.
    std::optional<std::string> ca_path{};
    std::optional<std::string> ca_data{};  // PEM text (not base64)
    bool insecure = false;

    // Basic authentication.
    std::optional<std::string> username{};
    std::optional<std::string> password{};

    // Token authentication: "Authorization: <scheme> <token>" (scheme defaults to "Bearer").
    std::optional<std::string> scheme{};
    std::optional<std::string> token{};
    // A file holding the token, re-read whenever it changes (projected service-account tokens
    // rotate). Used when `token` is not set.
    std::optional<std::string> token_path{};

    // Client certificates: a file or PEM data for each (not base64).
    std::optional<std::string> certificate_path{};
    std::optional<std::string> certificate_data{};
    std::optional<std::string> private_key_path{};
    std::optional<std::string> private_key_data{};

    std::optional<std::string> default_namespace{};

    // Among several credentials, the highest priority is used first.
    int priority = 0;
    // Expired credentials are dropped from the vault; the login handlers then run again.
    std::optional<std::chrono::system_clock::time_point> expiration{};
};

// Kopf's built-in login with the kubeconfig: `$KUBECONFIG` (several files merged as kubectl
// does), else `~/.kube/config`. `context` selects a context other than the current one.
// Runs exec credential plugins (client.authentication.k8s.io/v1) and carries their expiration.
// Returns nothing when no kubeconfig exists; throws std::runtime_error naming the file and the
// field when a kubeconfig is broken.
std::optional<ConnectionInfo> login_with_kubeconfig(const std::optional<std::string>& context = {});

// Kopf's built-in in-cluster login: the service-account token, CA and namespace files under
// `root`, and the server from KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT. Returns nothing
// when not running in a cluster (no token file or no service host). Without `root`: the
// directory in $KOPF_SERVICE_ACCOUNT_DIR if set (to try an in-cluster run outside a pod),
// else /var/run/secrets/kubernetes.io/serviceaccount, where Kubernetes mounts them.
std::optional<ConnectionInfo> login_with_service_account(const std::filesystem::path& root = {});

}  // namespace kopf
