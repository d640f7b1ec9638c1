#include "clients/transport.hpp"

#include <fmt/format.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory_resource>
#include <tuple>

#include "clients/auth.hpp"

namespace kopf::clients {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using asio::use_awaitable;

namespace {

std::string user_agent() {
    return std::string("kopf++/") + KOPF_VERSION;
}

struct Endpoint {
    bool tls = true;
    std::string host;  // without brackets
    std::string port;
    std::string prefix;  // path prefix of the server URL, without a trailing slash
    // "Host: ...\r\nUser-Agent: ...\r\n": the same in every request (see request_head()).
    std::string fixed_headers;
};

std::string host_header(const Endpoint& endpoint) {
    std::string host =
        endpoint.host.find(':') != std::string::npos ? "[" + endpoint.host + "]" : endpoint.host;
    bool default_port =
        (endpoint.tls && endpoint.port == "443") || (!endpoint.tls && endpoint.port == "80");
    return default_port ? host : host + ":" + endpoint.port;
}

Endpoint parse_server(const std::string& server) {
    auto parsed = boost::urls::parse_uri(server);
    if (!parsed) {
        throw ConnectionError(fmt::format("The API server URL '{}' is not a valid URL", server));
    }
    Endpoint endpoint;
    auto scheme = std::string(parsed->scheme());
    if (scheme == "https") {
        endpoint.tls = true;
    } else if (scheme == "http") {
        endpoint.tls = false;
    } else {
        throw ConnectionError(
            fmt::format("The API server URL '{}' must start with https:// or http://", server));
    }
    endpoint.host = std::string(parsed->host_address());
    if (endpoint.host.empty()) {
        throw ConnectionError(fmt::format("The API server URL '{}' has no host", server));
    }
    endpoint.port =
        parsed->has_port() ? std::string(parsed->port()) : (endpoint.tls ? "443" : "80");
    endpoint.prefix = std::string(parsed->encoded_path());
    while (!endpoint.prefix.empty() && endpoint.prefix.back() == '/') endpoint.prefix.pop_back();
    endpoint.fixed_headers =
        "Host: " + host_header(endpoint) + "\r\nUser-Agent: " + user_agent() + "\r\n";
    return endpoint;
}

// A proxy from the environment (trust_env), as Python's urllib reads it: the lower-case
// variable first, then the upper-case one; "<scheme>_proxy", else "all_proxy".
std::optional<std::string> proxy_variable(const std::string& name) {
    std::string upper = name;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    const std::array<const std::string*, 2> variables{&name, &upper};
    for (const std::string* variable : variables) {
        if (const char* value = std::getenv(variable->c_str()); value && *value) return value;
    }
    return std::nullopt;
}

// no_proxy: comma-separated hosts ("*" for all), each matching the host itself or its
// subdomains (a leading dot is optional), with an optional ":port".
bool bypasses_proxy(const std::string& host, const std::string& port) {
    const auto list = proxy_variable("no_proxy");
    if (!list) return false;
    std::string_view rest = *list;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view entry = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
        while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
        if (entry == "*") return true;
        if (const auto colon = entry.rfind(':');
            colon != std::string_view::npos && entry.find(':') == colon) {
            if (entry.substr(colon + 1) != port) continue;
            entry = entry.substr(0, colon);
        }
        if (!entry.empty() && entry.front() == '.') entry.remove_prefix(1);
        if (entry.empty()) continue;
        const std::string_view name = host;
        if (name == entry || (name.size() > entry.size() && name.ends_with(entry) &&
                              name[name.size() - entry.size() - 1] == '.'))
            return true;
    }
    return false;
}

bool is_ip_address(const std::string& host) {
    boost::system::error_code ec;
    asio::ip::make_address(host, ec);
    return !ec;
}

// Everything that makes a TLS session differ: connections are pooled per identity (the key
// below names these fields).
auto identity_fields(const ConnectionInfo& c) {
    return std::tie(c.server, c.ca_path, c.ca_data, c.insecure, c.certificate_path,
                    c.certificate_data, c.private_key_path, c.private_key_data);
}

std::string identity_of(const ConnectionInfo& c) {
    auto opt = [](const std::optional<std::string>& v) { return v ? "1" + *v : std::string("0"); };
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", c.server, opt(c.ca_path),
                       opt(c.ca_data), c.insecure, opt(c.certificate_path), opt(c.certificate_data),
                       opt(c.private_key_path), opt(c.private_key_data));
}

