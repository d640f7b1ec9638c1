// A joinable thread with a stack of a chosen size, for work that recurses deeply: the
// server's request threads (kRequestThreadStackBytes) and long regex matches.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <functional>

namespace kopf::apiserver {

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

}  // namespace kopf::apiserver
