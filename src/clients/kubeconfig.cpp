#include "clients/kubeconfig.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

extern char** environ;

namespace kopf::clients {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path, const std::string& what) {
    std::ifstream stream(path, std::ios::binary);
    if (!stream) {
        throw KubeconfigError(
            fmt::format("Cannot read {} '{}': {}", what, path.string(), std::strerror(errno)));
    }
    std::ostringstream buffer;
    buffer << stream.rdbuf();
    return buffer.str();
}

// Field access with errors that name the file and the field path.
struct Fields {
    const std::string& source;

    [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
        throw KubeconfigError(
            fmt::format("Broken kubeconfig {}: field '{}' {}", source, field, problem));
    }

    std::optional<std::string> string(const YAML::Node& node, const std::string& key,
                                      const std::string& where) const {
        const YAML::Node value = node[key];
        if (!value || value.IsNull()) return std::nullopt;
        if (!value.IsScalar()) fail(where + "." + key, "must be a string");
        return value.as<std::string>();
    }

    std::string required(const YAML::Node& node, const std::string& key,
                         const std::string& where) const {
        auto value = string(node, key, where);
        if (!value || value->empty()) fail(where + "." + key, "is missing");
        return *value;
    }

    bool boolean(const YAML::Node& node, const std::string& key, const std::string& where) const {
        const YAML::Node value = node[key];
        if (!value || value.IsNull()) return false;
        try {
            return value.as<bool>();
        } catch (const YAML::Exception&) {
            fail(where + "." + key, "must be true or false");
        }
    }

    std::optional<std::string> base64(const YAML::Node& node, const std::string& key,
                                      const std::string& where) const {
        auto value = string(node, key, where);
        if (!value) return std::nullopt;
        try {
            return base64_decode(*value);
        } catch (const std::invalid_argument&) {
            fail(where + "." + key, "is not valid base64");
        }
    }

    std::optional<std::string> path(const YAML::Node& node, const std::string& key,
                                    const std::string& where, const fs::path& base_dir) const {
        auto value = string(node, key, where);
        if (!value || value->empty()) return std::nullopt;
        fs::path p(*value);
        if (p.is_relative() && !base_dir.empty()) p = base_dir / p;
        return p.string();
    }

    YAML::Node list(const YAML::Node& root, const std::string& key) const {
        const YAML::Node value = root[key];
        if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Sequence);
        if (!value.IsSequence()) fail(key, "must be a list");
        return value;
    }
};

ExecConfig parse_exec(const YAML::Node& node, const Fields& f, const std::string& where,
                      const fs::path& base_dir) {
    if (!node.IsMap()) f.fail(where, "must be a mapping");
    ExecConfig exec;
    exec.api_version = f.string(node, "apiVersion", where).value_or("");
    exec.command = f.required(node, "command", where);
    if (const auto args = node["args"]; args && !args.IsNull()) {
        if (!args.IsSequence()) f.fail(where + ".args", "must be a list of strings");
        for (std::size_t i = 0; i < args.size(); ++i) {
            if (!args[i].IsScalar())
                f.fail(fmt::format("{}.args[{}]", where, i), "must be a string");
            exec.args.push_back(args[i].as<std::string>());
        }
    }
    if (const auto env = node["env"]; env && !env.IsNull()) {
        if (!env.IsSequence()) f.fail(where + ".env", "must be a list of {name, value}");
        for (std::size_t i = 0; i < env.size(); ++i) {
            auto item = fmt::format("{}.env[{}]", where, i);
            if (!env[i].IsMap()) f.fail(item, "must be a mapping with 'name' and 'value'");
            exec.env.emplace_back(f.required(env[i], "name", item),
                                  f.string(env[i], "value", item).value_or(""));
        }
    }
    exec.interactive_mode = f.string(node, "interactiveMode", where).value_or("IfAvailable");
    exec.install_hint = f.string(node, "installHint", where).value_or("");
    exec.base_dir = base_dir;
    exec.source = f.source;
    return exec;
}

