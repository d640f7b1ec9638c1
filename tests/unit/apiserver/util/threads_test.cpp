// Threads get the stack they ask for, run their body, join on destruction (a
// moved-from one leaves that to its new owner), and a thread that cannot start says which
// stack size it could not get.
#include "util/threads.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using kopf::apiserver::SizedThread;

// What the server's request threads get (kRequestThreadStackBytes).
constexpr std::size_t kServerStack = std::size_t{64} << 20;

std::size_t own_stack_size() {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    std::size_t size = 0;
    pthread_attr_getstacksize(&attributes, &size);
    pthread_attr_destroy(&attributes);
    return size;
}

std::string start_failure(std::size_t stack_bytes) {
    try {
        SizedThread thread(stack_bytes, [] {});
    } catch (const std::runtime_error& error) {
        return error.what();
    }
    return "";
}

}  // namespace

TEST(SizedThread, RunsItsBodyOnAStackOfTheRequestedSizeAndJoinsWhenDestroyed) {
    std::atomic<std::size_t> seen{0};
    std::vector<int> captured(1'000, 7);  // heap state the body owns until it has run
    {
        SizedThread thread(kServerStack, [&seen, captured] {
            if (captured.size() == 1'000 && captured.back() == 7) seen = own_stack_size();
        });
    }  // the destructor joins: the body has finished here
    EXPECT_GE(seen.load(), kServerStack);
}

TEST(SizedThread, AMovedFromThreadLeavesTheJoinToItsNewOwner) {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<bool> finished{false};
    std::optional<SizedThread> first;
    first.emplace(256 * 1024, [released, &finished] {
        released.wait();
        finished = true;
    });
    SizedThread second(std::move(*first));
    first.reset();  // joining here would wait forever: the body waits for `release`
    EXPECT_FALSE(finished.load());
    release.set_value();
    second.join();
    EXPECT_TRUE(finished.load());
    second.join();  // a second join does nothing
}

TEST(SizedThread, AStackTooSmallToStartNamesItsSize) {
    const std::string message = start_failure(1);
    EXPECT_NE(message.find("cannot start a thread with a stack of 1 bytes"), std::string::npos)
        << message;
}

TEST(SizedThread, AStackTooLargeToReserveNamesItsSize) {
    const std::size_t impossible = SIZE_MAX / 2;
    const std::string message = start_failure(impossible);
    EXPECT_NE(message.find("a stack of " + std::to_string(impossible) + " bytes: "),
              std::string::npos)
        << message;
}
