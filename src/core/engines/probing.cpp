#include "core/engines/probing.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <kopf/registry.hpp>
#include <kopf/settings.hpp>
#include <stdexcept>

#include "core/actions/logging.hpp"
#include "core/engines/metrics.hpp"

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

namespace kopf::runtime {

struct Probes::State : std::enable_shared_from_this<Probes::State> {
    State(Executor& loop, const Registry& registry, OperatorSettings& settings, Memo& memo,
          Indices indices, double max_age)
        : loop(loop),
          registry(registry),
          settings(settings),
          memo(memo),
          indices(std::move(indices)),
          max_age(max_age) {}

    Executor& loop;
    const Registry& registry;
    OperatorSettings& settings;
    Memo& memo;
    Indices indices;
    double max_age;
    std::optional<double> collected_at;
    Report cached;
    bool running = false;
    std::vector<std::function<void(const Report&)>> waiting;

    // Runs every probe handler once, in registration order (Kopf's all-at-once activity).
    static Task<Report> run(std::shared_ptr<State> self) {
        NamedLogger log("kopf.activities.probe");
        Report report;
        for (const auto& handler : self->registry.activities) {
            if (handler.activity != "probe" || !handler.probe) continue;
            const auto started = std::chrono::system_clock::now();
            ActivityContext ctx{self->settings,
                                self->memo,
                                log,
                                "probe",
                                0,
                                started,
                                std::chrono::duration<double>(0),
                                handler.options.param};
            ctx.indices = self->indices;
            std::optional<std::string> failure;
            try {
                json result = co_await handler.probe(ctx);
                report.results[handler.id] = std::move(result);
            } catch (const std::exception& e) {
                failure = e.what();
            }
            if (failure) {
                if (handler.options.errors == ErrorsMode::IGNORED) {
                    log.error(fmt::format("Probe '{}' failed with an exception. Will ignore. {}",
                                          handler.id, *failure));
                    continue;
                }
                report.failure = fmt::format("Probe '{}' failed: {}", handler.id, *failure);
                log.error(*report.failure);
                co_return report;
            }
        }
        co_return report;
    }

    void finish(const Report& report) {
        running = false;
        if (!report.failure) {
            cached = report;
            collected_at = loop.now();
        }
        auto due = std::move(waiting);
        waiting.clear();
        for (auto& fn : due) fn(report);
    }
};

Probes::Probes(Executor& loop, const Registry& registry, OperatorSettings& settings, Memo& memo,
               Indices indices, double max_age)
    : state_(std::make_shared<State>(loop, registry, settings, memo, std::move(indices), max_age)) {
}

void Probes::collect(std::function<void(const Report&)> report) {
    auto& state = *state_;
    if (state.collected_at && state.loop.now() - *state.collected_at < state.max_age) {
        report(state.cached);
        return;
    }
    state.waiting.push_back(std::move(report));
    if (state.running) return;
    state.running = true;
    std::weak_ptr<State> weak = state_;
    kopf::start_detached<Report>(state.loop, State::run(state_),
                                 [weak](std::exception_ptr error, std::optional<Report> report) {
                                     auto self = weak.lock();
                                     if (!self) return;
                                     if (error || !report) {
                                         Report failed;
                                         failed.failure = "The probes could not run.";
                                         self->finish(failed);
                                         return;
                                     }
                                     self->finish(*report);
                                 });
}

struct LivenessServer::Impl : std::enable_shared_from_this<LivenessServer::Impl> {
    Impl(asio::io_context& io, tcp::endpoint endpoint, std::string path,
         std::shared_ptr<Probes> probes, bool serves_probes)
        : acceptor(io, endpoint),
          path(std::move(path)),
          probes(std::move(probes)),
          serves_probes(serves_probes) {}