std::string named_entry_name(const YAML::Node& item, const Fields& f, const std::string& where) {
    if (!item.IsMap()) f.fail(where, "must be a mapping with 'name'");
    return f.required(item, "name", where);
}

YAML::Node section(const YAML::Node& item, const char* key, const Fields& f,
                   const std::string& where) {
    const YAML::Node value = item[key];
    if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!value.IsMap()) f.fail(where + "." + key, "must be a mapping");
    return value;
}

}  // namespace

std::string base64_decode(const std::string& text) {
    std::string clean;
    for (char c : text) {
        if (!std::isspace(static_cast<unsigned char>(c))) clean.push_back(c);
    }
    if (clean.size() % 4 != 0) throw std::invalid_argument("base64 length is not a multiple of 4");
    std::string out(clean.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(clean.data()),
                            static_cast<int>(clean.size()));
    if (n < 0) throw std::invalid_argument("invalid base64 characters");
    std::size_t padding = 0;
    if (!clean.empty() && clean.back() == '=') ++padding;
    if (clean.size() > 1 && clean[clean.size() - 2] == '=') ++padding;
    out.resize(static_cast<std::size_t>(n) - padding);
    return out;
}

std::chrono::system_clock::time_point parse_rfc3339(const std::string& text) {
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
        throw std::invalid_argument(fmt::format("'{}' is not an RFC 3339 timestamp", text));
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    std::string rest = text.substr(static_cast<std::size_t>(consumed));
    if (!rest.empty() && rest[0] == '.') {
        std::size_t i = 1;
        while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
        rest = rest.substr(i);
    }
    long offset = 0;
    if (rest == "Z" || rest == "z") {
        offset = 0;
    } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
        int hours = std::stoi(rest.substr(1, 2));
        int minutes = std::stoi(rest.substr(4, 2));
        offset = (hours * 3600L + minutes * 60L) * (rest[0] == '-' ? -1 : 1);
    } else {
        throw std::invalid_argument(fmt::format("'{}' has no valid time zone", text));
    }
    const std::time_t seconds = timegm(&tm) - offset;
    // The clock counts nanoseconds in 64 bits (the years 1677 to 2262): converting a time outside
    // would overflow.
    constexpr std::time_t latest =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::duration::max())
            .count() -
        1;
    if (seconds > latest || seconds < -latest)
        throw std::invalid_argument(fmt::format("'{}' is out of the range of timestamps", text));
    return std::chrono::system_clock::from_time_t(seconds);
}

std::vector<fs::path> default_kubeconfig_paths() {
    std::vector<fs::path> paths;
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
        std::string value(env);
        std::string::size_type start = 0;
        while (start <= value.size()) {
            auto end = value.find(':', start);
            if (end == std::string::npos) end = value.size();
            if (end > start) paths.emplace_back(value.substr(start, end - start));
            start = end + 1;
        }
        return paths;
    }
    if (const char* home = std::getenv("HOME"); home && *home) {
        paths.push_back(fs::path(home) / ".kube" / "config");
    }
    return paths;
}

