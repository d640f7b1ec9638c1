// The Debian Python `kubernetes` client against the server, over plain HTTP and over
// HTTPS with token and with client-certificate authentication.
#include <gtest/gtest.h>

#include "integration/apiserver/support/harness.hpp"

namespace kopf::apiserver::testing {
namespace {

#define EXPECT_SCRIPT_OK(result) \
    EXPECT_EQ((result).exit_code, 0) << "stdout: " << (result).out << "\nstderr: " << (result).err

std::map<std::string, std::string> client_certificate_env(TestServer& test) {
    auto [cert, key] = test.server().issue_client_certificate("py-user", "system:masters");
    write_file(test.dir() / "py.crt", cert);
    write_file(test.dir() / "py.key", key);
    write_file(test.dir() / "py-ca.crt", test.server().ca_cert_pem());
    return {{"KOPF_TEST_HOST", test.url()},
            {"KOPF_TEST_CA", (test.dir() / "py-ca.crt").string()},
            {"KOPF_TEST_CERT", (test.dir() / "py.crt").string()},
            {"KOPF_TEST_KEY", (test.dir() / "py.key").string()}};
}

TEST(PythonClient, CreateListPatchDeleteOverHttp) {
    TestServer test;
    EXPECT_SCRIPT_OK(test.python("crud.py"));
}

TEST(PythonClient, WatchFromAResourceVersionOverHttp) {
    TestServer test;
    EXPECT_SCRIPT_OK(test.python("watch_from_rv.py"));
}

TEST(PythonClient, ErrorsArriveAsApiExceptionsWithStatus) {
    TestServer test;
    EXPECT_SCRIPT_OK(test.python("errors.py"));
}

TEST(PythonClient, CreateListPatchDeleteOverHttpsWithToken) {
    TestServer test(tls_options());
    EXPECT_SCRIPT_OK(test.python("crud.py"));
}

TEST(PythonClient, WatchFromAResourceVersionOverHttpsWithToken) {
    TestServer test(tls_options());
    EXPECT_SCRIPT_OK(test.python("watch_from_rv.py"));
}

TEST(PythonClient, AWrongTokenOverHttpsGets401) {
    TestServer test(tls_options());
    EXPECT_SCRIPT_OK(test.python("unauthorized.py"));
}

TEST(PythonClient, CreateListPatchDeleteOverHttpsWithAClientCertificate) {
    TestServer test(tls_options());
    EXPECT_SCRIPT_OK(test.python("crud.py", {}, client_certificate_env(test)));
}

TEST(PythonClient, WatchFromAResourceVersionOverHttpsWithAClientCertificate) {
    TestServer test(tls_options());
    EXPECT_SCRIPT_OK(test.python("watch_from_rv.py", {}, client_certificate_env(test)));
}

}  // namespace
}  // namespace kopf::apiserver::testing
