// Errors that handlers raise to steer retries, as in Kopf's "Error handling".
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

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

}  // namespace kopf
