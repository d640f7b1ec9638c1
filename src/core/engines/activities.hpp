// Kopf's activities engine (kopf/_core/engines/activities.py): the startup and cleanup handlers,
// run in registration order with their retries, and the login handlers (or Kopf's built-in
// logins) that give the operator its credentials.
#pragma once

#include <atomic>
#include <functional>
#include <kopf/connection.hpp>
#include <kopf/index.hpp>
#include <kopf/task.hpp>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace boost::asio {
class io_context;
}

namespace kopf {
class Registry;
class Memo;
class Client;
struct OperatorSettings;
struct RunOptions;
namespace loop {
class LoopExecutor;
}
}  // namespace kopf

namespace kopf::runtime {

// Thrown when the operator cannot start: the message is the one-paragraph reason.
class StartupError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace kopf::runtime

namespace kopf::engines {

// Runs the activity handlers of one kind ("startup", "cleanup") in registration order, driving
// the loop from the calling thread, each retried as Kopf retries activities (errors, timeout,
// retries, backoff); once all have had their turn, a failure throws runtime::StartupError with
// the first one. False if `interrupt` was set during a pause between retries (the rest is
// skipped then).
bool run_activity(boost::asio::io_context& io, loop::LoopExecutor& executor,
                  const Registry& registry, const std::string& activity, OperatorSettings& settings,
                  Memo& memo, const Indices& indices, const Client* client = nullptr,
                  const std::atomic<bool>* interrupt = nullptr);

// A pause between two attempts of a login handler; false when the operator is stopping.
using LoginPause = std::function<bool(double seconds)>;

// A re-login's pause, on its own thread (not the loop's), cut short by `stopping`.
LoginPause pause_thread_unless(const std::atomic<bool>& stopping);

// Runs a login handler's coroutine to its end on the operator's loop, from the calling thread.
using LoginRunner = std::function<void(Task<void>)>;

// For a re-login from another thread (the API client's): the coroutine is posted to the loop,
// which the operator's thread runs meanwhile, and waited for.
LoginRunner run_on_loop_and_wait(loop::LoopExecutor& executor);

// One round of the login handlers (or the built-in logins): the credentials of every handler
// that gave some, by handler id (empty if none did). The handlers are retried as activities
// are (errors, timeout, retries, backoff), pausing with `pause` (nothing if it says the
// operator is stopping), and run by `run`; one that fails for good throws
// runtime::StartupError, as Kopf's login activity fails.
std::map<std::string, ConnectionInfo> try_login(const Registry& registry, const RunOptions& options,
                                                OperatorSettings& settings, Memo& memo,
                                                const LoginPause& pause, const LoginRunner& run);

// The initial login, on the loop: the credentials by handler id, or runtime::StartupError
// saying where they were looked for; nothing if `stopping` was set meanwhile.
std::optional<std::map<std::string, ConnectionInfo>> login(
    const Registry& registry, const RunOptions& options, OperatorSettings& settings, Memo& memo,
    boost::asio::io_context& io, loop::LoopExecutor& executor, const std::atomic<bool>& stopping);

}  // namespace kopf::engines
