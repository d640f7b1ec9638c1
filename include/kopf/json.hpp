// The JSON type of Kopf++: bodies, patches, results and memos are nlohmann::json values.
#pragma once

#include <nlohmann/json.hpp>

namespace kopf {

/// Every body, patch, handler result and parameter is a `kopf::json` (nlohmann::json).
using json = nlohmann::json;

}  // namespace kopf
