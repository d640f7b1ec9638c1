// The network layer of the embedded API server: a Boost.Beast HTTP/1.1 server on Asio
// coroutines (plain or TLS), authentication, overload protection, fault injection, and
// chunked streaming of watches and large lists. Everything Kubernetes-specific is behind
// ApiCore::handle().
#include "kopf/apiserver/server.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "api/api_core.hpp"
#include "net/admission_client.hpp"
#include "net/authentication.hpp"
#include "net/certificates.hpp"
#include "net/kubeconfig.hpp"
#include "net/request_head.hpp"
#include "net/status.hpp"
#include "util/threads.hpp"

namespace kopf::apiserver {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// The server's sockets are not inherited by the children its process starts (Asio opens them
// without SOCK_CLOEXEC): a test that runs an operator process beside an in-process server
// could not restart the server on its port while the child held the listening socket.
void keep_from_children(int fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}
// The time a request's body may take to arrive (kube-apiserver's default request timeout).
constexpr std::chrono::milliseconds kBodyTimeout{60'000};
// Watch writes closer together than this are batched by waiting kGatherFor before the next.
constexpr auto kGatherWhenWritesAreCloserThan = std::chrono::milliseconds(2);
constexpr auto kGatherFor = std::chrono::microseconds(500);

// Watches are long-running and exempt from the in-flight limit: `?watch=` with any value
// but false/0, or the legacy /api/v1/watch/... and /apis/GROUP/VERSION/watch/... paths.
bool is_watch_request(const HttpRequest& request) {
    auto it = request.query.find("watch");
    if (it != request.query.end() && it->second != "false" && it->second != "0") return true;
    std::string_view path = request.path;
    std::size_t skip = path.rfind("/api/", 0) == 0 ? 2 : path.rfind("/apis/", 0) == 0 ? 3 : 0;
    if (skip == 0) return false;
    std::size_t at = 0;
    for (std::size_t i = 0; i < skip && at != std::string_view::npos; ++i) {
        at = path.find('/', at + 1);
    }
    return at != std::string_view::npos && path.substr(at + 1).rfind("watch/", 0) == 0;
}

bool is_health_path(const std::string& path) {
    for (const char* prefix : {"/healthz", "/livez", "/readyz"}) {
        std::string_view p(prefix);
        if (path.compare(0, p.size(), p) == 0 &&
            (path.size() == p.size() || path[p.size()] == '/')) {
            return true;
        }
    }
    return false;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The connection side of a watch: the core pushes lines from any thread; the session
// coroutine drains them on the connection's strand and writes them as HTTP chunks.
class WatchChannel : public WatchSink, public std::enable_shared_from_this<WatchChannel> {
  public:
    explicit WatchChannel(const asio::any_io_executor& strand)
        : strand_(strand), wakeup_(strand, asio::steady_timer::time_point::max()) {}

    void send(std::string line) override {
        std::lock_guard lock(mutex_);
        if (closed_ || detached_) return;
        lines_.push_back(std::move(line));
        wake_locked();
    }

    void close() override {
        std::lock_guard lock(mutex_);
        if (closed_ || detached_) return;
        closed_ = true;
        wake_locked();
    }

    // On the strand: the client went away (or the server stops).
    void client_gone() {
        {
            std::lock_guard lock(mutex_);
            gone_ = true;
        }
        wakeup_.cancel();
    }

    // On the strand, when the session is over: later sends are dropped.
    void detach() {
        std::lock_guard lock(mutex_);
        detached_ = true;
    }

    struct Batch {
        std::string data;
        bool closed = false;
        bool gone = false;
    };

    Batch take() {
        Batch batch;
        std::lock_guard lock(mutex_);
        for (auto& line : lines_) batch.data += line;
        lines_.clear();
        batch.closed = closed_;
        batch.gone = gone_;
        wake_pending_ = false;
        return batch;
    }

    asio::awaitable<void> wait() { co_await wakeup_.async_wait(use_tuple); }

  private:
    void wake_locked() {
        if (wake_pending_) return;
        wake_pending_ = true;
        asio::post(strand_, [self = shared_from_this()] { self->wakeup_.cancel(); });
    }

    asio::any_io_executor strand_;
    asio::steady_timer wakeup_;
    std::mutex mutex_;
    std::deque<std::string> lines_;
    bool closed_ = false;
    bool gone_ = false;
    bool detached_ = false;
    bool wake_pending_ = false;
};

struct FaultState {
    std::mutex mutex;
    int fail_remaining = 0;
    int fail_status = 0;
    int fail_retry_after = 0;
    std::string fail_path_contains;  // only requests whose path contains it; empty: all
    std::atomic<long long> delay_ms{0};

    // The injected failure for this request, if one is due.
    std::optional<std::pair<int, int>> take_failure(const std::string& path) {
        std::lock_guard lock(mutex);
        if (fail_remaining <= 0) return std::nullopt;
        if (path.find(fail_path_contains) == std::string::npos) return std::nullopt;
        --fail_remaining;
        return std::make_pair(fail_status, fail_retry_after);
    }
};

}  // namespace

struct Server::Impl {
    explicit Impl(ServerOptions opts) : options(std::move(opts)) {}

    ServerOptions options;
    std::unique_ptr<asio::io_context> io;
    std::unique_ptr<tcp::acceptor> acceptor;
    // The accept loop and the acceptor's close at stop() run here: with several server threads,
    // the close raced with the loop's is_open() after an accept (found by TSan).
    std::optional<asio::strand<asio::io_context::executor_type>> accept_strand;
    std::unique_ptr<ssl::context> tls_context;
    // Requests that may block run here, on threads of their own (asio::thread_pool's threads
    // cannot be given a stack size).
    std::unique_ptr<asio::io_context> handlers;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> handlers_work;
    std::vector<SizedThread> handler_threads;
    std::vector<SizedThread> threads;  // the network threads, running `io`
    std::unique_ptr<ApiCore> core;

    net::KeyPair ca;             // signs generated serving and client certificates
    std::string serving_ca_pem;  // what clients must trust
    std::string admin_token;
    net::TokenAuthenticator tokens;
    int bound_port = 0;
    bool started = false;
    bool stopped = false;

    std::atomic<std::size_t> inflight{0};
    FaultState faults;

    std::mutex watches_mutex;
    std::set<std::shared_ptr<WatchStream>> watches;

    std::string scheme() const { return options.tls ? "https" : "http"; }
    std::string host() const {
        const auto& b = options.bind_address;
        if (b.empty() || b == "0.0.0.0" || b == "localhost") return "127.0.0.1";
        if (b == "::" || b == "::1") return "[::1]";
        return b.find(':') != std::string::npos ? "[" + b + "]" : b;
    }
    std::string url() const { return scheme() + "://" + host() + ":" + std::to_string(bound_port); }

    void setup_tls();
    void start();
    void stop();

    asio::awaitable<void> accept_loop();
    template <class Stream>
    asio::awaitable<void> serve(std::shared_ptr<Stream> stream, std::optional<UserInfo> cert_user,
                                bool loopback);
    template <class Stream>
    asio::awaitable<void> stream_watch(std::shared_ptr<Stream> stream,
                                       std::shared_ptr<WatchStream> watch,
                                       const std::string& content_type, unsigned version);
    // may_inject: the caller may use the fault-injection endpoint (admin token, or a
    // loopback client on plain HTTP).
    asio::awaitable<HttpResponse> dispatch(HttpRequest& request, bool may_inject);
    template <class Message>
    static void set_headers(Message& message, const HttpResponse& response);
    // The next piece of a streamed body: false when the body is complete, nullopt when
    // making it failed.
    asio::awaitable<std::optional<bool>> next_piece(BodyStream& body, std::string& piece);
    // Writes a chunked response: the pieces already produced, then the rest of `body`.
    template <class Stream>
    asio::awaitable<bool> write_chunked(Stream& stream, http::response<http::empty_body>& head,
                                        BodyStream& body, std::string& first, std::string& second);
    HttpResponse admin_request(const HttpRequest& request);
};

void Server::Impl::setup_tls() {
    ca = net::generate_ca("kopf-apiserver-ca");
    admin_token = net::random_token();
    tokens.add(admin_token, net::authenticated_user(net::kAdminUser, {"system:masters"}));
    if (!options.token_auth_file.empty()) tokens.load_file(options.token_auth_file);
    if (!options.tls) return;

    tls_context = std::make_unique<ssl::context>(ssl::context::tls_server);
    tls_context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1);
    if (!options.tls_cert_file.empty() || !options.tls_private_key_file.empty()) {
        if (options.tls_cert_file.empty() || options.tls_private_key_file.empty()) {
            throw std::runtime_error(
                "--tls-cert-file and --tls-private-key-file must be given together");
        }
        std::string chain = read_file(options.tls_cert_file);
        std::string key = read_file(options.tls_private_key_file);
        tls_context->use_certificate_chain(asio::buffer(chain));
        tls_context->use_private_key(asio::buffer(key), ssl::context::pem);
        serving_ca_pem = chain;
    } else {
        std::vector<std::string> ips = {"127.0.0.1", "::1"};
        boost::system::error_code ec;
        auto bind = asio::ip::make_address(options.bind_address, ec);
        if (!ec && !bind.is_unspecified() && bind.to_string() != "127.0.0.1" &&
            bind.to_string() != "::1") {
            ips.push_back(bind.to_string());
        }
        net::KeyPair serving =
            net::issue_certificate(ca, "kopf-apiserver", {}, {"localhost"}, ips, true);
        tls_context->use_certificate_chain(asio::buffer(serving.cert_pem));
        tls_context->use_private_key(asio::buffer(serving.key_pem), ssl::context::pem);
        serving_ca_pem = ca.cert_pem;
    }
    // Client certificates are optional (tokens work too) but must verify when presented.
    tls_context->set_verify_mode(ssl::verify_peer);
    tls_context->add_certificate_authority(asio::buffer(ca.cert_pem));
    if (!options.client_ca_file.empty()) {
        std::string client_ca = read_file(options.client_ca_file);
        tls_context->add_certificate_authority(asio::buffer(client_ca));
    }
}

void Server::Impl::start() {
    if (started || stopped) throw std::logic_error("the API server was already started");
    setup_tls();

    io = std::make_unique<asio::io_context>(std::max(1, options.threads));
    acceptor = std::make_unique<tcp::acceptor>(*io);
    boost::system::error_code ec;
    std::string bind_host =
        options.bind_address == "localhost" ? "127.0.0.1" : options.bind_address;
    auto address = asio::ip::make_address(bind_host, ec);
    if (ec) throw std::runtime_error("invalid --bind-address '" + options.bind_address + "'");
    if (options.port < 0 || options.port > 65535) {
        throw std::runtime_error("invalid --port " + std::to_string(options.port));
    }
    tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
    acceptor->open(endpoint.protocol());
    keep_from_children(acceptor->native_handle());
    acceptor->set_option(asio::socket_base::reuse_address(true));
    acceptor->bind(endpoint, ec);
    if (ec) {
        throw std::runtime_error("cannot listen on " + options.bind_address + ":" +
                                 std::to_string(options.port) + ": " + ec.message());
    }
    acceptor->listen(asio::socket_base::max_listen_connections);
    bound_port = acceptor->local_endpoint().port();

    CoreOptions core_options;
    core_options.data_dir = options.data_dir;
    core_options.bookmark_interval = options.bookmark_interval;
    core_options.history_size = options.watch_history;
    core_options.history_bytes = options.watch_history_bytes;
    core_options.server_address = host() + ":" + std::to_string(bound_port);
    core_options.admission = net::make_admission_transport();
    if (options.authorization_mode == "RBAC") {
        core_options.rbac = true;
    } else if (options.authorization_mode != "AlwaysAllow") {
        throw std::runtime_error("unknown authorization mode '" + options.authorization_mode +
                                 "': expected AlwaysAllow or RBAC");
    }
    core = std::make_unique<ApiCore>(std::move(core_options));

    if (!options.kubeconfig_out.empty()) {
        std::ofstream out(options.kubeconfig_out, std::ios::trunc);
        out << net::render_kubeconfig({url(), options.tls ? serving_ca_pem : "", admin_token});
        if (!out) {
            throw std::runtime_error("cannot write kubeconfig " + options.kubeconfig_out.string());
        }
    }
    if (options.handler_threads > 0) {
        handlers = std::make_unique<asio::io_context>(options.handler_threads);
        handlers_work.emplace(handlers->get_executor());
    }
    accept_strand.emplace(asio::make_strand(*io));
    asio::co_spawn(*accept_strand, accept_loop(), asio::detached);
    // Both kinds of thread call core->handle(), which recurses once per level of a body.
    const std::size_t stack = kRequestThreadStackBytes;
    started = true;  // from here on, stop() ends whatever threads have started
    try {
        for (int i = 0; i < options.handler_threads; ++i) {
            handler_threads.emplace_back(stack, [this] { handlers->run(); });
        }
        for (int i = 0; i < std::max(1, options.threads); ++i) {
            threads.emplace_back(stack, [this] { io->run(); });
        }
    } catch (...) {
        stop();
        throw;
    }
}

void Server::Impl::stop() {
    if (!started || stopped) return;
    stopped = true;
    asio::post(*accept_strand, [this] {
        boost::system::error_code ignored;
        acceptor->close(ignored);
    });
    std::vector<std::shared_ptr<WatchStream>> open;
    {
        std::lock_guard lock(watches_mutex);
        open.assign(watches.begin(), watches.end());
    }
    for (auto& watch : open) watch->cancel();
    io->stop();
    for (auto& thread : threads) thread.join();
    threads.clear();
    // What the handler threads still run finishes before they end.
    handlers_work.reset();
    for (auto& thread : handler_threads) thread.join();
    handler_threads.clear();
    // The core holds the open watches' channels, whose timers belong to `io`: they go before
    // it (released with the core later, they touched the freed io: a use-after-free at exit).
    if (core) core->drop_watches();
    // Pending coroutines hold connections and watch channels: end them while the core
    // and the rest of this object still exist. The acceptor goes first: it needs `io`.
    acceptor.reset();
    accept_strand.reset();
    io.reset();
    std::lock_guard lock(watches_mutex);
    watches.clear();
}

asio::awaitable<void> Server::Impl::accept_loop() {
    for (;;) {
        auto strand = asio::make_strand(*io);
        auto [ec, socket] = co_await acceptor->async_accept(strand, use_tuple);
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
        if (ec) continue;  // e.g. too many open files: keep serving the others
        keep_from_children(socket.native_handle());
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto remote = socket.remote_endpoint(ignored);
        bool loopback = !ignored && remote.address().is_loopback();
        if (!tls_context) {
            auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
            asio::co_spawn(strand, serve(stream, std::nullopt, loopback), asio::detached);
            continue;
        }
        asio::co_spawn(
            strand,
            [this, strand, socket = std::move(socket),
             loopback]() mutable -> asio::awaitable<void> {
                auto stream = std::make_shared<beast::ssl_stream<beast::tcp_stream>>(
                    beast::tcp_stream(std::move(socket)), *tls_context);
                beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(30));
                auto [ec] = co_await stream->async_handshake(ssl::stream_base::server, use_tuple);
                if (ec) co_return;
                beast::get_lowest_layer(*stream).expires_never();
                std::optional<UserInfo> cert_user;
                SSL* handle = stream->native_handle();
                if (X509* peer = SSL_get0_peer_certificate(handle);
                    peer && SSL_get_verify_result(handle) == X509_V_OK) {
                    auto subject = net::certificate_subject(peer);
                    if (!subject.common_name.empty()) {
                        cert_user =
                            net::authenticated_user(subject.common_name, subject.organizations);
                    }
                }
                co_await serve(stream, std::move(cert_user), loopback);
            },
            asio::detached);
    }
}

