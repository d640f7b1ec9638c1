#include "clients/auth.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace kopf::clients {

namespace {

struct CachedToken {
    std::filesystem::file_time_type mtime;
    std::uintmax_t size = 0;
    std::string token;
};

// Projected service-account tokens rotate in place: re-read when the file changes.
std::string read_token_file(const std::string& path) {
    static std::mutex mutex;
    static std::map<std::string, CachedToken> cache;
    std::error_code ec;
    auto mtime = std::filesystem::last_write_time(path, ec);
    auto size = ec ? 0 : std::filesystem::file_size(path, ec);
    if (ec)
        throw std::runtime_error(
            fmt::format("Cannot read the token file '{}': {}", path, ec.message()));
    std::lock_guard lock(mutex);
    if (auto it = cache.find(path);
        it != cache.end() && it->second.mtime == mtime && it->second.size == size) {
        return it->second.token;
    }
    std::ifstream stream(path, std::ios::binary);
    if (!stream) throw std::runtime_error(fmt::format("Cannot read the token file '{}'", path));
    std::ostringstream buffer;
    buffer << stream.rdbuf();
    std::string token = buffer.str();
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
        token.pop_back();
    cache[path] = CachedToken{mtime, size, token};
    return token;
}

}  // namespace

std::string base64_encode(const std::string& data) {
    std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(data.data()),
                            static_cast<int>(data.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string authorization_header(const ConnectionInfo& info) {
    std::string scheme = info.scheme.value_or("Bearer");
    if (info.token && !info.token->empty()) return scheme + " " + *info.token;
    if (info.token_path && !info.token_path->empty())
        return scheme + " " + read_token_file(*info.token_path);
    if (info.username)
        return "Basic " + base64_encode(*info.username + ":" + info.password.value_or(""));
    return {};
}

}  // namespace kopf::clients
