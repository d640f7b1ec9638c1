#include "configs/client_settings.hpp"

namespace kopf::configs {

clients::ClientSettings client_settings(const OperatorSettings& settings) {
    clients::ClientSettings out;
    out.request_timeout = clients::Seconds(settings.networking.request_timeout);
    if (settings.networking.connect_timeout) {
        out.connect_timeout = clients::Seconds(*settings.networking.connect_timeout);
    }
    out.error_backoffs = settings.networking.error_backoffs;
    out.enforce_retry_after = settings.networking.enforce_retry_after;
    out.qps = settings.networking.qps;
    out.trust_env = settings.networking.trust_env;
    out.burst = settings.networking.burst;
    out.pool_limit = settings.networking.connection_limit;
    return out;
}

clients::WatchSettings watch_settings(const OperatorSettings& settings) {
    clients::WatchSettings out;
    if (settings.watching.server_timeout) {
        out.server_timeout = clients::Seconds(*settings.watching.server_timeout);
    }
    if (settings.watching.client_timeout) {
        out.client_timeout = clients::Seconds(*settings.watching.client_timeout);
    }
    if (settings.watching.connect_timeout) {
        out.connect_timeout = clients::Seconds(*settings.watching.connect_timeout);
    }
    out.reconnect_backoff = clients::Seconds(settings.watching.reconnect_backoff);
    out.inactivity_timeout = clients::Seconds(settings.watching.inactivity_timeout);
    return out;
}

}  // namespace kopf::configs
