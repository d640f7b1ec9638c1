// Fuzz target: label and field selectors as the embedded API server parses them from a query
// (?labelSelector=, ?fieldSelector=) and from metav1.LabelSelector objects (webhooks, owners).
// Bad text must end in a SelectorError (the server's 400), never in another exception; a value
// escaped with FieldSelector::escape_value() must read back unchanged.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/support/fuzz.hpp"
#include "util/selectors.hpp"

namespace {

using kopf::apiserver::FieldSelector;
using kopf::apiserver::LabelSelector;
using kopf::apiserver::SelectorError;
using kopf::fuzz::violated;

const nlohmann::json& object() {
    static const nlohmann::json pod = {{"metadata",
                                        {{"name", "pod-1"},
                                         {"namespace", "default"},
                                         {"labels", {{"app", "web"}, {"tier", "1"}}}}},
                                       {"spec", {{"nodeName", "node-a"}, {"color", "red"}}},
                                       {"status", {{"phase", "Running"}}}};
    return pod;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = kopf::fuzz::as_text(data, size);
    try {
        const auto selector = LabelSelector::parse(text);
        (void)selector.matches(object()["metadata"]["labels"]);
        (void)selector.matches(nullptr);
    } catch (const SelectorError&) {
    }
    try {
        const auto selector = FieldSelector::parse(text, "", "Pod", {".spec.color"}, false);
        (void)selector.matches(object());
    } catch (const SelectorError&) {
    }
    const auto parsed = nlohmann::json::parse(text, nullptr, false);
    if (!parsed.is_discarded()) {
        try {
            (void)LabelSelector::from_json(parsed).matches(object()["metadata"]["labels"]);
        } catch (const SelectorError&) {
        }
    }
    const std::string value(text);
    const auto escaped =
        FieldSelector::parse("metadata.name=" + FieldSelector::escape_value(value), "", "Pod");
    if (escaped.terms().size() != 1 || escaped.terms()[0].value != value)
        violated("an escaped field selector value does not read back", value);
    return 0;
}
