#include "cli/plugins.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/actions/logging.hpp"
#include "kopf/version.hpp"

namespace fs = std::filesystem;

namespace kopf::runtime {
namespace {

std::string getenv_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value && *value ? std::string(value) : fallback;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw PluginError(
            fmt::format("Cannot read '{}': {}.", path.string(), std::strerror(errno)));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string sha256_hex(const std::string& data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
    return hex;
}

fs::path this_library_path() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&kopf_include_dir), &info) && info.dli_fname) {
        std::error_code ec;
        auto path = fs::canonical(info.dli_fname, ec);
        if (!ec) return path;
    }
    return {};
}

bool has_kopf_headers(const fs::path& dir) {
    std::error_code ec;
    return fs::exists(dir / "kopf" / "version.hpp", ec);
}

// The source directory of a CMake build tree, from CMakeCache.txt in `dir` or above it.
fs::path source_dir_of_build_tree(fs::path dir) {
    for (; !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
        std::ifstream cache(dir / "CMakeCache.txt");
        if (!cache) continue;
        std::string line;
        const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
        while (std::getline(cache, line)) {
            if (line.rfind(key, 0) == 0) return line.substr(key.size());
        }
        return {};
    }
    return {};
}

// Files listed in a Makefile-style dependency file written by the compiler's -MD.
std::vector<fs::path> read_depfile(const fs::path& path) {
    std::ifstream in(path);
    std::vector<fs::path> deps;
    std::string token, word;
    bool target_seen = false;
    char c;
    while (in.get(c)) {
        if (c == '\\') {
            char next;
            if (!in.get(next)) break;
            if (next == '\n') continue;  // line continuation
            if (next == ' ') {
                word += ' ';
                continue;
            }  // escaped space
            word += c;
            word += next;
            continue;
        }
        if (c == ' ' || c == '\n' || c == '\t') {
            if (!word.empty()) {
                if (!target_seen && word.back() == ':')
                    target_seen = true;
                else if (target_seen)
                    deps.emplace_back(word);
                word.clear();
            }
            continue;
        }
        word += c;
    }
    if (!word.empty() && target_seen) deps.emplace_back(word);
    return deps;
}

bool is_up_to_date(const fs::path& object, const fs::path& depfile) {
    std::error_code ec;
    if (!fs::exists(object, ec) || !fs::exists(depfile, ec)) return false;
    const auto built = fs::last_write_time(object, ec);
    if (ec) return false;
    for (const auto& dep : read_depfile(depfile)) {
        const auto changed = fs::last_write_time(dep, ec);
        if (ec || changed > built) return false;
    }
    return true;
}

fs::path default_cache_dir() {
    if (const char* dir = std::getenv("KOPF_CACHE_DIR"); dir && *dir)
        return fs::path(dir) / "plugins";
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return fs::path(xdg) / "kopf" / "plugins";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".cache" / "kopf" / "plugins";
    return fs::temp_directory_path() / "kopf-plugins";
}

std::vector<std::string> split_flags(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string flag;
    while (in >> flag) out.push_back(flag);
    return out;
}

