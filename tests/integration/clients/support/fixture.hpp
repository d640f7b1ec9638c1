// Shared by the client integration tests: an embedded API server over HTTPS, an io_context
// driven by the test thread, and helpers to run coroutines and wait for conditions.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <kopf/apiserver/server.hpp>
#include <memory>
#include <string>

#include "clients/api.hpp"

namespace kopf::testing {

namespace asio = boost::asio;
using clients::json;

class ClientTest : public ::testing::Test {
  protected:
    void SetUp() override;
    void TearDown() override;
    // Override to change the server's options before it starts.
    virtual void configure(apiserver::ServerOptions&) {}

    // Admin credentials for the server: its CA and token.
    ConnectionInfo admin() const;
    // A client on `io` with the given credentials in the vault and a re-login that returns
    // `relogin_result` (admin by default) and counts its calls.
    std::unique_ptr<clients::ApiClient> make_client(
        std::optional<ConnectionInfo> initial = std::nullopt,
        clients::ClientSettings settings = fast_settings());
    static clients::ClientSettings fast_settings();

    // Run a coroutine on `io` to completion (rethrowing its exception).
    template <class T>
    T run(asio::awaitable<T> awaitable, std::chrono::seconds limit = std::chrono::seconds(60)) {
        auto future = asio::co_spawn(io, std::move(awaitable), asio::use_future);
        drive([&] { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
              limit);
        return future.get();
    }
    // Drive the loop until `done` or the limit; false on the limit.
    bool drive(const std::function<bool()>& done,
               std::chrono::seconds limit = std::chrono::seconds(30));

    std::filesystem::path temp_dir();
    std::filesystem::path write_file(const std::string& name, const std::string& text,
                                     bool executable = false);

    static structs::Resource configmaps();

    std::unique_ptr<apiserver::Server> server;
    asio::io_context io;
    std::shared_ptr<structs::Vault> vault = std::make_shared<structs::Vault>();
    std::atomic<int> relogins{0};
    std::function<std::map<std::string, ConnectionInfo>()> relogin_result;

  private:
    std::filesystem::path dir_;
};

// A uniquely named configmap body in "default".
json configmap(const std::string& name, const json& data = json::object());

}  // namespace kopf::testing
