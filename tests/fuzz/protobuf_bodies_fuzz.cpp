// Fuzz target: protobuf request bodies (the "k8s\0" envelope around a runtime.Unknown) as
// kubectl's typed clients send them, POSTed as dry runs to the endpoints of the built-in kinds
// the decoder knows. The first byte picks the endpoint, the rest is the body. Every input must
// be answered with a Kubernetes Status or the created object, never a 5xx (but the one
// kube-apiserver gives a create carrying a resourceVersion), an exception or a crash: a malformed
// body is a 400 naming where it broke, an unknown kind a 415.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz/support/fuzz.hpp"
#include "unit/apiserver/core/support/harness.hpp"

namespace {

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

const char* const kEndpoints[] = {
    "/apis/apps/v1/namespaces/default/deployments",
    "/api/v1/namespaces/default/services",
    "/api/v1/namespaces/default/resourcequotas",
    "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    "/apis/batch/v1/namespaces/default/cronjobs",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/pods",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ApiCore core{CoreOptions{}};
    if (size == 0) return 0;
    const std::string path = kEndpoints[data[0] % (sizeof kEndpoints / sizeof kEndpoints[0])];
    HttpRequest rq = request("POST", path, std::string(kopf::fuzz::as_text(data + 1, size - 1)),
                             "application/vnd.kubernetes.protobuf",
                             {{"dryRun", "All"}, {"fieldManager", "fuzz"}});
    try {
        Reply reply = call(core, rq);
        // kube-apiserver's own 500 for a create carrying a resourceVersion, mirrored on purpose.
        const bool resource_version_on_create =
            reply.status == 500 &&
            reply.raw.find("resourceVersion should not be set on objects to be created") !=
                std::string::npos;
        if (reply.status >= 500 && !resource_version_on_create)
            kopf::fuzz::violated("a protobuf body was answered with a server error", reply.raw);
        if (reply.body.is_discarded())
            kopf::fuzz::violated("a protobuf body was answered with something not JSON", reply.raw);
    } catch (const std::exception& e) {
        kopf::fuzz::violated("ApiCore::handle() threw", e.what());
    }
    return 0;
}