template <class Stream>
asio::awaitable<void> Server::Impl::serve(std::shared_ptr<Stream> stream,
                                          std::optional<UserInfo> cert_user, bool loopback) {
    beast::flat_buffer buffer;
    auto close = [&] {
        boost::system::error_code ignored;
        beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(*stream).close();
    };
    // Answers a request that cannot be read, then closes: the client may still be
    // sending, so drain what it sends for a moment to let it see the answer.
    auto reject = [&](int status, std::string body) -> asio::awaitable<void> {
        http::response<http::string_body> res{static_cast<http::status>(status), 11};
        res.set(http::field::content_type, "application/json");
        res.body() = std::move(body);
        res.keep_alive(false);
        res.prepare_payload();
        beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(5));
        auto [ec, n] = co_await http::async_write(*stream, res, use_tuple);
        boost::system::error_code ignored;
        beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
        std::size_t drained = 0;
        std::array<char, 16384> sink;
        while (!ec && drained < 64 * 1024 * 1024) {
            auto [read_ec, got] = co_await stream->async_read_some(asio::buffer(sink), use_tuple);
            ec = read_ec;
            drained += got;
        }
        close();
    };

    auto& connection = beast::get_lowest_layer(*stream);
    for (bool first = true;; first = false) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(options.max_body_bytes);
        parser.header_limit(1024 * 1024);
        // Between requests, a keep-alive connection may idle for idle_timeout; from the first byte
        // of a request (or the connection's start), its head is due within header_timeout.
        if (!first && buffer.size() == 0) {
            connection.expires_after(options.idle_timeout);
            auto [idle_ec, got] =
                co_await stream->async_read_some(buffer.prepare(16 * 1024), use_tuple);
            buffer.commit(got);
            if (idle_ec) {
                close();
                co_return;
            }
        }
        connection.expires_after(options.header_timeout);
        auto [ec, n] = co_await http::async_read_header(*stream, buffer, parser, use_tuple);
        // The body is not slowed down to the head's pace, but not waited for forever either.
        connection.expires_after(std::max(options.header_timeout, kBodyTimeout));
        if (!ec && !parser.chunked() && !parser.content_length() &&
            parser.get().count(http::field::transfer_encoding)) {
            // The body's length is unknown: what follows cannot be told from a next request
            // (RFC 9112, 6.3), so the refusal ends the connection.
            co_await reject(400, net::status_body(
                                     400, "BadRequest",
                                     "unsupported Transfer-Encoding '" +
                                         std::string(parser.get()[http::field::transfer_encoding]) +
                                         "': only chunked is accepted"));
            co_return;
        }
        if (!ec && parser.get()[http::field::expect] == "100-continue" && !parser.is_done()) {
            http::response<http::empty_body> proceed{http::status::continue_, 11};
            std::tie(ec, n) = co_await http::async_write(*stream, proceed, use_tuple);
        }
        if (!ec && !parser.is_done()) {
            std::tie(ec, n) = co_await http::async_read(*stream, buffer, parser, use_tuple);
        }
        if (ec == http::error::body_limit) {
            co_await reject(413, net::status_body(413, "RequestEntityTooLarge",
                                                  "the request body is larger than the " +
                                                      std::to_string(options.max_body_bytes) +
                                                      " bytes this server accepts"));
            co_return;
        }
        if (ec == http::error::header_limit) {
            co_await reject(431, net::status_body(431, "RequestHeaderFieldsTooLarge",
                                                  "request header fields too large"));
            co_return;
        }
        if (ec && ec.category() == make_error_code(http::error::end_of_stream).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message) {
            co_await reject(400, net::status_body(400, "BadRequest",
                                                  "malformed HTTP request: " + ec.message()));
            co_return;
        }
        if (ec) {
            close();
            co_return;
        }
        connection.expires_never();  // a request may take long (watches, large lists)

        auto& req = parser.get();
        const unsigned version = req.version();
        const bool keep_alive = req.keep_alive();
        HttpRequest request;
        HttpResponse response;
        bool answered = false;
        bool is_admin = false;
        if (auto problem = net::decode_request(req, request)) {
            response = net::status_response(400, "BadRequest", *problem);
            answered = true;
        } else {
            // Authentication: a presented token must be valid; TLS needs credentials.
            auto authorization = req[http::field::authorization];
            if (!authorization.empty()) {
                is_admin = authorization.substr(authorization.find(' ') + 1) == admin_token;
                if (auto user = tokens.authenticate(authorization)) {
                    request.user = std::move(*user);
                } else {
                    response = net::unauthorized_response();
                    answered = true;
                }
            } else if (cert_user) {
                request.user = *cert_user;
            } else if (options.tls && !is_health_path(request.path)) {
                response = net::unauthorized_response();
                answered = true;
            }
        }
        if (!answered)
            response = co_await dispatch(request, is_admin || (loopback && !options.tls));

        if (response.watch) {
            co_await stream_watch(stream, std::move(response.watch), response.content_type,
                                  version);
            close();
            co_return;
        }

        std::string body = std::move(response.body);
        std::string second_piece;
        bool streamed = false;
        if (response.body_stream) {
            // A small streamed body goes out whole with a Content-Length; a large one in
            // HTTP chunks, one piece at a time.
            // The first two pieces are made here: most lists are small and end after one,
            // and a hop to the handler pool would cost more than making them.
            try {
                response.body_stream->next(body);
                streamed = response.body_stream->next(second_piece);
            } catch (const std::exception& e) {
                response = net::status_response(
                    500, "InternalError", std::string("Internal error occurred: ") + e.what());
                body = std::move(response.body);
                streamed = false;
            }
        }
        if (streamed) {
            http::response<http::empty_body> head{static_cast<http::status>(response.status),
                                                  version};
            set_headers(head, response);
            head.chunked(true);
            head.keep_alive(keep_alive);
            bool ok =
                co_await write_chunked(*stream, head, *response.body_stream, body, second_piece);
            if (!ok || !keep_alive) {
                close();
                co_return;
            }
            continue;
        }
        http::response<http::string_body> res{static_cast<http::status>(response.status), version};
        set_headers(res, response);
        res.body() = std::move(body);
        res.keep_alive(keep_alive);
        res.prepare_payload();
        auto [write_ec, written] = co_await http::async_write(*stream, res, use_tuple);
        if (write_ec || !keep_alive) {
            close();
            co_return;
        }
    }
}

