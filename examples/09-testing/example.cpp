// Testing an operator: the operator under test is this one creation handler; its test,
// example_test.cpp next to it, runs it in the background with the testing kit
// (kopf/testing.hpp, Kopf's KopfRunner) while it creates and deletes the object with kubectl.
// Run it with: kopf run examples/09-testing/example.cpp --verbose -A --standalone
#include <kopf/kopf.hpp>

void create_fn(kopf::Context& ctx) {
    ctx.logger.info("Something was logged here.");
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
