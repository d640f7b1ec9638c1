// The client layer's settings derived from the operator's (settings.networking.*,
// settings.watching.*): the one mapping of OperatorSettings onto clients::ClientSettings and
// clients::WatchSettings, for the operator's API clients and any other that follows its settings.
#pragma once

#include <kopf/settings.hpp>

#include "clients/settings.hpp"

namespace kopf::configs {

clients::ClientSettings client_settings(const OperatorSettings& settings);
clients::WatchSettings watch_settings(const OperatorSettings& settings);

}  // namespace kopf::configs
