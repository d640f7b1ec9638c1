// Fuzz target: kubeconfig files (YAML) as the operator reads them at login, and the base64 and
// RFC 3339 decoders that their fields and exec credentials go through. A broken file must end
// in a KubeconfigError naming it, never in another exception or a crash.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "clients/kubeconfig.hpp"
#include "fuzz/support/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kopf::clients;
    const std::string text(kopf::fuzz::as_text(data, size));
    try {
        const Kubeconfig config = parse_kubeconfig(text, "fuzz.kubeconfig", "/nonexistent");
        (void)config.contexts.size();
    } catch (const KubeconfigError& e) {
        if (std::string(e.what()).find("fuzz.kubeconfig") == std::string::npos)
            kopf::fuzz::violated("a kubeconfig error does not name the file", e.what());
    }
    try {
        (void)base64_decode(text);
    } catch (const std::invalid_argument&) {
    }
    try {
        (void)parse_rfc3339(text);
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
