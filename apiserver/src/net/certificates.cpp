#include "net/certificates.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace kopf::apiserver::net {
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
    throw std::runtime_error("TLS certificate generation failed (" + what + "): " + buffer);
}

void check(int ok, const char* what) {
    if (ok <= 0) fail(what);
}

std::string bio_string(BIO* bio) {
    char* data = nullptr;
    long size = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(size));
}

std::string key_pem(EVP_PKEY* key) {
    Owned<BIO> bio(BIO_new(BIO_s_mem()));
    check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr),
          "write key");
    return bio_string(bio.get());
}

std::string cert_pem(X509* cert) {
    Owned<BIO> bio(BIO_new(BIO_s_mem()));
    check(PEM_write_bio_X509(bio.get(), cert), "write certificate");
    return bio_string(bio.get());
}

Owned<X509> read_cert(const std::string& pem) {
    Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Owned<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) fail("read certificate");
    return cert;
}

Owned<EVP_PKEY> read_key(const std::string& pem) {
    Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!key) fail("read private key");
    return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    if (!ext) fail("extension " + value);
    check(X509_add_ext(cert, ext.get(), -1), "add extension");
}

// A certificate skeleton: random serial, validity from one hour ago for `days`.
Owned<X509> new_certificate(EVP_PKEY* key, const std::string& common_name,
                            const std::vector<std::string>& organizations, long days) {
    Owned<X509> cert(X509_new());
    check(X509_set_version(cert.get(), 2), "version");
    unsigned char serial_bytes[16];
    check(RAND_bytes(serial_bytes, sizeof serial_bytes), "serial");
    serial_bytes[0] &= 0x7f;  // positive
    Owned<BIGNUM> serial(BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr));
    check(BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr, "serial");
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 24 * 3600);
    check(X509_set_pubkey(cert.get(), key), "public key");
    X509_NAME* name = X509_get_subject_name(cert.get());
    for (const auto& org : organizations) {
        check(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                         reinterpret_cast<const unsigned char*>(org.c_str()), -1,
                                         -1, 0),
              "subject O");
    }
    check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                     -1, -1, 0),
          "subject CN");
    return cert;
}

}  // namespace

KeyPair generate_ca(const std::string& common_name) {
    Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
    if (!key) fail("EC key");
    Owned<X509> cert = new_certificate(key.get(), common_name, {}, 3650);
    check(X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())), "issuer");
    add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
    add_extension(cert.get(), cert.get(), NID_key_usage,
                  "critical,digitalSignature,keyCertSign,cRLSign");
    add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
    add_extension(cert.get(), cert.get(), NID_authority_key_identifier, "keyid:always");
    check(X509_sign(cert.get(), key.get(), EVP_sha256()), "sign CA");
    return {cert_pem(cert.get()), key_pem(key.get())};
}

KeyPair issue_certificate(const KeyPair& ca, const std::string& common_name,
                          const std::vector<std::string>& organizations,
                          const std::vector<std::string>& dns_names,
                          const std::vector<std::string>& ip_addresses, bool server) {
    Owned<X509> ca_cert = read_cert(ca.cert_pem);
    Owned<EVP_PKEY> ca_key = read_key(ca.key_pem);
    Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
    if (!key) fail("EC key");
    Owned<X509> cert = new_certificate(key.get(), common_name, organizations, 3650);
    check(X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())), "issuer");
    add_extension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature");
    add_extension(cert.get(), ca_cert.get(), NID_ext_key_usage,
                  server ? "serverAuth" : "clientAuth");
    add_extension(cert.get(), ca_cert.get(), NID_subject_key_identifier, "hash");
    add_extension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always");
    std::string alt_names;
    for (const auto& dns : dns_names) alt_names += (alt_names.empty() ? "DNS:" : ",DNS:") + dns;
    for (const auto& ip : ip_addresses) alt_names += (alt_names.empty() ? "IP:" : ",IP:") + ip;
    if (!alt_names.empty()) {
        add_extension(cert.get(), ca_cert.get(), NID_subject_alt_name, alt_names);
    }
    check(X509_sign(cert.get(), ca_key.get(), EVP_sha256()), "sign certificate");
    return {cert_pem(cert.get()), key_pem(key.get())};
}

CertificateSubject certificate_subject(const x509_st* cert) {
    CertificateSubject subject;
    const X509_NAME* name = X509_get_subject_name(cert);
    for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
        const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
        int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
        if (nid != NID_commonName && nid != NID_organizationName) continue;
        unsigned char* utf8 = nullptr;
        int length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
        if (length < 0) continue;
        std::string value(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(length));
        OPENSSL_free(utf8);
        if (nid == NID_commonName) {
            subject.common_name = value;
        } else {
            subject.organizations.push_back(value);
        }
    }
    return subject;
}

CertificateSubject certificate_subject(const std::string& cert_pem) {
    Owned<X509> cert = read_cert(cert_pem);
    return certificate_subject(cert.get());
}

std::string base64_encode(const std::string& data) {
    std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
    int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(data.data()),
                                  static_cast<int>(data.size()));
    out.resize(static_cast<std::size_t>(written));
    return out;
}

std::string random_token() {
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1) fail("random token");
    static const char* digits = "0123456789abcdef";
    std::string token;
    token.reserve(64);
    for (unsigned char b : bytes) {
        token += digits[b >> 4];
        token += digits[b & 15];
    }
    return token;
}

}  // namespace kopf::apiserver::net
