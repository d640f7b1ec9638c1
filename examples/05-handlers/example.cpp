// Several handlers of every kind for one resource: they run in the order of declaration.
#include <kopf/kopf.hpp>

void resume_fn_1(kopf::Context& ctx) {
    ctx.logger.info("RESUMED 1st");
}
KOPF_ON_RESUME(resume_fn_1, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void create_fn_1(kopf::Context& ctx) {
    ctx.logger.info("CREATED 1st");
}
KOPF_ON_CREATE(create_fn_1, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void resume_fn_2(kopf::Context& ctx) {
    ctx.logger.info("RESUMED 2nd");
}
KOPF_ON_RESUME(resume_fn_2, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void create_fn_2(kopf::Context& ctx) {
    ctx.logger.info("CREATED 2nd");
}
KOPF_ON_CREATE(create_fn_2, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void update_fn(kopf::Context& ctx) {
    ctx.logger.info("UPDATED");
}
KOPF_ON_UPDATE(update_fn, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void delete_fn_1(kopf::Context& ctx) {
    ctx.logger.info("DELETED 1st");
}
KOPF_ON_DELETE(delete_fn_1, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void delete_fn_2(kopf::Context& ctx) {
    ctx.logger.info("DELETED 2nd");
}
KOPF_ON_DELETE(delete_fn_2, kopf::Selector("kopf.dev", "v1", "kopfexamples"));

void field_fn(kopf::Context& ctx) {
    ctx.logger.info("FIELD CHANGED: {} -> {}", ctx.old.dump(), ctx.new_.dump());
}
KOPF_ON_FIELD(field_fn, kopf::Selector("kopf.dev", "v1", "kopfexamples"), {.field = "spec.field"});