std::shared_ptr<ssl::context> make_ssl_context(const ConnectionInfo& c) {
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3);
    auto step = [&](const std::string& what, auto&& action) {
        try {
            action();
        } catch (const boost::system::system_error& e) {
            throw ConnectionError(
                fmt::format("TLS setup for {} failed at {}: {}", c.server, what, e.what()));
        }
    };
    if (c.insecure) {
        context->set_verify_mode(ssl::verify_none);
    } else {
        context->set_verify_mode(ssl::verify_peer);
        if (c.ca_data) {
            step("the CA data",
                 [&] { context->add_certificate_authority(asio::buffer(*c.ca_data)); });
        } else if (c.ca_path) {
            step("the CA file '" + *c.ca_path + "'",
                 [&] { context->load_verify_file(*c.ca_path); });
        } else {
            step("the system CAs", [&] { context->set_default_verify_paths(); });
        }
    }
    if (c.certificate_data) {
        step("the client certificate data",
             [&] { context->use_certificate_chain(asio::buffer(*c.certificate_data)); });
    } else if (c.certificate_path) {
        step("the client certificate file '" + *c.certificate_path + "'",
             [&] { context->use_certificate_chain_file(*c.certificate_path); });
    }
    if (c.private_key_data) {
        step("the client key data", [&] {
            context->use_private_key(asio::buffer(*c.private_key_data), ssl::context::pem);
        });
    } else if (c.private_key_path) {
        step("the client key file '" + *c.private_key_path + "'",
             [&] { context->use_private_key_file(*c.private_key_path, ssl::context::pem); });
    }
    return context;
}

// Read buffers: one recv takes up to this much (Beast reads no more than the free capacity).
constexpr std::size_t kRequestReadBuffer = 16 * 1024;
constexpr std::size_t kStreamReadBuffer = 64 * 1024;

// A response body read into a string. Beast's string_body grows its string with resize(),
// which zero-fills every piece before copying the piece over it; appending copies once.
struct AppendingStringBody {
    using value_type = std::string;

    class reader {
      public:
        template <bool isRequest, class Fields>
        reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

        void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
            // Reserve what the server announces, but not whatever a broken one claims.
            constexpr std::uint64_t kMaxReserve = 16 * 1024 * 1024;
            if (length) body_.reserve(static_cast<std::size_t>(std::min(*length, kMaxReserve)));
            ec = {};
        }
        template <class ConstBufferSequence>
        std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
            std::size_t appended = 0;
            for (const auto buffer : beast::buffers_range_ref(buffers)) {
                body_.append(static_cast<const char*>(buffer.data()), buffer.size());
                appended += buffer.size();
            }
            ec = {};
            return appended;
        }
        void finish(beast::error_code& ec) { ec = {}; }

      private:
        value_type& body_;
    };
};

struct Connection : std::enable_shared_from_this<Connection> {
    using Clock = std::chrono::steady_clock;

    explicit Connection(const asio::any_io_executor& executor) : watchdog(executor) {}

    std::shared_ptr<ssl::context> context;  // outlives the TLS stream
    std::optional<beast::tcp_stream> plain;
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer;
    // Room for an answer's header fields, which Beast allocates one by one (half a dozen on
    // every answer to a patch); one answer at a time per connection.
    std::array<std::byte, 768> field_space;
    bool reused = false;
    bool timed_out = false;  // closed by the watchdog: its operations failed for that reason

    beast::tcp_stream& tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
    void close() {
        disarm();
        boost::system::error_code ec;
        tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
        tcp().socket().close(ec);
    }

    // Requests and streams are timed by one timer per connection, which closes the connection
    // once the deadline passes. Beast's own timeouts arm and cancel a timer around every read
    // and write — on a watch stream, a timer-queue insertion, a cancelled completion and often
    // a timerfd_settime() per read. This one is re-armed only when it fires before a deadline
    // that has moved on meanwhile.
    void expire_at(Clock::time_point when) {
        deadline_ = when;
        if (when < armed_for_) arm(when);  // otherwise the armed wait fires first and re-arms
    }
    // Nothing is timed; the wait is cancelled, so an idle connection keeps nothing pending.
    void expire_never() {
        deadline_ = Clock::time_point::max();
        disarm();
    }

