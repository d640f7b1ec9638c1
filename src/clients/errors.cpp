#include "clients/errors.hpp"

#include <fmt/format.h>

namespace kopf {

namespace {
std::string status_string(const json& status, const char* key) {
    if (!status.is_object()) return {};
    auto it = status.find(key);
    return it != status.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

ApiError::ApiError(int code, json status, std::string request, const std::string& what)
    : std::runtime_error(what),
      code_(code),
      status_(std::move(status)),
      request_(std::move(request)) {}

std::string ApiError::reason() const {
    return status_string(status_, "reason");
}

std::string ApiError::message() const {
    return status_string(status_, "message");
}

std::string ApiError::verb() const {
    return request_.substr(0, request_.find(' '));
}

std::string ApiError::path() const {
    const auto space = request_.find(' ');
    return space == std::string::npos ? std::string() : request_.substr(space + 1);
}

std::vector<ApiError::Cause> ApiError::causes() const {
    std::vector<Cause> out;
    if (!status_.is_object()) return out;
    const auto details = status_.find("details");
    if (details == status_.end() || !details->is_object()) return out;
    const auto causes = details->find("causes");
    if (causes == details->end() || !causes->is_array()) return out;
    for (const auto& cause : *causes) {
        out.push_back(Cause{status_string(cause, "field"), status_string(cause, "reason"),
                            status_string(cause, "message")});
    }
    return out;
}

}  // namespace kopf

namespace kopf::clients {

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
            raise_with(retry_after, UnauthorizedError(code, status, what, text));
        case 403:
            raise_with(retry_after, ForbiddenError(code, status, what, text));
        case 404:
            raise_with(retry_after, NotFoundError(code, status, what, text));
        case 409:
            if (reason == "AlreadyExists")
                raise_with(retry_after, AlreadyExistsError(code, status, what, text));
            raise_with(retry_after, ConflictError(code, status, what, text));
        case 410:
            raise_with(retry_after, GoneError(code, status, what, text));
        case 422:
            raise_with(retry_after, UnprocessableEntityError(code, status, what, text));
        case 429:
            raise_with(retry_after, TooManyRequestsError(code, status, what, text));
        default:
            break;
    }
    if (code >= 500) raise_with(retry_after, ServerError(code, status, what, text));
    if (code >= 400) raise_with(retry_after, ClientError(code, status, what, text));
    ApiError error(code, status, what, text);
    error.set_retry_after(retry_after);
    throw error;
}

}  // namespace kopf::clients
