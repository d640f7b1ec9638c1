// Kopf's activities engine (kopf/_core/engines/activities.py): the startup and cleanup handlers,
// run in registration order with their retries, and the login handlers (or Kopf's built-in
// logins) that give the operator its credentials.
#pragma once

#include <atomic>
#include <functional>
#include <kopf/connection.hpp>
#include <kopf/index.hpp>
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

// One round of the login handlers (or the built-in logins): the best credentials, if any. The
// handlers are retried as activities are (errors, timeout, retries, backoff), pausing with
// `pause` (nothing if it says the operator is stopping); one that fails for good throws
// runtime::StartupError, as Kopf's login activity fails.
std::optional<ConnectionInfo> try_login(const Registry& registry, const RunOptions& options,
                                        OperatorSettings& settings, Memo& memo,
                                        const LoginPause& pause);

// The initial login, pausing on the loop: credentials, or runtime::StartupError saying where
// they were looked for; nothing if `stopping` was set meanwhile.
std::optional<ConnectionInfo> login(const Registry& registry, const RunOptions& options,
                                    OperatorSettings& settings, Memo& memo,
                                    boost::asio::io_context& io, const std::atomic<bool>& stopping);

}  // namespace kopf::engines
