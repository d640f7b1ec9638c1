// Decoding a parsed HTTP request for the API core.
#include "net/request_head.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/url/parse.hpp>

namespace kopf::apiserver::net {

namespace http = boost::beast::http;

std::optional<std::string> decode_request(RequestMessage& message, HttpRequest& out) {
    out.method = std::string(message.method_string());
    const auto target = boost::urls::parse_origin_form(message.target());
    if (!target) return "invalid request target '" + std::string(message.target()) + "'";
    out.path = target->path();
    for (const auto param : target->params()) {
        out.query[std::string(param.key)] =
            param.has_value ? std::string(param.value) : std::string();
    }
    out.content_type = std::string(message[http::field::content_type]);
    out.accept = std::string(message[http::field::accept]);
    out.user_agent = std::string(message[http::field::user_agent]);
    out.if_none_match = std::string(message[http::field::if_none_match]);
    out.body = std::move(message.body());
    return std::nullopt;
}

}  // namespace kopf::apiserver::net
