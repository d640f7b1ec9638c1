// Kopf's lifecycles: which of the awakened handlers run in one processing cycle.
#include "core/actions/lifecycles.hpp"

#include <algorithm>
#include <atomic>
#include <random>

namespace kopf::actions {

namespace lifecycles {
std::vector<const ChangingHandler*> asap(std::vector<const ChangingHandler*> handlers,
                                         const State& state) {
    std::stable_sort(handlers.begin(), handlers.end(), [&state](auto* a, auto* b) {
        int ra = state.contains(a->id) ? state[a->id].retries : 0;
        int rb = state.contains(b->id) ? state[b->id].retries : 0;
        return ra < rb;
    });
    if (handlers.size() > 1) handlers.erase(handlers.begin() + 1, handlers.end());
    return handlers;
}
std::vector<const ChangingHandler*> all_at_once(std::vector<const ChangingHandler*> handlers,
                                                const State&) {
    return handlers;
}
std::vector<const ChangingHandler*> one_by_one(std::vector<const ChangingHandler*> handlers,
                                               const State&) {
    if (handlers.size() > 1) handlers.erase(handlers.begin() + 1, handlers.end());
    return handlers;
}
std::vector<const ChangingHandler*> randomized(std::vector<const ChangingHandler*> handlers,
                                               const State&) {
    if (handlers.empty()) return handlers;
    static thread_local std::mt19937 rng{std::random_device{}()};
    std::uniform_int_distribution<std::size_t> pick(0, handlers.size() - 1);
    return {handlers[pick(rng)]};
}
std::vector<const ChangingHandler*> shuffled(std::vector<const ChangingHandler*> handlers,
                                             const State&) {
    static thread_local std::mt19937 rng{std::random_device{}()};
    std::shuffle(handlers.begin(), handlers.end(), rng);
    return handlers;
}
}  // namespace lifecycles

}  // namespace kopf::actions

namespace kopf::actions {

Lifecycle lifecycle_of(kopf::Lifecycle lifecycle) {
    switch (lifecycle) {
        case kopf::Lifecycle::ONE_BY_ONE:
            return lifecycles::one_by_one;
        case kopf::Lifecycle::ALL_AT_ONCE:
            return lifecycles::all_at_once;
        case kopf::Lifecycle::RANDOMIZED:
            return lifecycles::randomized;
        case kopf::Lifecycle::SHUFFLED:
            return lifecycles::shuffled;
        case kopf::Lifecycle::ASAP:
            break;
    }
    return lifecycles::asap;
}

}  // namespace kopf::actions

namespace kopf {

namespace {
std::atomic<Lifecycle> default_lifecycle{Lifecycle::ASAP};
}  // namespace

void set_default_lifecycle(Lifecycle lifecycle) {
    default_lifecycle.store(lifecycle);
}

Lifecycle get_default_lifecycle() {
    return default_lifecycle.load();
}

}  // namespace kopf
