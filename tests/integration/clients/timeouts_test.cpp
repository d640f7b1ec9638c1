// Connection timeouts (settings.networking.connect_timeout, settings.watching.connect_timeout)
// against a peer that takes TCP connections but never answers the TLS handshake: the connect
// timeout bounds the connecting when set; when not set (Kopf's default), the request's own
// timeout does, and nothing else.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "clients/errors.hpp"
#include "clients/transport.hpp"
#include "support/fixture.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

// Listens on a loopback port and never accepts: the kernel completes the TCP handshakes, and
// the clients' TLS handshakes wait for an answer that never comes.
class SilentPeer {
  public:
    SilentPeer() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = 0;
        socklen_t length = sizeof(address);
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
            ::listen(fd_, 16) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            throw std::runtime_error("cannot listen on a loopback port");
        }
        port_ = ntohs(address.sin_port);
    }
    ~SilentPeer() { ::close(fd_); }
    SilentPeer(const SilentPeer&) = delete;
    SilentPeer& operator=(const SilentPeer&) = delete;

    ConnectionInfo credentials() const {
        ConnectionInfo info;
        info.server = "https://127.0.0.1:" + std::to_string(port_);
        info.insecure = true;
        return info;
    }

  private:
    int fd_ = -1;
    int port_ = 0;
};

class ConnectTimeouts : public ClientTest {};

std::string failure_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const ConnectionError& error) {
        return error.what();
    }
    return "no failure";
}

TEST_F(ConnectTimeouts, TheConnectTimeoutBoundsAConnectionThatIsNeverEstablished) {
    SilentPeer peer;
    auto settings = fast_settings();
    settings.error_backoffs = {};
    settings.connect_timeout = Seconds(0.3);
    settings.request_timeout = Seconds(3600);
    auto api = make_client(peer.credentials(), settings);
    EXPECT_NE(failure_of([&] { run(api->request("GET", "/version")); }).find("connect timeout"),
              std::string::npos);
}

// Kopf's default: no connect timeout of its own; the request timeout bounds the connecting
// (it bounded it by 30 s of its own before, whatever the request timeout).
TEST_F(ConnectTimeouts, WithoutAConnectTimeoutTheRequestTimeoutBoundsTheConnecting) {
    EXPECT_FALSE(ClientSettings{}.connect_timeout);
    SilentPeer peer;
    auto settings = fast_settings();
    settings.error_backoffs = {};
    settings.connect_timeout.reset();
    settings.request_timeout = Seconds(0.3);
    auto api = make_client(peer.credentials(), settings);
    EXPECT_NE(failure_of([&] { run(api->request("GET", "/version")); }).find("timeout"),
              std::string::npos);
}

TEST_F(ConnectTimeouts, AStreamsConnectTimeoutBoundsItsConnecting) {
    SilentPeer peer;
    Transport transport(io.get_executor(), 0);
    HttpRequest request;
    request.target = "/api/v1/configmaps?watch=true";
    clients::Timeouts timeouts{Seconds(0.3), Seconds(3600)};
    const std::string failure = failure_of([&] {
        run(transport.stream(
            peer.credentials(), request, timeouts, Seconds(3600), std::nullopt,
            [](std::string_view) {}, nullptr));
    });
    EXPECT_NE(failure.find("connect timeout"), std::string::npos) << failure;
}

}  // namespace
}  // namespace kopf::testing
