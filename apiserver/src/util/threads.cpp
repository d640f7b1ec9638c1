#include "util/threads.hpp"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace kopf::apiserver {

namespace {
void* run_body(void* argument) {
    std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(argument));
    (*body)();
    return nullptr;
}
}  // namespace

SizedThread::SizedThread(std::size_t stack_bytes, std::function<void()> body) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    int error = pthread_attr_setstacksize(&attributes, stack_bytes);
    auto owned = std::make_unique<std::function<void()>>(std::move(body));
    pthread_t thread{};
    if (error == 0) error = pthread_create(&thread, &attributes, run_body, owned.get());
    pthread_attr_destroy(&attributes);
    if (error != 0) {
        throw std::runtime_error("cannot start a thread with a stack of " +
                                 std::to_string(stack_bytes) + " bytes: " + std::strerror(error));
    }
    static_cast<void>(owned.release());  // the thread owns it now
    handle_ = thread;
    joinable_ = true;
}

SizedThread::SizedThread(SizedThread&& other) noexcept
    : handle_(other.handle_), joinable_(other.joinable_) {
    other.joinable_ = false;
}

SizedThread::~SizedThread() {
    join();
}

void SizedThread::join() {
    if (!joinable_) return;
    joinable_ = false;
    pthread_join(handle_, nullptr);
}

}  // namespace kopf::apiserver
