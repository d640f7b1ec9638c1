#include "cluster.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <stdexcept>

#include "clients/api.hpp"
#include "clients/errors.hpp"

namespace kopf::testing {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

structs::Resource kopfexamples() {
    structs::Resource resource;
    resource.group = "kopf.dev";
    resource.version = "v1";
    resource.plural = "kopfexamples";
    resource.kind = "KopfExample";
    resource.singular = "kopfexample";
    resource.subresources = {"status"};
    resource.namespaced = true;
    return resource;
}

structs::Resource crds() {
    structs::Resource resource;
    resource.group = "apiextensions.k8s.io";
    resource.version = "v1";
    resource.plural = "customresourcedefinitions";
    resource.kind = "CustomResourceDefinition";
    resource.namespaced = false;
    return resource;
}

// The same CRD as examples/crd.yaml (Kopf's examples), with the status subresource.
json kopfexamples_crd() {
    json preserved = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    return {{"apiVersion", "apiextensions.k8s.io/v1"},
            {"kind", "CustomResourceDefinition"},
            {"metadata", {{"name", "kopfexamples.kopf.dev"}}},
            {"spec",
             {{"scope", "Namespaced"},
              {"group", "kopf.dev"},
              {"names",
               {{"kind", "KopfExample"},
                {"plural", "kopfexamples"},
                {"singular", "kopfexample"},
                {"shortNames", {"kex"}}}},
              {"versions",
               {{{"name", "v1"},
                 {"served", true},
                 {"storage", true},
                 {"subresources", {{"status", json::object()}}},
                 {"schema",
                  {{"openAPIV3Schema",
                    {{"type", "object"},
                     {"properties", {{"spec", preserved}, {"status", preserved}}}}}}}}}}}}};
}

}  // namespace

// The client layer on its own io_context thread; calls from the test thread block on futures.
struct HandlingTest::Client {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::unique_ptr<clients::ApiClient> api;
    std::thread thread;

    explicit Client(const ConnectionInfo& admin) {
        auto vault = std::make_shared<structs::Vault>();
        vault->populate({{"admin", admin}});
        clients::ClientSettings settings;
        settings.error_backoffs = {0.05, 0.1, 0.2, 0.5, 1, 1, 2, 3};
        settings.request_timeout = clients::Seconds(30);
        api = std::make_unique<clients::ApiClient>(
            io.get_executor(), vault,
            [admin] {
                return std::map<std::string, ConnectionInfo>{{"admin", admin}};
            },
            settings);
        thread = std::thread([this] { io.run(); });
    }
    ~Client() {
        // Stop the loop first: the client's connections close with it (as in the client tests).
        work.reset();
        io.stop();
        thread.join();
        api.reset();
    }
    template <class T>
    T call(asio::awaitable<T> awaitable) {
        return asio::co_spawn(io, std::move(awaitable), asio::use_future).get();
    }
};

std::string HandlingTest::run_until_it_fails(Registry& registry, const OperatorSettings& settings,
                                             const std::function<void(RunOptions&)>& customize) {
    RunOptions options;
    options.namespaces = {"default"};
    options.standalone = true;
    options.registry = &registry;
    options.settings = &settings;
    if (customize) customize(options);
    try {
        operator_(options);
    } catch (const std::exception& error) {
        return error.what();
    }
    return "no failure";
}

OperatorThread::OperatorThread(Registry& registry, const OperatorSettings& settings,
                               std::function<void(RunOptions&)> customize)
    : settings_(settings) {
    thread_ = std::thread([this, &registry, customize = std::move(customize)] {
        RunOptions options;
        options.namespaces = {"default"};
        options.standalone = true;
        options.registry = &registry;
        options.settings = &settings_;
        options.stop_flag = &stop_;
        options.ready_flag = &ready_;
        if (customize) customize(options);
        try {
            operator_(options);
        } catch (const std::exception& error) {
            failure_ = error.what();
        }
        ready_.set();
    });
    if (!ready_.wait_for(std::chrono::seconds(60))) failure_ = "the operator did not get ready";
    EXPECT_EQ(failure_, "") << "the operator failed to start";
}

OperatorThread::~OperatorThread() {
    stop();
}

std::string OperatorThread::stop() {
    stop_.set();
    if (thread_.joinable()) thread_.join();
    return failure_;
}

