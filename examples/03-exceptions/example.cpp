// Kopf's examples/03-exceptions: how handlers fail. A permanent error fails at once with only
// its message; a temporary error is retried after its delay until the handler succeeds; an
// arbitrary exception is retried after the backoff until the retries run out, or fails at once
// with errors = PERMANENT.
#include <kopf/kopf.hpp>
#include <stdexcept>

class MyException : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

void instant_failure_with_only_a_message(kopf::Context&) {
    throw kopf::PermanentError("Fail once and for all.");
}
KOPF_ON_CREATE(instant_failure_with_only_a_message, "kopfexamples");

void eventual_success_with_a_few_messages(kopf::Context& ctx) {
    if (ctx.retry < 3)  // 0, 1, 2, 3
        throw kopf::TemporaryError("Expected recoverable error.", 1.0);
}
KOPF_ON_CREATE(eventual_success_with_a_few_messages, "kopfexamples");

void eventual_failure_with_tracebacks(kopf::Context&) {
    throw MyException("An error that is supposed to be recoverable.");
}
KOPF_ON_CREATE(eventual_failure_with_tracebacks, "kopfexamples", {.retries = 3, .backoff = 1.0});

void instant_failure_with_traceback(kopf::Context&) {
    throw MyException("An error that is supposed to be recoverable.");
}
KOPF_ON_CREATE(instant_failure_with_traceback, "kopfexamples",
               {.errors = kopf::PERMANENT, .backoff = 1.0});
