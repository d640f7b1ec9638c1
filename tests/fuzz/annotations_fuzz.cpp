// Fuzz target: what the operator reads back from an object's annotations, which anyone who may
// edit the object can write: the handlers' progress records (and the legacy status storage) and
// the diff base (last-handled-configuration). The input is two annotation values separated by a
// NUL byte (without one, the same text is both). The progress goes through a whole handling
// step (read, one outcome, store, purge); a diff base that is not JSON must fail with the
// storage's runtime_error naming the object, and one that is JSON is diffed as the reactor does.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <kopf/diff.hpp>
#include <kopf/patch.hpp>
#include <kopf/storage.hpp>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/actions/progression.hpp"
#include "fuzz/support/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kopf;
    std::string_view rest = fuzz::as_text(data, size);
    const std::string record(fuzz::take_until(rest, '\0'));
    const std::string base = rest.empty() ? record : std::string(rest);

    json body = {{"apiVersion", "kopf.dev/v1"},
                 {"kind", "KopfExample"},
                 {"metadata",
                  {{"name", "kex-1"},
                   {"namespace", "default"},
                   {"annotations",
                    {{"kopf.zalando.org/create_fn", record},
                     {"kopf.zalando.org/last-handled-configuration", base}}}}},
                 {"spec", {{"field", "value"}}}};
    const json legacy = json::parse(record, nullptr, false);
    if (!legacy.is_discarded()) body["status"]["kopf"]["progress"]["update_fn"] = legacy;

    static const SmartProgressStorage progress;
    static const AnnotationsDiffBaseStorage diffbase;
    const auto now = std::chrono::system_clock::now();
    auto state = actions::State::from_storage(body, progress, {"create_fn", "update_fn"}, now);
    state = state.with_handlers({"create_fn", "update_fn"}, now);
    actions::Outcome retry;
    retry.delay = 1.5;
    retry.failed = true;
    retry.message = "temporary";
    actions::Outcome done;
    done.final = true;
    state = state.with_outcomes({{"create_fn", retry}, {"update_fn", done}}, now);
    (void)state.done();
    (void)state.delay(now);
    (void)state.counts();
    (void)state.extras();
    Patch patch;
    state.store(body, patch, progress);
    state.purge(body, patch, progress, {"create_fn", "update_fn"});

    try {
        const auto old = diffbase.fetch(body);
        const json essence = diffbase.build(body);
        if (old) {
            std::ostringstream shown;
            shown << diff(*old, essence);
        }
    } catch (const std::runtime_error& e) {
        if (std::string(e.what()).find("last handled configuration") == std::string::npos)
            fuzz::violated("a bad diff base fails with an unexpected message", e.what());
    }
    return 0;
}
