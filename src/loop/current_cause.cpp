// The object whose handler runs (Kopf's cause_var), one per thread: set around each handler
// invocation and carried across co_await by kopf's awaitables (include/kopf/task.hpp).
#include <kopf/task.hpp>

namespace kopf::detail {

namespace {
thread_local std::shared_ptr<const void> current;  // NOLINT: per-thread by design
}  // namespace

std::shared_ptr<const void> current_cause() noexcept {
    return current;
}

void set_current_cause(std::shared_ptr<const void> cause) noexcept {
    current = std::move(cause);
}

}  // namespace kopf::detail
