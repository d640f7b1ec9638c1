#include "net/authentication.hpp"

#include <cctype>
#include <fstream>
#include <stdexcept>

namespace kopf::apiserver::net {

std::vector<std::string> split_csv_line(std::string_view line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                fields.back() += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                fields.back() += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else if (c != '\r') {
            fields.back() += c;
        }
    }
    if (quoted) throw std::invalid_argument("unterminated quote");
    return fields;
}

UserInfo authenticated_user(std::string name, std::vector<std::string> groups) {
    UserInfo user;
    user.name = std::move(name);
    user.groups = std::move(groups);
    user.groups.push_back(kAuthenticatedGroup);
    user.anonymous = false;
    return user;
}

void TokenAuthenticator::load_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read token file " + path.string());
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        std::vector<std::string> fields;
        try {
            fields = split_csv_line(line);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error("token file " + path.string() + " line " +
                                     std::to_string(number) + ": " + e.what());
        }
        if (fields.size() < 3 || fields[0].empty() || fields[1].empty()) {
            throw std::runtime_error("token file " + path.string() + " line " +
                                     std::to_string(number) +
                                     ": expected token,user,uid[,\"group1,group2\"]");
        }
        std::vector<std::string> groups;
        if (fields.size() > 3) {
            for (auto& group : split_csv_line(fields[3])) {
                if (!group.empty()) groups.push_back(group);
            }
        }
        add(fields[0], authenticated_user(fields[1], std::move(groups)));
    }
}

void TokenAuthenticator::add(const std::string& token, UserInfo user) {
    users_[token] = std::move(user);
}

std::optional<UserInfo> TokenAuthenticator::authenticate(std::string_view authorization) const {
    constexpr std::string_view prefix = "Bearer ";
    if (authorization.size() <= prefix.size()) return std::nullopt;
    // The scheme is case-insensitive (RFC 7235).
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
            std::tolower(static_cast<unsigned char>(prefix[i]))) {
            return std::nullopt;
        }
    }
    std::string_view token = authorization.substr(prefix.size());
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    auto it = users_.find(token);
    if (it == users_.end()) return std::nullopt;
    return it->second;
}

}  // namespace kopf::apiserver::net
