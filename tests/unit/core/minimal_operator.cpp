// Kopf's examples/01-minimal, ported: the whole operator. Compile-time check of the public API
// (not a test executable): g++ -std=c++20 -Iinclude -c tests/unit/core/minimal_operator.cpp
#include <kopf/kopf.hpp>

kopf::json create_fn(kopf::Context& ctx) {
    ctx.logger.info("And here we are! Creating: {}", ctx.spec.dump());
    return {{"message", "hello world"}};  // will be the new status
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