void HandlingTest::SetUp() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("kopf-handling-" + std::to_string(::getpid()) + "-" + test->name());
    fs::create_directories(dir_);
    apiserver::ServerOptions options;
    options.port = 0;
    options.tls = true;
    options.bookmark_interval = std::chrono::milliseconds(1000);
    options.kubeconfig_out = dir_ / "kubeconfig.yaml";
    server = std::make_unique<apiserver::Server>(options);
    server->start();
    // The operator logs in with its built-in kubeconfig login, as `kopf run` does.
    ::setenv("KUBECONFIG", options.kubeconfig_out.c_str(), 1);

    ConnectionInfo admin;
    admin.server = server->url();
    admin.ca_data = server->ca_cert_pem();
    admin.scheme = "Bearer";
    admin.token = server->admin_token();
    client_ = std::make_shared<Client>(admin);
    client_->call(client_->api->create(crds(), "", kopfexamples_crd()));
    // The CRD is served once discovery lists it.
    ASSERT_TRUE(eventually([&] {
        for (const auto& resource : client_->call(client_->api->discover()))
            if (resource.plural == "kopfexamples") return true;
        return false;
    })) << "kopfexamples never appeared in discovery";
}

void HandlingTest::TearDown() {
    client_.reset();
    if (server) server->stop();
    server.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
}

OperatorSettings HandlingTest::fast_settings() {
    OperatorSettings settings;
    settings.networking.error_backoffs = {0.1, 0.1, 0.2, 0.3, 0.5, 1, 1, 2};
    settings.networking.request_timeout = 30;
    settings.queueing.idle_timeout = 1;
    settings.queueing.exit_timeout = 2;
    return settings;
}

std::unique_ptr<OperatorThread> HandlingTest::start_operator(
    Registry& registry, const OperatorSettings& settings,
    std::function<void(RunOptions&)> customize) {
    return std::make_unique<OperatorThread>(registry, settings, std::move(customize));
}

json HandlingTest::example(const std::string& name, const json& spec, const json& metadata) {
    json body = {{"apiVersion", "kopf.dev/v1"},
                 {"kind", "KopfExample"},
                 {"metadata", {{"name", name}, {"namespace", "default"}}},
                 {"spec", spec}};
    body["metadata"].update(metadata);
    return body;
}

json HandlingTest::create(const json& body) {
    return client_->call(client_->api->create(kopfexamples(), "default", body));
}

std::optional<json> HandlingTest::get(const std::string& name) {
    try {
        return client_->call(client_->api->get(kopfexamples(), "default", name));
    } catch (const clients::NotFoundError&) {
        return std::nullopt;
    }
}

json HandlingTest::patch(const std::string& name, const json& merge_patch) {
    return client_->call(client_->api->patch(kopfexamples(), "default", name,
                                             clients::PatchType::Merge, merge_patch));
}

void HandlingTest::remove(const std::string& name) {
    client_->call(client_->api->remove(kopfexamples(), "default", name));
}

json HandlingTest::request(const std::string& method, const std::string& path, const json& body,
                           const std::string& content_type) {
    std::optional<json> payload;
    if (!body.is_null()) payload = body;
    return client_->call(client_->api->request(method, path, payload, content_type));
}

std::optional<json> HandlingTest::kopf_annotation(const std::string& name, const std::string& key) {
    auto body = get(name);
    if (!body) return std::nullopt;
    const auto annotations = body->value("/metadata/annotations"_json_pointer, json::object());
    auto found = annotations.find("kopf.zalando.org/" + key);
    if (found == annotations.end() || !found->is_string()) return std::nullopt;
    return json::parse(found->get<std::string>(), nullptr, /*allow_exceptions=*/false);
}

bool HandlingTest::eventually(const std::function<bool()>& condition, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
}

// A plain HTTP/1.0 GET on loopback: the whole answer, or "" when nothing listens.
std::string http_get(int port, const std::string& path) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return "";
    }
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    (void)::send(fd, request.data(), request.size(), 0);
    std::string answer;
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) answer.append(buffer, n);
    ::close(fd);
    return answer;
}

std::string http_body(const std::string& answer) {
    const auto start = answer.find("\r\n\r\n");
    return start == std::string::npos ? "" : answer.substr(start + 4);
}

double metric_sample(const std::string& text, const std::string& series) {
    std::size_t at = 0;
    while ((at = text.find(series + " ", at)) != std::string::npos) {
        if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
        at += series.size();
    }
    return -1;
}

}  // namespace kopf::testing
