// The webhook servers of kopf/webhooks.hpp (Kopf's kits/webhooks.py): an HTTPS (or HTTP)
// server on a thread of its own, which hands each AdmissionReview to the operator and writes
// back its answer. Beast + Asio + OpenSSL stay in this file.
#include "kopf/webhooks.hpp"

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/actions/logging.hpp"
#include "kits/certificates.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace kopf {

namespace {

// AdmissionReviews carry the object and the old object: twice Kubernetes' 1.5 MiB limit, with
// room to spare.
constexpr std::size_t BODY_LIMIT = 8 * 1024 * 1024;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string read_file(const std::string& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("Cannot read the webhook {} {}.", what, path));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// A catch-all listening address is not reachable as such: the loopback of its family is.
std::string accessible_addr(const std::optional<std::string>& addr) {
    if (!addr || addr->empty()) return "localhost";
    if (*addr == "0.0.0.0") return "127.0.0.1";
    if (*addr == "::") return "::1";
    return *addr;
}

std::string build_url(const std::string& scheme, const std::string& host, int port,
                      const std::string& path) {
    const std::string netloc_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    const bool default_port =
        (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
    return scheme + "://" + netloc_host + (default_port ? "" : ":" + std::to_string(port)) + path;
}

// "%2F" as "/" (ids with unusual characters are quoted in the webhooks' URLs).
std::string percent_decoded(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() &&
            std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
            out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

// A name as Python's ssl.getpeercert() gives it: relative distinguished names, each a list of
// [attribute's long name, value] pairs: [[["commonName", "x"]], [["organizationName", "y"]]].
json name_json(const X509_NAME* name) {
    json rdns = json::array();
    int current_set = -1;
    for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
        const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
        const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
        unsigned char* utf8 = nullptr;
        const int length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
        if (length < 0) continue;
        std::string value(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(length));
        OPENSSL_free(utf8);
        const char* key = nid == NID_undef ? "unknown" : OBJ_nid2ln(nid);
        if (X509_NAME_ENTRY_set(entry) != current_set || rdns.empty()) {
            rdns.push_back(json::array());
            current_set = X509_NAME_ENTRY_set(entry);
        }
        rdns.back().push_back({key, value});
    }
    return rdns;
}

std::string time_text(const ASN1_TIME* time) {
    BIO* bio = BIO_new(BIO_s_mem());
    ASN1_TIME_print(bio, time);  // "Mar  7 17:12:20 2021 GMT", as Python's
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<std::size_t>(size));
    BIO_free(bio);
    return text;
}

// The client certificate (of the API server) as the handlers' `sslpeer`, in the shape of
// Python's ssl.getpeercert() (as Kopf gives it); {} without a verified one.
json peer_of(SSL* ssl) {
    X509* cert = SSL_get1_peer_certificate(ssl);
    if (!cert) return json::object();
    json peer = {{"subject", name_json(X509_get_subject_name(cert))},
                 {"issuer", name_json(X509_get_issuer_name(cert))},
                 {"version", X509_get_version(cert) + 1},
                 {"notBefore", time_text(X509_get0_notBefore(cert))},
                 {"notAfter", time_text(X509_get0_notAfter(cert))}};
    if (BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
        if (char* hex = BN_bn2hex(serial)) {
            peer["serialNumber"] = hex;
            OPENSSL_free(hex);
        }
        BN_free(serial);
    }
    X509_free(cert);
    return peer;
}

}  // namespace

struct WebhookServer::Impl : std::enable_shared_from_this<WebhookServer::Impl> {
    asio::io_context io{1};
    std::optional<ssl::context> tls;
    tcp::acceptor acceptor{io};
    std::string root;  // the root path, without the trailing slash
    WebhookFn fn;
    std::thread thread;
    std::atomic<bool> stopped{false};
    std::atomic<int> port{0};  // read from other threads
    runtime::NamedLogger log{"kopf.kits.webhooks"};

