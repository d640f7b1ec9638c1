// Error handling: a temporary error is retried after its delay, an arbitrary exception is
// retried after the default backoff, a permanent error ends the handler as failed.
#include <chrono>
#include <kopf/kopf.hpp>
#include <stdexcept>
#include <thread>

class MyException : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

void create_fn(kopf::Context& ctx) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // distinct event timestamps
    if (ctx.retry == 0) throw kopf::TemporaryError("First failure.", 1);
    if (ctx.retry == 1) throw MyException("Second failure.");
    throw kopf::PermanentError("Third failure, the final one.");
}
KOPF_ON_CREATE(create_fn, kopf::Selector("kopf.dev", "v1", "kopfexamples"), {.backoff = 1});
