// Retries walk settings.networking.error_backoffs, honour Retry-After, and start anew.
#include "clients/backoff.hpp"

#include <gtest/gtest.h>

#include "clients/settings.hpp"

using kopf::clients::BackoffSequence;

TEST(BackoffSequence, DefaultSequenceIsKopfs) {
    BackoffSequence backoff(kopf::clients::ClientSettings{}.error_backoffs);
    std::vector<double> pauses;
    while (auto pause = backoff.next()) pauses.push_back(*pause);
    EXPECT_EQ(pauses, (std::vector<double>{1, 1, 2, 3, 5, 8, 13, 21}));
    EXPECT_EQ(backoff.max_attempts(), 9u);
}

TEST(BackoffSequence, ExhaustedSequenceEscalates) {
    BackoffSequence backoff({0.5});
    EXPECT_EQ(backoff.next(), 0.5);
    EXPECT_FALSE(backoff.next().has_value());
}

TEST(BackoffSequence, LongerRetryAfterReplacesTheBackoff) {
    BackoffSequence backoff({1, 2});
    EXPECT_EQ(backoff.next(7.0), 7.0);
    EXPECT_EQ(backoff.next(0.5), 2.0);
}

TEST(BackoffSequence, EnforcedRetryAfterAlsoShortensTheBackoff) {
    BackoffSequence backoff({5});
    EXPECT_EQ(backoff.next(0.5, /*enforce=*/true), 0.5);
}

TEST(BackoffSequence, ResetStartsFromTheFirstPause) {
    BackoffSequence backoff({1, 2, 3});
    backoff.next();
    backoff.next();
    backoff.reset();
    EXPECT_EQ(backoff.next(), 1.0);
}

TEST(BackoffSequence, EmptySequenceMeansNoRetries) {
    BackoffSequence backoff({});
    EXPECT_FALSE(backoff.next().has_value());
}