    // Reads requests from one connection (kept alive while the client wants it) and answers them.
    template <class Stream>
    asio::awaitable<void> session(Stream& stream, std::string peer, json sslpeer) {
        beast::flat_buffer buffer;
        while (!stopped) {
            http::request_parser<http::string_body> parser;
            parser.body_limit(BODY_LIMIT);
            auto [ec, bytes] = co_await http::async_read(stream, buffer, parser, use_tuple);
            (void)bytes;
            if (ec == http::error::body_limit) {
                log.error("A webhook request from {} is refused: its body exceeds {} bytes.", peer,
                          BODY_LIMIT);
                WebhookResponse refused{413,
                                        {{"kind", "Status"},
                                         {"apiVersion", "v1"},
                                         {"status", "Failure"},
                                         {"message", "The request body is too large."},
                                         {"code", 413}}};
                co_await write(stream, refused, 11, false);
                co_return;
            }
            if (ec) co_return;  // closed, reset, or not HTTP
            auto request = parser.release();
            const bool keep_alive = request.keep_alive();
            const unsigned version = request.version();
            WebhookResponse response = co_await answer(request, sslpeer, peer);
            if (!co_await write(stream, response, version, keep_alive) || !keep_alive) co_return;
        }
    }

    template <class Stream>
    asio::awaitable<bool> write(Stream& stream, const WebhookResponse& answer, unsigned version,
                                bool keep_alive) {
        http::response<http::string_body> response;
        response.version(version);
        response.result(static_cast<unsigned>(answer.status));
        response.set(http::field::content_type, "application/json");
        response.keep_alive(keep_alive);
        response.body() = answer.body.dump();
        response.prepare_payload();
        auto [ec, bytes] = co_await http::async_write(stream, response, use_tuple);
        (void)bytes;
        co_return !ec;
    }

    static WebhookResponse status(int code, const std::string& message) {
        return WebhookResponse{code,
                               {{"kind", "Status"},
                                {"apiVersion", "v1"},
                                {"status", "Failure"},
                                {"message", message},
                                {"code", code}}};
    }

    asio::awaitable<WebhookResponse> answer(http::request<http::string_body>& request,
                                            const json& sslpeer, const std::string& peer) {
        const std::string target(request.target());
        const std::string path = target.substr(0, target.find('?'));
        if (path != root && path.rfind(root + "/", 0) != 0) {
            log.error("A webhook request from {} is refused: {} is not under {}.", peer, path,
                      root.empty() ? "/" : root);
            co_return status(404, fmt::format("No webhooks at {}.", path));
        }
        if (request.method() != http::verb::post) {
            log.error("A webhook request from {} is refused: {} {} (only POST is served).", peer,
                      std::string(request.method_string()), path);
            co_return status(405, "Webhooks are served with POST only.");
        }
        WebhookRequest hook;
        const std::string id = path.size() > root.size() ? path.substr(root.size() + 1) : "";
        hook.webhook = percent_decoded(id);  // ids are %-quoted in URLs
        for (const auto& field : request) {
            hook.headers[std::string(field.name_string())] = std::string(field.value());
        }
        hook.sslpeer = sslpeer;
        hook.body = std::move(request.body());

        // The operator answers on its own loop; the answer comes back to this thread.
        auto arrived =
            std::make_shared<asio::steady_timer>(io, asio::steady_timer::time_point::max());
        auto result = std::make_shared<std::optional<WebhookResponse>>();
        // The server may be gone when the answer comes (the operator stopped it meanwhile).
        auto reply = [arrived, result, weak = weak_from_this()](WebhookResponse response) {
            const auto self = weak.lock();
            if (!self) return;
            asio::post(self->io, [arrived, result, response = std::move(response)]() mutable {
                *result = std::move(response);
                arrived->cancel();
            });
        };
        fn(std::move(hook), std::move(reply));
        boost::system::error_code ignored;
        if (!*result) {
            co_await arrived->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        }
        if (!*result) co_return status(503, "The operator is stopping.");
        co_return std::move(**result);
    }

    asio::awaitable<void> serve_tls(tcp::socket socket) {
        const std::string peer = remote(socket);
        beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
        auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
        if (ec) {
            log.warning("A TLS handshake from {} failed: {}.", peer, ec.message());
            co_return;
        }
        co_await session(stream, peer, peer_of(stream.native_handle()));
        auto [ignored] = co_await stream.async_shutdown(use_tuple);
        (void)ignored;
    }

    asio::awaitable<void> serve_plain(tcp::socket socket) {
        const std::string peer = remote(socket);
        beast::tcp_stream stream(std::move(socket));
        co_await session(stream, peer, json::object());
        boost::system::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    }

    static std::string remote(const tcp::socket& socket) {
        boost::system::error_code ec;
        const auto endpoint = socket.remote_endpoint(ec);
        return ec ? std::string("an unknown peer")
                  : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    }

