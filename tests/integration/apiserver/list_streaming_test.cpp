// Large lists over real HTTP: the server streams them in chunks from a snapshot, so a
// list arrives complete, parses, and shows one resourceVersion while writers go on.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";
constexpr int kObjects = 3000;  // about 3 MB of list: many chunks

// A keep-alive HTTP/1.1 connection to the server under test.
class Client {
  public:
    explicit Client(int port) : socket_(io_) {
        socket_.connect(
            tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    }

    http::response<http::string_body> send(http::verb verb, const std::string& target,
                                           const std::string& body = "",
                                           const std::string& content_type = "application/json") {
        http::request<http::string_body> request{verb, target, 11};
        request.set(http::field::host, "127.0.0.1");
        if (!body.empty()) {
            request.set(http::field::content_type, content_type);
            request.body() = body;
        }
        request.prepare_payload();
        http::write(socket_, request);
        http::response_parser<http::string_body> parser;
        parser.body_limit(1024 * 1024 * 1024);
        http::read(socket_, buffer_, parser);
        return parser.release();
    }

    tcp::socket& socket() { return socket_; }

  private:
    asio::io_context io_;
    tcp::socket socket_;
    beast::flat_buffer buffer_;
};

json configmap(int index) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", "cm-" + std::to_string(index)}}},
            {"data", {{"payload", std::string(800, 'x')}, {"counter", "0"}}}};
}

void create_configmaps(Client& client, int count) {
    for (int i = 0; i < count; ++i) {
        auto response = client.send(http::verb::post, kConfigMaps, configmap(i).dump());
        ASSERT_EQ(response.result_int(), 201) << response.body();
    }
}

uint64_t rv_of(const json& object) {
    return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
}

TEST(ListStreaming, ALargeListArrivesChunkedCompleteAndParses) {
    TestServer test;
    Client client(test.server().port());
    create_configmaps(client, kObjects);
    auto response = client.send(http::verb::get, kConfigMaps);
    ASSERT_EQ(response.result_int(), 200);
    EXPECT_TRUE(response.chunked());
    json list = json::parse(response.body());
    EXPECT_EQ(list["kind"], "ConfigMapList");
    ASSERT_EQ(list["items"].size(), static_cast<std::size_t>(kObjects));
    for (const auto& item : list["items"])
        EXPECT_EQ(item["data"]["payload"].get<std::string>().size(), 800u);
    // The connection stays usable after a chunked body.
    EXPECT_EQ(client.send(http::verb::get, "/healthz").body(), "ok");
}

TEST(ListStreaming, ASmallListIsSentWithAContentLength) {
    TestServer test;
    Client client(test.server().port());
    create_configmaps(client, 3);
    auto response = client.send(http::verb::get, kConfigMaps);
    EXPECT_FALSE(response.chunked());
    EXPECT_EQ(response[http::field::content_length], std::to_string(response.body().size()));
    EXPECT_EQ(json::parse(response.body())["items"].size(), 3u);
}

TEST(ListStreaming, ATableListOfManyObjectsHasEveryRow) {
    TestServer test;
    Client client(test.server().port());
    create_configmaps(client, kObjects);
    http::request<http::empty_body> request{http::verb::get, kConfigMaps, 11};
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::accept, "application/json;as=Table;v=v1;g=meta.k8s.io");
    http::write(client.socket(), request);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1024 * 1024 * 1024);
    http::read(client.socket(), buffer, parser);
    json table = json::parse(parser.get().body());
    EXPECT_EQ(table["kind"], "Table");
    EXPECT_EQ(table["columnDefinitions"][0]["name"], "Name");
    EXPECT_EQ(table["rows"].size(), static_cast<std::size_t>(kObjects));
}

