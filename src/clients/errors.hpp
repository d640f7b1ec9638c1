// Typed Kubernetes API errors, each carrying the Status object the server returned.
//
// ApiError is the base of all HTTP errors; the subclasses follow the HTTP status (as in Kopf's
// clients/errors.py) so that callers catch what they handle: NotFoundError for 404,
// ConflictError for 409, ... ConnectionError is for transport failures (no HTTP answer).
#pragma once

#include <kopf/errors.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace kopf::clients {

// The public error types (kopf/errors.hpp): what handlers catch from kopf::Api.
using ApiError = kopf::ApiError;

class ClientError : public ApiError {
    using ApiError::ApiError;
};  // 4xx
class ServerError : public ApiError {
    using ApiError::ApiError;
};  // 5xx
class UnauthorizedError : public ClientError {
    using ClientError::ClientError;
};  // 401
class ForbiddenError : public ClientError {
    using ClientError::ClientError;
};  // 403
class NotFoundError : public ClientError {
    using ClientError::ClientError;
};  // 404
class ConflictError : public ClientError {
    using ClientError::ClientError;
};  // 409
// 409 with reason AlreadyExists (a create of an existing name).
class AlreadyExistsError : public ConflictError {
    using ConflictError::ConflictError;
};
class GoneError : public ClientError {
    using ClientError::ClientError;
};  // 410
class UnprocessableEntityError : public ClientError {
    using ClientError::ClientError;
};  // 422
class TooManyRequestsError : public ClientError {
    using ClientError::ClientError;
};  // 429

// The request never got an HTTP answer: refused, reset, TLS failure, timeout.
using ConnectionError = kopf::ApiConnectionError;

// A watch stream answered with something that is not a watch event.
class WatchingError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Build and throw the right ApiError subclass for an HTTP error answer.
// `what` names the request ("GET /api/v1/pods").
[[noreturn]] void throw_api_error(int code, const std::string& body, const std::string& what,
                                  std::optional<double> retry_after);

}  // namespace kopf::clients