  private:
    void arm(Clock::time_point when) {
        armed_for_ = when;
        watchdog.expires_at(when);  // a superseded wait completes as cancelled
        watchdog.async_wait(
            [weak = weak_from_this(), arming = ++arming_](const boost::system::error_code& ec) {
                const auto self = weak.lock();
                if (ec || !self || self->arming_ != arming) return;
                self->armed_for_ = Clock::time_point::max();
                if (self->deadline_ == Clock::time_point::max()) return;
                if (Clock::now() < self->deadline_) {
                    self->arm(self->deadline_);
                    return;
                }
                self->timed_out = true;
                self->close();
            });
    }
    void disarm() {
        if (armed_for_ == Clock::time_point::max()) return;
        armed_for_ = Clock::time_point::max();
        ++arming_;
        watchdog.cancel();
    }

    asio::steady_timer watchdog;
    Clock::time_point deadline_ = Clock::time_point::max();
    Clock::time_point armed_for_ = Clock::time_point::max();  // max: no wait pending
    std::uint64_t arming_ = 0;
};

struct Pool {
    std::deque<std::shared_ptr<Connection>> idle;
    std::size_t active = 0;
    std::deque<std::shared_ptr<asio::steady_timer>> waiters;
};

template <class Fields>
std::optional<double> parse_retry_after(const Fields& fields) {
    auto it = fields.find(http::field::retry_after);
    if (it == fields.end()) return std::nullopt;
    try {
        return std::stod(std::string(it->value()));
    } catch (const std::exception&) {
        return std::nullopt;  // HTTP-date form: fall back to our own backoff
    }
}

// The request line and headers of a request, as Beast's serializer would write them. Writing
// them with the body in one gather-write costs a fraction of Beast's serializer, which showed
// as a tenth of an operator's CPU per patch; they are copied into one buffer sized up front,
// as every request (a timer's patch, each write of a handling cycle) makes one.
std::string request_head(const Endpoint& endpoint, const HttpRequest& r) {
    if (http::string_to_verb(r.method) == http::verb::unknown)
        throw std::invalid_argument("Unknown HTTP method: " + r.method);
    // Not find_first_of: it asks memchr about every byte of a value (234 calls per patch).
    const auto breaks_line = [](std::string_view text) {
        return text.find('\r') != std::string_view::npos ||
               text.find('\n') != std::string_view::npos;
    };
    const auto in_target = [&](std::string_view text) {
        return breaks_line(text) || text.find(' ') != std::string_view::npos;
    };
    if (in_target(endpoint.prefix) || in_target(r.target))
        throw std::invalid_argument(
            "A space or line break in the request target: " + endpoint.prefix + r.target);
    const bool may_have_body = r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
    char length_digits[24];
    std::string_view length;
    if (!r.body.empty() || may_have_body) {
        const auto written =
            std::to_chars(length_digits, length_digits + sizeof length_digits, r.body.size());
        length =
            std::string_view(length_digits, static_cast<std::size_t>(written.ptr - length_digits));
    }
    // Each header: its name with ": " (empty for the fixed ones), its value; those with an
    // empty value are left out.
    const std::pair<std::string_view, std::string_view> headers[] = {
        {"", endpoint.fixed_headers},         {"Accept: ", r.accept},
        {"Authorization: ", r.authorization}, {"Content-Type: ", r.content_type},
        {"Content-Length: ", length},
    };
    std::size_t size = r.method.size() + 1 + endpoint.prefix.size() + r.target.size() +
                       std::string_view(" HTTP/1.1\r\n").size() + 2;
    for (const auto& [name, value] : headers) {
        if (value.empty()) continue;
        if (!name.empty() && breaks_line(value)) {
            throw std::invalid_argument(
                fmt::format("A line break in the {} header", name.substr(0, name.size() - 2)));
        }
        size += name.size() + value.size() + (name.empty() ? 0 : 2);
    }
    std::string head(size, '\0');
    char* out = head.data();
    const auto put = [&out](std::string_view piece) {
        std::memcpy(out, piece.data(), piece.size());
        out += piece.size();
    };
    put(r.method);
    put(" ");
    put(endpoint.prefix);
    put(r.target);
    put(" HTTP/1.1\r\n");
    for (const auto& [name, value] : headers) {
        if (value.empty()) continue;
        put(name);
        put(value);
        if (!name.empty()) put("\r\n");
    }
    put("\r\n");
    return head;
}

