// The operator's lifecycle on one Asio event loop (running.cpp): settings, startup activities,
// login, serving the resources, the stop and ready flags, signals, cleanup activities.
#pragma once

#include <functional>
#include <kopf/logger.hpp>
#include <kopf/run.hpp>
#include <memory>
#include <string>

#include "core/actions/logging.hpp"
#include "core/engines/activities.hpp"
