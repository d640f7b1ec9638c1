// Fuzz target: PATCH bodies as the embedded API server applies them — JSON merge patches,
// JSON patches (RFC 6902), strategic merge patches and server-side apply (YAML) — onto a
// ConfigMap, a Pod (whose containers, ports and env merge by key) and a custom resource with a
// schema (pruning, defaulting, validation). The first byte picks the object and the patch type,
// the rest is the body; every request is a dry run, so each input starts from the same objects.
// Every input must be answered with a Kubernetes Status or the patched object, never a 5xx, an
// exception or a crash.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz/support/fuzz.hpp"
#include "unit/apiserver/core/support/harness.hpp"

namespace {

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

const char* const kObjects[] = {"/api/v1/namespaces/default/configmaps/cm-1",
                                "/api/v1/namespaces/default/pods/pod-1",
                                "/apis/example.com/v1/namespaces/default/widgets/widget-1"};
const char* const kPatchTypes[] = {"application/merge-patch+json", "application/json-patch+json",
                                   "application/strategic-merge-patch+json",
                                   "application/apply-patch+yaml"};

struct Cluster {
    ApiCore core{CoreOptions{}};
    Cluster() {
        install_widgets(core);
        post(core, "/apis/example.com/v1/namespaces/default/widgets", widget("widget-1", 2));
        post(core, "/api/v1/namespaces/default/configmaps", configmap("cm-1"));
        const json pod = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata", {{"name", "pod-1"}, {"labels", {{"app", "web"}}}}},
                          {"spec",
                           {{"containers",
                             {{{"name", "app"},
                               {"image", "nginx"},
                               {"ports", {{{"containerPort", 80}, {"protocol", "TCP"}}}},
                               {"env", {{{"name", "A"}, {"value", "1"}}}}}}}}}};
        post(core, "/api/v1/namespaces/default/pods", pod);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Cluster cluster;
    if (size == 0) return 0;
    const std::string path = kObjects[data[0] % 3];
    const std::string type = kPatchTypes[(data[0] / 3) % 4];
    HttpRequest rq = request("PATCH", path, std::string(kopf::fuzz::as_text(data + 1, size - 1)),
                             type, {{"dryRun", "All"}, {"fieldManager", "fuzz"}});
    try {
        Reply reply = call(cluster.core, rq);
        if (reply.status >= 500)
            kopf::fuzz::violated("a patch was answered with a server error", reply.raw);
        if (reply.body.is_discarded())
            kopf::fuzz::violated("a patch was answered with something not JSON", reply.raw);
    } catch (const std::exception& e) {
        kopf::fuzz::violated("ApiCore::handle() threw", e.what());
    }
    return 0;
}