Kubeconfig parse_kubeconfig(const std::string& text, const std::string& source,
                            const fs::path& base_dir) {
    Fields f{source};
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw KubeconfigError(
            fmt::format("Broken kubeconfig {}: not valid YAML: {}", source, e.what()));
    }
    Kubeconfig config;
    if (!root || root.IsNull()) return config;
    if (!root.IsMap()) f.fail("(document)", "must be a mapping");

    const auto clusters = f.list(root, "clusters");
    for (std::size_t i = 0; i < clusters.size(); ++i) {
        auto where = fmt::format("clusters[{}]", i);
        auto name = named_entry_name(clusters[i], f, where);
        auto body = section(clusters[i], "cluster", f, where);
        where += ".cluster";
        KubeconfigCluster cluster;
        cluster.server = f.required(body, "server", where);
        cluster.ca_path = f.path(body, "certificate-authority", where, base_dir);
        cluster.ca_data = f.base64(body, "certificate-authority-data", where);
        cluster.insecure = f.boolean(body, "insecure-skip-tls-verify", where);
        cluster.source = source;
        config.clusters.emplace(name, std::move(cluster));
    }

    const auto users = f.list(root, "users");
    for (std::size_t i = 0; i < users.size(); ++i) {
        auto where = fmt::format("users[{}]", i);
        auto name = named_entry_name(users[i], f, where);
        auto body = section(users[i], "user", f, where);
        where += ".user";
        KubeconfigUser user;
        user.token = f.string(body, "token", where);
        user.token_file = f.path(body, "tokenFile", where, base_dir);
        user.username = f.string(body, "username", where);
        user.password = f.string(body, "password", where);
        user.certificate_path = f.path(body, "client-certificate", where, base_dir);
        user.certificate_data = f.base64(body, "client-certificate-data", where);
        user.private_key_path = f.path(body, "client-key", where, base_dir);
        user.private_key_data = f.base64(body, "client-key-data", where);
        if (const auto exec = body["exec"]; exec && !exec.IsNull()) {
            user.exec = parse_exec(exec, f, where + ".exec", base_dir);
        }
        if (body["auth-provider"]) {
            f.fail(where + ".auth-provider",
                   "is not supported (removed from kubectl); use an exec plugin instead");
        }
        user.source = source;
        config.users.emplace(name, std::move(user));
    }

    const auto contexts = f.list(root, "contexts");
    for (std::size_t i = 0; i < contexts.size(); ++i) {
        auto where = fmt::format("contexts[{}]", i);
        auto name = named_entry_name(contexts[i], f, where);
        auto body = section(contexts[i], "context", f, where);
        where += ".context";
        KubeconfigContext context;
        context.cluster = f.required(body, "cluster", where);
        context.user = f.string(body, "user", where).value_or("");
        context.namespace_ = f.string(body, "namespace", where);
        context.source = source;
        config.contexts.emplace(name, std::move(context));
    }

    if (auto current = f.string(root, "current-context", "(document)");
        current && !current->empty()) {
        config.current_context = current;
    }
    return config;
}

std::optional<Kubeconfig> load_kubeconfig(const std::vector<fs::path>& paths) {
    std::optional<Kubeconfig> merged;
    for (const auto& path : paths) {
        std::error_code ec;
        if (!fs::exists(path, ec)) continue;
        auto text = read_file(path, "kubeconfig");
        auto one = parse_kubeconfig(text, path.string(), path.parent_path());
        if (!merged) merged.emplace();
        // The first file that defines a name wins, as in kubectl.
        merged->clusters.insert(one.clusters.begin(), one.clusters.end());
        merged->users.insert(one.users.begin(), one.users.end());
        merged->contexts.insert(one.contexts.begin(), one.contexts.end());
        if (!merged->current_context) merged->current_context = one.current_context;
        merged->files.push_back(path);
    }
    return merged;
}

