#include "integration/apiserver/support/harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace kopf::apiserver::testing {

TempDir::TempDir() {
    static std::atomic<int> counter{0};
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("kopf-apiserver-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
             "-" + std::to_string(random() % 100000));
    std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

namespace {

void read_all(int fd, std::mutex& mutex, std::string& into) {
    char buffer[8192];
    for (;;) {
        ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        std::lock_guard lock(mutex);
        into.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
}

}  // namespace

Process::Process(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const std::string& stdin_data) {
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) ||
        ::pipe2(err_pipe, O_CLOEXEC)) {
        throw std::runtime_error("pipe failed");
    }
    // The environment: ours, overridden by `env`.
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e; ++e) {
        std::string entry(*e);
        auto eq = entry.find('=');
        if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (auto& [k, v] : env) merged[k] = v;
    std::vector<std::string> env_strings;
    for (auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    int rc = ::posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(in_pipe[1]);
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc));
    }
    out_reader_ = std::thread(read_all, out_pipe[0], std::ref(mutex_), std::ref(out_));
    err_reader_ = std::thread(read_all, err_pipe[0], std::ref(mutex_), std::ref(err_));
    // Small inputs fit the pipe buffer; larger ones are written from a helper thread.
    std::thread([fd = in_pipe[1], data = stdin_data] {
        std::size_t sent = 0;
        while (sent < data.size()) {
            ssize_t n = ::write(fd, data.data() + sent, data.size() - sent);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            sent += static_cast<std::size_t>(n);
        }
        ::close(fd);
    }).detach();
}

Process::~Process() {
    if (!exited_ && pid_ > 0) {
        ::kill(-pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        exited_ = true;
    }
    if (out_reader_.joinable()) out_reader_.join();
    if (err_reader_.joinable()) err_reader_.join();
}

std::string Process::out() const {
    std::lock_guard lock(mutex_);
    return out_;
}

std::string Process::err() const {
    std::lock_guard lock(mutex_);
    return err_;
}

void Process::signal(int signal_number) {
    if (!exited_) ::kill(pid_, signal_number);
}

void Process::reap(int status) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool Process::running() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) reap(status);
    return !exited_;
}

CommandResult Process::wait(std::chrono::milliseconds timeout) {
    CommandResult result;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() > deadline) {
            result.timed_out = true;
            ::kill(-pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            reap(status);
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    // Grandchildren may keep the pipes open; they were killed with the group on timeout.
    if (out_reader_.joinable()) out_reader_.join();
    if (err_reader_.joinable()) err_reader_.join();
    result.exit_code = exit_code_;
    result.out = out();
    result.err = err();
    return result;
}

CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdin_data, std::chrono::milliseconds timeout) {
    Process process(argv, env, stdin_data);
    return process.wait(timeout);
}

bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (condition()) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(50ms);
    }
}

std::string HttpResult::header(const std::string& name) const {
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return s;
    };
    std::istringstream lines(headers);
    std::string line;
    const std::string wanted = lower(name) + ":";
    std::string found;
    while (std::getline(lines, line)) {
        if (lower(line).rfind(wanted, 0) == 0) {
            found = line.substr(wanted.size());
            while (!found.empty() && (found.front() == ' ')) found.erase(0, 1);
            while (!found.empty() && (found.back() == '\r' || found.back() == ' ')) {
                found.pop_back();
            }
        }
    }
    return found;
}

std::string raw_exchange(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
    return raw_session(port, bytes, timeout).answer;
}

RawSession raw_session(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
    RawSession session;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return session;
    }
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    char buffer[8192];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
        if (got <= 0) {
            session.closed_by_server = true;
            break;
        }
        session.answer.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
    return session;
}

ServerOptions tls_options() {
    ServerOptions options;
    options.tls = true;
    return options;
}

std::filesystem::path scripts_dir() {
    return std::filesystem::path(KOPF_SOURCE_DIR) / "tests/integration/apiserver/scripts";
}

std::filesystem::path kopf_binary() {
    return std::filesystem::path(KOPF_BINARY_DIR) / "bin/kopf";
}

