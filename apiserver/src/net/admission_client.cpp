#include "net/admission_client.hpp"

#include <atomic>
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
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

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

// One kept-alive connection to a webhook: plain TCP or TLS over it.
struct Connection {
    explicit Connection(beast::tcp_stream tcp) : plain(std::move(tcp)) {}
    Connection(beast::tcp_stream tcp, ssl::context& tls)
        : secure(std::in_place, std::move(tcp), tls) {}

    beast::tcp_stream& tcp() { return secure ? beast::get_lowest_layer(*secure) : *plain; }

    std::optional<beast::tcp_stream> plain;
    std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
    beast::flat_buffer buffer;
};

// Sends the review and reads the answer; false with `error` set when the connection failed.
template <class Stream>
asio::awaitable<bool> exchange(Stream& stream, beast::flat_buffer& buffer, const Target& target,
                               const WebhookCall& call, WebhookReply& reply, bool& keep_alive,
                               std::string& error) {
    http::request<http::string_body> req{http::verb::post, target.path_and_query, 11};
    req.set(http::field::host, target.host + ":" + target.port);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json");
    req.set(http::field::user_agent, "kopf-apiserver");
    req.keep_alive(true);
    req.body() = call.body;
    req.prepare_payload();
    auto [write_ec, written] = co_await http::async_write(stream, req, use_tuple);
    if (write_ec) {
        error = "sending the webhook request failed: " + write_ec.message();
        co_return false;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, use_tuple);
    if (read_ec) {
        error = "reading the webhook response failed: " + read_ec.message();
        co_return false;
    }
    reply.reached = true;
    reply.status = static_cast<int>(parser.get().result_int());
    reply.body = std::move(parser.get().body());
    keep_alive = parser.get().keep_alive();
    co_return true;
}