    asio::awaitable<void> accept_loop() {
        while (!stopped) {
            auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
            if (ec) break;
            if (tls) {
                asio::co_spawn(io, serve_tls(std::move(socket)), asio::detached);
            } else {
                asio::co_spawn(io, serve_plain(std::move(socket)), asio::detached);
            }
        }
    }
};

WebhookServer::WebhookServer(WebhookServerOptions options) : options_(std::move(options)) {}

WebhookServer::~WebhookServer() {
    stop();
}

int WebhookServer::port() const {
    return impl_ ? impl_->port.load() : 0;
}

void WebhookServer::start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) {
    if (impl_) throw std::logic_error("The webhook server is already started.");
    const auto& o = options_;
    auto impl = std::make_shared<Impl>();
    impl->fn = std::move(fn);
    std::string path = o.path.value_or("");
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (!path.empty() && path.front() != '/') path = "/" + path;
    impl->root = path;

    // The CA bundle for the API server (not used by this server itself).
    std::string cadata = o.cadata.value_or("");
    if (cadata.empty() && o.cafile) cadata = read_file(*o.cafile, "CA file");
    if (o.insecure && (o.certfile || o.pkeyfile)) {
        throw std::invalid_argument(
            "The webhook server cannot be insecure (HTTP) and have a certificate (HTTPS).");
    }
    if (!o.insecure) {
        impl->tls.emplace(ssl::context::tls_server);
        auto& tls = *impl->tls;
        tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
        if (o.password) {
            tls.set_password_callback(
                [password = *o.password](std::size_t, ssl::context::password_purpose) {
                    return password;
                });
        }
        try {
            if (o.certfile && o.pkeyfile) {
                impl->log.debug("Using a provided certificate for HTTPS.");
                tls.use_certificate_chain_file(*o.certfile);
                tls.use_private_key_file(*o.pkeyfile, ssl::context::pem);
                if (cadata.empty()) cadata = read_file(*o.certfile, "certificate file");
            } else if (o.certfile || o.pkeyfile) {
                throw std::invalid_argument(
                    "The webhook server needs both a certificate file and a private key file.");
            } else {
                impl->log.debug("Generating a self-signed certificate for HTTPS.");
                const auto host = o.host ? o.host : default_host();
                const std::string addr = accessible_addr(o.addr);
                std::vector<std::string> hostnames = {host.value_or(addr), addr};
                hostnames.insert(hostnames.end(), o.extra_sans.begin(), o.extra_sans.end());
                const auto generated = kits::generate_certificate(hostnames, o.password);
                tls.use_certificate_chain(asio::buffer(generated.cert_pem));
                tls.use_private_key(asio::buffer(generated.key_pem), ssl::context::pem);
                cadata = generated.ca_pem;  // the self-signed CA, whatever was given
            }
            const bool verifies = o.verify_cafile || o.verify_capath || o.verify_cadata;
            if (o.verify_cafile) tls.load_verify_file(*o.verify_cafile);
            if (o.verify_capath) tls.add_verify_path(*o.verify_capath);
            if (o.verify_cadata) tls.add_certificate_authority(asio::buffer(*o.verify_cadata));
            auto mode = o.verify_mode.value_or(verifies ? VerifyMode::OPTIONAL : VerifyMode::NONE);
            if (mode == VerifyMode::NONE && verifies) mode = VerifyMode::OPTIONAL;
            tls.set_verify_mode(mode == VerifyMode::NONE ? ssl::verify_none
                                : mode == VerifyMode::OPTIONAL
                                    ? ssl::verify_peer
                                    : ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
        } catch (const boost::system::system_error& error) {
            throw std::runtime_error(
                fmt::format("The webhook server's TLS setup failed: {}.", error.code().message()));
        }
    }
    if (o.cadump && !cadata.empty()) {
        std::ofstream out(*o.cadump, std::ios::binary | std::ios::trunc);
        out << cadata;
        if (!out) throw std::runtime_error("Cannot write the webhook CA bundle to " + *o.cadump);
    }

    // Listen: all interfaces without an address.
    boost::system::error_code ec;
    std::string listen = o.addr.value_or("0.0.0.0");
    if (listen == "localhost") listen = "127.0.0.1";
    const auto address = asio::ip::make_address(listen, ec);
    if (ec) {
        throw std::invalid_argument(fmt::format(
            "The webhook server's addr '{}' is not an IP address (e.g. 0.0.0.0).", listen));
    }
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port.value_or(0)));
    try {
        impl->acceptor.open(endpoint.protocol());
        impl->acceptor.set_option(asio::socket_base::reuse_address(true));
        impl->acceptor.bind(endpoint);
        impl->acceptor.listen();
    } catch (const boost::system::system_error& error) {
        throw std::runtime_error(fmt::format("The webhook server cannot listen at {}:{}: {}.",
                                             listen, endpoint.port(), error.code().message()));
    }
    impl->port = impl->acceptor.local_endpoint().port();
    impl_ = impl;
    const int bound = port();
    const std::string scheme = o.insecure ? "http" : "https";
    impl->log.debug("Listening for webhooks at {}", build_url(scheme, listen, bound, path));
    const std::string host = o.host ? *o.host : default_host().value_or(accessible_addr(o.addr));
    WebhookClientConfig config;
    config.url = build_url(scheme, host, bound, path);
    config.ca_bundle = cadata;
    impl->log.info("Serving webhooks at {}", *config.url);

    asio::co_spawn(impl->io, impl->accept_loop(), asio::detached);
    impl->thread = std::thread([raw = impl.get()] { raw->io.run(); });
    if (configured) configured(config);
}

