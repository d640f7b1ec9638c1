#include "raw_server.hpp"

#include <fmt/format.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

namespace kopf::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct RawServer::Impl {
    std::function<RawReply(const std::string&)> script;
    asio::io_context io;
    tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    std::thread thread;
    mutable std::mutex mutex;
    std::vector<std::string> heads;
    std::vector<std::shared_ptr<tcp::socket>> held;
    std::vector<std::thread> workers;
    std::atomic<bool> stopping{false};

    void serve() {
        while (!stopping) {
            auto socket = std::make_shared<tcp::socket>(io);
            boost::system::error_code ec;
            acceptor.accept(*socket, ec);
            if (ec || stopping) return;
            std::lock_guard lock(mutex);
            workers.emplace_back([this, socket] { handle(socket); });
        }
    }

    void handle(std::shared_ptr<tcp::socket> socket) {
        asio::streambuf buffer;
        boost::system::error_code ec;
        const std::size_t head_size = asio::read_until(*socket, buffer, "\r\n\r\n", ec);
        if (ec) return;
        std::string head(
            asio::buffers_begin(buffer.data()),
            asio::buffers_begin(buffer.data()) + static_cast<std::ptrdiff_t>(head_size));
        std::istream stream(&buffer);
        std::string line;
        std::getline(stream, line);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        {
            std::lock_guard lock(mutex);
            heads.push_back(std::move(head));
        }
        auto reply = script(line);
        asio::write(*socket, asio::buffer(reply.bytes), ec);
        for (const auto& piece : reply.trickle) {
            std::this_thread::sleep_for(reply.trickle_every);
            if (ec || stopping) break;
            asio::write(*socket, asio::buffer(piece), ec);
        }
        if (reply.hold_open) {
            std::lock_guard lock(mutex);
            held.push_back(socket);
            return;
        }
        socket->shutdown(tcp::socket::shutdown_both, ec);
        socket->close(ec);
    }
};

RawServer::RawServer(std::function<RawReply(const std::string&)> script)
    : impl_(std::make_unique<Impl>()) {
    impl_->script = std::move(script);
    impl_->thread = std::thread([this] { impl_->serve(); });
}

RawServer::~RawServer() {
    impl_->stopping = true;
    boost::system::error_code ec;
    {
        // Unblock accept() by connecting once.
        tcp::socket poke(impl_->io);
        poke.connect(impl_->acceptor.local_endpoint(), ec);
    }
    impl_->thread.join();
    impl_->acceptor.close(ec);
    std::vector<std::thread> workers;
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& socket : impl_->held) socket->close(ec);
        workers.swap(impl_->workers);
    }
    for (auto& worker : workers) worker.join();
}

std::string RawServer::url() const {
    return fmt::format("http://127.0.0.1:{}", impl_->acceptor.local_endpoint().port());
}

std::vector<std::string> RawServer::requests() const {
    std::vector<std::string> lines;
    for (const auto& head : heads()) lines.push_back(head.substr(0, head.find("\r\n")));
    return lines;
}

std::vector<std::string> RawServer::heads() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->heads;
}

std::string RawServer::json_response(const std::string& body) {
    return fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        body.size(), body);
}

std::string RawServer::chunked_head() {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: "
           "chunked\r\n\r\n";
}

std::string RawServer::chunk(const std::string& data) {
    return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

}  // namespace kopf::testing