template <class Message>
void Server::Impl::set_headers(Message& message, const HttpResponse& response) {
    message.set(http::field::content_type, response.content_type);
    bool cache_control = false;
    for (const auto& [name, value] : response.headers) {
        message.insert(name, value);
        if (beast::iequals(name, "Cache-Control")) cache_control = true;
    }
    if (!cache_control) message.set(http::field::cache_control, "no-cache, private");
}

asio::awaitable<std::optional<bool>> Server::Impl::next_piece(BodyStream& body,
                                                              std::string& piece) {
    auto produce = [&body, &piece]() -> asio::awaitable<std::optional<bool>> {
        try {
            co_return body.next(piece);
        } catch (const std::exception&) {
            co_return std::nullopt;  // the status line is out: only closing tells the client
        }
    };
    if (!handlers) {
        auto task = produce();
        co_return co_await std::move(task);
    }
    // Serializing a piece takes a while: keep it off the network threads.
    auto task = asio::co_spawn(*handlers, std::move(produce), asio::use_awaitable);
    co_return co_await std::move(task);
}

template <class Stream>
asio::awaitable<bool> Server::Impl::write_chunked(Stream& stream,
                                                  http::response<http::empty_body>& head,
                                                  BodyStream& body, std::string& first,
                                                  std::string& second) {
    // HTTP/1.0 has no chunks: the body ends where the connection does.
    const bool chunked = head.version() >= 11;
    if (!chunked) {
        head.chunked(false);
        head.keep_alive(false);
    }
    http::response_serializer<http::empty_body> serializer{head};
    auto [ec, n] = co_await http::async_write_header(stream, serializer, use_tuple);
    if (ec) co_return false;
    std::string* piece = &first;
    std::string* spare = &second;
    for (;;) {
        if (!piece->empty()) {
            // Awaitables are named first: g++ 12 may destroy temporaries of a co_await twice.
            boost::system::error_code write_ec;
            if (chunked) {
                auto chunk = http::make_chunk(asio::buffer(*piece));
                auto write = asio::async_write(stream, chunk, use_tuple);
                std::tie(write_ec, std::ignore) = co_await std::move(write);
            } else {
                auto bytes = asio::buffer(*piece);
                auto write = asio::async_write(stream, bytes, use_tuple);
                std::tie(write_ec, std::ignore) = co_await std::move(write);
            }
            if (write_ec) co_return false;
            piece->clear();
        }
        std::swap(piece, spare);
        if (piece->empty()) {
            auto more = co_await next_piece(body, *piece);
            if (!more) co_return false;  // failed: close without ending the body
            if (!*more) break;
        }
    }
    if (!chunked) co_return false;  // the caller closes the connection
    auto last_chunk = http::make_chunk_last();
    auto write = asio::async_write(stream, last_chunk, use_tuple);
    auto [last_ec, last_n] = co_await std::move(write);
    co_return !last_ec;
}

