// Indexing: in-memory overviews of the pods, read by probes and by a timer without asking the
// API (Kopf's examples/16-indexing).
// Run it with: kopf run examples/16-indexing/example.cpp --verbose -A --standalone \
//                  --liveness=http://127.0.0.1:8080/healthz
#include <cstdio>
#include <kopf/kopf.hpp>
#include <string>

// {[namespace, name]: [whether the pod runs]}
kopf::IndexEntries is_running(kopf::Context& ctx) {
    return kopf::IndexEntries().add({ctx.namespace_, ctx.name},
                                    ctx.status.value("phase", "") == "Running");
}
KOPF_INDEX(is_running, "pods");

// {[label, value]: [pod names]}
kopf::IndexEntries by_label(kopf::Context& ctx) {
    kopf::IndexEntries entries;
    for (const auto& [label, value] : ctx.labels.items()) entries.add({label, value}, ctx.name);
    return entries;
}
KOPF_INDEX(by_label, "pods");

kopf::json pod_count(kopf::ActivityContext& ctx) {
    return ctx.index("is_running").size();
}
KOPF_ON_PROBE(pod_count, {});

kopf::json pod_names(kopf::ActivityContext& ctx) {
    kopf::json names = kopf::json::array();
    for (const auto& key : ctx.index("is_running").keys()) names.push_back(key[1]);
    return names;
}
KOPF_ON_PROBE(pod_names, {});

void intervalled(kopf::Context& ctx) {
    kopf::json labels = kopf::json::object();
    for (const auto& [key, store] : ctx.index("by_label").items())
        labels[key.dump()] = kopf::json(store.as<kopf::json>());
    std::printf("%s\n", labels.dump(1).c_str());  // as Kopf's pprint(dict(by_label))
    std::fflush(stdout);
    kopf::json running = kopf::json::array();
    for (const auto& [key, store] : ctx.index("is_running").items()) {
        const std::string ns = key[0];
        // As in Kopf's example, a non-empty store counts, whatever the pod's phase.
        if ((ns == "kube-system" || ns == "default") && !store.empty())
            running.push_back(ns + "::" + key[1].get<std::string>());
    }
    ctx.patch.status()["running-pods"] = running;
}
KOPF_TIMER(intervalled, "kex", {.interval = 5});