// Calls webhooks as kube-apiserver does: connections are kept alive and reused per webhook
// (scheme, host, port and CA bundle), so a review costs one request, not a TCP and TLS
// handshake each. Every connection lives on one I/O thread of the transport's own; callers
// block on their call's result.
class HttpsAdmissionTransport : public AdmissionTransport {
  public:
    HttpsAdmissionTransport() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}

    ~HttpsAdmissionTransport() override {
        work_.reset();
        io_.stop();
        thread_.join();
        idle_.clear();  // while io_ still exists
    }

    std::size_t connections_opened() const override { return opened_.load(); }

    WebhookReply post(const WebhookCall& call) override {
        auto state = std::make_shared<CallState>();
        state->call = call;
        auto target = parse_target(call.url, state->reply.error);
        if (!target) return state->reply;
        state->target = std::move(*target);
        if (state->target.tls) {
            state->tls = tls_context(call.ca_bundle_pem, call.url, state->reply.error);
            if (!state->tls) return state->reply;
        }
        auto done = state->done.get_future();
        asio::co_spawn(io_, run(state), asio::detached);
        // The stream's expiry bounds connect, handshake and I/O; this bounds resolution too.
        if (done.wait_for(call.timeout + std::chrono::milliseconds(100)) !=
            std::future_status::ready) {
            WebhookReply timed_out;
            timed_out.error = timeout_message(call);
            return timed_out;  // the call finishes (or expires) on the I/O thread by itself
        }
        return done.get();
    }

  private:
    struct CallState {
        WebhookCall call;
        Target target;
        std::shared_ptr<ssl::context> tls;
        WebhookReply reply;
        std::promise<WebhookReply> done;
    };

    static std::string timeout_message(const WebhookCall& call) {
        return "calling webhook " + call.url + " timed out after " +
               std::to_string(call.timeout.count()) + "ms";
    }

    static std::string pool_key(const Target& target, const WebhookCall& call) {
        return (target.tls ? "https://" : "http://") + target.host + ":" + target.port + "\n" +
               call.ca_bundle_pem;
    }

    // One TLS client context per CA bundle, made once: loading a bundle is not free either.
    std::shared_ptr<ssl::context> tls_context(const std::string& ca_bundle_pem,
                                              const std::string& url, std::string& error) {
        std::lock_guard lock(tls_mutex_);
        if (auto found = tls_contexts_.find(ca_bundle_pem); found != tls_contexts_.end()) {
            return found->second;
        }
        auto tls = std::make_shared<ssl::context>(ssl::context::tls_client);
        tls->set_verify_mode(ssl::verify_peer);
        boost::system::error_code ec;
        if (ca_bundle_pem.empty()) {
            tls->set_default_verify_paths(ec);
        } else {
            tls->add_certificate_authority(asio::buffer(ca_bundle_pem), ec);
        }
        if (ec) {
            error = "invalid caBundle for webhook " + url + ": " + ec.message();
            return nullptr;
        }
        tls_contexts_.emplace(ca_bundle_pem, tls);
        return tls;
    }

    // A new connection, connected (and TLS-handshaken) within the call's timeout.
    asio::awaitable<std::unique_ptr<Connection>> connect(CallState& state) {
        const auto& target = state.target;
        const auto& call = state.call;
        tcp::resolver resolver(io_);
        auto [resolve_ec, endpoints] =
            co_await resolver.async_resolve(target.host, target.port, use_tuple);
        if (resolve_ec) {
            state.reply.error =
                "cannot resolve webhook host " + target.host + ": " + resolve_ec.message();
            co_return nullptr;
        }
        beast::tcp_stream tcp_stream(io_);
        tcp_stream.expires_after(call.timeout);
        auto [connect_ec, endpoint] = co_await tcp_stream.async_connect(endpoints, use_tuple);
        if (connect_ec) {
            state.reply.error = "cannot connect to webhook " + call.url + ": " +
                                (connect_ec == beast::error::timeout ? std::string("timeout")
                                                                     : connect_ec.message());
            co_return nullptr;
        }
        ++opened_;
        if (!state.tls) co_return std::make_unique<Connection>(std::move(tcp_stream));
        auto connection = std::make_unique<Connection>(std::move(tcp_stream), *state.tls);
        boost::system::error_code not_an_address;
        asio::ip::make_address(target.host, not_an_address);
        if (not_an_address) {  // a DNS name: sent as SNI, and checked in the certificate
            SSL_set_tlsext_host_name(connection->secure->native_handle(), target.host.c_str());
            connection->secure->set_verify_callback(ssl::host_name_verification(target.host));
        }
        auto [handshake_ec] =
            co_await connection->secure->async_handshake(ssl::stream_base::client, use_tuple);
        if (handshake_ec) {
            state.reply.error = "TLS handshake with webhook " + call.url + " failed: " +
                                (handshake_ec == beast::error::timeout ? std::string("timeout")
                                                                       : handshake_ec.message());
            co_return nullptr;
        }
        co_return connection;
    }

    asio::awaitable<void> run(std::shared_ptr<CallState> state) {
        const auto key = pool_key(state->target, state->call);
        // A kept-alive connection first; when the webhook has closed it meanwhile (its idle
        // timeout, a restart), the review is sent again on a new one.
        for (int attempt = 0; attempt < 2; ++attempt) {
            std::unique_ptr<Connection> connection;
            bool reused = false;
            if (auto& idle = idle_[key]; attempt == 0 && !idle.empty()) {
                connection = std::move(idle.back());
                idle.pop_back();
                reused = true;
            } else {
                connection = co_await connect(*state);
                if (!connection) break;
            }
            connection->tcp().expires_after(state->call.timeout);
            bool keep_alive = false;
            std::string error;
            bool ok =
                connection->secure
                    ? co_await exchange(*connection->secure, connection->buffer, state->target,
                                        state->call, state->reply, keep_alive, error)
                    : co_await exchange(*connection->plain, connection->buffer, state->target,
                                        state->call, state->reply, keep_alive, error);
            if (ok) {
                if (keep_alive) {
                    connection->tcp().expires_never();
                    auto& idle = idle_[key];
                    if (idle.size() < kIdlePerWebhook) idle.push_back(std::move(connection));
                }
                break;
            }
            state->reply = WebhookReply{};
            state->reply.error = error;
            // A slow webhook is not asked twice: the call's time is spent.
            if (!reused || error.find("timeout") != std::string::npos) break;
        }
        if (!state->reply.reached && state->reply.error.find("timeout") != std::string::npos) {
            state->reply.error = timeout_message(state->call);
        }
        state->done.set_value(std::move(state->reply));
    }

    static constexpr std::size_t kIdlePerWebhook = 16;

    asio::io_context io_{1};
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    // Touched on the I/O thread only.
    std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;
    std::mutex tls_mutex_;
    std::map<std::string, std::shared_ptr<ssl::context>> tls_contexts_;
    std::atomic<std::size_t> opened_{0};
    std::thread thread_;  // last: it runs io_ once everything above exists
};

}  // namespace

std::shared_ptr<AdmissionTransport> make_admission_transport() {
    return std::make_shared<HttpsAdmissionTransport>();
}

}  // namespace kopf::apiserver::net