template <class Duration>
auto to_steady(Duration duration) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration);
}

}  // namespace

// The proxy a connection is tunnelled through (trust_env), and its credentials if its URL has
// them ("http://user:password@proxy:3128").
struct Proxy {
    std::string url;  // as the environment names it, for messages (without the credentials)
    Endpoint endpoint;
    std::string authorization;  // the Proxy-Authorization header's value, or empty
};

std::optional<Proxy> proxy_for(const Endpoint& target) {
    auto url = proxy_variable(target.tls ? "https_proxy" : "http_proxy");
    if (!url) url = proxy_variable("all_proxy");
    if (!url || bypasses_proxy(target.host, target.port)) return std::nullopt;
    if (url->find("://") == std::string::npos) *url = "http://" + *url;
    auto parsed = boost::urls::parse_uri(*url);
    if (!parsed || parsed->scheme() != "http") {
        throw ConnectionError(fmt::format(
            "The proxy '{}' from the environment is not an http:// URL (trust_env)", *url));
    }
    Proxy proxy;
    proxy.endpoint = parse_server(*url);
    if (parsed->has_userinfo()) {
        proxy.authorization = "Basic " + base64_encode(std::string(parsed->user()) + ":" +
                                                       std::string(parsed->password()));
    }
    proxy.url = fmt::format("http://{}:{}", proxy.endpoint.host, proxy.endpoint.port);
    return proxy;
}

// What a request needs from its credentials, worked out once per distinct credentials.
struct Destination {
    ConnectionInfo credentials;  // compared by identity_fields() only
    Endpoint endpoint;
    std::string key;             // identity_of(): the pool and TLS context key
    std::optional<Proxy> proxy;  // with trust_env, if the environment names one for it
};

struct Transport::Impl {
    asio::any_io_executor executor;
    std::size_t pool_limit;
    bool trust_env = false;
    std::map<std::string, std::shared_ptr<ssl::context>> contexts;
    std::map<std::string, Pool> pools;
    // Parsing the URL and building the key (with the CA and key data in it) on every request
    // showed in profiles; credentials rarely change.
    std::shared_ptr<const Destination> last_destination;

    std::shared_ptr<const Destination> destination_of(const ConnectionInfo& credentials) {
        if (!last_destination ||
            identity_fields(last_destination->credentials) != identity_fields(credentials)) {
            Endpoint endpoint = parse_server(credentials.server);
            std::optional<Proxy> proxy;
            if (trust_env) proxy = proxy_for(endpoint);
            last_destination = std::make_shared<Destination>(Destination{
                credentials, std::move(endpoint), identity_of(credentials), std::move(proxy)});
        }
        return last_destination;
    }

    std::shared_ptr<ssl::context> context_for(const ConnectionInfo& credentials,
                                              const std::string& key) {
        auto& context = contexts[key];
        if (!context) context = make_ssl_context(credentials);
        return context;
    }

    // Asks the proxy for a tunnel to `target` on the connection (CONNECT), before TLS if any.
    static asio::awaitable<void> tunnel(Connection& connection, const Proxy& proxy,
                                        const Endpoint& target) {
        const std::string host =
            target.host.find(':') != std::string::npos ? "[" + target.host + "]" : target.host;
        const std::string authority = host + ":" + target.port;
        std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority +
                              "\r\nUser-Agent: " + user_agent() + "\r\n";
        if (!proxy.authorization.empty())
            request += "Proxy-Authorization: " + proxy.authorization + "\r\n";
        request += "\r\n";
        co_await asio::async_write(connection.tcp(), asio::buffer(request), use_awaitable);
        http::response_parser<http::empty_body> parser;
        parser.skip(true);  // the answer to a CONNECT has no body
        beast::flat_buffer buffer;
        co_await http::async_read_header(connection.tcp(), buffer, parser, use_awaitable);
        const unsigned status = parser.get().result_int();
        if (status < 200 || status >= 300) {
            throw ConnectionError(fmt::format("The proxy {} refused the tunnel to {}: HTTP {} {}",
                                              proxy.url, authority, status,
                                              std::string(parser.get().reason())));
        }
    }

