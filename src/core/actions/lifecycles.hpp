// Kopf's lifecycles: which of the awakened handlers run in one processing cycle.
#pragma once

#include <functional>
#include <kopf/registry.hpp>
#include <kopf/run.hpp>
#include <vector>

#include "core/actions/progression.hpp"

namespace kopf::actions {

/// Chooses which of the awakened handlers run in this cycle.
using Lifecycle = std::function<std::vector<const ChangingHandler*>(
    std::vector<const ChangingHandler*> handlers, const State& state)>;

namespace lifecycles {
/// One handler per cycle, the one with the fewest retries (Kopf's default).
std::vector<const ChangingHandler*> asap(std::vector<const ChangingHandler*> handlers,
                                         const State& state);
/// All handlers at once, in the order of registration.
std::vector<const ChangingHandler*> all_at_once(std::vector<const ChangingHandler*> handlers,
                                                const State&);
/// The first handler only, in the order of registration.
std::vector<const ChangingHandler*> one_by_one(std::vector<const ChangingHandler*> handlers,
                                               const State&);
/// One random handler.
std::vector<const ChangingHandler*> randomized(std::vector<const ChangingHandler*> handlers,
                                               const State&);
/// All handlers in a random order.
std::vector<const ChangingHandler*> shuffled(std::vector<const ChangingHandler*> handlers,
                                             const State&);
}  // namespace lifecycles

/// The function of a named lifecycle.
Lifecycle lifecycle_of(kopf::Lifecycle lifecycle);

}  // namespace kopf::actions
