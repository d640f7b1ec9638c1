// How the client layer reports its traffic to the operator's metrics (core/engines/metrics
// implements it; see docs/metrics.md). The client holds a null meter when metrics are off: then
// every report costs one pointer check. The meter is called on the client's loop.
#pragma once

#include <optional>
#include <string_view>

#include "structs/references.hpp"

namespace prometheus {
class Counter;
}  // namespace prometheus

namespace kopf::clients {

// The counters of one watched resource, resolved once when its watch starts (null: not counted).
struct WatchMeters {
    prometheus::Counter* streams = nullptr;    // every watch request (the first and restarts)
    prometheus::Counter* relists = nullptr;    // listings after 410 Gone
    prometheus::Counter* bookmarks = nullptr;  // BOOKMARK events
    prometheus::Counter* inactivity =
        nullptr;  // reconnects after settings.watching.inactivity_timeout
};

class ApiMeter {
  public:
    virtual ~ApiMeter() = default;
    // One answered request (`status` 0: no answer, a connection error), `seconds` from its send
    // to its answer. `target` is the request's path and query, as sent.
    virtual void request(std::string_view method, std::string_view target, int status,
                         double seconds) = 0;
    // A request is retried after `status` (0: a connection error), pausing `pause` seconds;
    // `retry_after`: what the server asked for, if it did.
    virtual void retried(int status, double pause, std::optional<double> retry_after) = 0;
    // A watch request answered `status` (429, 403, 5xx): the watch will reconnect after a pause,
    // at least `retry_after` if the server asked for it.
    virtual void watch_refused(int status, std::optional<double> retry_after) = 0;
    // The vault ran empty and the login ran again.
    virtual void relogged_in() = 0;
    virtual WatchMeters watch(const structs::Resource& resource) = 0;
};

}  // namespace kopf::clients