    asio::awaitable<std::shared_ptr<Connection>> connect(const Destination& destination,
                                                         const ConnectionInfo& credentials,
                                                         Timeouts timeouts, StopSignal* stop) {
        const Endpoint& endpoint = destination.endpoint;
        const std::string& key = destination.key;
        // With a proxy, the TCP connection goes to it, and a tunnel through it to the server.
        const Endpoint& dialled = destination.proxy ? destination.proxy->endpoint : endpoint;
        auto connection = std::make_shared<Connection>(executor);
        connection->buffer.reserve(kRequestReadBuffer);
        if (endpoint.tls) {
            connection->context = context_for(credentials, key);
            connection->tls.emplace(executor, *connection->context);
        } else {
            connection->plain.emplace(executor);
        }
        std::weak_ptr<Connection> weak = connection;
        StopCallback on_stop(stop, [weak, executor = executor] {
            asio::post(executor, [weak] {
                if (auto c = weak.lock()) c->close();
            });
        });
        try {
            tcp::resolver resolver(executor);
            auto results =
                co_await resolver.async_resolve(dialled.host, dialled.port, use_awaitable);
            connection->tcp().expires_after(to_steady(timeouts.connecting()));
            co_await connection->tcp().async_connect(results, use_awaitable);
            if (destination.proxy) co_await tunnel(*connection, *destination.proxy, endpoint);
            if (connection->tls) {
                auto* handle = connection->tls->native_handle();
                if (!is_ip_address(endpoint.host)) {
                    SSL_set_tlsext_host_name(handle, endpoint.host.c_str());  // SNI
                }
                if (!credentials.insecure) {
                    connection->tls->set_verify_callback(
                        ssl::host_name_verification(endpoint.host));
                }
                co_await connection->tls->async_handshake(ssl::stream_base::client, use_awaitable);
            }
            connection->tcp().expires_never();
        } catch (const boost::system::system_error& e) {
            std::string reason =
                e.code() == beast::error::timeout ? "connect timeout" : e.code().message();
            throw ConnectionError(fmt::format(
                "Cannot connect to {}:{}{}: {}", endpoint.host, endpoint.port,
                destination.proxy ? " through the proxy " + destination.proxy->url : "", reason));
        }
        co_return connection;
    }

    asio::awaitable<void> acquire_slot(Pool& pool) {
        while (pool_limit > 0 && pool.active >= pool_limit) {
            auto waiter = std::make_shared<asio::steady_timer>(
                executor, asio::steady_timer::time_point::max());
            pool.waiters.push_back(waiter);
            co_await waiter->async_wait(asio::as_tuple(use_awaitable));
        }
        ++pool.active;
    }

    void release_slot(Pool& pool, std::shared_ptr<Connection> reusable) {
        --pool.active;
        if (reusable) {
            reusable->reused = true;
            pool.idle.push_back(std::move(reusable));
        }
        if (!pool.waiters.empty()) {
            pool.waiters.front()->cancel();
            pool.waiters.pop_front();
        }
    }

    template <class Stream>
    static asio::awaitable<std::pair<HttpResponse, bool>> exchange(Stream& stream,
                                                                   Connection& connection,
                                                                   const std::string& head,
                                                                   const std::string& body) {
        const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(body)};
        co_await asio::async_write(stream, request, use_awaitable);
        // (More fields than fit go to the heap; the message dies before the next answer.)
        std::pmr::monotonic_buffer_resource fields_arena(connection.field_space.data(),
                                                         connection.field_space.size());
        http::response_parser<AppendingStringBody, std::pmr::polymorphic_allocator<char>> parser(
            std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_arena));
        parser.body_limit(boost::none);
        co_await http::async_read(stream, connection.buffer, parser, use_awaitable);
        auto& message = parser.get();
        HttpResponse response;
        response.status = static_cast<int>(message.result_int());
        response.retry_after = parse_retry_after(message.base());
        response.body = std::move(message.body());
        co_return std::make_pair(std::move(response), message.keep_alive());
    }
};

Transport::Transport(asio::any_io_executor executor, std::size_t pool_limit, bool trust_env)
    : impl_(std::make_unique<Impl>(Impl{std::move(executor), pool_limit, trust_env, {}, {}, {}})) {}

