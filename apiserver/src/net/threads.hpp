// Threads with a stack sized for the deepest body the core accepts (kMaxBodyDepth): the
// core copies, prunes and writes a body recursively, once per level. Optimised, that needs a
// few hundred KB at the limit; under clang's AddressSanitizer nlohmann's writer alone needs
// over 4 KB per level, more than the default 8 MB of a std::thread.
#pragma once

#include <cstddef>
#include <functional>

namespace kopf::apiserver::net {

// The stack the server's threads get: 32 KB per level of the deepest accepted body. Only
// the pages a thread touches are ever resident.
std::size_t request_thread_stack_bytes();

// A joinable thread with a stack of `stack_bytes` (std::thread cannot set one).
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
    unsigned long handle_ = 0;  // pthread_t
    bool joinable_ = false;
};

}  // namespace kopf::apiserver::net
