// The operator of the `indexing` group of bench/run.sh (bench/daemons_load.cpp starts it): the
// daemons group's operator (its records and its daemon on BenchObjects labelled
// `bench-daemon: "on"`) plus an index of every BenchObject by namespace, as Kopf's docs show it.
// No daemon starts before the index holds every listed object, so the first daemon's record
// marks the moment the operator's indices were ready; with objects labelled otherwise, the
// operator's RSS and CPU beyond the daemons operator's are the index's own cost.
#include "daemons_operator.cpp"

kopf::json by_namespace(kopf::Context& ctx) {
    return {{ctx.namespace_, ctx.name}};
}
KOPF_INDEX(by_namespace, kBenchObjects);
