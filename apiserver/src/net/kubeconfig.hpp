// The kubeconfig the server writes for its clients (kubectl, the Python client, Kopf).
#pragma once

#include <string>

namespace kopf::apiserver::net {

struct KubeconfigParams {
    std::string server_url;   // http(s)://127.0.0.1:PORT
    std::string ca_cert_pem;  // empty: plain HTTP, no certificate-authority-data
    std::string token;        // empty: no credentials
    std::string name = "kopf";
    std::string namespace_name = "default";
};

std::string render_kubeconfig(const KubeconfigParams& params);

}  // namespace kopf::apiserver::net
