#include "e2e/support/e2e.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "kopf/apiserver/server.hpp"

namespace fs = std::filesystem;

namespace kopf::e2e {
namespace {

std::string read_all(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

// posix_spawnp, not fork(): this process runs the embedded API server's threads, and a forked
// child that allocates before exec deadlocks when another thread held the allocator's lock at
// the fork (it hung e2e tests under ASan: the child spun forever in the sanitizer's allocator).
// Everything the child needs is made here, before the spawn. Returns -1 if it cannot start.
pid_t spawn(const std::vector<std::string>& argv,
            const std::vector<std::pair<std::string, std::string>>& env, const fs::path& output) {
    std::vector<std::string> environment;
    for (char** entry = environ; *entry; ++entry) {
        const std::string text(*entry);
        const std::string name = text.substr(0, text.find('='));
        const bool overridden = std::any_of(env.begin(), env.end(),
                                            [&name](const auto& kv) { return kv.first == name; });
        if (!overridden) environment.push_back(text);
    }
    for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> arguments(argv.begin(), argv.end());
    std::vector<char*> args;
    for (auto& arg : arguments) args.push_back(arg.data());
    args.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // Its own process group, and default dispositions of the signals the tests send.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    pid_t pid = -1;
    const int failed = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return failed ? -1 : pid;
}

}  // namespace

fs::path source_dir() {
    return KOPF_SOURCE_DIR;
}
fs::path kopf_binary() {
    return fs::path(KOPF_BINARY_DIR) / "bin" / "kopf";
}

bool have_program(const std::string& name) {
    return run({"sh", "-c", "command -v " + name}).exit_code == 0;
}

CommandResult run(const std::vector<std::string>& argv,
                  const std::vector<std::pair<std::string, std::string>>& env) {
    char name[] = "/tmp/kopf-e2e-out-XXXXXX";
    const int fd = mkstemp(name);
    if (fd >= 0) close(fd);
    CommandResult result;
    const pid_t pid = spawn(argv, env, name);
    int status = 0;
    if (pid < 0) {
        result.exit_code = 127;  // as a shell reports a program it cannot run
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        result.exit_code = exit_code_of(status);
    }
    result.output = read_all(name);
    fs::remove(name);
    return result;
}

Cluster::Cluster() : Cluster([](kopf::apiserver::ServerOptions&) {}) {}

Cluster::Cluster(const std::function<void(kopf::apiserver::ServerOptions&)>& configure) {
    char name[] = "/tmp/kopf-e2e-XXXXXX";
    workdir_ = mkdtemp(name);
    kubeconfig_ = workdir_ / "kubeconfig.yaml";
    kopf::apiserver::ServerOptions options;
    options.kubeconfig_out = kubeconfig_;
    configure(options);
    server_ = std::make_unique<kopf::apiserver::Server>(options);
    server_->start();
}

std::unique_ptr<Cluster> rbac_cluster(const fs::path& dir) {
    std::ofstream(dir / "tokens.csv")
        << kOperatorToken << ",system:serviceaccount:default:kopf-operator,1001,"
        << "\"system:serviceaccounts,system:serviceaccounts:default\"\n";
    return std::make_unique<Cluster>([&dir](kopf::apiserver::ServerOptions& options) {
        options.tls = true;
        options.token_auth_file = dir / "tokens.csv";
        options.authorization_mode = "RBAC";
    });
}

Cluster::~Cluster() {
    server_->stop();
    std::error_code ec;
    fs::remove_all(workdir_, ec);
}

CommandResult Cluster::kubectl(const std::vector<std::string>& args) const {
    // A bounded request: a stuck API server fails the test with kubectl's error instead of
    // hanging it silently until the test's own timeout.
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", kubeconfig_.string(),
                                     "--request-timeout=120s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

nlohmann::json Cluster::get_json(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"get"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"-o", "json"});
    auto result = kubectl(argv);
    if (result.exit_code != 0) return nullptr;
    return nlohmann::json::parse(result.output, nullptr, false);
}

namespace {
// A log of its own: several operators may run against one cluster at once (peering).
fs::path new_log_path(const Cluster& cluster) {
    static std::atomic<int> started{0};
    return cluster.workdir() /
           ("operator-" + std::to_string(getpid()) + "-" + std::to_string(++started) + ".log");
}
}  // namespace

OperatorProcess::OperatorProcess(const Cluster& cluster, const std::vector<std::string>& args) {
    log_path_ = new_log_path(cluster);
    start(cluster.kubeconfig(), args);
}

OperatorProcess::OperatorProcess(const Cluster& cluster, const Program& program,
                                 const std::vector<std::string>& args) {
    log_path_ = new_log_path(cluster);
    start_program(cluster.kubeconfig(), program, args);
}

void OperatorProcess::start_program(const fs::path& kubeconfig, const Program& program,
                                    const std::vector<std::string>& args) {
    std::vector<std::string> argv = {program.path.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto env = program.env;
    const bool own_kubeconfig = std::any_of(
        env.begin(), env.end(), [](const auto& kv) { return kv.first == "KUBECONFIG"; });
    if (!own_kubeconfig) env.emplace_back("KUBECONFIG", kubeconfig.string());
    pid_ = spawn(argv, env, log_path_);
    if (pid_ < 0) throw std::runtime_error("Cannot start " + argv.front());
}

OperatorProcess::OperatorProcess(const fs::path& kubeconfig, const std::vector<std::string>& args) {
    log_path_ = kubeconfig.parent_path() / ("operator-" + std::to_string(getpid()) + "-" +
                                            kubeconfig.stem().string() + ".log");
    start(kubeconfig, args);
}

void OperatorProcess::start(const fs::path& kubeconfig, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kopf_binary().string(), "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = spawn(argv,
                 {{"KUBECONFIG", kubeconfig.string()},
                  {"KOPF_CACHE_DIR", (fs::temp_directory_path() / "kopf-e2e-cache").string()}},
                 log_path_);
    if (pid_ < 0) throw std::runtime_error("Cannot start " + argv.front());
}

OperatorProcess::~OperatorProcess() {
    if (pid_ > 0 && exit_code_ < 0) {
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
}

std::string OperatorProcess::log() const {
    return read_all(log_path_);
}

int OperatorProcess::count_in_log(const std::string& text) const {
    const std::string all = log();
    int count = 0;
    for (auto pos = all.find(text); pos != std::string::npos; pos = all.find(text, pos + 1))
        ++count;
    return count;
}

bool OperatorProcess::wait_for_log(const std::string& text, std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (log().find(text) != std::string::npos) return true;
        siginfo_t info{};
        if (exit_code_ < 0 && waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid_) {
            return log().find(text) != std::string::npos;  // exited: nothing more will come
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

int OperatorProcess::wait_exit(std::chrono::seconds timeout) {
    if (exit_code_ >= 0) return exit_code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = exit_code_of(status);
            return exit_code_;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
}

int OperatorProcess::stop(int signal_number, std::chrono::seconds timeout) {
    if (exit_code_ >= 0) return exit_code_;
    kill(pid_, signal_number);
    return wait_exit(timeout);
}

}  // namespace kopf::e2e
