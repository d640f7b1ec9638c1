// The Kopf++ version, as `kopf version` prints it.
#pragma once

namespace kopf {

// "0.1.0": the library's version (also sent in User-Agent as kopf++/<version>).
const char* version() noexcept;

}  // namespace kopf
