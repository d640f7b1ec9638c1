// The AdmissionTransport the server hands to its core: a blocking HTTP(S) POST with
// CA-bundle verification (host name or IP checked against the certificate) and an
// overall timeout, implemented with Beast + OpenSSL on a private io_context per call.
#pragma once

#include <memory>

#include "api/admission_transport.hpp"

namespace kopf::apiserver::net {

std::shared_ptr<AdmissionTransport> make_admission_transport();

}  // namespace kopf::apiserver::net