TEST(ListStreaming, AnHttp10ClientGetsTheWholeListUntilTheConnectionCloses) {
    TestServer test;
    Client client(test.server().port());
    create_configmaps(client, kObjects);
    std::string answer = raw_exchange(
        test.server().port(), "GET " + kConfigMaps + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", 30s);
    auto body_at = answer.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos) << answer.substr(0, 200);
    std::string head = answer.substr(0, body_at);
    EXPECT_EQ(head.rfind("HTTP/1.0 200", 0), 0u) << head;
    EXPECT_EQ(head.find("chunked"), std::string::npos) << head;
    json list = json::parse(answer.substr(body_at + 4));
    EXPECT_EQ(list["items"].size(), static_cast<std::size_t>(kObjects));
}

// Every item of a list at resourceVersion R is the object's latest version at or below R,
// judged against the resourceVersions the only writer was given back.
TEST(ListStreaming, ListsShowOneResourceVersionWhileAWriterPatches) {
    TestServer test;
    Client setup(test.server().port());
    create_configmaps(setup, kObjects);
    json initial = json::parse(setup.send(http::verb::get, kConfigMaps).body());
    std::map<std::string, std::vector<uint64_t>> versions;  // name -> every RV it had
    for (const auto& item : initial["items"])
        versions[item["metadata"]["name"]].push_back(rv_of(item));

    std::atomic<bool> stop{false};
    std::atomic<int> patches{0};
    std::mutex versions_mutex;
    std::thread writer([&] {
        Client client(test.server().port());
        for (int n = 0; !stop; ++n) {
            std::string name = "cm-" + std::to_string((n * 7919) % kObjects);
            json patch = {{"data", {{"counter", std::to_string(n + 1)}}}};
            auto response = client.send(http::verb::patch, kConfigMaps + "/" + name, patch.dump(),
                                        "application/merge-patch+json");
            if (response.result_int() != 200) continue;
            std::lock_guard lock(versions_mutex);
            versions[name].push_back(rv_of(json::parse(response.body())));
            ++patches;
        }
    });
    Client reader(test.server().port());
    std::vector<json> lists;
    // Keep listing until the writer has been busy in between.
    while (lists.size() < 5 || patches < 200)
        lists.push_back(json::parse(reader.send(http::verb::get, kConfigMaps).body()));
    stop = true;
    writer.join();

    for (const auto& list : lists) {
        uint64_t list_rv = std::stoull(list["metadata"]["resourceVersion"].get<std::string>());
        ASSERT_EQ(list["items"].size(), static_cast<std::size_t>(kObjects));
        for (const auto& item : list["items"]) {
            uint64_t expected = 0;
            for (uint64_t rv : versions[item["metadata"]["name"]])
                if (rv <= list_rv) expected = std::max(expected, rv);
            EXPECT_EQ(rv_of(item), expected)
                << item["metadata"]["name"] << " in list at " << list_rv;
        }
    }
}

TEST(ListStreaming, AClientThatDisconnectsMidListLeavesTheServerHealthy) {
    TestServer test;
    Client setup(test.server().port());
    create_configmaps(setup, kObjects);
    for (int attempt = 0; attempt < 3; ++attempt) {
        Client quitter(test.server().port());
        http::request<http::empty_body> request{http::verb::get, kConfigMaps, 11};
        request.set(http::field::host, "127.0.0.1");
        http::write(quitter.socket(), request);
        std::array<char, 4096> first_bytes{};
        quitter.socket().read_some(asio::buffer(first_bytes));
        quitter.socket().close();
    }
    Client client(test.server().port());
    EXPECT_EQ(client.send(http::verb::get, "/healthz").body(), "ok");
    auto list = json::parse(client.send(http::verb::get, kConfigMaps).body());
    EXPECT_EQ(list["items"].size(), static_cast<std::size_t>(kObjects));
    auto created = client.send(http::verb::post, kConfigMaps, configmap(kObjects).dump());
    EXPECT_EQ(created.result_int(), 201);
}

}  // namespace
}  // namespace kopf::apiserver::testing
