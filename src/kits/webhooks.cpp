// The webhook servers of kopf/webhooks.hpp (Kopf's kits/webhooks.py): an HTTPS (or HTTP)
// server on a thread of its own, which hands each AdmissionReview to the operator and writes
// back its answer. Beast + Asio + OpenSSL stay in this file.
#include "kopf/webhooks.hpp"

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

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

#include "clients/json_codec.hpp"
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

// What identifies a version of a file on disk (its target, through symlinks as Kubernetes'
// secret volumes swap them): a change of any means new content.
struct FileStamp {
    bool exists = false;
    long long mtime_ns = 0;
    long long size = 0;
    unsigned long long inode = 0;
    bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const std::optional<std::string>& path) {
    FileStamp stamp;
    struct stat info {};
    if (!path || ::stat(path->c_str(), &info) != 0) return stamp;
    stamp.exists = true;
    stamp.mtime_ns =
        static_cast<long long>(info.st_mtim.tv_sec) * 1'000'000'000LL + info.st_mtim.tv_nsec;
    stamp.size = static_cast<long long>(info.st_size);
    stamp.inode = static_cast<unsigned long long>(info.st_ino);
    return stamp;
}

// The reason of a failed OpenSSL call, as asio reports it.
std::string tls_reason(const boost::system::system_error& error) {
    return error.code().message();
}

// A TLS server context with the options' protocol versions, password and client verification,
// serving the given certificate files or, without them, the generated certificate. Errors name
// the file that failed.
std::shared_ptr<ssl::context> tls_context(const WebhookServerOptions& o,
                                          const kits::GeneratedCertificate* generated) {
    auto tls = std::make_shared<ssl::context>(ssl::context::tls_server);
    tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (o.password) {
        tls->set_password_callback(
            [password = *o.password](std::size_t, ssl::context::password_purpose) {
                return password;
            });
    }
    // Which step failed, for the error.
    auto attempt = [](const std::string& what, auto&& step) {
        try {
            step();
        } catch (const boost::system::system_error& error) {
            throw std::runtime_error(fmt::format("The webhook server's TLS setup failed: {}: {}.",
                                                 what, tls_reason(error)));
        }
    };
    if (generated) {
        attempt("the generated certificate", [&] {
            tls->use_certificate_chain(asio::buffer(generated->cert_pem));
            tls->use_private_key(asio::buffer(generated->key_pem), ssl::context::pem);
        });
    } else {
        attempt(fmt::format("the certificate file {}", *o.certfile),
                [&] { tls->use_certificate_chain_file(*o.certfile); });
        attempt(fmt::format("the private key file {} (its password, or its match with the "
                            "certificate)",
                            *o.pkeyfile),
                [&] { tls->use_private_key_file(*o.pkeyfile, ssl::context::pem); });
    }
    const bool verifies = o.verify_cafile || o.verify_capath || o.verify_cadata;
    if (o.verify_cafile) {
        attempt(fmt::format("the client CA file {}", *o.verify_cafile),
                [&] { tls->load_verify_file(*o.verify_cafile); });
    }
    if (o.verify_capath) {
        attempt(fmt::format("the client CA path {}", *o.verify_capath),
                [&] { tls->add_verify_path(*o.verify_capath); });
    }
    if (o.verify_cadata) {
        attempt("the client CA data",
                [&] { tls->add_certificate_authority(asio::buffer(*o.verify_cadata)); });
    }
    auto mode = o.verify_mode.value_or(verifies ? VerifyMode::OPTIONAL : VerifyMode::NONE);
    if (mode == VerifyMode::NONE && verifies) mode = VerifyMode::OPTIONAL;
    tls->set_verify_mode(mode == VerifyMode::NONE ? ssl::verify_none
                         : mode == VerifyMode::OPTIONAL
                             ? ssl::verify_peer
                             : ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    return tls;
}

// The CA bundle given to the API server for certificate files: the options' data, else the CA
// file, else the certificate file itself (a self-signed one, or its chain up to the CA).
std::string file_ca_bundle(const WebhookServerOptions& o) {
    if (o.cadata && !o.cadata->empty()) return *o.cadata;
    if (o.cafile) return read_file(*o.cafile, "CA file");
    if (o.certfile) return read_file(*o.certfile, "certificate file");
    return {};
}

void dump_ca_bundle(const std::optional<std::string>& cadump, const std::string& cadata) {
    if (!cadump || cadata.empty()) return;
    std::ofstream out(*cadump, std::ios::binary | std::ios::trunc);
    out << cadata;
    if (!out) throw std::runtime_error("Cannot write the webhook CA bundle to " + *cadump);
}

}  // namespace

