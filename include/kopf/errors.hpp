// Errors that handlers raise to steer retries, as in Kopf's "Error handling".
#pragma once

#include <kopf/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kopf {

/// How arbitrary exceptions of a handler are treated (`errors=` option).
enum class ErrorsMode {
    TEMPORARY,  ///< retry after `backoff` (default for changing handlers)
    PERMANENT,  ///< fail the handler for good
    IGNORED,    ///< treat as success without a result (default for event handlers)
};
inline constexpr ErrorsMode TEMPORARY = ErrorsMode::TEMPORARY;
inline constexpr ErrorsMode PERMANENT = ErrorsMode::PERMANENT;
inline constexpr ErrorsMode IGNORED = ErrorsMode::IGNORED;

/// A retriable failure: the handler runs again after `delay` seconds (60 by default).
///
///     throw kopf::TemporaryError("Not ready yet.", 10);
class TemporaryError : public std::runtime_error {
  public:
    explicit TemporaryError(const std::string& message, double delay = 60.0)
        : std::runtime_error(message), delay(delay) {}
    double delay;
};

/// A final failure: the handler is not retried, the failure is recorded in its progress.
class PermanentError : public std::runtime_error {
  public:
    explicit PermanentError(const std::string& message) : std::runtime_error(message) {}
};

/// Raised by the framework when a handler exceeds its `timeout` (a permanent failure).
class HandlerTimeoutError : public PermanentError {
  public:
    using PermanentError::PermanentError;
};

/// Raised by the framework when a handler exceeds its `retries` (a permanent failure).
class HandlerRetriesError : public PermanentError {
  public:
    using PermanentError::PermanentError;
};

/// Raised by the framework when sub-handlers are not finished yet (a temporary state).
class HandlerChildrenRetry : public TemporaryError {
  public:
    explicit HandlerChildrenRetry(double delay) : TemporaryError("None", delay) {}
};

/// An HTTP error answer of the Kubernetes API (kopf/api.hpp), with the Status object the
/// server sent and the request that got it.
///
///     try {
///         co_await ctx.api("configmaps", ns).create(body);
///     } catch (const kopf::ApiError& error) {
///         if (!error.already_exists()) throw;   // let Kopf retry anything else
///     }
class ApiError : public std::runtime_error {
  public:
    /// `request` names the call: "GET /api/v1/namespaces/default/pods/web".
    ApiError(int code, json status, std::string request, const std::string& what);

    int code() const { return code_; }
    /// The Status body ({kind: Status, reason, message, details, code}), or {} if none came.
    const json& status() const { return status_; }
    std::string reason() const;   ///< e.g. "NotFound", "AlreadyExists", "Conflict", "Invalid"
    std::string message() const;  ///< the server's human-readable message
    std::string verb() const;     ///< "GET", "POST", ...
    std::string path() const;     ///< the request's path and query
    /// Retry-After in seconds (the header or details.retryAfterSeconds), if the server asked.
    std::optional<double> retry_after() const { return retry_after_; }
    void set_retry_after(std::optional<double> seconds) { retry_after_ = seconds; }

    bool not_found() const { return code_ == 404; }
    bool conflict() const { return code_ == 409; }  ///< also true for already_exists()
    bool already_exists() const { return code_ == 409 && reason() == "AlreadyExists"; }
    bool forbidden() const { return code_ == 403; }
    bool unauthorized() const { return code_ == 401; }
    bool gone() const { return code_ == 410; }
    bool invalid() const { return code_ == 422; }
    bool too_many_requests() const { return code_ == 429; }

    /// Why an Invalid (422) object was refused: one entry per field (details.causes).
    struct Cause {
        std::string field;    ///< e.g. "metadata.name", "spec.replicas"
        std::string reason;   ///< e.g. "FieldValueInvalid", "FieldValueRequired"
        std::string message;  ///< the server's words
    };
    std::vector<Cause> causes() const;

  private:
    int code_;
    json status_;
    std::string request_;
    std::optional<double> retry_after_;
};

/// An API call that got no HTTP answer: refused, reset, a TLS failure, a timeout.
class ApiConnectionError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace kopf