asio::awaitable<HttpResponse> Server::Impl::dispatch(HttpRequest& request, bool may_inject) {
    if (options.admin_endpoint && request.path.rfind("/_kopf/", 0) == 0) {
        if (!may_inject) {
            co_return net::status_response(
                403, "Forbidden",
                "forbidden: User \"" + request.user.name + "\" cannot use " + request.path);
        }
        co_return admin_request(request);
    }
    const bool watch = is_watch_request(request);
    struct InflightSlot {
        std::atomic<std::size_t>* counter = nullptr;
        ~InflightSlot() {
            if (counter) counter->fetch_sub(1);
        }
    } slot;
    if (!watch) {
        if (inflight.fetch_add(1) + 1 > options.max_requests_inflight) {
            inflight.fetch_sub(1);
            co_return net::injected_failure(429, 1);
        }
        slot.counter = &inflight;
    }
    // Delayed requests count as in flight, like slow ones on a real server.
    if (auto delay = faults.delay_ms.load(); delay > 0) {
        asio::steady_timer timer(co_await asio::this_coro::executor,
                                 std::chrono::milliseconds(delay));
        co_await timer.async_wait(use_tuple);
    }
    if (auto failure = faults.take_failure(request.path)) {
        co_return net::injected_failure(failure->first, failure->second);
    }
    // Most requests finish in microseconds: a hop to the handler pool and back would cost
    // more than the request itself, so only those that may wait go there.
    if (!handlers || !core->may_block(request)) co_return core->handle(request);
    auto handle = [this, &request]() -> asio::awaitable<HttpResponse> {
        co_return core->handle(request);
    };
    auto handled = asio::co_spawn(*handlers, std::move(handle), asio::use_awaitable);
    co_return co_await std::move(handled);
}

