#include "kopf/version.hpp"

namespace kopf {

const char* version() noexcept {
    return KOPF_VERSION;
}

}  // namespace kopf
