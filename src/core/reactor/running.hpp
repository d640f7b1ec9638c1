// The operator's lifecycle on one Asio event loop (running.cpp): settings, startup activities,
// login, serving the resources, the stop and ready flags, signals, cleanup activities.
#pragma once

#include <functional>
#include <kopf/logger.hpp>
#include <kopf/run.hpp>
#include <memory>
#include <string>

namespace kopf::runtime {

// A kopf::Logger that writes to the named spdlog logger (activities and framework messages).
class NamedLogger final : public kopf::Logger {
  public:
    explicit NamedLogger(std::string name) : name_(std::move(name)) {}
    void log(LogLevel level, std::string_view message) override;

  private:
    std::string name_;
};

// Thrown when the operator cannot start: the message is the one-paragraph reason.
class StartupError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace kopf::runtime
