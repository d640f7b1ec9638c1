// Certificates for the API server's TLS mode (OpenSSL 3 EVP, EC P-256): a self-signed CA,
// a serving certificate for 127.0.0.1/localhost, client certificates (CN = user,
// O = groups), and reading the identity out of a verified client certificate.
#pragma once

#include <string>
#include <vector>

struct x509_st;  // OpenSSL's X509, kept out of this header

namespace kopf::apiserver::net {

struct KeyPair {
    std::string cert_pem;
    std::string key_pem;
};

// A new self-signed CA valid for ten years. Throws std::runtime_error on OpenSSL failures.
KeyPair generate_ca(const std::string& common_name);

// A leaf certificate signed by `ca`. Serving certificates get SANs for every entry of
// `dns_names`/`ip_addresses` and serverAuth; client certificates get clientAuth.
KeyPair issue_certificate(const KeyPair& ca, const std::string& common_name,
                          const std::vector<std::string>& organizations,
                          const std::vector<std::string>& dns_names,
                          const std::vector<std::string>& ip_addresses, bool server);

// The subject CN and O entries of a PEM certificate.
struct CertificateSubject {
    std::string common_name;
    std::vector<std::string> organizations;
};
CertificateSubject certificate_subject(const std::string& cert_pem);
CertificateSubject certificate_subject(const x509_st* cert);

// Standard base64 (no line breaks), for kubeconfig *-data fields.
std::string base64_encode(const std::string& data);

// A random token: 32 bytes as lowercase hex.
std::string random_token();

}  // namespace kopf::apiserver::net
