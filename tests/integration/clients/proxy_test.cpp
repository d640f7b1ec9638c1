// settings.networking.trust_env: the client connects through the proxy that the environment
// names (https_proxy / http_proxy / all_proxy, no_proxy), with a CONNECT tunnel through which
// TLS goes end to end; without trust_env, the environment is not looked at.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clients/errors.hpp"
#include "support/fixture.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

int listen_on_loopback(int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(fd, 16) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("cannot listen on a loopback port");
    }
    port = ntohs(address.sin_port);
    return fd;
}

// A CONNECT proxy on a loopback port: records the request heads it gets, answers with
// `answer` (a 200 opens the tunnel to the requested loopback port and relays both ways).
class ConnectProxy {
  public:
    explicit ConnectProxy(std::string answer = "HTTP/1.1 200 Connection established\r\n\r\n")
        : answer_(std::move(answer)) {
        fd_ = listen_on_loopback(port_);
        thread_ = std::thread([this] { serve(); });
    }
    ~ConnectProxy() {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
        for (auto& relay : relays_) relay.join();
    }
    ConnectProxy(const ConnectProxy&) = delete;
    ConnectProxy& operator=(const ConnectProxy&) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<std::string> heads() const {
        std::lock_guard lock(mutex_);
        return heads_;
    }

  private:
    void serve() {
        while (true) {
            const int client = ::accept(fd_, nullptr, nullptr);
            if (client < 0) return;
            std::string head;
            char c;
            while (head.find("\r\n\r\n") == std::string::npos && ::read(client, &c, 1) == 1)
                head += c;
            {
                std::lock_guard lock(mutex_);
                heads_.push_back(head);
            }
            (void)!::write(client, answer_.data(), answer_.size());
            if (answer_.find(" 200 ") == std::string::npos) {
                ::close(client);
                continue;
            }
            const auto colon = head.find(':', head.find(' '));
            const int port = std::stoi(head.substr(colon + 1));
            const int server = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in address{};
            address.sin_family = AF_INET;
            address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            address.sin_port = htons(static_cast<std::uint16_t>(port));
            if (::connect(server, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
                ::close(client);
                ::close(server);
                continue;
            }
            relays_.emplace_back([client, server] { relay(client, server); });
        }
    }
    static void relay(int a, int b) {
        pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
        char buffer[16384];
        while (::poll(fds, 2, 10000) > 0) {
            bool ended = false;
            for (int i = 0; i < 2; ++i) {
                if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                const auto n = ::read(fds[i].fd, buffer, sizeof buffer);
                if (n <= 0 || ::write(fds[1 - i].fd, buffer, static_cast<std::size_t>(n)) != n)
                    ended = true;
            }
            if (ended) break;
        }
        ::close(a);
        ::close(b);
    }

    std::string answer_;
    int fd_ = -1;
    int port_ = 0;
    std::thread thread_;
    std::vector<std::thread> relays_;
    mutable std::mutex mutex_;
    std::vector<std::string> heads_;
};

class Proxies : public ClientTest {
  protected:
    void TearDown() override {
        for (const char* name : {"https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"})
            ::unsetenv(name);
        ClientTest::TearDown();
    }
    std::unique_ptr<ApiClient> client(bool trust_env) {
        auto settings = fast_settings();
        settings.error_backoffs = {};
        settings.trust_env = trust_env;
        return make_client(admin(), settings);
    }
    std::string server_authority() const {
        return server->url().substr(server->url().find("://") + 3);
    }
};

TEST_F(Proxies, WithTrustEnvTheRequestsGoThroughTheEnvironmentsProxy) {
    ConnectProxy proxy;
    ::setenv("HTTPS_PROXY", proxy.url().c_str(), 1);
    auto api = client(true);
    const json version = run(api->request("GET", "/version"));  // TLS end to end, verified
    EXPECT_TRUE(version.contains("gitVersion")) << version;
    const auto heads = proxy.heads();
    ASSERT_EQ(heads.size(), 1u);  // one tunnel, kept alive
    EXPECT_EQ(heads[0].rfind("CONNECT " + server_authority() + " HTTP/1.1\r\n", 0), 0u) << heads[0];
}

TEST_F(Proxies, TheProxysCredentialsAreSentFromItsUrl) {
    ConnectProxy proxy;
    const std::string url = "http://someone:secret@" + proxy.url().substr(7);
    ::setenv("https_proxy", url.c_str(), 1);
    auto api = client(true);
    run(api->request("GET", "/version"));
    ASSERT_EQ(proxy.heads().size(), 1u);
    // base64("someone:secret")
    EXPECT_NE(proxy.heads()[0].find("Proxy-Authorization: Basic c29tZW9uZTpzZWNyZXQ=\r\n"),
              std::string::npos)
        << proxy.heads()[0];
}

TEST_F(Proxies, WithoutTrustEnvTheEnvironmentIsNotLookedAt) {
    ConnectProxy proxy;
    ::setenv("HTTPS_PROXY", proxy.url().c_str(), 1);
    auto api = client(false);
    run(api->request("GET", "/version"));
    EXPECT_TRUE(proxy.heads().empty());
}

TEST_F(Proxies, NoProxyNamesTheHostsReachedDirectly) {
    ConnectProxy proxy;
    ::setenv("HTTPS_PROXY", proxy.url().c_str(), 1);
    ::setenv("NO_PROXY", "example.com, 127.0.0.1", 1);
    auto api = client(true);
    run(api->request("GET", "/version"));
    EXPECT_TRUE(proxy.heads().empty());
}

TEST_F(Proxies, AProxyRefusingTheTunnelIsNamedInTheError) {
    ConnectProxy proxy("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n");
    ::setenv("HTTPS_PROXY", proxy.url().c_str(), 1);
    auto api = client(true);
    try {
        run(api->request("GET", "/version"));
        ADD_FAILURE() << "no error";
    } catch (const ConnectionError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find(proxy.url()), std::string::npos) << message;
        EXPECT_NE(message.find("407"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace kopf::testing
