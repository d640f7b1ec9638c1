// Conversion of the client layer's discovered resources (src/structs/references.hpp) to the
// public kopf::Resource that handlers and selectors see.
#pragma once

#include <kopf/resource.hpp>

#include "structs/references.hpp"

namespace kopf::reactor {

inline Resource to_public(const structs::Resource& r) {
    Resource out;
    out.group = r.group;
    out.version = r.version;
    out.plural = r.plural;
    out.kind = r.kind;
    out.singular = r.singular;
    out.shortcuts.assign(r.shortcuts.begin(), r.shortcuts.end());
    out.categories.assign(r.categories.begin(), r.categories.end());
    out.subresources.assign(r.subresources.begin(), r.subresources.end());
    out.namespaced = r.namespaced;
    out.preferred = r.preferred;
    out.verbs.assign(r.verbs.begin(), r.verbs.end());
    return out;
}

}  // namespace kopf::reactor
