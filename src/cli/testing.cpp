// The testing kit (kopf/testing.hpp). It lives in the command-line layer because, as Kopf's
// KopfRunner invokes Kopf's CLI, OperatorRunner runs the `kopf` command line in a thread.
#include "kopf/testing.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "cli/command_line.hpp"
#include "core/actions/logging.hpp"
#include "kopf/run.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX leaves it undeclared

namespace kopf::testing {

namespace fs = std::filesystem;

// Shared by the runner and its thread: a thread that does not stop in time is left running
// (detached) with it.
struct OperatorRunner::State {
    mutable std::mutex mutex;
    mutable std::condition_variable changed;
    std::string output;
    bool finished = false;
    int exit_code = -1;
    std::exception_ptr exception;
    OperatorFlag stop_flag;
    OperatorFlag ready_flag;
    int listener = 0;
    std::thread thread;

    void append(std::string_view text) {
        {
            std::lock_guard lock(mutex);
            output.append(text);
        }
        changed.notify_all();
    }
};

OperatorRunner::OperatorRunner(std::vector<std::string> args, RunnerOptions options)
    : state_(std::make_shared<State>()), options_(std::move(options)) {
    if (options_.kubeconfig) {
        ::setenv("KUBECONFIG", options_.kubeconfig->c_str(), 1);
    }
    std::weak_ptr<State> weak = state_;
    state_->listener = runtime::add_log_listener([weak](std::string_view line) {
        if (auto state = weak.lock()) state->append(line);
    });
    state_->thread = std::thread([state = state_, args = std::move(args),
                                  registry = options_.registry, settings = options_.settings,
                                  lifecycle = options_.lifecycle, vault = options_.vault] {
        runtime::RunControls controls;
        controls.registry = registry;
        controls.settings = settings;
        controls.stop_flag = &state->stop_flag;
        controls.ready_flag = &state->ready_flag;
        controls.lifecycle = lifecycle;
        controls.vault = vault;
        controls.print = [&state](const std::string& text) { state->append(text); };
        std::vector<std::string> arguments = {"kopf"};
        arguments.insert(arguments.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& arg : arguments) argv.push_back(arg.data());
        argv.push_back(nullptr);
        int code = 1;
        std::exception_ptr exception;
        try {
            code = runtime::main(static_cast<int>(arguments.size()), argv.data(), {}, &controls);
        } catch (...) {
            exception = std::current_exception();
        }
        runtime::remove_log_listener(state->listener);
        {
            std::lock_guard lock(state->mutex);
            state->exit_code = code;
            state->exception = exception;
            state->finished = true;
        }
        state->changed.notify_all();
        state->ready_flag.set();  // wakes wait_ready() of an operator that never got ready
    });
}

OperatorRunner::~OperatorRunner() {
    try {
        stop();
    } catch (const std::exception& error) {
        // A destructor cannot fail the test: say it, as the test would have been told.
        std::cerr << "kopf::testing::OperatorRunner: " << error.what() << std::endl;
    } catch (...) {
        std::cerr << "kopf::testing::OperatorRunner: the operator failed with an unknown error."
                  << std::endl;
    }
}

void OperatorRunner::stop() {
    if (stopped_) return;
    stopped_ = true;
    state_->stop_flag.set();
    {
        std::unique_lock lock(state_->mutex);
        state_->changed.wait_for(lock, options_.timeout, [this] { return state_->finished; });
        if (!state_->finished) {
            lock.unlock();
            // It keeps the shared state alive; the registry and settings it was given must
            // outlive it, as they must outlive any operator.
            state_->thread.detach();
            throw std::runtime_error("The operator didn't stop, still running.");
        }
    }
    state_->thread.join();
    if (state_->exception && options_.reraise) std::rethrow_exception(state_->exception);
}

bool OperatorRunner::wait_ready(std::chrono::milliseconds timeout) const {
    if (!state_->ready_flag.wait_for(timeout)) return false;
    return running();
}

bool OperatorRunner::wait_for_output(const std::string& text,
                                     std::chrono::milliseconds timeout) const {
    std::unique_lock lock(state_->mutex);
    return state_->changed.wait_for(lock, timeout, [&] {
        return state_->output.find(text) != std::string::npos || state_->finished;
    }) && state_->output.find(text) != std::string::npos;
}

bool OperatorRunner::running() const {
    std::lock_guard lock(state_->mutex);
    return !state_->finished;
}

std::string OperatorRunner::output() const {
    std::lock_guard lock(state_->mutex);
    return state_->output;
}

int OperatorRunner::exit_code() const {
    std::lock_guard lock(state_->mutex);
    if (!state_->finished) throw std::logic_error("The operator is still running: no exit code.");
    return state_->exit_code;
}

std::exception_ptr OperatorRunner::exception() const {
    std::lock_guard lock(state_->mutex);
    if (!state_->finished) throw std::logic_error("The operator is still running: no exception.");
    return state_->exception;
}

namespace {

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// posix_spawnp, not fork(): the test process runs threads (an operator, maybe), and a forked
// child that allocates before exec deadlocks when another thread held the allocator's lock.
// Output (stdout and stderr) goes to `output`. Returns -1 if the program cannot start.
pid_t spawn(const std::vector<std::string>& argv, const std::string& kubeconfig,
            const fs::path& output) {
    std::vector<std::string> environment;
    for (char** entry = environ; *entry; ++entry) {
        if (std::string_view(*entry).rfind("KUBECONFIG=", 0) != 0) environment.emplace_back(*entry);
    }
    if (!kubeconfig.empty()) environment.push_back("KUBECONFIG=" + kubeconfig);
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
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
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

int wait_for(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return exit_code_of(status);
}

fs::path default_kopf_binary() {
    if (const char* given = std::getenv("KOPF_BINARY"); given && *given) return given;
    return "kopf";
}

}  // namespace

ApiServer::ApiServer(ApiServerOptions options) {
    if (options.directory) {
        directory_ = *options.directory;
        fs::create_directories(directory_);
    } else {
        std::string name = (fs::temp_directory_path() / "kopf-testing-XXXXXX").string();
        if (!::mkdtemp(name.data())) {
            throw std::runtime_error("Cannot create a temporary directory for the API server.");
        }
        directory_ = name;
        own_directory_ = true;
    }
    kubeconfig_ = directory_ / "kubeconfig";
    const fs::path log = directory_ / "apiserver.log";
    const fs::path binary = options.kopf_binary.value_or(default_kopf_binary());
    std::vector<std::string> argv = {
        binary.string(), "apiserver", "--bind-address",   "127.0.0.1",
        "--port",        "0",         "--kubeconfig-out", kubeconfig_.string()};
    argv.insert(argv.end(), options.args.begin(), options.args.end());
    const std::string command = binary.string() + " apiserver";

    pid_ = spawn(argv, "", log);
    if (pid_ < 0) {
        if (own_directory_) fs::remove_all(directory_);
        throw std::runtime_error("Cannot start `" + command + "`: no such program (set " +
                                 "ApiServerOptions::kopf_binary or $KOPF_BINARY).");
    }
    // `kopf apiserver` prints "kopf apiserver: serving on URL (kubeconfig: ...)" once it serves.
    const std::string marker = "serving on ";
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    while (true) {
        const std::string text = read_file(log);
        if (auto at = text.find(marker); at != std::string::npos) {
            const auto start = at + marker.size();
            const auto end = text.find_first_of(" \n", start);
            if (end != std::string::npos) {
                url_ = text.substr(start, end - start);
                return;
            }
        }
        int status = 0;
        const bool exited = waitpid(pid_, &status, WNOHANG) == pid_;
        if (exited || std::chrono::steady_clock::now() > deadline) {
            if (!exited) {
                ::kill(pid_, SIGKILL);
                wait_for(pid_);
            }
            pid_ = -1;
            if (own_directory_) fs::remove_all(directory_);
            throw std::runtime_error(
                "`" + command + "` did not start serving" +
                (exited ? " (exit code " + std::to_string(exit_code_of(status)) + ")"
                        : " in time") +
                ": " + text);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

ApiServer::~ApiServer() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        wait_for(pid_);
    }
    std::error_code ignored;
    if (own_directory_) fs::remove_all(directory_, ignored);
}

ApiServer::Result ApiServer::kubectl(const std::vector<std::string>& args) const {
    static std::atomic<int> counter{0};
    const fs::path output =
        directory_ / ("kubectl-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::vector<std::string> argv = {"kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    Result result;
    const pid_t pid = spawn(argv, kubeconfig_.string(), output);
    result.exit_code = pid < 0 ? 127 : wait_for(pid);  // 127: as a shell says of no such program
    result.output = read_file(output);
    std::error_code ignored;
    fs::remove(output, ignored);
    return result;
}

}  // namespace kopf::testing
