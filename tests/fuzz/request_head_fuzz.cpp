// Fuzz target: HTTP requests as the embedded API server reads them from a connection — Beast's
// parser with the server's limits, the server's own framing check (a Transfer-Encoding that is
// not chunked), the decoding of the target, query and headers (net::decode_request), and then
// the API core's handling of whatever request that is (routing, discovery, selectors, list
// options, bodies in JSON and YAML). Every request that parses must get an answer, never an
// exception or a crash.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz/support/fuzz.hpp"
#include "net/request_head.hpp"
#include "unit/apiserver/core/support/harness.hpp"

namespace {

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;
namespace http = boost::beast::http;

struct Cluster {
    ApiCore core{CoreOptions{}};
    Cluster() {
        install_widgets(core);
        post(core, "/apis/example.com/v1/namespaces/default/widgets", widget("widget-1", 2));
        post(core, "/api/v1/namespaces/default/configmaps", configmap("cm-1"));
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Cluster cluster;
    http::request_parser<http::string_body> parser;
    parser.eager(true);
    parser.body_limit(1024 * 1024);
    parser.header_limit(64 * 1024);
    boost::system::error_code ec;
    std::size_t used = 0;
    while (used < size && !parser.is_done()) {
        const std::size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
        used += n;
        if (ec || n == 0) break;
    }
    if (!parser.is_done()) return 0;
    if (!parser.chunked() && !parser.content_length() &&
        parser.get().count(http::field::transfer_encoding))
        return 0;  // refused by the server before decoding (see Server::Impl::serve)
    auto message = parser.release();
    HttpRequest request;
    if (net::decode_request(message, request)) return 0;  // answered 400 by the server
    try {
        HttpResponse response = cluster.core.handle(request);
        (void)body_of(response);
    } catch (const std::exception& e) {
        kopf::fuzz::violated("ApiCore::handle() threw", e.what());
    }
    return 0;
}
