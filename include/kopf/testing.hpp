// The testing kit: run an operator in the background of a test (Kopf's kopf.testing.KopfRunner),
// and start the embedded API server for it (docs/testing.md). No test framework is needed; with
// GoogleTest:
//
//     TEST(Operator, LogsOnCreation) {
//         kopf::testing::ApiServer cluster;  // `kopf apiserver` on a free loopback port
//         cluster.kubectl({"apply", "-f", "crd.yaml"});
//         kopf::testing::OperatorRunner runner(
//             {"run", "--all-namespaces", "--standalone", "--verbose", "operator.cpp"},
//             {.kubeconfig = cluster.kubeconfig()});
//         ASSERT_TRUE(runner.wait_ready());
//         cluster.kubectl({"create", "-f", "obj.yaml"});
//         runner.wait_for_output("Something was logged here.");
//         runner.stop();  // the end of Kopf's `with` block: rethrows the operator's exception
//         EXPECT_EQ(runner.exit_code(), 0);
//         EXPECT_EQ(runner.exception(), nullptr);
//         EXPECT_NE(runner.output().find("Creation is in progress:"), std::string::npos);
//     }
#pragma once

#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopf {

class Registry;
class Vault;
struct OperatorSettings;
enum class Lifecycle;

namespace testing {

/// How OperatorRunner runs the operator (Kopf's KopfRunner keyword arguments).
struct RunnerOptions {
    /// The handlers to serve; also where the handlers of the operator files in the arguments
    /// register while they are loaded. The default registry when null.
    Registry* registry = nullptr;
    /// Settings to start from (startup handlers may still change them); defaults when null.
    const OperatorSettings* settings = nullptr;
    /// The cluster: sets $KUBECONFIG of the process to this file before the operator starts
    /// (the built-in login and `kubectl` read it). Unset: $KUBECONFIG or ~/.kube/config as is.
    std::optional<std::filesystem::path> kubeconfig{};
    /// How long stop() waits for the operator to exit (Kopf's `timeout`).
    std::chrono::milliseconds timeout = std::chrono::seconds(60);
    /// Whether stop() rethrows the operator's exception (Kopf's `reraise`).
    bool reraise = true;
    /// Which due handlers run per processing cycle; kopf::get_default_lifecycle() when unset.
    std::optional<Lifecycle> lifecycle{};
    /// The operator's credentials vault (kopf/vault.hpp), shared with the test: filled before
    /// the start, the operator uses it with no login (no kubeconfig is needed then); empty, the
    /// test can read what the operator logged in with. The operator's own when null.
    std::shared_ptr<Vault> vault{};
};

/// Runs the command line `kopf ARGS...` — e.g. `{"run", "-A", "--standalone", "operator.cpp"}`,
/// where `.cpp` files are compiled and loaded as `kopf run` does — in a thread of this process,
/// as Kopf's KopfRunner does: the handlers run in-process (a test may share state with them),
/// the log is captured, and no signals are touched. The operator starts in the constructor and
/// stops in stop() or, at the latest, in the destructor.
///
/// The handlers of a `.cpp` file register when it is first loaded: loading the same file again
/// in the same process adds none (pass one file per test program, or a registry of its own).
class OperatorRunner {
  public:
    explicit OperatorRunner(std::vector<std::string> args, RunnerOptions options = {});
    /// Stops the operator if still running (never throws; see stop()).
    ~OperatorRunner();
    OperatorRunner(const OperatorRunner&) = delete;
    OperatorRunner& operator=(const OperatorRunner&) = delete;

    /// Asks the operator to stop gracefully (its stop flag) and waits up to the timeout for it
    /// to exit. Throws std::runtime_error if it does not exit in time ("The operator didn't
    /// stop, still running."), then the operator's own exception if `reraise`. Idempotent.
    void stop();

    /// Waits until the operator is ready (watching its resources): false if it exited first
    /// or the timeout passed.
    bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
    /// Waits until the output contains `text`: false if the timeout passed (or the operator
    /// exited) without it.
    bool wait_for_output(const std::string& text,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
    /// Whether the operator is still running.
    bool running() const;

    /// Everything logged since the start (as `kopf run` writes it on stderr), and the command
    /// line's own messages; available while the operator runs, too.
    std::string output() const;
    /// The exit code of the command: 0 after a graceful stop, 1 when the operator failed, 2 for
    /// bad arguments. Throws std::logic_error while the operator is running.
    int exit_code() const;
    /// The exception the operator exited with (e.g. it could not start), or null. Throws
    /// std::logic_error while the operator is running.
    std::exception_ptr exception() const;

  private:
    struct State;
    std::shared_ptr<State> state_;
    RunnerOptions options_;
    bool stopped_ = false;
};

/// What ApiServer runs.
struct ApiServerOptions {
    /// The `kopf` command that serves `kopf apiserver`: $KOPF_BINARY when unset, else `kopf`
    /// from $PATH.
    std::optional<std::filesystem::path> kopf_binary{};
    /// Where the kubeconfig is written: a fresh temporary directory when unset (removed at the
    /// end).
    std::optional<std::filesystem::path> directory{};
    /// Extra arguments of `kopf apiserver`, e.g. {"--tls"}.
    std::vector<std::string> args{};
    /// How long to wait for the server to serve.
    std::chrono::milliseconds timeout = std::chrono::seconds(30);
};

/// The embedded API server (`kopf apiserver`) on a free port of 127.0.0.1, as a child process,
/// for the duration of a test: in-memory, empty, with a kubeconfig for it. Throws
/// std::runtime_error naming the command and its output when it cannot start.
class ApiServer {
  public:
    explicit ApiServer(ApiServerOptions options = {});
    /// Stops the server (SIGTERM) and removes the temporary directory.
    ~ApiServer();
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    /// E.g. "http://127.0.0.1:41234".
    const std::string& url() const { return url_; }
    const std::filesystem::path& kubeconfig() const { return kubeconfig_; }

    struct Result {
        int exit_code = -1;
        std::string output;  ///< stdout and stderr together
    };
    /// Runs `kubectl ARGS...` against this server and waits for it.
    Result kubectl(const std::vector<std::string>& args) const;

  private:
    std::filesystem::path directory_;
    bool own_directory_ = false;
    std::filesystem::path kubeconfig_;
    std::string url_;
    int pid_ = -1;
};

}  // namespace testing
}  // namespace kopf
