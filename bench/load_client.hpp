// A minimal blocking HTTP/1.1 keep-alive client for the benchmark tools (no framework): one
// request at a time per connection, plus a chunked-stream reader for watches. Only loopback,
// plain HTTP, no authentication — exactly what `kopf apiserver` accepts from local clients.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bench {

namespace http = boost::beast::http;

struct Endpoint {
    std::string host = "127.0.0.1";
    std::string port;

    // Accepts "http://127.0.0.1:PORT", "127.0.0.1:PORT" or "PORT".
    static Endpoint parse(const std::string& url) {
        Endpoint endpoint;
        std::string rest = url;
        if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
        while (!rest.empty() && rest.back() == '/') rest.pop_back();
        const auto colon = rest.rfind(':');
        if (colon == std::string::npos) {
            endpoint.port = rest;
        } else {
            endpoint.host = rest.substr(0, colon);
            endpoint.port = rest.substr(colon + 1);
        }
        if (endpoint.port.empty() ||
            endpoint.port.find_first_not_of("0123456789") != std::string::npos) {
            throw std::invalid_argument("not a plain-HTTP server URL with a port: '" + url + "'");
        }
        return endpoint;
    }
};

class Connection {
  public:
    explicit Connection(const Endpoint& endpoint) : stream_(ioc_) {
        boost::asio::ip::tcp::resolver resolver(ioc_);
        stream_.connect(resolver.resolve(endpoint.host, endpoint.port));
        stream_.socket().set_option(boost::asio::ip::tcp::no_delay(true));
    }

    http::response<http::string_body> send(http::verb verb, const std::string& target,
                                           std::string body = {},
                                           const char* content_type = "application/json") {
        http::request<http::string_body> request{verb, target, 11};
        request.set(http::field::host, "127.0.0.1");
        request.set(http::field::accept, "application/json");
        if (!body.empty()) {
            request.set(http::field::content_type, content_type);
            request.body() = std::move(body);
        }
        request.prepare_payload();
        http::write(stream_, request);
        http::response<http::string_body> response;
        http::response_parser<http::string_body> parser;
        parser.body_limit(boost::none);
        http::read(stream_, buffer_, parser);
        return parser.release();
    }

    // GETs `target` and hands the body to `on_data` as it arrives, until the server ends it
    // or `on_data` returns false. Returns the HTTP status.
    int stream(const std::string& target, const std::function<bool(std::string_view)>& on_data) {
        http::request<http::empty_body> request{http::verb::get, target, 11};
        request.set(http::field::host, "127.0.0.1");
        request.set(http::field::accept, "application/json");
        http::write(stream_, request);
        http::response_parser<http::buffer_body> parser;
        parser.body_limit(boost::none);
        http::read_header(stream_, buffer_, parser);
        const int status = parser.get().result_int();
        static constexpr std::size_t kChunk = 256 * 1024;
        std::string chunk(kChunk, '\0');
        while (!parser.is_done()) {
            parser.get().body().data = chunk.data();
            parser.get().body().size = kChunk;
            boost::beast::error_code ec;
            // read_some: hand over what has arrived instead of waiting for a full buffer.
            http::read_some(stream_, buffer_, parser, ec);
            if (ec && ec != http::error::need_buffer) break;
            const std::size_t got = kChunk - parser.get().body().size;
            if (got > 0 && !on_data(std::string_view(chunk.data(), got))) break;
        }
        return status;
    }

    void close() {
        boost::beast::error_code ignored;
        stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    }

  private:
    boost::asio::io_context ioc_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
};

// A fixed arrival rate: the i-th request is due at start + i / rate, whichever connection sends
// it (a late request does not shift the ones after it). A rate of 0 means as fast as possible.
inline void wait_until_due(std::chrono::steady_clock::time_point start, long i, double rate) {
    if (rate <= 0) return;
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(static_cast<double>(i) / rate)));
}

// Runs `work(index, connection)` for indexes [0, count) spread over `connections` threads.
inline void in_parallel(const Endpoint& endpoint, long count, long connections,
                        const std::function<void(long, Connection&)>& work) {
    std::vector<std::thread> threads;
    std::mutex failure_mutex;
    std::string failure;
    for (long c = 0; c < connections; ++c) {
        threads.emplace_back([&, c] {
            try {
                Connection connection(endpoint);
                for (long i = c; i < count; i += connections) work(i, connection);
            } catch (const std::exception& e) {
                std::lock_guard lock(failure_mutex);
                failure = e.what();
            }
        });
    }
    for (auto& thread : threads) thread.join();
    if (!failure.empty()) throw std::runtime_error(failure);
}

}  // namespace bench
