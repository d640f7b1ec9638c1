// API errors are typed by HTTP status and carry the server's Status.
#include "clients/errors.hpp"

#include <gtest/gtest.h>

using namespace kopf::clients;

namespace {

template <class Expected>
void expect_error(int code, const std::string& body, const std::string& reason = "") {
    try {
        throw_api_error(code, body, "GET /api/v1/pods", std::nullopt);
        FAIL() << "no error for " << code;
    } catch (const Expected& e) {
        EXPECT_EQ(e.code(), code);
        EXPECT_EQ(e.reason(), reason);
        EXPECT_NE(std::string(e.what()).find("GET /api/v1/pods"), std::string::npos) << e.what();
    }
}

std::string status(int code, const std::string& reason) {
    return nlohmann::json{
        {"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", "because"}}
        .dump();
}

}  // namespace

TEST(ApiErrors, EachStatusHasItsType) {
    expect_error<UnauthorizedError>(401, status(401, "Unauthorized"), "Unauthorized");
    expect_error<ForbiddenError>(403, status(403, "Forbidden"), "Forbidden");
    expect_error<NotFoundError>(404, status(404, "NotFound"), "NotFound");
    expect_error<ConflictError>(409, status(409, "Conflict"), "Conflict");
    expect_error<AlreadyExistsError>(409, status(409, "AlreadyExists"), "AlreadyExists");
    expect_error<GoneError>(410, status(410, "Expired"), "Expired");
    expect_error<UnprocessableEntityError>(422, status(422, "Invalid"), "Invalid");
    expect_error<TooManyRequestsError>(429, status(429, "TooManyRequests"), "TooManyRequests");
    expect_error<ClientError>(400, status(400, "BadRequest"), "BadRequest");
    expect_error<ServerError>(503, status(503, "ServiceUnavailable"), "ServiceUnavailable");
}

TEST(ApiErrors, MessageAndStatusAreKept) {
    try {
        throw_api_error(404, status(404, "NotFound"), "GET x", std::nullopt);
    } catch (const ApiError& e) {
        EXPECT_EQ(e.message(), "because");
        EXPECT_EQ(e.status()["kind"], "Status");
    }
}

TEST(ApiErrors, NonJsonBodyBecomesTheMessage) {
    try {
        throw_api_error(502, "<html>Bad Gateway</html>", "GET x", std::nullopt);
    } catch (const ServerError& e) {
        EXPECT_EQ(e.reason(), "");
        EXPECT_NE(std::string(e.what()).find("Bad Gateway"), std::string::npos);
    }
}

TEST(ApiErrors, RetryAfterComesFromHeaderOrDetails) {
    try {
        throw_api_error(429, R"({"kind":"Status","details":{"retryAfterSeconds":4}})", "GET x",
                        std::nullopt);
    } catch (const TooManyRequestsError& e) {
        EXPECT_EQ(e.retry_after(), 4.0);
    }
    try {
        throw_api_error(429, "{}", "GET x", 2.0);
    } catch (const TooManyRequestsError& e) {
        EXPECT_EQ(e.retry_after(), 2.0);
    }
}
