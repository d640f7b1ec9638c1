#include "core/engines/probing.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <stdexcept>

#include "core/actions/logging.hpp"

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

namespace kopf::runtime {

struct LivenessServer::Impl : std::enable_shared_from_this<LivenessServer::Impl> {
    Impl(asio::io_context& io, tcp::endpoint endpoint, std::string path)
        : acceptor(io, endpoint), path(std::move(path)) {}

    asio::awaitable<void> accept_loop() {
        auto self = shared_from_this();
        while (acceptor.is_open()) {
            auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
            if (ec) break;
            asio::co_spawn(acceptor.get_executor(), serve(std::move(socket)), asio::detached);
        }
    }

    asio::awaitable<void> serve(tcp::socket socket) {
        boost::beast::flat_buffer buffer;
        http::request<http::string_body> request;
        auto [ec, bytes] =
            co_await http::async_read(socket, buffer, request, asio::as_tuple(asio::use_awaitable));
        (void)bytes;
        if (ec) co_return;
        const std::string target(request.target());
        const std::string requested = target.substr(0, target.find('?'));
        http::response<http::string_body> response;
        response.version(request.version());
        response.keep_alive(false);
        if (requested == path || (path.empty() && requested == "/")) {
            response.result(http::status::ok);
            response.set(http::field::content_type, "application/json");
            response.body() = "{}";
        } else {
            response.result(http::status::not_found);
            response.set(http::field::content_type, "text/plain");
            response.body() = "Not found.";
        }
        response.prepare_payload();
        co_await http::async_write(socket, response, asio::as_tuple(asio::use_awaitable));
        boost::system::error_code ignored;
        socket.shutdown(tcp::socket::shutdown_both, ignored);
    }

    tcp::acceptor acceptor;
    std::string path;
};

LivenessServer::LivenessServer(asio::io_context& io, const std::string& endpoint) {
    auto url = boost::urls::parse_uri(endpoint);
    if (!url || url->scheme() != "http" || !url->has_port() || url->host().empty()) {
        throw std::invalid_argument(
            fmt::format("Invalid --liveness endpoint '{}': use http://HOST:PORT/PATH, e.g. "
                        "http://0.0.0.0:8080/healthz (only http:// is supported).",
                        endpoint));
    }
    boost::system::error_code ec;
    std::string host = url->host();
    if (host == "localhost") host = "127.0.0.1";
    const auto address = asio::ip::make_address(host, ec);
    if (ec) {
        throw std::invalid_argument(fmt::format(
            "Invalid --liveness endpoint '{}': the host must be an IP address (e.g. 0.0.0.0).",
            endpoint));
    }
    const int port = static_cast<int>(url->port_number());
    try {
        impl_ =
            std::make_shared<Impl>(io, tcp::endpoint(address, static_cast<unsigned short>(port)),
                                   std::string(url->path()));
    } catch (const boost::system::system_error& error) {
        throw std::runtime_error(fmt::format("Cannot serve the liveness endpoint {}: {}.", endpoint,
                                             error.code().message()));
    }
    asio::co_spawn(io, impl_->accept_loop(), asio::detached);
    logger("kopf.engines.probing")
        ->debug("Serving health status at http://{}:{}{}", host, this->port(), impl_->path);
}

LivenessServer::~LivenessServer() {
    stop();
}

int LivenessServer::port() const {
    return impl_->acceptor.local_endpoint().port();
}

void LivenessServer::stop() {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
}

}  // namespace kopf::runtime