// Runs a command with inherited stdout/stderr; returns its exit status (or -1 if not started).
int run_command(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO);  // all compiler output on stderr, next to our logs
        execvp(args[0], args.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

fs::path kopf_include_dir() {
    if (const char* env = std::getenv("KOPF_INCLUDE_DIR"); env && *env) {
        if (!has_kopf_headers(env)) {
            throw PluginError(fmt::format(
                "KOPF_INCLUDE_DIR='{}' does not contain kopf/version.hpp: point it at the "
                "directory that holds the Kopf++ headers (the one with kopf/ in it).",
                env));
        }
        return env;
    }
    const fs::path library = this_library_path();
    if (!library.empty()) {
        // Installed: <prefix>/lib[/<multiarch>]/libkopf.so -> <prefix>/include.
        for (fs::path dir = library.parent_path(); dir.has_relative_path();
             dir = dir.parent_path()) {
            if (has_kopf_headers(dir / "include")) return dir / "include";
            if (dir.filename() != "lib" && dir.parent_path().filename() != "lib") break;
        }
        // Build tree: the source tree recorded in CMakeCache.txt.
        const fs::path source = source_dir_of_build_tree(library.parent_path());
        if (!source.empty() && has_kopf_headers(source / "include")) return source / "include";
    }
    throw PluginError(fmt::format(
        "Cannot find the Kopf++ headers to compile operator code against (looked next to '{}' "
        "and in its build tree). Install Kopf++ (cmake --install) or set KOPF_INCLUDE_DIR to "
        "the directory that holds kopf/kopf.hpp.",
        library.empty() ? std::string("libkopf") : library.string()));
}

fs::path compile_plugin(const fs::path& source, const PluginCompiler& options) {
    std::error_code ec;
    if (!fs::is_regular_file(source, ec)) {
        throw PluginError(fmt::format("Operator file '{}' does not exist or is not a regular file.",
                                      source.string()));
    }
    const fs::path absolute = fs::absolute(source);
    const fs::path include_dir = kopf_include_dir();
    const fs::path library = this_library_path();

    const std::string compiler =
        !options.compiler.empty() ? options.compiler : getenv_or("CXX", "c++");
    std::vector<std::string> flags = options.flags;
    if (flags.empty()) flags = {"-std=c++20", "-O0", "-g"};
    for (auto& extra : split_flags(getenv_or("KOPF_PLUGIN_CXXFLAGS", ""))) flags.push_back(extra);

    const fs::path cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
    fs::create_directories(cache_dir, ec);
    if (ec) {
        throw PluginError(fmt::format("Cannot create the plugin cache directory '{}': {}.",
                                      cache_dir.string(), ec.message()));
    }

    std::string key = read_file(absolute);
    key += '\0' + absolute.string() + '\0' + compiler + '\0' + include_dir.string() + '\0' +
           library.string() + '\0' + kopf::version();
    for (const auto& flag : flags) key += '\0' + flag;
    const std::string digest = sha256_hex(key);
    const fs::path object = cache_dir / (digest + ".so");
    const fs::path depfile = cache_dir / (digest + ".d");
    if (is_up_to_date(object, depfile)) return object;

    if (!options.quiet) {
        logger("kopf.plugins")->info("Compiling {} into {}", source.string(), object.string());
    }
    const fs::path temporary = cache_dir / fmt::format("{}.{}.tmp.so", digest, getpid());
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(),
                {"-fPIC", "-shared", "-I" + include_dir.string(), "-MD", "-MF", depfile.string(),
                 "-MT", object.string(), "-o", temporary.string(), absolute.string()});
    if (!library.empty()) {
        argv.insert(argv.end(), {"-L" + library.parent_path().string(),
                                 "-Wl,-rpath," + library.parent_path().string(), "-lkopf"});
    }
    const int status = run_command(argv);
    if (status != 0) {
        fs::remove(temporary, ec);
        fs::remove(depfile, ec);
        if (status == 127 || status == -1) {
            throw PluginError(fmt::format(
                "Cannot run the C++ compiler '{}' to compile '{}'. Install a C++20 compiler "
                "(g++ 12 or newer) or set CXX to one.",
                compiler, source.string()));
        }
        throw PluginError(fmt::format(
            "Operator file '{}' did not compile (the compiler's messages are above; it exited "
            "with status {}). Fix the errors and run again.",
            source.string(), status));
    }
    fs::rename(temporary, object, ec);
    if (ec) {
        throw PluginError(fmt::format("Cannot store the compiled operator at '{}': {}.",
                                      object.string(), ec.message()));
    }
    return object;
}

void load_shared_object(const fs::path& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        throw PluginError(fmt::format(
            "Operator library '{}' does not exist or is not a regular file.", path.string()));
    }
    const fs::path absolute = fs::absolute(path);
    if (!dlopen(absolute.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        const char* error = dlerror();
        throw PluginError(fmt::format(
            "Cannot load operator library '{}': {}. Rebuild it against this Kopf++ version "
            "({}) as a shared object (-shared -fPIC).",
            path.string(), error ? error : "unknown error", kopf::version()));
    }
}

void load_operator_files(const std::vector<std::string>& paths, const PluginCompiler& options) {
    for (const auto& text : paths) {
        const fs::path path(text);
        const std::string ext = path.extension().string();
        if (ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".C" || ext == ".c++") {
            load_shared_object(compile_plugin(path, options));
        } else if (ext == ".so" || text.find(".so.") != std::string::npos) {
            load_shared_object(path);
        } else {
            throw PluginError(fmt::format(
                "Do not know how to load '{}': pass C++ sources (.cpp, .cc, .cxx) to be compiled, "
                "or shared objects (.so) built against Kopf++.",
                text));
        }
    }
}

}  // namespace kopf::runtime
