// A port for an API server that a test stops and starts again at the same address. Ports given
// out by the kernel (to a server bound to port 0, to an outgoing connection) come from its
// ephemeral range: such a port, once its server is stopped, may be given to another test's
// server or connection before the restart, which then fails with "Address already in use" (seen
// once in CI). A port below that range is handed out by nobody.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <stdexcept>

namespace kopf::testing {

// The lowest port of the kernel's ephemeral range.
inline int ephemeral_ports_start() {
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    int low = 0;
    return range >> low ? low : 32768;
}

// Whether a server could listen on 127.0.0.1:`port` now.
inline bool loopback_port_is_free(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free =
        ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
        ::listen(fd, 1) == 0;
    ::close(fd);
    return free;
}

// A free loopback port below the ephemeral range, for a server the test restarts on it.
inline int restartable_port() {
    const int below = std::min(ephemeral_ports_start(), 65536);
    if (below <= 20000)
        throw std::runtime_error("the kernel's ephemeral port range starts too low");
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> ports(10000, below - 1);
    for (int attempt = 0; attempt < 100; ++attempt) {
        const int port = ports(random);
        if (loopback_port_is_free(port)) return port;
    }
    throw std::runtime_error("no free loopback port below the kernel's ephemeral range");
}

}  // namespace kopf::testing
