// Retry pauses: settings.networking.error_backoffs walked one step per failed attempt, and
// Retry-After from the server taking over when it asks for longer.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace kopf::clients {

class BackoffSequence {
  public:
    explicit BackoffSequence(std::vector<double> backoffs) : backoffs_(std::move(backoffs)) {}

    // The pause before the next attempt, or nothing when the attempts are exhausted.
    // A server's Retry-After replaces the backoff if longer (or always, when enforced).
    std::optional<double> next(std::optional<double> retry_after = {}, bool enforce = false) {
        if (index_ >= backoffs_.size()) return std::nullopt;
        double pause = backoffs_[index_++];
        if (retry_after && (enforce || *retry_after > pause)) pause = *retry_after;
        return pause;
    }
    // After a success, the sequence starts again.
    void reset() { index_ = 0; }
    std::size_t attempts_failed() const { return index_; }
    std::size_t max_attempts() const { return backoffs_.size() + 1; }

  private:
    std::vector<double> backoffs_;
    std::size_t index_ = 0;
};

}  // namespace kopf::clients
