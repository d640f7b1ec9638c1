// Children: the creation handler renders a Pod from the spec, adopts it (owner reference,
// namespace, name prefix and labels of the parent), creates it, and stores the child's uid in
// the parent's status. Deleting the parent lets Kubernetes' garbage collector delete the Pod.
// Run it with: kopf run examples/02-children/example.cpp --verbose -A --standalone
//
// The Pod is created with the operator's own API client (ctx.api), where Kopf's example uses a
// third-party one (pykube): a synchronous handler runs on the worker pool and may block on it.
#include <kopf/kopf.hpp>
#include <string>

kopf::json create_fn(kopf::Context& ctx) {
    // Render the pod with some spec fields used in the template.
    std::string duration = "0";
    if (ctx.spec.contains("duration")) {
        const auto& value = ctx.spec["duration"];
        duration = value.is_string() ? value.get<std::string>() : value.dump();
    }
    std::string field = "default-value";
    if (ctx.spec.contains("field") && ctx.spec["field"].is_string()) {
        field = ctx.spec["field"].get<std::string>();
    }
    kopf::json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"spec",
         {{"containers",
           {{{"name", "the-only-one"},
             {"image", "busybox"},
             {"command", {"sh", "-x", "-c"}},
             {"args", {"echo \"FIELD=$FIELD\"\nsleep " + duration + "\n"}},
             {"env", {{{"name", "FIELD"}, {"value", field}}}}}}}}},
    };

    // Make it our child: the owner reference, the name prefix, the namespace and the labels.
    kopf::adopt(pod, ctx.body);

    // Actually create the object by requesting the Kubernetes API.
    const kopf::json created = ctx.api("pods").create(pod).wait();
    const std::string uid = created.at("metadata").value("uid", "");
    ctx.logger.info("Pod child is created: {}", created.at("metadata").value("name", ""));

    // Update the parent's status.
    return {{"children", kopf::json::array({uid})}};
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
