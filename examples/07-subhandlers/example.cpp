// Sub-handlers: the creation handler declares one sub-handler per item of spec.items. Each runs
// after the parent returns, with its own id ("create_fn/<item>"), progress and retries; the parent
// is finished when all of its sub-handlers are.
// Run it with: kopf run examples/07-subhandlers/example.cpp --verbose -A --standalone
#include <kopf/kopf.hpp>
#include <string>

void create_fn(kopf::Context& ctx) {
    if (!ctx.spec.contains("items") || !ctx.spec["items"].is_array()) return;
    for (const auto& entry : ctx.spec["items"]) {
        if (!entry.is_string()) continue;
        const std::string item = entry.get<std::string>();
        kopf::subhandler(ctx, {.id = item}, [item](kopf::Context& sub) {
            sub.logger.info("=== Handling creation for {}. ===", item);
        });
    }
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
