// Owned children: every KopfExample owns a ConfigMap with its settings and a Deployment with one
// replica per item of `spec.items`. They are created with the object, brought up to date when
// its spec changes, re-checked when the operator restarts, and garbage-collected with it.
// Run it with: kopf run examples/20-owned-children/example.cpp --verbose -A --standalone
//
// The children are written with server-side apply through the operator's API client: one
// request creates a missing child or updates an existing one to the desired state.
#include <kopf/kopf.hpp>
#include <string>

namespace {

std::string spec_string(const kopf::json& spec, const char* key, const std::string& fallback) {
    const auto found = spec.find(key);
    if (found == spec.end() || found->is_null()) return fallback;
    return found->is_string() ? found->get<std::string>() : found->dump();
}

kopf::json desired_configmap(const kopf::Context& ctx) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", ctx.name + "-settings"}}},
            {"data",
             {{"field", spec_string(ctx.spec, "field", "default-value")},
              {"duration", spec_string(ctx.spec, "duration", "0")}}}};
}

kopf::json desired_deployment(const kopf::Context& ctx, int replicas) {
    const kopf::json labels = {{"app", ctx.name}};
    return {
        {"apiVersion", "apps/v1"},
        {"kind", "Deployment"},
        {"metadata", {{"name", ctx.name + "-app"}}},
        {"spec",
         {{"replicas", replicas},
          {"selector", {{"matchLabels", labels}}},
          {"template",
           {{"metadata", {{"labels", labels}}},
            {"spec",
             {{"containers",
               {{{"name", "main"},
                 {"image", "busybox"},
                 {"command", {"sh", "-c", "sleep infinity"}},
                 {"envFrom", {{{"configMapRef", {{"name", ctx.name + "-settings"}}}}}}}}}}}}}}}};
}

}  // namespace

kopf::Task<kopf::json> reconcile_fn(kopf::Context& ctx) {
    const int replicas = ctx.spec.contains("items") && ctx.spec["items"].is_array()
                             ? static_cast<int>(ctx.spec["items"].size())
                             : 1;
    kopf::json configmap = desired_configmap(ctx);
    kopf::json deployment = desired_deployment(ctx, replicas);
    // Our children: owner reference, namespace and labels of the parent.
    kopf::adopt(configmap, ctx.body);
    kopf::adopt(deployment, ctx.body);

    // Created if missing, else changed to match; fields others own are taken over.
    const kopf::Api configmaps = ctx.api("configmaps", ctx.namespace_);
    const kopf::Api deployments = ctx.api("apps/v1/deployments", ctx.namespace_);
    const kopf::json applied_configmap =
        co_await configmaps.apply(configmap).field_manager("kopf-example").force();
    const kopf::json applied_deployment =
        co_await deployments.apply(deployment).field_manager("kopf-example").force();

    ctx.logger.info("Children are reconciled: configmap {} and deployment {} with {} replicas.",
                    applied_configmap["metadata"]["name"].get<std::string>(),
                    applied_deployment["metadata"]["name"].get<std::string>(), replicas);
    co_return kopf::json{{"configmap", applied_configmap["metadata"]["name"]},
                         {"deployment", applied_deployment["metadata"]["name"]},
                         {"replicas", replicas}};
}
KOPF_ON_CREATE(reconcile_fn, "kopfexamples");
KOPF_ON_UPDATE(reconcile_fn, "kopfexamples");
KOPF_ON_RESUME(reconcile_fn, "kopfexamples");
