#include "fixture.hpp"

#include <unistd.h>

#include <fstream>

namespace kopf::testing {

namespace fs = std::filesystem;

void ClientTest::SetUp() {
    apiserver::ServerOptions options;
    options.port = 0;
    options.tls = true;
    options.bookmark_interval = std::chrono::milliseconds(1000);
    configure(options);
    server = std::make_unique<apiserver::Server>(options);
    server->start();
    relogin_result = [this] { return std::map<std::string, ConnectionInfo>{{"admin", admin()}}; };
}

void ClientTest::TearDown() {
    io.stop();
    server.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
}

ConnectionInfo ClientTest::admin() const {
    ConnectionInfo info;
    info.server = server->url();
    info.ca_data = server->ca_cert_pem();
    info.scheme = "Bearer";
    info.token = server->admin_token();
    return info;
}

clients::ClientSettings ClientTest::fast_settings() {
    clients::ClientSettings settings;
    settings.error_backoffs = {0.05, 0.05, 0.1, 0.1, 0.2};
    settings.request_timeout = clients::Seconds(20);
    settings.connect_timeout = clients::Seconds(5);
    return settings;
}

std::unique_ptr<clients::ApiClient> ClientTest::make_client(std::optional<ConnectionInfo> initial,
                                                            clients::ClientSettings settings) {
    if (initial) vault->populate({{"initial", *initial}});
    // Heap state in the capture, as a real login has (its kubeconfig path, its handlers): a
    // closure of only `this` fits in std::function's inline buffer and hid a double free.
    auto relogin = [this, origin = std::make_shared<std::string>(temp_dir().string()),
                    label = std::string(64, 'r')] {
        ++relogins;
        EXPECT_FALSE(origin->empty()) << label;
        return relogin_result();
    };
    return std::make_unique<clients::ApiClient>(io.get_executor(), vault, relogin,
                                                std::move(settings));
}

bool ClientTest::drive(const std::function<bool()>& done, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        io.restart();
        io.run_one_for(std::chrono::milliseconds(50));
    }
    return true;
}

fs::path ClientTest::temp_dir() {
    if (dir_.empty()) {
        dir_ = fs::temp_directory_path() /
               ("kopf-clients-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    return dir_;
}

fs::path ClientTest::write_file(const std::string& name, const std::string& text, bool executable) {
    auto path = temp_dir() / name;
    {
        std::ofstream out(path, std::ios::trunc);
        out << text;
    }
    if (executable) fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
    return path;
}

structs::Resource ClientTest::configmaps() {
    structs::Resource resource;
    resource.version = "v1";
    resource.plural = "configmaps";
    resource.kind = "ConfigMap";
    resource.singular = "configmap";
    resource.namespaced = true;
    return resource;
}

json configmap(const std::string& name, const json& data) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"data", data}};
}

}  // namespace kopf::testing
