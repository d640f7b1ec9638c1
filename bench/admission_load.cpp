// The load side of the `admission` benchmark group (bench/run.sh drives it): AdmissionReviews
// sent to an operator's webhook server over ONE keep-alive HTTPS connection, as kube-apiserver
// sends them, one at a time (the next when the answer has come), with each review's latency.
//
//   admission_load reviews --url https://127.0.0.1:PORT/validate_fn --ca CA.pem --seconds S
//                          [--rate R] [--spec-bytes 1024] [--warmup 1]
//
// Without --rate, as fast as the server answers (closed loop): reviews/s and latency p50/p99.
// With --rate R, the i-th review is due at start + i/R; its latency runs from when it was due
// (not when it was sent), so a slow answer that delays the next ones counts against them too.
// Every figure is printed as one line "<name>: ..." that bench/run.sh picks up.
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using Clock = std::chrono::steady_clock;

struct Url {
    std::string host, port, target;
    static Url parse(const std::string& url) {
        const std::string scheme = "https://";
        if (url.rfind(scheme, 0) != 0) throw std::invalid_argument("not an https:// URL: " + url);
        const std::string rest = url.substr(scheme.size());
        const auto slash = rest.find('/');
        const std::string netloc = rest.substr(0, slash);
        const auto colon = netloc.rfind(':');
        if (colon == std::string::npos) throw std::invalid_argument("no port in " + url);
        return {netloc.substr(0, colon), netloc.substr(colon + 1),
                slash == std::string::npos ? "/" : rest.substr(slash)};
    }
};

