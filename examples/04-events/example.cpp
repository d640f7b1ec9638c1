// Kubernetes Events about the handled object: the all-purpose kopf::event() and the shortcuts
// for the usual types (info = Normal, warn = Warning, exception = Error with the exception text).
// Run it with: kopf run examples/04-events/example.cpp --verbose -A --standalone
#include <kopf/events.hpp>
#include <kopf/kopf.hpp>
#include <stdexcept>

void create_fn(kopf::Context& ctx) {
    // The all-purpose function: any type, any reason.
    kopf::event(ctx.body, "SomeType", "SomeReason", "Some message");

    // The shortcuts for the conventional types.
    kopf::info(ctx.body, "SomeReason", "Some message");
    kopf::warn(ctx.body, "SomeReason", "Some message");

    try {
        throw std::runtime_error("Exception text.");
    } catch (...) {
        kopf::exception(ctx.body, "SomeReason", "Some exception:");
    }
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
