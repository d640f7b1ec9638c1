// Raw watch events: event handlers see every ADDED/MODIFIED/DELETED event of the resource.
// They keep no state and are never retried: an error is logged and ignored, and the next
// handler still runs.
// Run it with: kopf run examples/08-events/example.cpp --verbose -A --standalone
#include <kopf/kopf.hpp>
#include <stdexcept>

void event_fn_with_error(kopf::Context&) {
    throw std::runtime_error("Oops!");
}
KOPF_ON_EVENT(event_fn_with_error, "kopfexamples");

void normal_event_fn(kopf::Context& ctx) {
    ctx.logger.info("Event received: {}", ctx.event.dump());
}
KOPF_ON_EVENT(normal_event_fn, "kopfexamples");
