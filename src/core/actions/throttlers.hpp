// Kopf's throttling of an object after unexpected errors (Kopf's actions/throttlers): an error
// in its processing other than a handler's own (an API call of the framework failing, a storage
// throwing) holds the object's events back for the next of settings.queueing.error_delays, the
// last one repeating while the errors go on; a processing that succeeds starts the sequence anew.
// The events that arrive meanwhile are batched, and the latest one is processed when the delay
// has passed (runtime::ObjectQueues holds them).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace kopf::actions {

class Throttler {
  public:
    // An unexpected error has happened: the seconds to hold the object back for, or nullopt for
    // no throttling at all (no delays configured).
    std::optional<double> delay_after_error(const std::vector<double>& delays) {
        if (errors_ < delays.size()) last_delay_ = delays[errors_];
        ++errors_;
        return last_delay_;
    }

    // A processing has succeeded: the next error starts from the first delay again.
    void reset() {
        errors_ = 0;
        last_delay_.reset();
    }

    bool active() const { return errors_ > 0; }

  private:
    std::size_t errors_ = 0;  // unexpected errors in a row
    std::optional<double> last_delay_;
};

}  // namespace kopf::actions
