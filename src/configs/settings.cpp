// The settings tree: copying keeps the `batching` alias pointing at the copy's own queueing.
#include <kopf/settings.hpp>

namespace kopf {

OperatorSettings::OperatorSettings(const OperatorSettings& o)
    : process(o.process),
      posting(o.posting),
      peering(o.peering),
      leasing(o.leasing),
      watching(o.watching),
      queueing(o.queueing),
      scanning(o.scanning),
      admission(o.admission),
      execution(o.execution),
      background(o.background),
      networking(o.networking),
      persistence(o.persistence),
      batching(queueing) {}

OperatorSettings& OperatorSettings::operator=(const OperatorSettings& o) {
    process = o.process;
    posting = o.posting;
    peering = o.peering;
    leasing = o.leasing;
    watching = o.watching;
    queueing = o.queueing;
    scanning = o.scanning;
    admission = o.admission;
    execution = o.execution;
    background = o.background;
    networking = o.networking;
    persistence = o.persistence;
    return *this;
}

}  // namespace kopf