// A CREATE of a BenchObject as kube-apiserver reviews it (admission.k8s.io/v1).
std::string review_body(long spec_bytes) {
    nlohmann::json object = {
        {"apiVersion", "bench.kopf.dev/v1"},
        {"kind", "BenchObject"},
        {"metadata",
         {{"name", "bench-0000001"},
          {"namespace", "default"},
          {"uid", "8e2ee5b0-6a2f-4d4d-9d4b-4b1f7a5c0001"},
          {"creationTimestamp", "2026-11-26T09:00:00Z"}}},
        {"spec",
         {{"field", "valid"}, {"filler", std::string(static_cast<std::size_t>(spec_bytes), 'x')}}}};
    nlohmann::json request = {
        {"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
        {"kind", {{"group", "bench.kopf.dev"}, {"version", "v1"}, {"kind", "BenchObject"}}},
        {"resource",
         {{"group", "bench.kopf.dev"}, {"version", "v1"}, {"resource", "benchobjects"}}},
        {"requestKind", {{"group", "bench.kopf.dev"}, {"version", "v1"}, {"kind", "BenchObject"}}},
        {"requestResource",
         {{"group", "bench.kopf.dev"}, {"version", "v1"}, {"resource", "benchobjects"}}},
        {"name", "bench-0000001"},
        {"namespace", "default"},
        {"operation", "CREATE"},
        {"userInfo",
         {{"username", "admin"}, {"groups", {"system:masters", "system:authenticated"}}}},
        {"object", object},
        {"oldObject", nullptr},
        {"dryRun", false},
        {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}};
    return nlohmann::json{
        {"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}}
        .dump();
}

class Client {
  public:
    Client(const Url& url, const std::string& ca_file)
        : url_(url), tls_(ssl::context::tls_client), stream_(io_, tls_) {
        tls_.load_verify_file(ca_file);
        tls_.set_verify_mode(ssl::verify_peer);
        asio::ip::tcp::resolver resolver(io_);
        beast::get_lowest_layer(stream_).connect(resolver.resolve(url.host, url.port));
        beast::get_lowest_layer(stream_).socket().set_option(asio::ip::tcp::no_delay(true));
        stream_.handshake(ssl::stream_base::client);
    }
    // One review; throws unless it is answered 200 and allowed.
    void review(const std::string& body) {
        http::request<http::string_body> request{http::verb::post, url_.target, 11};
        request.set(http::field::host, url_.host);
        request.set(http::field::content_type, "application/json");
        request.set(http::field::accept, "application/json, */*");
        request.keep_alive(true);
        request.body() = body;
        request.prepare_payload();
        http::write(stream_, request);
        http::response<http::string_body> response;
        http::read(stream_, buffer_, response);
        if (response.result_int() != 200 ||
            response.body().find("\"allowed\":true") == std::string::npos) {
            throw std::runtime_error("the review was not allowed: HTTP " +
                                     std::to_string(response.result_int()) + " " + response.body());
        }
    }

  private:
    Url url_;
    asio::io_context io_;
    ssl::context tls_;
    beast::ssl_stream<beast::tcp_stream> stream_;
    beast::flat_buffer buffer_;
};

double percentile_ms(std::vector<double>& latencies, double p) {
    if (latencies.empty()) return 0;
    std::sort(latencies.begin(), latencies.end());
    const auto index = static_cast<std::size_t>(p * static_cast<double>(latencies.size() - 1));
    return latencies[index] * 1e3;
}

int command_reviews(const std::map<std::string, std::string>& flags) {
    auto text = [&](const std::string& name, const std::string& fallback = "") {
        auto it = flags.find(name);
        if (it != flags.end()) return it->second;
        if (fallback.empty()) throw std::invalid_argument("missing option --" + name);
        return fallback;
    };
    const Url url = Url::parse(text("url"));
    const double seconds = std::stod(text("seconds", "10"));
    const double rate = std::stod(text("rate", "0"));
    const double warmup = std::stod(text("warmup", "1"));
    const std::string body = review_body(std::stol(text("spec-bytes", "1024")));
    Client client(url, text("ca"));

    // Warm up (connection, the handler's first calls), then measure.
    const auto warm_until = Clock::now() + std::chrono::duration<double>(warmup);
    while (Clock::now() < warm_until) client.review(body);

    std::vector<double> latencies;
    latencies.reserve(200000);
    const auto start = Clock::now();
    const auto end =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    long sent = 0;
    while (true) {
        Clock::time_point due = Clock::now();
        if (rate > 0) {
            due = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(static_cast<double>(sent) / rate));
            if (due >= end) break;
            std::this_thread::sleep_until(due);
        } else if (due >= end) {
            break;
        }
        client.review(body);
        ++sent;
        latencies.push_back(std::chrono::duration<double>(Clock::now() - due).count());
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double max_ms =
        latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end()) * 1e3;
    const double p50 = percentile_ms(latencies, 0.50);
    const double p99 = percentile_ms(latencies, 0.99);
    if (rate > 0) {
        std::printf(
            "reviews-at-rate: %ld reviews at %.0f/s in %.2f s over one keep-alive "
            "connection: latency p50 %.3f ms p99 %.3f ms max %.3f ms\n",
            sent, rate, elapsed, p50, p99, max_ms);
    } else {
        std::printf(
            "reviews: %ld reviews in %.2f s over one keep-alive connection = %.0f "
            "reviews/s, latency p50 %.3f ms p99 %.3f ms max %.3f ms\n",
            sent, elapsed, static_cast<double>(sent) / elapsed, p50, p99, max_ms);
    }
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: admission_load reviews --url https://127.0.0.1:PORT/HANDLER --ca FILE "
                 "[--seconds S] [--rate R] [--spec-bytes B] [--warmup S]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string command = argv[1];
    std::map<std::string, std::string> flags;
    for (int i = 2; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag.rfind("--", 0) != 0 || i + 1 >= argc) return usage();
        flags[flag.substr(2)] = argv[i + 1];
    }
    try {
        if (command == "reviews") return command_reviews(flags);
        std::fprintf(stderr, "admission_load: unknown command '%s'\n", command.c_str());
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "admission_load %s: %s\n", command.c_str(), e.what());
        return 1;
    }
}
