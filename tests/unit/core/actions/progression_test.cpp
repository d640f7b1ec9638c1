// Progress records read back from storage: what Kopf writes, and what a hand-edited or corrupt
// record holds instead (found by the annotations fuzzer: a float retries count out of int's
// range was converted with undefined behaviour).
#include "core/actions/progression.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace kopf::actions {
namespace {

HandlerState read_retries(const json& retries) {
    json record = {{"started", "2026-11-21T23:21:38.929772+00:00"}, {"retries", retries}};
    return HandlerState::from_storage(record, Clock::now());
}

TEST(Progression, ReadsTheRetriesKopfWrites) {
    EXPECT_EQ(read_retries(2).retries, 2);
    EXPECT_EQ(read_retries(0).retries, 0);
}

TEST(Progression, RetriesOutOfRangeOrNotIntegersAreReadAsTheNearestCount) {
    EXPECT_EQ(read_retries(2.22222e31).retries, std::numeric_limits<int>::max());
    EXPECT_EQ(read_retries(-1e40).retries, 0);
    EXPECT_EQ(read_retries(-5).retries, 0);
    EXPECT_EQ(read_retries(std::numeric_limits<std::uint64_t>::max()).retries,
              std::numeric_limits<int>::max());
    EXPECT_EQ(read_retries(3.0).retries, 3);
    EXPECT_EQ(read_retries("3").retries, 0);
}

TEST(Progression, ANewAttemptAfterTheMostRetriesAnIntHoldsDoesNotOverflow) {
    const auto state = read_retries(std::numeric_limits<int>::max());
    const auto next = state.with_outcome(Outcome{}, Clock::now());
    EXPECT_EQ(next.retries, std::numeric_limits<int>::max());
}

}  // namespace
}  // namespace kopf::actions
