// Filtering handlers by labels, annotations, `when` callbacks and field values: only the
// handlers whose filters match the object run; the others are not even considered.
// Run it with: kopf run examples/11-filtering-handlers/example.cpp --verbose -A --standalone
#include <kopf/kopf.hpp>

bool say_yes(const kopf::json& value, const kopf::Context& ctx) {
    return value == "somevalue" && ctx.spec.contains("field") && !ctx.spec["field"].is_null();
}

bool say_no(const kopf::json& value, const kopf::Context& ctx) {
    return value == "somevalue" &&
           ctx.spec.value("field", kopf::json()) == "not-this-value-for-sure";
}

void create_with_labels_matching(kopf::Context& ctx) {
    ctx.logger.info("Label is matching.");
}
KOPF_ON_CREATE(create_with_labels_matching, "kopfexamples",
               {.labels = {{"somelabel", "somevalue"}}});

void create_with_labels_present(kopf::Context& ctx) {
    ctx.logger.info("Label is present.");
}
KOPF_ON_CREATE(create_with_labels_present, "kopfexamples",
               {.labels = {{"somelabel", kopf::PRESENT}}});

void create_with_labels_absent(kopf::Context& ctx) {
    ctx.logger.info("Label is absent.");
}
KOPF_ON_CREATE(create_with_labels_absent, "kopfexamples",
               {.labels = {{"nonexistent", kopf::ABSENT}}});

void create_with_labels_callback_matching(kopf::Context& ctx) {
    ctx.logger.info("Label callback matching.");
}
KOPF_ON_CREATE(create_with_labels_callback_matching, "kopfexamples",
               {.labels = {{"somelabel", say_yes}}});

void create_with_annotations_matching(kopf::Context& ctx) {
    ctx.logger.info("Annotation is matching.");
}
KOPF_ON_CREATE(create_with_annotations_matching, "kopfexamples",
               {.annotations = {{"someannotation", "somevalue"}}});

void create_with_annotations_present(kopf::Context& ctx) {
    ctx.logger.info("Annotation is present.");
}
KOPF_ON_CREATE(create_with_annotations_present, "kopfexamples",
               {.annotations = {{"someannotation", kopf::PRESENT}}});

void create_with_annotations_absent(kopf::Context& ctx) {
    ctx.logger.info("Annotation is absent.");
}
KOPF_ON_CREATE(create_with_annotations_absent, "kopfexamples",
               {.annotations = {{"nonexistent", kopf::ABSENT}}});

void create_with_annotations_callback_matching(kopf::Context& ctx) {
    ctx.logger.info("Annotation callback mismatch.");
}
KOPF_ON_CREATE(create_with_annotations_callback_matching, "kopfexamples",
               {.annotations = {{"someannotation", say_no}}});

void create_with_filter_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Filter satisfied.");
}
KOPF_ON_CREATE(create_with_filter_satisfied, "kopfexamples",
               {.when = [](const kopf::Context&) { return true; }});

void create_with_filter_not_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Filter not satisfied.");
}
KOPF_ON_CREATE(create_with_filter_not_satisfied, "kopfexamples",
               {.when = [](const kopf::Context&) { return false; }});

void create_with_field_value_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Field value is satisfied.");
}
KOPF_ON_CREATE(create_with_field_value_satisfied, "kopfexamples",
               {.field = "spec.field", .value = "value"});

void create_with_field_value_not_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Field value is not satisfied.");
}
KOPF_ON_CREATE(create_with_field_value_not_satisfied, "kopfexamples",
               {.field = "spec.field", .value = "something-else"});

void create_with_field_presence_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Field presence is satisfied.");
}
KOPF_ON_CREATE(create_with_field_presence_satisfied, "kopfexamples",
               {.field = "spec.field", .value = kopf::PRESENT});

void create_with_field_presence_not_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Field presence is not satisfied.");
}
KOPF_ON_CREATE(create_with_field_presence_not_satisfied, "kopfexamples",
               {.field = "spec.inexistent", .value = kopf::PRESENT});

void update_with_field_change_satisfied(kopf::Context& ctx) {
    ctx.logger.info("Field change is satisfied.");
}
KOPF_ON_UPDATE(update_with_field_change_satisfied, "kopfexamples",
               {.field = "spec.field", .old = "value", .new_ = "changed"});

// A daemon runs only while its filters match: it is stopped when spec.field changes to another
// value, and spawned again when it changes back.
void daemon_with_field(kopf::Context& ctx) {
    while (!ctx.stopped) {
        ctx.logger.info("Field daemon is satisfied.");
        ctx.stopped.wait(1);
    }
}
KOPF_DAEMON(daemon_with_field, "kopfexamples", {.field = "spec.field", .value = "value"});