template <class Stream>
asio::awaitable<void> Server::Impl::stream_watch(std::shared_ptr<Stream> stream,
                                                 std::shared_ptr<WatchStream> watch,
                                                 const std::string& content_type,
                                                 unsigned version) {
    http::response<http::empty_body> res{http::status::ok, version};
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache, private");
    res.chunked(true);
    res.keep_alive(false);
    http::response_serializer<http::empty_body> serializer{res};
    auto [ec, n] = co_await http::async_write_header(*stream, serializer, use_tuple);
    if (ec) {
        watch->cancel();
        co_return;
    }
    auto executor = co_await asio::this_coro::executor;
    auto channel = std::make_shared<WatchChannel>(executor);
    {
        std::lock_guard lock(watches_mutex);
        watches.insert(watch);
    }
    // The client sends nothing during a watch: a completed read means it went away.
    auto reader = [stream, channel]() -> asio::awaitable<void> {
        char scratch[1024];
        for (;;) {
            auto [read_ec, got] =
                co_await stream->async_read_some(asio::buffer(scratch), use_tuple);
            if (read_ec) break;
        }
        channel->client_gone();
    };
    asio::co_spawn(executor, std::move(reader), asio::detached);
    if (handlers) {
        // g++ 12 destroys temporaries in a co_await expression twice: the lambda captures
        // only pointers to locals of this frame, which outlive the awaited call.
        auto start = [watch = watch.get(), channel = &channel]() -> asio::awaitable<void> {
            watch->start(*channel);
            co_return;
        };
        co_await asio::co_spawn(*handlers, std::move(start), asio::use_awaitable);
    } else {
        watch->start(channel);
    }

    bool closed_by_core = false;
    asio::steady_timer gather(executor);
    auto last_write = std::chrono::steady_clock::time_point{};
    for (;;) {
        auto batch = channel->take();
        if (batch.gone) break;
        if (!batch.data.empty()) {
            auto [write_ec, written] = co_await asio::async_write(
                *stream, http::make_chunk(asio::buffer(batch.data)), use_tuple);
            if (write_ec) break;
            // While events stream in, let a few gather before the next write: a write per
            // event and watcher would spend most of the server's time in the kernel. A lone
            // event still goes out at once.
            auto now = std::chrono::steady_clock::now();
            if (now - last_write < kGatherWhenWritesAreCloserThan) {
                gather.expires_after(kGatherFor);
                co_await gather.async_wait(use_tuple);
            }
            last_write = now;
            continue;
        }
        if (batch.closed) {
            closed_by_core = true;
            co_await asio::async_write(*stream, http::make_chunk_last(), use_tuple);
            break;
        }
        co_await channel->wait();
    }
    channel->detach();
    if (!closed_by_core) watch->cancel();
    std::lock_guard lock(watches_mutex);
    watches.erase(watch);
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() {
    stop();
}
void Server::start() {
    impl_->start();
}
void Server::stop() {
    impl_->stop();
}
int Server::port() const {
    return impl_->bound_port;
}
std::string Server::url() const {
    return impl_->url();
}
std::string Server::ca_cert_pem() const {
    return impl_->options.tls ? impl_->serving_ca_pem : "";
}
std::string Server::admin_token() const {
    return impl_->admin_token;
}

std::string Server::kubeconfig_yaml() const {
    return net::render_kubeconfig(
        {url(), impl_->options.tls ? impl_->serving_ca_pem : "", impl_->admin_token});
}

std::pair<std::string, std::string> Server::issue_client_certificate(
    const std::string& user, const std::string& group) const {
    if (impl_->ca.cert_pem.empty()) {
        throw std::logic_error("issue_client_certificate() needs a started server");
    }
    std::vector<std::string> groups;
    if (!group.empty()) groups.push_back(group);
    auto pair = net::issue_certificate(impl_->ca, user, groups, {}, {}, false);
    return {pair.cert_pem, pair.key_pem};
}

void Server::drop_watches() {
    if (impl_->core) impl_->core->drop_watches();
}
void Server::compact_history() {
    if (impl_->core) impl_->core->compact_history();
}
void Server::stall_watches(bool stalled) {
    if (impl_->core) impl_->core->stall_watches(stalled);
}

void Server::fail_next_requests(int count, int status, int retry_after_seconds,
                                const std::string& path_contains) {
    std::lock_guard lock(impl_->faults.mutex);
    impl_->faults.fail_remaining = count;
    impl_->faults.fail_status = status;
    impl_->faults.fail_retry_after = retry_after_seconds;
    impl_->faults.fail_path_contains = path_contains;
}

int Server::failing_requests_left() const {
    std::lock_guard lock(impl_->faults.mutex);
    return impl_->faults.fail_remaining;
}

void Server::delay_responses(std::chrono::milliseconds delay) {
    impl_->faults.delay_ms = delay.count();
}

HttpResponse Server::Impl::admin_request(const HttpRequest& request) {
    if (request.path != "/_kopf/faults") {
        return net::status_response(404, "NotFound", "no admin endpoint at " + request.path);
    }
    if (request.method != "POST") {
        return net::status_response(405, "MethodNotAllowed",
                                    request.method + " is not supported on /_kopf/faults");
    }
    nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
    if (!body.is_object()) {
        return net::status_response(400, "BadRequest",
                                    "the body of /_kopf/faults must be a JSON object");
    }
    nlohmann::json applied = nlohmann::json::array();
    try {
        if (body.contains("failNext")) {
            const auto& fail = body.at("failNext");
            std::lock_guard lock(faults.mutex);
            faults.fail_remaining = fail.value("count", 1);
            faults.fail_status = fail.value("status", 500);
            faults.fail_retry_after = fail.value("retryAfterSeconds", 0);
            faults.fail_path_contains = fail.value("pathContains", "");
            applied.push_back("failNext");
        }
        if (body.contains("delayMilliseconds")) {
            faults.delay_ms = body.at("delayMilliseconds").get<long long>();
            applied.push_back("delayMilliseconds");
        }
        if (body.value("dropWatches", false)) {
            core->drop_watches();
            applied.push_back("dropWatches");
        }
        if (body.value("compactHistory", false)) {
            core->compact_history();
            applied.push_back("compactHistory");
        }
        if (body.contains("stallWatches")) {
            core->stall_watches(body.at("stallWatches").get<bool>());
            applied.push_back("stallWatches");
        }
    } catch (const nlohmann::json::exception& e) {
        return net::status_response(400, "BadRequest",
                                    std::string("invalid /_kopf/faults request: ") + e.what());
    }
    HttpResponse response;
    response.body = nlohmann::json{{"applied", applied}}.dump();
    return response;
}

}  // namespace kopf::apiserver