struct WebhookServer::Impl : std::enable_shared_from_this<WebhookServer::Impl> {
    asio::io_context io{1};
    // The context of new TLS connections (none: plain HTTP); replaced when the certificate
    // files change, while the open connections keep the one they started with.
    std::shared_ptr<ssl::context> tls;
    // For the reloads of certificate files (on this server's thread).
    WebhookServerOptions options;
    std::function<void(WebhookClientConfig)> configured;
    WebhookClientConfig config;     // the last one given to `configured`
    std::vector<FileStamp> stamps;  // of certfile, pkeyfile, cafile when loaded
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
                // Read what the client still sends (within limits), so that it gets to read the
                // answer instead of a connection reset in the middle of its sending.
                beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
                std::vector<char> sink(64 * 1024);
                for (std::size_t drained = 0; drained < 4 * BODY_LIMIT;) {
                    auto [read_ec, n] =
                        co_await stream.async_read_some(asio::buffer(sink), use_tuple);
                    if (read_ec) break;
                    drained += n;
                }
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
        response.body() = clients::dump_json(answer.body);  // exactly dump(), faster
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

    asio::awaitable<void> serve_tls(tcp::socket socket, std::shared_ptr<ssl::context> context) {
        const std::string peer = remote(socket);
        beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *context);
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

    std::vector<FileStamp> file_stamps() const {
        return {stamp_of(options.certfile), stamp_of(options.pkeyfile), stamp_of(options.cafile)};
    }

    // cert-manager and Kubernetes' secret volumes replace the files in place: new connections
    // get the new certificate once it loads; a broken one is logged and the old one kept.
    asio::awaitable<void> watch_certificate_files(double interval) {
        asio::steady_timer timer(io);
        while (!stopped) {
            timer.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(
                std::chrono::duration<double>(interval)));
            auto [ec] = co_await timer.async_wait(use_tuple);
            if (ec || stopped) co_return;
            auto now = file_stamps();
            if (now == stamps) continue;
            stamps = std::move(now);  // a broken version is reported once, not at every check
            reload_certificate();
        }
    }

    void reload_certificate() {
        std::shared_ptr<ssl::context> context;
        std::string cadata;
        try {
            context = tls_context(options, nullptr);
            cadata = file_ca_bundle(options);
        } catch (const std::exception& error) {
            log.error(
                "The webhook server's new certificate is not used (the previous one is "
                "served): {}",
                error.what());
            return;
        }
        tls = std::move(context);
        log.info("The webhook server's certificate is reloaded from {}.", *options.certfile);
        if (cadata == config.ca_bundle) return;
        log.info("The webhook server's CA bundle has changed{}.",
                 configured ? ": the webhook configurations are updated" : "");
        config.ca_bundle = std::move(cadata);
        try {
            dump_ca_bundle(options.cadump, config.ca_bundle);
        } catch (const std::exception& error) {
            log.error("{}", error.what());
        }
        if (configured) configured(config);
    }

    asio::awaitable<void> accept_loop() {
        while (!stopped) {
            auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
            if (ec) break;
            if (tls) {
                asio::co_spawn(io, serve_tls(std::move(socket), tls), asio::detached);
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
    impl->options = o;
    std::string path = o.path.value_or("");
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (!path.empty() && path.front() != '/') path = "/" + path;
    impl->root = path;

    if (o.insecure && (o.certfile || o.pkeyfile)) {
        throw std::invalid_argument(
            "The webhook server cannot be insecure (HTTP) and have a certificate (HTTPS).");
    }
    if ((o.certfile != std::nullopt) != (o.pkeyfile != std::nullopt)) {
        throw std::invalid_argument(
            "The webhook server needs both a certificate file and a private key file.");
    }
    // The CA bundle for the API server (not used by this server itself).
    std::string cadata;
    const bool from_files = !o.insecure && o.certfile && o.pkeyfile;
    if (from_files) {
        impl->log.debug("Using a provided certificate for HTTPS.");
        impl->stamps = impl->file_stamps();
        impl->tls = tls_context(o, nullptr);
        cadata = file_ca_bundle(o);
    } else if (!o.insecure) {
        impl->log.debug("Generating a self-signed certificate for HTTPS.");
        const auto host = o.host ? o.host : default_host();
        const std::string addr = accessible_addr(o.addr);
        std::vector<std::string> hostnames = {host.value_or(addr), addr};
        hostnames.insert(hostnames.end(), o.extra_sans.begin(), o.extra_sans.end());
        const auto generated = kits::generate_certificate(hostnames, o.password);
        impl->tls = tls_context(o, &generated);
        cadata = generated.ca_pem;  // the self-signed CA, whatever was given
    } else {
        cadata = o.cadata.value_or("");
        if (cadata.empty() && o.cafile) cadata = read_file(*o.cafile, "CA file");
    }
    dump_ca_bundle(o.cadump, cadata);

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
    impl->config = config;
    impl->configured = configured;

    asio::co_spawn(impl->io, impl->accept_loop(), asio::detached);
    if (from_files && o.reload_interval > 0) {
        asio::co_spawn(impl->io, impl->watch_certificate_files(o.reload_interval), asio::detached);
    }
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
