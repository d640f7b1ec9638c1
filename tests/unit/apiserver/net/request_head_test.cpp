// A parsed HTTP request turned into what the API core reads: the method, the percent-decoded
// path and query, the headers the core looks at, and the body; a target that is not in origin
// form is refused with a message naming it.
#include "net/request_head.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <string>

namespace {

using kopf::apiserver::HttpRequest;
using kopf::apiserver::net::decode_request;
using kopf::apiserver::net::RequestMessage;

RequestMessage parse(const std::string& text) {
    boost::beast::http::request_parser<boost::beast::http::string_body> parser;
    parser.eager(true);
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(text), ec);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_TRUE(parser.is_done());
    return parser.release();
}

}  // namespace

TEST(RequestHead, PathQueryHeadersAndBodyAreDecoded) {
    auto message = parse(
        "PATCH /api/v1/namespaces/my%20ns/configmaps/a?labelSelector=app%3Dweb&dryRun=All"
        "&watch&limit=1&limit=2 HTTP/1.1\r\nHost: h\r\nContent-Type: application/merge-patch+json"
        "\r\nAccept: application/json\r\nUser-Agent: kubectl/v1.30\r\nIf-None-Match: \"3\"\r\n"
        "Content-Length: 2\r\n\r\n{}");
    HttpRequest request;
    EXPECT_EQ(decode_request(message, request), std::nullopt);
    EXPECT_EQ(request.method, "PATCH");
    EXPECT_EQ(request.path, "/api/v1/namespaces/my ns/configmaps/a");
    EXPECT_EQ(request.query.at("labelSelector"), "app=web");
    EXPECT_EQ(request.query.at("dryRun"), "All");
    EXPECT_EQ(request.query.at("watch"), "");
    EXPECT_EQ(request.query.at("limit"), "2");
    EXPECT_EQ(request.content_type, "application/merge-patch+json");
    EXPECT_EQ(request.accept, "application/json");
    EXPECT_EQ(request.user_agent, "kubectl/v1.30");
    EXPECT_EQ(request.if_none_match, "\"3\"");
    EXPECT_EQ(request.body, "{}");
}

TEST(RequestHead, ATargetNotInOriginFormIsRefusedByName) {
    for (const char* target : {"http://h/api", "*", "/a%zz"}) {
        auto message = parse(std::string("GET ") + target + " HTTP/1.1\r\nHost: h\r\n\r\n");
        HttpRequest request;
        const auto problem = decode_request(message, request);
        ASSERT_TRUE(problem) << target;
        EXPECT_EQ(*problem, std::string("invalid request target '") + target + "'");
    }
}
