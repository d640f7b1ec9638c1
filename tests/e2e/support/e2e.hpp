// End-to-end helpers in the style of Kopf's own e2e tests: an embedded API server, kubectl
// against it, and `kopf run` as a child process whose log is searched for expected lines.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kopf::apiserver {
class Server;
struct ServerOptions;
}  // namespace kopf::apiserver

namespace kopf::e2e {

struct CommandResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr together
};

// Runs a command (argv, no shell) with extra environment variables; waits for it.
CommandResult run(const std::vector<std::string>& argv,
                  const std::vector<std::pair<std::string, std::string>>& env = {});

bool have_program(const std::string& name);

// A fresh embedded API server with a kubeconfig file, and kubectl bound to it.
class Cluster {
  public:
    Cluster();
    // With options of its own (TLS, token files, authorization), set by `configure`.
    explicit Cluster(const std::function<void(kopf::apiserver::ServerOptions&)>& configure);
    ~Cluster();
    const std::filesystem::path& kubeconfig() const { return kubeconfig_; }
    const std::filesystem::path& workdir() const { return workdir_; }
    CommandResult kubectl(const std::vector<std::string>& args) const;
    // `kubectl get ... -o json`, parsed; null when it fails (e.g. NotFound).
    nlohmann::json get_json(const std::vector<std::string>& args) const;

  private:
    std::filesystem::path workdir_;
    std::filesystem::path kubeconfig_;
    std::unique_ptr<kopf::apiserver::Server> server_;
};

// A program other than the build's `kopf` (e.g. an installed one, or an operator binary),
// with extra environment variables.
struct Program {
    std::filesystem::path path;
    std::vector<std::pair<std::string, std::string>> env{};
};

// The bearer token of the ServiceAccount default/kopf-operator in rbac_cluster().
inline constexpr const char* kOperatorToken = "operator-token";

// A cluster on `kopf apiserver --tls --authorization-mode=RBAC` with token authentication:
// kOperatorToken is the ServiceAccount default/kopf-operator's (the user and groups Kubernetes
// gives it). The token file is written into `dir`.
std::unique_ptr<Cluster> rbac_cluster(const std::filesystem::path& dir);

// `kopf run ARGS...` against a cluster, logging into a file.
class OperatorProcess {
  public:
    // `PROGRAM ARGS...` (no implicit `run`) against the cluster.
    OperatorProcess(const Cluster& cluster, const Program& program,
                    const std::vector<std::string>& args);
    OperatorProcess(const Cluster& cluster, const std::vector<std::string>& args);
    // With a kubeconfig of its own (e.g. of a server that is not there).
    OperatorProcess(const std::filesystem::path& kubeconfig, const std::vector<std::string>& args);
    ~OperatorProcess();  // kills it if still running

    // Waits until the log contains `text` (true) or the timeout passes (false).
    bool wait_for_log(const std::string& text,
                      std::chrono::seconds timeout = std::chrono::seconds(180)) const;
    std::string log() const;
    int count_in_log(const std::string& text) const;
    // Sends the signal and waits for the exit code (-1 if it did not exit within the timeout).
    int stop(int signal, std::chrono::seconds timeout = std::chrono::seconds(60));
    // Waits for an exit without sending anything.
    int wait_exit(std::chrono::seconds timeout = std::chrono::seconds(180));

  private:
    void start(const std::filesystem::path& kubeconfig, const std::vector<std::string>& args);
    void start_program(const std::filesystem::path& kubeconfig, const Program& program,
                       const std::vector<std::string>& args);
    std::filesystem::path log_path_;
    int pid_ = -1;
    int exit_code_ = -1;
};

std::filesystem::path kopf_binary();
std::filesystem::path source_dir();

}  // namespace kopf::e2e
