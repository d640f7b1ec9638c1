#include "clients/errors.hpp"

#include <fmt/format.h>

namespace kopf::clients {

ApiError::ApiError(int code, nlohmann::json status, std::string what_happened)
    : std::runtime_error(std::move(what_happened)), code_(code), status_(std::move(status)) {}

std::string ApiError::reason() const {
    if (status_.is_object()) {
        if (auto it = status_.find("reason"); it != status_.end() && it->is_string()) {
            return it->get<std::string>();
        }
    }
    return {};
}

std::string ApiError::message() const {
    if (status_.is_object()) {
        if (auto it = status_.find("message"); it != status_.end() && it->is_string()) {
            return it->get<std::string>();
        }
    }
    return {};
}

namespace {

template <class Error>
[[noreturn]] void raise_with(std::optional<double> retry_after, Error error) {
    error.set_retry_after(retry_after);
    throw error;
}

}  // namespace

void throw_api_error(int code, const std::string& body, const std::string& what,
                     std::optional<double> retry_after) {
    nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (status.is_discarded() || !status.is_object()) status = nlohmann::json::object();
    if (!retry_after && status.contains("details") && status["details"].is_object()) {
        if (auto it = status["details"].find("retryAfterSeconds");
            it != status["details"].end() && it->is_number()) {
            retry_after = it->get<double>();
        }
    }
    std::string reason = status.value("reason", "");
    std::string message = status.value("message", "");
    if (message.empty()) message = body.substr(0, 200);
    std::string text =
        fmt::format("{} -> {} {}: {}", what, code, reason.empty() ? "" : reason, message);
    switch (code) {
        case 401:
            raise_with(retry_after, UnauthorizedError(code, status, text));
        case 403:
            raise_with(retry_after, ForbiddenError(code, status, text));
        case 404:
            raise_with(retry_after, NotFoundError(code, status, text));
        case 409:
            if (reason == "AlreadyExists")
                raise_with(retry_after, AlreadyExistsError(code, status, text));
            raise_with(retry_after, ConflictError(code, status, text));
        case 410:
            raise_with(retry_after, GoneError(code, status, text));
        case 422:
            raise_with(retry_after, UnprocessableEntityError(code, status, text));
        case 429:
            raise_with(retry_after, TooManyRequestsError(code, status, text));
        default:
            break;
    }
    if (code >= 500) raise_with(retry_after, ServerError(code, status, text));
    if (code >= 400) raise_with(retry_after, ClientError(code, status, text));
    ApiError error(code, status, text);
    error.set_retry_after(retry_after);
    throw error;
}

}  // namespace kopf::clients
