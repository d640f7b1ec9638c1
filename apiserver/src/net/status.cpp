#include "net/status.hpp"

#include <nlohmann/json.hpp>

namespace kopf::apiserver::net {

std::string status_body(int code, const std::string& reason, const std::string& message,
                        int retry_after_seconds) {
    nlohmann::json status = {
        {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
        {"status", "Failure"}, {"message", message}, {"reason", reason},
        {"code", code}};
    if (retry_after_seconds > 0) {
        status["details"] = {{"retryAfterSeconds", retry_after_seconds}};
    }
    return status.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse status_response(int code, const std::string& reason, const std::string& message,
                             int retry_after_seconds) {
    HttpResponse response;
    response.status = code;
    response.body = status_body(code, reason, message, retry_after_seconds);
    if (retry_after_seconds > 0) {
        response.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
    }
    return response;
}

HttpResponse unauthorized_response() {
    return status_response(401, "Unauthorized", "Unauthorized");
}

HttpResponse injected_failure(int code, int retry_after_seconds) {
    switch (code) {
        case 429:
            return status_response(429, "TooManyRequests",
                                   "Too many requests, please try again later.",
                                   retry_after_seconds);
        case 500:
            return status_response(500, "InternalError", "Internal error occurred: injected fault",
                                   retry_after_seconds);
        case 503:
            return status_response(503, "ServiceUnavailable",
                                   "the server is currently unable to handle the request",
                                   retry_after_seconds);
        case 504:
            return status_response(504, "Timeout",
                                   "the server was unable to return a response in the time "
                                   "allotted, but may still be processing the request",
                                   retry_after_seconds);
        case 409:
            return status_response(409, "Conflict", "Operation cannot be fulfilled: injected fault",
                                   retry_after_seconds);
        case 403:
            return status_response(403, "Forbidden", "forbidden: injected fault",
                                   retry_after_seconds);
        case 401:
            return unauthorized_response();
        case 422:
            return status_response(422, "Invalid", "the object is invalid: injected fault",
                                   retry_after_seconds);
        case 404:
            return status_response(404, "NotFound",
                                   "the server could not find the requested resource",
                                   retry_after_seconds);
        default:
            return status_response(code, code >= 500 ? "InternalError" : "BadRequest",
                                   "injected fault", retry_after_seconds);
    }
}

}  // namespace kopf::apiserver::net