std::string kubectl_for_minor(const std::string& minor) {
    std::filesystem::path exact = "/usr/lib/google-cloud-sdk/bin/kubectl.1." + minor;
    if (std::filesystem::exists(exact)) return exact.string();
    return "kubectl";
}

TestServer::TestServer(ServerOptions options) {
    options.port = 0;
    options.bind_address = "127.0.0.1";
    kubeconfig_ = dir_ / "kubeconfig";
    options.kubeconfig_out = kubeconfig_;
    server_ = std::make_unique<Server>(options);
    server_->start();
    url_ = server_->url();
    if (options.tls) {
        ca_file_ = dir_ / "ca.crt";
        write_file(ca_file_, server_->ca_cert_pem());
    }
    auto version = http("GET", "/version");
    std::string minor = "32";
    auto parsed = nlohmann::json::parse(version.body, nullptr, false);
    if (parsed.is_object() && parsed.contains("minor") && parsed["minor"].is_string()) {
        minor = parsed["minor"].get<std::string>();
        minor.erase(std::remove(minor.begin(), minor.end(), '+'), minor.end());
    }
    kubectl_binary_ = kubectl_for_minor(minor);
}

TestServer::~TestServer() {
    server_->stop();
}

HttpResult curl_request(const std::string& base_url, const std::string& method,
                        const std::string& path, const std::string& data,
                        const std::string& content_type, const std::vector<std::string>& extra) {
    static std::atomic<int> requests{0};
    TempDir scratch;
    std::string headers_file = (scratch / ("headers-" + std::to_string(requests++))).string();
    std::vector<std::string> argv = {"curl",       "-sS", "-X",          method, "-D",
                                     headers_file, "-o",  "/dev/stdout", "-w",   "\n%{http_code}",
                                     "--max-time", "30"};
    if (!content_type.empty()) argv.insert(argv.end(), {"-H", "Content-Type: " + content_type});
    if (!data.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
        argv.insert(argv.end(), {"--data-binary", "@-", "-H", "Expect:"});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(base_url + path);
    auto result = run_command(argv, {}, data, 60s);
    HttpResult http;
    auto newline = result.out.rfind('\n');
    if (newline != std::string::npos) {
        http.status = std::atoi(result.out.c_str() + newline + 1);
        http.body = result.out.substr(0, newline);
    }
    http.headers = read_file(headers_file);
    return http;
}

HttpResult TestServer::http(const std::string& method, const std::string& path,
                            const std::string& data, const std::string& content_type,
                            const std::vector<std::string>& extra, bool with_token) {
    std::vector<std::string> options;
    if (!ca_file_.empty()) options.insert(options.end(), {"--cacert", ca_file_.string()});
    if (with_token) {
        options.insert(options.end(), {"-H", "Authorization: Bearer " + server_->admin_token()});
    }
    options.insert(options.end(), extra.begin(), extra.end());
    return curl_request(url_, method, path, data, content_type, options);
}

std::vector<std::string> TestServer::kubectl_argv(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {kubectl_binary_, "--kubeconfig", kubeconfig_.string(),
                                     "--cache-dir", (dir_ / "kubectl-cache").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

CommandResult TestServer::kubectl(const std::vector<std::string>& args,
                                  const std::string& stdin_data,
                                  const std::map<std::string, std::string>& env,
                                  std::chrono::milliseconds timeout) {
    auto merged = env;
    merged.emplace("HOME", dir_.path().string());
    merged.emplace("KUBECONFIG", kubeconfig_.string());
    return run_command(kubectl_argv(args), merged, stdin_data, timeout);
}

CommandResult TestServer::python(const std::string& script, const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env,
                                 std::chrono::milliseconds timeout) {
    std::vector<std::string> argv = {"/usr/bin/python3", (scripts_dir() / script).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto merged = env;
    merged.emplace("KUBECONFIG", kubeconfig_.string());
    merged.emplace("PYTHONDONTWRITEBYTECODE", "1");
    return run_command(argv, merged, "", timeout);
}

}  // namespace kopf::apiserver::testing
