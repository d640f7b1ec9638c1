// Kubeconfig and in-cluster configuration: from files and environment to kopf::ConnectionInfo.
//
// Loading follows kubectl: KUBECONFIG lists several files (':'-separated) which are merged, the
// first file that defines a cluster, user or context name wins, and so does the first
// current-context; missing files in the list are skipped. Relative file paths inside a
// kubeconfig are relative to that kubeconfig's directory. Every error names the file and field.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kopf/connection.hpp"

namespace kopf::clients {

class KubeconfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct ExecConfig {
    std::string api_version;  // client.authentication.k8s.io/v1 (v1beta1 also accepted)
    std::string command;
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    std::string interactive_mode;  // Never, IfAvailable, Always
    std::string install_hint;
    std::filesystem::path base_dir;  // for relative commands
    std::string source;              // the file it came from, for errors
};

struct KubeconfigCluster {
    std::string server;
    std::optional<std::string> ca_path;
    std::optional<std::string> ca_data;  // decoded PEM
    bool insecure = false;
    std::string source;
};

struct KubeconfigUser {
    std::optional<std::string> token;
    std::optional<std::string> token_file;
    std::optional<std::string> username;
    std::optional<std::string> password;
    std::optional<std::string> certificate_path;
    std::optional<std::string> certificate_data;  // decoded PEM
    std::optional<std::string> private_key_path;
    std::optional<std::string> private_key_data;  // decoded PEM
    std::optional<ExecConfig> exec;
    std::string source;
};

struct KubeconfigContext {
    std::string cluster;
    std::string user;
    std::optional<std::string> namespace_;
    std::string source;
};

struct Kubeconfig {
    std::map<std::string, KubeconfigCluster> clusters;
    std::map<std::string, KubeconfigUser> users;
    std::map<std::string, KubeconfigContext> contexts;
    std::optional<std::string> current_context;
    std::vector<std::filesystem::path> files;  // the files actually read
};

// The files kubectl would read: $KUBECONFIG split by ':' (empty entries skipped), or
// ~/.kube/config.
std::vector<std::filesystem::path> default_kubeconfig_paths();

// Load and merge; throws KubeconfigError naming the file and field for broken content.
// Returns nothing when none of the files exists.
std::optional<Kubeconfig> load_kubeconfig(const std::vector<std::filesystem::path>& paths);
// Parse one document's text (for tests and for `kopf apiserver --kubeconfig-out`).
Kubeconfig parse_kubeconfig(const std::string& text, const std::string& source,
                            const std::filesystem::path& base_dir);

// Resolve a context (or the current one) into connection credentials; runs exec plugins.
ConnectionInfo connection_from_kubeconfig(const Kubeconfig& config,
                                          const std::optional<std::string>& context = {});

// What an exec credential plugin returned.
struct ExecCredential {
    std::optional<std::string> token;
    std::optional<std::string> certificate_data;
    std::optional<std::string> private_key_data;
    std::optional<std::chrono::system_clock::time_point> expiration;
};
// Runs the plugin without a terminal; "interactiveMode: Always" is refused with a clear error.
ExecCredential run_exec_plugin(const ExecConfig& exec);

// login_with_kubeconfig() over explicit files instead of the environment.
std::optional<ConnectionInfo> login_with_kubeconfig_files(
    const std::vector<std::filesystem::path>& paths,
    const std::optional<std::string>& context = {});

// Base64 (standard alphabet; whitespace ignored); throws std::invalid_argument on bad input.
std::string base64_decode(const std::string& text);
// RFC 3339 timestamps as Kubernetes writes them ("2026-01-02T03:04:05Z", fractions, offsets).
std::chrono::system_clock::time_point parse_rfc3339(const std::string& text);

}  // namespace kopf::clients
