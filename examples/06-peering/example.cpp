// Kopf's example 06: several operators of one cluster in one peering (docs/peering.md). The
// handler does nothing: what matters is which operator runs it. Apply the peering CRDs and the
// default peering objects first (see README.md beside this file):
//   kubectl apply -f deploy/peering.yaml; kubectl apply -f deploy/peering-default.yaml
// then start the operator in two shells and watch them find each other:
//   kopf run examples/06-peering/example.cpp -A --verbose           # shell A
//   kopf run examples/06-peering/example.cpp -A --verbose           # shell B: both pause
//   kopf run examples/06-peering/example.cpp -A --verbose --dev     # B again: A pauses for it
#include <kopf/kopf.hpp>

void create_fn(kopf::Context&) {}
KOPF_ON_CREATE(create_fn, "kopfexamples");