ConnectionInfo connection_from_kubeconfig(const Kubeconfig& config,
                                          const std::optional<std::string>& context_name) {
    std::string files;
    for (const auto& file : config.files) files += (files.empty() ? "" : ":") + file.string();
    auto name = context_name ? context_name : config.current_context;
    if (!name) {
        throw KubeconfigError(fmt::format(
            "Kubeconfig {}: field 'current-context' is not set and no context was given", files));
    }
    auto context_it = config.contexts.find(*name);
    if (context_it == config.contexts.end()) {
        throw KubeconfigError(
            fmt::format("Kubeconfig {}: context '{}' is not defined in 'contexts'", files, *name));
    }
    const auto& context = context_it->second;
    auto cluster_it = config.clusters.find(context.cluster);
    if (cluster_it == config.clusters.end()) {
        throw KubeconfigError(fmt::format(
            "Broken kubeconfig {}: field 'contexts[{}].context.cluster' refers to cluster '{}' "
            "which is not defined",
            context.source, *name, context.cluster));
    }
    const auto& cluster = cluster_it->second;

    ConnectionInfo info;
    info.server = cluster.server;
    info.ca_path = cluster.ca_path;
    info.ca_data = cluster.ca_data;
    info.insecure = cluster.insecure;
    info.default_namespace = context.namespace_;

    if (!context.user.empty()) {
        auto user_it = config.users.find(context.user);
        if (user_it == config.users.end()) {
            throw KubeconfigError(fmt::format(
                "Broken kubeconfig {}: field 'contexts[{}].context.user' refers to user '{}' "
                "which is not defined",
                context.source, *name, context.user));
        }
        const auto& user = user_it->second;
        info.token = user.token;
        if (!user.token && user.token_file) info.token_path = user.token_file;
        info.username = user.username;
        info.password = user.password;
        info.certificate_path = user.certificate_path;
        info.certificate_data = user.certificate_data;
        info.private_key_path = user.private_key_path;
        info.private_key_data = user.private_key_data;
        if (user.exec) {
            auto credential = run_exec_plugin(*user.exec);
            if (credential.token) {
                info.token = credential.token;
                info.token_path.reset();
            }
            if (credential.certificate_data) info.certificate_data = credential.certificate_data;
            if (credential.private_key_data) info.private_key_data = credential.private_key_data;
            info.expiration = credential.expiration;
        }
        if (info.token) info.scheme = "Bearer";
    }
    return info;
}

ExecCredential run_exec_plugin(const ExecConfig& exec) {
    const std::string what =
        fmt::format("Exec credential plugin '{}' (from {})", exec.command, exec.source);
    if (exec.interactive_mode == "Always") {
        throw KubeconfigError(
            fmt::format("{} requires interactiveMode: Always, but an operator has no terminal; "
                        "use a non-interactive plugin or another authentication method",
                        what));
    }
    if (!exec.api_version.empty() && exec.api_version != "client.authentication.k8s.io/v1" &&
        exec.api_version != "client.authentication.k8s.io/v1beta1") {
        throw KubeconfigError(
            fmt::format("{}: unsupported apiVersion '{}'; expected "
                        "client.authentication.k8s.io/v1",
                        what, exec.api_version));
    }
    std::string command = exec.command;
    if (command.find('/') != std::string::npos && fs::path(command).is_relative() &&
        !exec.base_dir.empty()) {
        command = (exec.base_dir / command).string();
    }
    std::string api_version =
        exec.api_version.empty() ? "client.authentication.k8s.io/v1" : exec.api_version;
    nlohmann::json info = {{"apiVersion", api_version},
                           {"kind", "ExecCredential"},
                           {"spec", {{"interactive", false}}}};

    // Prepare everything before fork(): the child may only call async-signal-safe functions.
    std::vector<std::string> env_strings;
    for (char** e = environ; e && *e; ++e) {
        std::string entry(*e);
        bool overridden = entry.rfind("KUBERNETES_EXEC_INFO=", 0) == 0;
        for (const auto& [key, value] : exec.env) overridden |= entry.rfind(key + "=", 0) == 0;
        if (!overridden) env_strings.push_back(std::move(entry));
    }
    for (const auto& [key, value] : exec.env) env_strings.push_back(key + "=" + value);
    env_strings.push_back("KUBERNETES_EXEC_INFO=" + info.dump());
    std::vector<char*> envp;
    for (auto& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> arg_strings{command};
    arg_strings.insert(arg_strings.end(), exec.args.begin(), exec.args.end());
    std::vector<char*> argv;
    for (auto& arg : arg_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);

    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        throw KubeconfigError(
            fmt::format("{}: cannot create pipes: {}", what, std::strerror(errno)));
    }
    pid_t pid = fork();
    if (pid < 0) {
        throw KubeconfigError(fmt::format("{}: cannot fork: {}", what, std::strerror(errno)));
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        execvpe(argv[0], argv.data(), envp.data());
        const char message[] = "exec failed\n";
        [[maybe_unused]] auto ignored = write(2, message, sizeof(message) - 1);
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    std::string out, err;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    char buffer[4096];
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            auto n = read(fds[i].fd, buffer, sizeof(buffer));
            if (n > 0) {
                (i == 0 ? out : err).append(buffer, static_cast<std::size_t>(n));
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::string hint = exec.install_hint.empty() ? "" : "; " + exec.install_hint;
        throw KubeconfigError(fmt::format("{} failed with exit status {}: {}{}", what,
                                          WIFEXITED(status) ? WEXITSTATUS(status) : -1, err, hint));
    }
    nlohmann::json output;
    try {
        output = nlohmann::json::parse(out);
    } catch (const nlohmann::json::exception& e) {
        throw KubeconfigError(
            fmt::format("{} printed no valid ExecCredential JSON: {}", what, e.what()));
    }
    if (!output.is_object() || output.value("kind", "") != "ExecCredential" ||
        !output.contains("status") || !output["status"].is_object()) {
        throw KubeconfigError(
            fmt::format("{} printed JSON that is not an ExecCredential with a status", what));
    }
    const auto& status_json = output["status"];
    ExecCredential credential;
    auto get = [&](const char* key) -> std::optional<std::string> {
        if (auto it = status_json.find(key); it != status_json.end() && it->is_string()) {
            return it->get<std::string>();
        }
        return std::nullopt;
    };
    credential.token = get("token");
    credential.certificate_data = get("clientCertificateData");
    credential.private_key_data = get("clientKeyData");
    if (auto expiration = get("expirationTimestamp")) {
        try {
            credential.expiration = parse_rfc3339(*expiration);
        } catch (const std::invalid_argument& e) {
            throw KubeconfigError(
                fmt::format("{}: status.expirationTimestamp: {}", what, e.what()));
        }
    }
    if (!credential.token && !(credential.certificate_data && credential.private_key_data)) {
        throw KubeconfigError(fmt::format(
            "{} returned neither status.token nor status.clientCertificateData+clientKeyData",
            what));
    }
    return credential;
}

std::optional<ConnectionInfo> login_with_kubeconfig_files(
    const std::vector<fs::path>& paths, const std::optional<std::string>& context) {
    auto config = load_kubeconfig(paths);
    if (!config) return std::nullopt;
    return connection_from_kubeconfig(*config, context);
}

}  // namespace kopf::clients

