// The AdmissionTransport the server hands to its core: a blocking HTTP(S) POST with
// CA-bundle verification (host name or IP checked against the certificate) and an
// overall timeout, implemented with Beast + OpenSSL on an I/O thread of its own that keeps
// connections to each webhook alive, as kube-apiserver does.
#pragma once

#include <memory>

#include "api/admission_transport.hpp"

namespace kopf::apiserver::net {

std::shared_ptr<AdmissionTransport> make_admission_transport();

}  // namespace kopf::apiserver::net