    // The probes' report, awaited on the loop.
    asio::awaitable<Probes::Report> collect() {
        if (!probes) co_return Probes::Report{};
        auto arrived = std::make_shared<asio::steady_timer>(acceptor.get_executor(),
                                                            asio::steady_timer::time_point::max());
        auto report = std::make_shared<std::optional<Probes::Report>>();
        probes->collect([arrived, report](const Probes::Report& r) {
            *report = r;
            arrived->cancel();
        });
        boost::system::error_code ignored;
        if (!*report)
            co_await arrived->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        co_return report->value_or(Probes::Report{});
    }

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
        if (metrics && requested == metrics_path) {
            response.result(http::status::ok);
            response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            response.body() = metrics->scrape();
        } else if (serves_probes && (requested == path || (path.empty() && requested == "/"))) {
            const auto report = co_await collect();
            response.set(http::field::content_type, "application/json");
            if (report.failure) {
                response.result(http::status::internal_server_error);
                response.body() = json{{"error", *report.failure}}.dump();
            } else {
                response.result(http::status::ok);
                response.body() = report.results.dump();
            }
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
    std::shared_ptr<Probes> probes;
    bool serves_probes = true;
    std::string metrics_path;
    std::shared_ptr<engines::Metrics> metrics;
};

EndpointAddress parse_endpoint(const std::string& endpoint, const std::string& option) {
    auto url = boost::urls::parse_uri(endpoint);
    if (!url || url->scheme() != "http" || !url->has_port() || url->host().empty()) {
        throw std::invalid_argument(
            fmt::format("Invalid {} endpoint '{}': use http://HOST:PORT/PATH, e.g. "
                        "http://0.0.0.0:8080{} (only http:// is supported).",
                        option, endpoint, option == "--metrics" ? "/metrics" : "/healthz"));
    }
    boost::system::error_code ec;
    std::string host = url->host();
    if (host == "localhost") host = "127.0.0.1";
    asio::ip::make_address(host, ec);
    if (ec) {
        throw std::invalid_argument(
            fmt::format("Invalid {} endpoint '{}': the host must be an IP address (e.g. 0.0.0.0).",
                        option, endpoint));
    }
    return EndpointAddress{host, static_cast<int>(url->port_number()), std::string(url->path())};
}

LivenessServer::LivenessServer(asio::io_context& io, const std::string& endpoint,
                               std::shared_ptr<Probes> probes) {
    listen(io, endpoint, "--liveness", std::move(probes), true);
    // At INFO: with port 0, this line is where the chosen port shows.
    logger("kopf.engines.probing")
        ->info("Serving health status at http://{}:{}{}",
               impl_->acceptor.local_endpoint().address().to_string(), this->port(), impl_->path);
}

LivenessServer::LivenessServer(asio::io_context& io, const std::string& endpoint,
                               std::shared_ptr<engines::Metrics> metrics) {
    listen(io, endpoint, "--metrics", nullptr, false);
    serve_metrics(impl_->path.empty() ? "/" : impl_->path, std::move(metrics));
}

void LivenessServer::listen(asio::io_context& io, const std::string& endpoint,
                            const std::string& option, std::shared_ptr<Probes> probes,
                            bool serves_probes) {
    const auto address = parse_endpoint(endpoint, option);
    try {
        impl_ = std::make_shared<Impl>(io,
                                       tcp::endpoint(asio::ip::make_address(address.host),
                                                     static_cast<unsigned short>(address.port)),
                                       address.path, std::move(probes), serves_probes);
    } catch (const boost::system::system_error& error) {
        throw std::runtime_error(fmt::format("Cannot serve the {} endpoint {}: {}.", option,
                                             endpoint, error.code().message()));
    }
    asio::co_spawn(io, impl_->accept_loop(), asio::detached);
}

void LivenessServer::serve_metrics(std::string path, std::shared_ptr<engines::Metrics> metrics) {
    impl_->metrics_path = std::move(path);
    impl_->metrics = std::move(metrics);
    logger("kopf.engines.probing")
        ->info("Serving metrics at http://{}:{}{}",
               impl_->acceptor.local_endpoint().address().to_string(), port(), impl_->metrics_path);
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