Transport::~Transport() = default;

asio::any_io_executor Transport::executor() const {
    return impl_->executor;
}

asio::awaitable<std::string> Transport::server_certificate(const ConnectionInfo& credentials,
                                                           Timeouts timeouts) {
    const auto destination = impl_->destination_of(credentials);
    if (!destination->endpoint.tls) co_return std::string();
    const auto connection = co_await impl_->connect(*destination, credentials, timeouts, nullptr);
    std::string pem;
    if (X509* certificate = SSL_get1_peer_certificate(connection->tls->native_handle())) {
        if (BIO* bio = BIO_new(BIO_s_mem())) {
            if (PEM_write_bio_X509(bio, certificate) == 1) {
                char* data = nullptr;
                const long size = BIO_get_mem_data(bio, &data);
                if (size > 0) pem.assign(data, static_cast<std::size_t>(size));
            }
            BIO_free(bio);
        }
        X509_free(certificate);
    }
    connection->close();
    co_return pem;
}

void Transport::close_idle() {
    for (auto& [key, pool] : impl_->pools) {
        for (auto& connection : pool.idle) connection->close();
        pool.idle.clear();
    }
    // Connections in use keep their own TLS context; new ones pick up changed credentials.
    impl_->contexts.clear();
}

asio::awaitable<HttpResponse> Transport::request(const ConnectionInfo& credentials,
                                                 const HttpRequest& r, Timeouts timeouts) {
    const auto destination = impl_->destination_of(credentials);
    const Endpoint& endpoint = destination->endpoint;
    const std::string& key = destination->key;
    auto& pool = impl_->pools[key];
    co_await impl_->acquire_slot(pool);
    std::shared_ptr<Connection> keep;
    try {
        const std::string head = request_head(endpoint, r);
        for (int attempt = 0;; ++attempt) {
            std::shared_ptr<Connection> connection;
            if (!pool.idle.empty()) {
                connection = std::move(pool.idle.front());
                pool.idle.pop_front();
            } else {
                connection = co_await impl_->connect(*destination, credentials, timeouts, nullptr);
            }
            connection->expire_at(std::chrono::steady_clock::now() + to_steady(timeouts.request));
            try {
                std::pair<HttpResponse, bool> result;
                if (connection->tls) {
                    result = co_await Impl::exchange(*connection->tls, *connection, head, r.body);
                } else {
                    result = co_await Impl::exchange(*connection->plain, *connection, head, r.body);
                }
                connection->expire_never();
                if (result.second)
                    keep = connection;
                else
                    connection->close();
                impl_->release_slot(pool, keep);
                co_return std::move(result.first);
            } catch (const boost::system::system_error& e) {
                connection->close();
                const bool timed_out = connection->timed_out || e.code() == beast::error::timeout;
                // A kept-alive connection may have been closed by the server meanwhile. Then the
                // other idle ones most likely were too (a restarted server closed them all):
                // they are dropped, and the request goes on over a fresh connection instead of
                // spending its attempts on them one by one.
                if (connection->reused && attempt == 0 && !timed_out) {
                    for (auto& idle : pool.idle) idle->close();
                    pool.idle.clear();
                    continue;
                }
                std::string reason = timed_out ? "request timeout" : e.what();
                throw ConnectionError(fmt::format("{} {} failed: {}", r.method, r.target, reason));
            }
        }
    } catch (...) {
        impl_->release_slot(pool, nullptr);
        throw;
    }
}

