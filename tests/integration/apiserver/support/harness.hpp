// Shared helpers for the API server's integration tests: an in-process server on a free
// loopback port with its own temporary directory and kubeconfig, subprocesses with
// captured output (kubectl, the Python client, curl, `kopf apiserver`), raw sockets for
// malformed HTTP, and polling for a condition.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kopf/apiserver/server.hpp"

namespace kopf::apiserver::testing {

using namespace std::chrono_literals;

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  private:
    std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::string& text);
std::string read_file(const std::filesystem::path& path);

struct CommandResult {
    int exit_code = -1;
    bool timed_out = false;
    std::string out;
    std::string err;
};

// A child process (own process group) whose stdout and stderr are collected as it runs.
class Process {
  public:
    Process(const std::vector<std::string>& argv,
            const std::map<std::string, std::string>& env = {}, const std::string& stdin_data = "");
    ~Process();  // kills the process group if still running
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    std::string out() const;
    std::string err() const;
    void signal(int signal_number);
    // Waits for exit; kills it after `timeout`. Returns the final result.
    CommandResult wait(std::chrono::milliseconds timeout = 60s);
    bool running();

  private:
    void reap(int status);
    int pid_ = -1;
    int exit_code_ = -1;
    bool exited_ = false;
    mutable std::mutex mutex_;
    std::string out_, err_;
    std::thread out_reader_, err_reader_;
};

CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {},
                          const std::string& stdin_data = "",
                          std::chrono::milliseconds timeout = 60s);

// Polls `condition` every 50 ms until it holds or `timeout` passes.
bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 20s);

struct HttpResult {
    int status = 0;
    std::string headers;  // raw header block as curl saw it (lower-case search helpers below)
    std::string body;
    std::string header(const std::string& name) const;  // "" if absent
};

// curl `method` base_url+path with `data` as the body; `extra` are more curl arguments.
HttpResult curl_request(const std::string& base_url, const std::string& method,
                        const std::string& path, const std::string& data = "",
                        const std::string& content_type = "",
                        const std::vector<std::string>& extra = {});

// Sends bytes to 127.0.0.1:port and returns whatever the server answers before it
// closes the connection (or `timeout` passes).
std::string raw_exchange(int port, const std::string& bytes,
                         std::chrono::milliseconds timeout = 5s);

// The same, telling whether the server closed the connection (true) or the timeout passed.
struct RawSession {
    std::string answer;
    bool closed_by_server = false;
};
RawSession raw_session(int port, const std::string& bytes, std::chrono::milliseconds timeout = 5s);

// The server under test, started on 127.0.0.1:0 with a kubeconfig in its temp dir.
class TestServer {
  public:
    explicit TestServer(ServerOptions options = {});
    ~TestServer();

    Server& server() { return *server_; }
    const std::string& url() const { return url_; }
    const std::filesystem::path& kubeconfig() const { return kubeconfig_; }
    const TempDir& dir() const { return dir_; }

    // curl against the server with the admin credentials (and CA) of the kubeconfig unless
    // `extra` says otherwise. `data` (if not empty) is sent as the body.
    HttpResult http(const std::string& method, const std::string& path,
                    const std::string& data = "", const std::string& content_type = "",
                    const std::vector<std::string>& extra = {}, bool with_token = true);

    // kubectl matching the server's /version minor, fresh cache dir, the server's kubeconfig.
    CommandResult kubectl(const std::vector<std::string>& args, const std::string& stdin_data = "",
                          const std::map<std::string, std::string>& env = {},
                          std::chrono::milliseconds timeout = 60s);
    std::vector<std::string> kubectl_argv(const std::vector<std::string>& args) const;

    // /usr/bin/python3 scripts/<script> with KUBECONFIG set.
    CommandResult python(const std::string& script, const std::vector<std::string>& args = {},
                         const std::map<std::string, std::string>& env = {},
                         std::chrono::milliseconds timeout = 60s);

  private:
    TempDir dir_;
    std::unique_ptr<Server> server_;
    std::string url_;
    std::filesystem::path kubeconfig_;
    std::filesystem::path ca_file_;
    std::string kubectl_binary_;
};

// Default options with TLS on (generated CA and serving certificate).
ServerOptions tls_options();

std::filesystem::path scripts_dir();
std::filesystem::path kopf_binary();
// The kubectl whose minor version matches `minor` if installed, else plain `kubectl`.
std::string kubectl_for_minor(const std::string& minor);

}  // namespace kopf::apiserver::testing
