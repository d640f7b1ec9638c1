// Self-signed certificates for the webhook servers (OpenSSL 3, EC P-256): a CA and a serving
// certificate signed by it, for the host names and IP addresses the API server may use.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopf::kits {

struct GeneratedCertificate {
    std::string ca_pem;    ///< the CA's certificate: the caBundle of the webhooks
    std::string cert_pem;  ///< the serving certificate
    std::string key_pem;   ///< its private key (encrypted with the password, if any)
};

/// A new CA and a serving certificate whose SANs are `hostnames` (IP addresses as IP SANs, the
/// rest as DNS names; "0.0.0.0" and "::" are left out). The first non-IP name is the common
/// name (the first IP if none). Throws std::runtime_error naming the failed step.
GeneratedCertificate generate_certificate(const std::vector<std::string>& hostnames,
                                          const std::optional<std::string>& password = {});

/// The names in a PEM certificate that tell local clusters apart.
struct CertificateNames {
    std::string subject_cn;
    std::string subject_org;
    std::string issuer_cn;
    std::vector<std::string> dns_names;  ///< subject alternative names
};
/// Nothing when the text is not a PEM certificate.
std::optional<CertificateNames> certificate_names(const std::string& pem);

/// Whether the text is an IPv4 or IPv6 address.
bool is_ip_address(const std::string& text);

}  // namespace kopf::kits
