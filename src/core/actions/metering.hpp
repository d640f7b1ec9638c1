// How handler invocations are reported to the operator's metrics (core/engines/metrics
// implements it; see docs/metrics.md). InvocationEnv::meter is null when metrics are off.
#pragma once

#include <string>

namespace kopf::actions {

// What an invocation ended with: done; failed and will be retried; failed for good (permanent
// errors, exhausted retries or timeouts); failed and the failure was ignored (errors=IGNORED).
enum class HandlerOutcome { success, temporary, permanent, ignored };

class HandlerMeter {
  public:
    virtual ~HandlerMeter() = default;
    // One invocation of the handler `id` (a sub-handler's id is "parent/child"); `retry`: it was
    // not the handler's first attempt for this cause.
    virtual void invoked(const std::string& id, HandlerOutcome outcome, double seconds,
                         bool retry) = 0;
};

}  // namespace kopf::actions
