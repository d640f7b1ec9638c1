// The Authorization header for a set of credentials.
#pragma once

#include <string>

#include "kopf/connection.hpp"

namespace kopf::clients {

// "Bearer <token>" (or "<scheme> <token>"), with token files re-read whenever they change;
// "Basic <base64>" for username/password; empty when the credentials carry neither (e.g. client
// certificates only). Throws std::runtime_error naming the token file if it cannot be read.
std::string authorization_header(const ConnectionInfo& info);

std::string base64_encode(const std::string& data);

}  // namespace kopf::clients
