// An HTTP request, as Beast parsed it, turned into what the API core reads (HttpRequest).
// Apart from the server so that the decoding is tested (and fuzzed) without a socket.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>
#include <string>

#include "api/http_types.hpp"

namespace kopf::apiserver::net {

using RequestMessage = boost::beast::http::request<boost::beast::http::string_body>;

// Fills `out` from `message`: the method, the percent-decoded path and query parameters (the
// last of a repeated name wins), the headers the core reads, and the body (moved out). Returns
// the message of a 400 BadRequest when the target is not in origin form ("/path?query"); `out`
// is then incomplete. Authentication is the caller's.
std::optional<std::string> decode_request(RequestMessage& message, HttpRequest& out);

}  // namespace kopf::apiserver::net
