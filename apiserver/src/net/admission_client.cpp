#include "net/admission_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

namespace kopf::apiserver::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct Target {
    bool tls = true;
    std::string host;  // without brackets
    std::string port;
    std::string path_and_query;
};

std::optional<Target> parse_target(const std::string& url, std::string& error) {
    auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed) {
        error = "invalid webhook URL '" + url + "'";
        return std::nullopt;
    }
    Target target;
    std::string scheme(parsed->scheme());
    if (scheme != "https" && scheme != "http") {
        error = "webhook URL '" + url + "' must use https";
        return std::nullopt;
    }
    target.tls = scheme == "https";
    target.host = std::string(parsed->encoded_host());
    if (parsed->host_type() == boost::urls::host_type::ipv6) {
        target.host = parsed->host_address();
    }
    if (target.host.empty()) {
        error = "webhook URL '" + url + "' has no host";
        return std::nullopt;
    }
    target.port = parsed->has_port() ? std::string(parsed->port()) : (target.tls ? "443" : "80");
    target.path_and_query = std::string(parsed->encoded_path());
    if (target.path_and_query.empty()) target.path_and_query = "/";
    if (parsed->has_query()) target.path_and_query += "?" + std::string(parsed->encoded_query());
    return target;
}

template <class Stream>
asio::awaitable<void> exchange(Stream& stream, const Target& target, const WebhookCall& call,
                               WebhookReply& reply) {
    http::request<http::string_body> req{http::verb::post, target.path_and_query, 11};
    req.set(http::field::host, target.host + ":" + target.port);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json");
    req.set(http::field::user_agent, "kopf-apiserver");
    req.keep_alive(false);
    req.body() = call.body;
    req.prepare_payload();
    auto [write_ec, written] = co_await http::async_write(stream, req, use_tuple);
    if (write_ec) {
        reply.error = "sending the webhook request failed: " + write_ec.message();
        co_return;
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, use_tuple);
    if (read_ec) {
        reply.error = "reading the webhook response failed: " + read_ec.message();
        co_return;
    }
    reply.reached = true;
    reply.status = static_cast<int>(parser.get().result_int());
    reply.body = std::move(parser.get().body());
}

asio::awaitable<void> post_async(const Target& target, const WebhookCall& call, ssl::context* tls,
                                 WebhookReply& reply) {
    auto executor = co_await asio::this_coro::executor;
    tcp::resolver resolver(executor);
    auto [resolve_ec, endpoints] =
        co_await resolver.async_resolve(target.host, target.port, use_tuple);
    if (resolve_ec) {
        reply.error = "cannot resolve webhook host " + target.host + ": " + resolve_ec.message();
        co_return;
    }
    beast::tcp_stream tcp_stream(executor);
    tcp_stream.expires_after(call.timeout);
    auto [connect_ec, endpoint] = co_await tcp_stream.async_connect(endpoints, use_tuple);
    if (connect_ec) {
        reply.error =
            "cannot connect to webhook " + call.url + ": " +
            (connect_ec == beast::error::timeout ? std::string("timeout") : connect_ec.message());
        co_return;
    }
    if (!tls) {
        co_await exchange(tcp_stream, target, call, reply);
        co_return;
    }
    beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp_stream), *tls);
    boost::system::error_code ignored;
    asio::ip::make_address(target.host, ignored);
    if (ignored)  // a DNS name: send SNI SSL_set_tlsext_host_name(stream.native_handle(),
                  // target.host.c_str());
        stream.set_verify_callback(ssl::host_name_verification(target.host));
    auto [handshake_ec] = co_await stream.async_handshake(ssl::stream_base::client, use_tuple);
    if (handshake_ec) {
        reply.error = "TLS handshake with webhook " + call.url + " failed: " +
                      (handshake_ec == beast::error::timeout ? std::string("timeout")
                                                             : handshake_ec.message());
        co_return;
    }
    co_await exchange(stream, target, call, reply);
}

class HttpsAdmissionTransport : public AdmissionTransport {
  public:
    WebhookReply post(const WebhookCall& call) override {
        WebhookReply reply;
        auto target = parse_target(call.url, reply.error);
        if (!target) return reply;
        std::unique_ptr<ssl::context> tls;
        if (target->tls) {
            tls = std::make_unique<ssl::context>(ssl::context::tls_client);
            tls->set_verify_mode(ssl::verify_peer);
            boost::system::error_code ec;
            if (call.ca_bundle_pem.empty()) {
                tls->set_default_verify_paths(ec);
            } else {
                tls->add_certificate_authority(asio::buffer(call.ca_bundle_pem), ec);
            }
            if (ec) {
                reply.error = "invalid caBundle for webhook " + call.url + ": " + ec.message();
                return reply;
            }
        }
        asio::io_context io(1);
        asio::co_spawn(io, post_async(*target, call, tls.get(), reply), asio::detached);
        // tcp_stream's expiry covers connect/handshake/IO; this bounds resolution too.
        io.run_for(call.timeout + std::chrono::milliseconds(100));
        if (!io.stopped()) {
            io.stop();
            reply = WebhookReply{};
            reply.error = "calling webhook " + call.url + " timed out after " +
                          std::to_string(call.timeout.count()) + "ms";
        } else if (!reply.reached && reply.error.find("timeout") != std::string::npos) {
            reply.error = "calling webhook " + call.url + " timed out after " +
                          std::to_string(call.timeout.count()) + "ms";
        }
        return reply;
    }
};

}  // namespace

std::shared_ptr<AdmissionTransport> make_admission_transport() {
    return std::make_shared<HttpsAdmissionTransport>();
}

}  // namespace kopf::apiserver::net