void WebhookServer::stop() {
    if (!impl_) return;
    auto impl = std::move(impl_);
    impl->stopped = true;
    asio::post(impl->io, [raw = impl.get()] {
        boost::system::error_code ignored;
        raw->acceptor.close(ignored);
        raw->io.stop();
    });
    if (impl->thread.joinable()) impl->thread.join();
}

std::optional<std::string> guess_cluster_host(const ClusterFacts& facts) {
    if (const auto names = kits::certificate_names(facts.certificate_pem)) {
        if (names->subject_cn == "k3s" || names->subject_org == "k3s" ||
            names->issuer_cn.starts_with("k3s-"))
            return "host.k3d.internal";
        if (names->subject_cn == "minikube" || names->issuer_cn == "minikubeCA")
            return "host.minikube.internal";
        for (const auto& name : names->dns_names)
            if (name == "docker-for-desktop") return "host.docker.internal";
    }
    if (facts.git_version.find("+k3s") != std::string::npos) return "host.k3d.internal";
    return std::nullopt;
}

namespace {

std::optional<std::string> detect_cluster_host(const ClusterFacts& facts, const char* otherwise) {
    auto host = guess_cluster_host(facts);
    runtime::NamedLogger log{"kopf.kits.webhooks"};
    if (host) {
        log.debug("Cluster detection found the hostname: {}", *host);
    } else {
        log.debug("Cluster detection failed, {}.", otherwise);
    }
    return host;
}

}  // namespace

void WebhookAutoServer::on_cluster(const ClusterFacts& facts) {
    guessed_host_ = detect_cluster_host(facts, "running a simple local server");
}

void WebhookAutoTunnel::on_cluster(const ClusterFacts& facts) {
    guessed_host_ = detect_cluster_host(facts, "and no tunnel is available");
}

void WebhookAutoTunnel::start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) {
    if (!guessed_host_) {
        throw std::runtime_error(
            "kopf::WebhookAutoTunnel found no local cluster (K3s/K3d, Minikube, Docker Desktop) "
            "by the API server's certificate and version, and its fallback, an ngrok tunnel, is "
            "not available in Kopf++: it has no client for ngrok's service. Serve the admission "
            "handlers with kopf::WebhookServer and a host that the cluster can reach, or with a "
            "server or tunnel of your own (see docs/admission.md).");
    }
    server_ = std::make_unique<WebhookServer>(WebhookServerOptions{.addr = options_.addr,
                                                                   .port = options_.port,
                                                                   .path = options_.path,
                                                                   .host = guessed_host_});
    server_->start(std::move(fn), std::move(configured));
}

void WebhookAutoTunnel::stop() {
    if (server_) server_->stop();
}

void WebhookNgrokTunnel::start(WebhookFn, std::function<void(WebhookClientConfig)>) {
    throw std::runtime_error(
        "kopf::WebhookNgrokTunnel is not available in Kopf++: it has no client for ngrok's "
        "service. Serve the admission handlers with kopf::WebhookServer and a host that the "
        "cluster can reach (kopf::WebhookK3dServer and kopf::WebhookMinikubeServer know the "
        "local clusters' host names), or with a server or tunnel of your own (a "
        "kopf::WebhookServerBase; see docs/admission.md).");
}

}  // namespace kopf
