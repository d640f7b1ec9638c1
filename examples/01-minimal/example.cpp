// The smallest operator: one creation handler whose result becomes the object's status.
// Run it with: kopf run examples/01-minimal/example.cpp --verbose -n default
#include <kopf/kopf.hpp>

kopf::json create_fn(kopf::Context& ctx) {
    ctx.logger.info("And here we are! Creating: {}", ctx.spec.dump());
    return {{"message", "hello world"}};  // will be the new status
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
