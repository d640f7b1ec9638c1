// Kubernetes Status bodies produced by the network layer itself, for requests that never reach
// the API core: authentication failures, overload, oversized or malformed requests, injected
// faults.
#pragma once

#include <string>

#include "api/http_types.hpp"

namespace kopf::apiserver::net {

// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",...,"code":N}
std::string status_body(int code, const std::string& reason, const std::string& message,
                        int retry_after_seconds = 0);
HttpResponse status_response(int code, const std::string& reason, const std::string& message,
                             int retry_after_seconds = 0);

// 401 with message and reason "Unauthorized" and no details, exactly as kube-apiserver.
HttpResponse unauthorized_response();

// The response for an injected failure or overload: 500 InternalError, 503
// ServiceUnavailable, 429 TooManyRequests, other codes with their usual reason; with a
// Retry-After header and details.retryAfterSeconds when retry_after_seconds > 0.
HttpResponse injected_failure(int code, int retry_after_seconds);

}  // namespace kopf::apiserver::net
