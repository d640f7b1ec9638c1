// How the core reaches admission webhooks: one HTTPS POST of an AdmissionReview.
// Implemented by the network layer (src/net/) with Beast + OpenSSL.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace kopf::apiserver {

struct WebhookCall {
    std::string url;            // https://host:port/path from clientConfig.url
    std::string ca_bundle_pem;  // decoded clientConfig.caBundle; empty: system roots
    std::chrono::milliseconds timeout{10'000};
    std::string body;  // serialized AdmissionReview request
};

struct WebhookReply {
    bool reached = false;  // false: connection/TLS/timeout failure, see `error`
    int status = 0;        // HTTP status when reached
    std::string body;      // response body when reached
    std::string error;     // human-readable failure reason
};

class AdmissionTransport {
  public:
    virtual ~AdmissionTransport() = default;
    virtual WebhookReply post(const WebhookCall& call) = 0;  // blocking, thread-safe
    // TCP connections opened so far: kept alive, one per concurrent call and webhook at most.
    virtual std::size_t connections_opened() const { return 0; }
};

}  // namespace kopf::apiserver
