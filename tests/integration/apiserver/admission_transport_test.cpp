// The HTTPS client the core uses to call admission webhooks, against a real TLS server.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "integration/apiserver/support/harness.hpp"
#include "net/admission_client.hpp"
#include "net/certificates.hpp"

namespace kopf::apiserver::testing {
namespace {

WebhookCall call_to(const std::string& url, const std::string& ca_pem,
                    std::chrono::milliseconds timeout = 10s) {
    WebhookCall call;
    call.url = url;
    call.ca_bundle_pem = ca_pem;
    call.timeout = timeout;
    call.body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})";
    return call;
}

TEST(AdmissionTransport, PostsOverHttpsWhenTheCaBundleTrustsTheServer) {
    TestServer target(tls_options());
    auto transport = net::make_admission_transport();
    auto reply = transport->post(call_to(target.url() + "/healthz", target.server().ca_cert_pem()));
    EXPECT_TRUE(reply.reached) << reply.error;
    EXPECT_NE(reply.status, 0);
    EXPECT_FALSE(reply.body.empty());
}

TEST(AdmissionTransport, KeepsItsConnectionToAWebhookAliveAcrossReviews) {
    TestServer target(tls_options());
    auto transport = net::make_admission_transport();
    for (int review = 0; review < 20; ++review) {
        auto reply =
            transport->post(call_to(target.url() + "/healthz", target.server().ca_cert_pem()));
        ASSERT_TRUE(reply.reached) << "review " << review << ": " << reply.error;
        EXPECT_EQ(reply.status, 200);
    }
    EXPECT_EQ(transport->connections_opened(), 1u);
}

TEST(AdmissionTransport, SendsTheReviewOnANewConnectionWhenTheWebhookClosedTheKeptOne) {
    auto options = tls_options();
    options.idle_timeout = 200ms;
    TestServer target(options);
    auto transport = net::make_admission_transport();
    auto call = call_to(target.url() + "/healthz", target.server().ca_cert_pem());
    ASSERT_TRUE(transport->post(call).reached);
    std::this_thread::sleep_for(1s);  // the webhook closes the idle connection meanwhile
    auto reply = transport->post(call);
    EXPECT_TRUE(reply.reached) << reply.error;
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(transport->connections_opened(), 2u);
}

TEST(AdmissionTransport, ConcurrentReviewsEachGetTheirAnswer) {
    TestServer target(tls_options());
    auto transport = net::make_admission_transport();
    std::vector<std::thread> callers;
    std::atomic<int> answered{0};
    for (int caller = 0; caller < 8; ++caller) {
        callers.emplace_back([&] {
            for (int review = 0; review < 10; ++review) {
                auto reply = transport->post(
                    call_to(target.url() + "/healthz", target.server().ca_cert_pem()));
                if (reply.reached && reply.status == 200) ++answered;
            }
        });
    }
    for (auto& caller : callers) caller.join();
    EXPECT_EQ(answered.load(), 80);
    EXPECT_LE(transport->connections_opened(), 8u);  // at most one per concurrent review
}

TEST(AdmissionTransport, VerifiesDnsNamesToo) {
    TestServer target(tls_options());
    auto url = "https://localhost:" + std::to_string(target.server().port()) + "/healthz";
    auto reply = net::make_admission_transport()->post(call_to(url, target.server().ca_cert_pem()));
    EXPECT_TRUE(reply.reached) << reply.error;
    EXPECT_EQ(reply.status, 200);
}

TEST(AdmissionTransport, RefusesAServerTheCaBundleDoesNotTrust) {
    TestServer target(tls_options());
    auto stranger = net::generate_ca("stranger");
    auto reply = net::make_admission_transport()->post(
        call_to(target.url() + "/healthz", stranger.cert_pem));
    EXPECT_FALSE(reply.reached);
    EXPECT_NE(reply.error.find("TLS handshake"), std::string::npos) << reply.error;
}

TEST(AdmissionTransport, GivesUpAfterTheTimeout) {
    TestServer target(tls_options());
    target.server().delay_responses(5s);
    auto reply = net::make_admission_transport()->post(
        call_to(target.url() + "/healthz", target.server().ca_cert_pem(), 300ms));
    target.server().delay_responses(0ms);
    EXPECT_FALSE(reply.reached);
    EXPECT_NE(reply.error.find("timed out"), std::string::npos) << reply.error;
}

TEST(AdmissionTransport, ReportsRefusedConnections) {
    int port = 0;
    {
        TestServer gone;
        port = gone.server().port();
    }
    auto reply = net::make_admission_transport()->post(
        call_to("https://127.0.0.1:" + std::to_string(port) + "/hook", ""));
    EXPECT_FALSE(reply.reached);
    EXPECT_NE(reply.error.find("cannot connect"), std::string::npos) << reply.error;
}

TEST(AdmissionTransport, RejectsInvalidUrlsNamingThem) {
    auto reply = net::make_admission_transport()->post(call_to("not a url", ""));
    EXPECT_FALSE(reply.reached);
    EXPECT_NE(reply.error.find("not a url"), std::string::npos) << reply.error;
}

TEST(AdmissionTransport, RejectsAnInvalidCaBundle) {
    auto reply = net::make_admission_transport()->post(
        call_to("https://127.0.0.1:1/hook", "-----BEGIN CERTIFICATE-----\ngarbage\n"));
    EXPECT_FALSE(reply.reached);
    EXPECT_NE(reply.error.find("caBundle"), std::string::npos) << reply.error;
}

}  // namespace
}  // namespace kopf::apiserver::testing
