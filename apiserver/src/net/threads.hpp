// Threads with a stack sized for the deepest body the core accepts (see kMaxBodyDepth).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <functional>

#include "api/api_core.hpp"

namespace kopf::apiserver::net {

// The stack the server's threads get: 32 KB per level of the deepest accepted body (under
// clang's AddressSanitizer nlohmann's writer alone needs over 4 KB per level, more than the
// default 8 MB of a std::thread). Only the pages a thread touches are ever resident.
inline constexpr std::size_t kRequestThreadStackBytes =
    static_cast<std::size_t>(kMaxBodyDepth) * 32 * 1024;

// A joinable thread with a stack of `stack_bytes` (std::thread cannot set one). Throws,
// naming the size, when the thread cannot start.
class SizedThread {
  public:
    SizedThread(std::size_t stack_bytes, std::function<void()> body);
    ~SizedThread();  // joins if not joined yet
    SizedThread(SizedThread&& other) noexcept;
    SizedThread& operator=(SizedThread&&) = delete;
    SizedThread(const SizedThread&) = delete;
    SizedThread& operator=(const SizedThread&) = delete;

    void join();

  private:
    pthread_t handle_{};
    bool joinable_ = false;
};

}  // namespace kopf::apiserver::net
