// The public client (kopf/api.hpp) on top of the operator's ApiClient: the core that every
// kopf::Client and kopf::Api handle shares, bound to the operator's loop, and closed when the
// operator exits.
#pragma once

#include <boost/asio/io_context.hpp>
#include <kopf/api.hpp>
#include <memory>
#include <thread>

#include "clients/api.hpp"
#include "clients/settings.hpp"

namespace kopf::clients {

// A core on the operator's loop using its client (credentials, retries, rate limit); `api` must
// stay alive until close_client_core(). `loop_thread` runs the loop (blocking calls there are
// refused): the caller's thread unless given.
std::shared_ptr<detail::ClientCore> make_client_core(
    boost::asio::io_context& io, ApiClient& api, WatchSettings watching = {},
    std::thread::id loop_thread = std::this_thread::get_id());

// Ends the core's use of the ApiClient: the open watches stop, calls still waiting fail, and new
// calls throw. Call it on the loop's thread while the loop still runs.
void close_client_core(detail::ClientCore& core);

}  // namespace kopf::clients
