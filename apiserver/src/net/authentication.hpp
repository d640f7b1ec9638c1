// Who is calling: static bearer tokens (kube-apiserver's --token-auth-file CSV plus the
// server's generated admin token) and the identity in a verified client certificate.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_types.hpp"

namespace kopf::apiserver::net {

// The groups every authenticated user belongs to, in addition to its own.
inline constexpr const char* kAuthenticatedGroup = "system:authenticated";
inline constexpr const char* kAdminUser = "kopf-admin";

class TokenAuthenticator {
  public:
    // Reads a kube-apiserver token file: `token,user,uid,"group1,group2"` per line (groups
    // optional; blank lines and lines starting with '#' are skipped). Throws
    // std::runtime_error naming the file and line on malformed input.
    void load_file(const std::filesystem::path& path);
    void add(const std::string& token, UserInfo user);

    // The user of an `Authorization` header value; nullopt when the header is not a
    // known bearer token.
    std::optional<UserInfo> authenticate(std::string_view authorization) const;
    bool empty() const { return users_.empty(); }

  private:
    std::map<std::string, UserInfo, std::less<>> users_;
};

// Splits one CSV line (RFC 4180 quoting: "a,b" and "" inside quotes). Throws
// std::invalid_argument on an unterminated quote.
std::vector<std::string> split_csv_line(std::string_view line);

UserInfo authenticated_user(std::string name, std::vector<std::string> groups);

}  // namespace kopf::apiserver::net
