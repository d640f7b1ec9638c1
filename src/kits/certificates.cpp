#include "kits/certificates.hpp"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace kopf::kits {
namespace {

struct Deleter {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
    void operator()(X509* p) const { X509_free(p); }
    void operator()(BIO* p) const { BIO_free(p); }
    void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
    void operator()(BIGNUM* p) const { BN_free(p); }
};
template <class T>
using Owned = std::unique_ptr<T, Deleter>;

[[noreturn]] void fail(const std::string& what) {
    char buffer[256] = {0};
    ERR_error_string_n(ERR_get_error(), buffer, sizeof buffer);
    throw std::runtime_error("Cannot generate the webhook server's certificate (" + what +
                             "): " + buffer);
}

void check(int ok, const char* what) {
    if (ok <= 0) fail(what);
}

std::string bio_string(BIO* bio) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(size));
}

std::string pem_of(X509* cert) {
    Owned<BIO> bio(BIO_new(BIO_s_mem()));
    check(PEM_write_bio_X509(bio.get(), cert), "write certificate");
    return bio_string(bio.get());
}

std::string pem_of(EVP_PKEY* key, const std::optional<std::string>& password) {
    Owned<BIO> bio(BIO_new(BIO_s_mem()));
    if (password) {
        check(PEM_write_bio_PKCS8PrivateKey(bio.get(), key, EVP_aes_256_cbc(), password->data(),
                                            static_cast<int>(password->size()), nullptr, nullptr),
              "write encrypted key");
    } else {
        check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr),
              "write key");
    }
    return bio_string(bio.get());
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    if (!ext) fail("extension " + value);
    check(X509_add_ext(cert, ext.get(), -1), "add extension");
}

Owned<X509> new_certificate(EVP_PKEY* key, const std::string& common_name) {
    Owned<X509> cert(X509_new());
    check(X509_set_version(cert.get(), 2), "version");
    unsigned char serial_bytes[16];
    check(RAND_bytes(serial_bytes, sizeof serial_bytes), "serial");
    serial_bytes[0] &= 0x7f;
    Owned<BIGNUM> serial(BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr));
    check(BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr, "serial");
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3650L * 24 * 3600);
    check(X509_set_pubkey(cert.get(), key), "public key");
    check(X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                     -1, -1, 0),
          "subject");
    return cert;
}

}  // namespace

bool is_ip_address(const std::string& text) {
    unsigned char buffer[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
           inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

GeneratedCertificate generate_certificate(const std::vector<std::string>& hostnames,
                                          const std::optional<std::string>& password) {
    std::vector<std::string> dns_names, ips;
    for (const auto& name : hostnames) {
        if (name.empty() || name == "0.0.0.0" || name == "::") continue;
        auto& list = is_ip_address(name) ? ips : dns_names;
        if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
    }
    const std::string common_name = !dns_names.empty() ? dns_names.front()
                                    : !ips.empty()     ? ips.front()
                                                       : "localhost";

    Owned<EVP_PKEY> ca_key(EVP_EC_gen("P-256"));
    if (!ca_key) fail("CA key");
    Owned<X509> ca = new_certificate(ca_key.get(), "Kopf++ webhook CA for " + common_name);
    check(X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())), "CA issuer");
    add_extension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE");
    add_extension(ca.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyCertSign");
    add_extension(ca.get(), ca.get(), NID_subject_key_identifier, "hash");
    check(X509_sign(ca.get(), ca_key.get(), EVP_sha256()), "sign CA");

    Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
    if (!key) fail("key");
    Owned<X509> cert = new_certificate(key.get(), common_name);
    check(X509_set_issuer_name(cert.get(), X509_get_subject_name(ca.get())), "issuer");
    add_extension(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), ca.get(), NID_key_usage, "critical,digitalSignature");
    add_extension(cert.get(), ca.get(), NID_ext_key_usage, "serverAuth");
    add_extension(cert.get(), ca.get(), NID_authority_key_identifier, "keyid:always");
    std::string alt_names;
    for (const auto& dns : dns_names) alt_names += (alt_names.empty() ? "DNS:" : ",DNS:") + dns;
    for (const auto& ip : ips) alt_names += (alt_names.empty() ? "IP:" : ",IP:") + ip;
    if (!alt_names.empty()) add_extension(cert.get(), ca.get(), NID_subject_alt_name, alt_names);
    check(X509_sign(cert.get(), ca_key.get(), EVP_sha256()), "sign certificate");
    return {pem_of(ca.get()), pem_of(cert.get()), pem_of(key.get(), password)};
}

namespace {

std::string name_entry(const X509_NAME* name, int nid) {
    if (!name) return {};
    const int at = X509_NAME_get_index_by_NID(name, nid, -1);
    if (at < 0) return {};
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
    unsigned char* utf8 = nullptr;
    const int size = ASN1_STRING_to_UTF8(&utf8, data);
    if (size < 0) return {};
    std::string text(reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(size));
    OPENSSL_free(utf8);
    return text;
}

}  // namespace

std::optional<CertificateNames> certificate_names(const std::string& pem) {
    const Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) return std::nullopt;
    const Owned<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) {
        ERR_clear_error();
        return std::nullopt;
    }
    CertificateNames names;
    names.subject_cn = name_entry(X509_get_subject_name(cert.get()), NID_commonName);
    names.subject_org = name_entry(X509_get_subject_name(cert.get()), NID_organizationName);
    names.issuer_cn = name_entry(X509_get_issuer_name(cert.get()), NID_commonName);
    auto* sans = static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
    if (sans) {
        for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
            const GENERAL_NAME* san = sk_GENERAL_NAME_value(sans, i);
            if (san->type != GEN_DNS) continue;
            const auto* text = ASN1_STRING_get0_data(san->d.dNSName);
            names.dns_names.emplace_back(
                reinterpret_cast<const char*>(text),
                static_cast<std::size_t>(ASN1_STRING_length(san->d.dNSName)));
        }
        GENERAL_NAMES_free(sans);
    }
    return names;
}

}  // namespace kopf::kits