asio::awaitable<HttpResponse> Transport::stream(
    const ConnectionInfo& credentials, const HttpRequest& r, Timeouts timeouts, Seconds inactivity,
    std::optional<std::chrono::steady_clock::time_point> deadline,
    std::function<void(std::string_view)> on_chunk, StopSignal* stop) {
    const auto destination = impl_->destination_of(credentials);
    const Endpoint& endpoint = destination->endpoint;
    HttpResponse response;
    if (stop && stop->stopped()) co_return response;
    std::shared_ptr<Connection> connection;
    try {
        connection = co_await impl_->connect(*destination, credentials, timeouts, stop);
    } catch (const ConnectionError&) {
        if (stop && stop->stopped()) co_return response;
        throw;
    }
    // Beast reads at most the buffer's free capacity per recv: a small buffer costs a system
    // call per few hundred bytes of a busy watch stream.
    connection->buffer.reserve(kStreamReadBuffer);
    std::weak_ptr<Connection> weak = connection;
    StopCallback on_stop(stop, [weak, executor = impl_->executor] {
        asio::post(executor, [weak] {
            if (auto c = weak.lock()) c->close();
        });
    });
    const std::string head = request_head(endpoint, r);
    const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(r.body)};
    auto read_deadline = [&] {
        auto now = std::chrono::steady_clock::now();
        auto limit = now + to_steady(inactivity);
        if (deadline && *deadline < limit) limit = *deadline;
        return limit;
    };
    try {
        connection->expire_at(std::chrono::steady_clock::now() + to_steady(timeouts.request));
        if (connection->tls) {
            co_await asio::async_write(*connection->tls, request, use_awaitable);
        } else {
            co_await asio::async_write(*connection->plain, request, use_awaitable);
        }
        http::response_parser<http::buffer_body> parser;
        parser.body_limit(boost::none);
        connection->expire_at(read_deadline());
        if (connection->tls) {
            co_await http::async_read_header(*connection->tls, connection->buffer, parser,
                                             use_awaitable);
        } else {
            co_await http::async_read_header(*connection->plain, connection->buffer, parser,
                                             use_awaitable);
        }
        response.status = static_cast<int>(parser.get().result_int());
        response.retry_after = parse_retry_after(parser.get().base());
        const bool success = response.status >= 200 && response.status < 300;
        auto deliver = [&](std::string_view data) {
            if (success) {
                on_chunk(data);
            } else if (response.body.size() < 1024 * 1024) {
                response.body.append(data);
            }
        };
        // A chunked body (every watch stream) is handed over where it was received, in the
        // connection's buffer, instead of being copied into `chunk` first. The callback runs
        // inside Beast's parser, so a failure is carried out of it, not thrown through it.
        std::exception_ptr delivery_failure;
        auto on_chunk_body = [&](std::uint64_t, beast::string_view data,
                                 beast::error_code& ec) -> std::size_t {
            try {
                deliver(std::string_view(data.data(), data.size()));
            } catch (...) {
                delivery_failure = std::current_exception();
                ec = asio::error::operation_aborted;
                return 0;
            }
            return data.size();
        };
        parser.on_chunk_body(on_chunk_body);
        std::array<char, 64 * 1024> chunk;  // a body without chunked encoding is read into it
        while (!parser.is_done()) {
            parser.get().body().data = chunk.data();
            parser.get().body().size = chunk.size();
            connection->expire_at(read_deadline());
            boost::system::error_code ec;
            if (connection->tls) {
                std::tie(ec, std::ignore) = co_await http::async_read_some(
                    *connection->tls, connection->buffer, parser, asio::as_tuple(use_awaitable));
            } else {
                std::tie(ec, std::ignore) = co_await http::async_read_some(
                    *connection->plain, connection->buffer, parser, asio::as_tuple(use_awaitable));
            }
            if (delivery_failure) std::rethrow_exception(delivery_failure);
            if (ec == http::error::need_buffer) ec = {};
            const std::size_t received = chunk.size() - parser.get().body().size;
            if (received > 0) deliver(std::string_view(chunk.data(), received));
            if (ec) throw boost::system::system_error(ec);
        }
    } catch (const boost::system::system_error& e) {
        connection->close();
        if (stop && stop->stopped()) co_return response;
        if (connection->timed_out || e.code() == beast::error::timeout) {
            if (deadline && std::chrono::steady_clock::now() >= *deadline) co_return response;
            throw InactivityTimeout(
                fmt::format("{} {}: no data for {:.1f}s", r.method, r.target, inactivity.count()));
        }
        if (e.code() == http::error::end_of_stream || e.code() == asio::error::eof ||
            e.code() == http::error::partial_message) {
            throw ConnectionError(
                fmt::format("{} {}: the stream was cut off by the server", r.method, r.target));
        }
        throw ConnectionError(fmt::format("{} {}: {}", r.method, r.target, e.what()));
    } catch (...) {
        connection->close();
        throw;
    }
    connection->close();
    co_return response;
}

}  // namespace kopf::clients