namespace kopf {

std::optional<ConnectionInfo> login_with_kubeconfig(const std::optional<std::string>& context) {
    return clients::login_with_kubeconfig_files(clients::default_kubeconfig_paths(), context);
}

std::optional<ConnectionInfo> login_with_service_account(const std::filesystem::path& given_root) {
    std::filesystem::path root = given_root;
    if (root.empty()) {
        const char* overridden = std::getenv("KOPF_SERVICE_ACCOUNT_DIR");
        root = overridden && *overridden ? overridden
                                         : "/var/run/secrets/kubernetes.io/serviceaccount";
    }
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    std::error_code ec;
    auto token_path = root / "token";
    if (!host || !*host || !std::filesystem::exists(token_path, ec)) return std::nullopt;
    std::string host_text(host);
    if (host_text.find(':') != std::string::npos) host_text = "[" + host_text + "]";  // IPv6
    ConnectionInfo info;
    info.server = fmt::format("https://{}:{}", host_text, port && *port ? port : "443");
    info.scheme = "Bearer";
    info.token_path = token_path.string();  // re-read on rotation (projected tokens)
    if (auto ca = root / "ca.crt"; std::filesystem::exists(ca, ec)) info.ca_path = ca.string();
    if (auto ns = root / "namespace"; std::filesystem::exists(ns, ec)) {
        std::ifstream stream(ns);
        std::string value;
        std::getline(stream, value);
        if (!value.empty()) info.default_namespace = value;
    }
    return info;
}

}  // namespace kopf
