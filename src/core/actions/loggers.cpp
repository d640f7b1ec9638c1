// Object loggers: "[namespace/name] message" through spdlog's default logger.
#include <spdlog/spdlog.h>

#include "core/actions/logging.hpp"
#include "structs/dicts.hpp"

namespace kopf::actions {

namespace {
class SpdlogObjectLogger final : public Logger {
  public:
    explicit SpdlogObjectLogger(std::string prefix) : prefix_(std::move(prefix)) {}
    void log(LogLevel level, std::string_view message) override {
        spdlog::log(spdlog_level_of(level), "{}{}", prefix_, message);
    }
    bool enabled_for(LogLevel level) const override {
        return spdlog::default_logger_raw()->should_log(spdlog_level_of(level));
    }

  private:
    std::string prefix_;
};
}  // namespace

spdlog::level::level_enum spdlog_level_of(LogLevel level) {
    switch (level) {
        case LogLevel::DEBUG:
            return spdlog::level::debug;
        case LogLevel::INFO:
            return spdlog::level::info;
        case LogLevel::WARNING:
            return spdlog::level::warn;
        case LogLevel::ERROR:
            return spdlog::level::err;
        case LogLevel::CRITICAL:
            return spdlog::level::critical;
    }
    return spdlog::level::info;
}

std::shared_ptr<Logger> make_object_logger(const json& body) {
    const json* ns = dicts::resolve(body, {"metadata", "namespace"});
    const json* name = dicts::resolve(body, {"metadata", "name"});
    std::string prefix = "[";
    if (ns && ns->is_string()) prefix += ns->get<std::string>() + "/";
    prefix += name && name->is_string() ? name->get<std::string>() : "";
    prefix += "] ";
    return std::make_shared<SpdlogObjectLogger>(prefix);
}

}  // namespace kopf::actions

namespace kopf::runtime {

void NamedLogger::log(LogLevel level, std::string_view message) {
    auto target = logger(name_);
    switch (level) {
        case LogLevel::DEBUG:
            target->debug("{}", message);
            break;
        case LogLevel::INFO:
            target->info("{}", message);
            break;
        case LogLevel::WARNING:
            target->warn("{}", message);
            break;
        case LogLevel::ERROR:
            target->error("{}", message);
            break;
        case LogLevel::CRITICAL:
            target->critical("{}", message);
            break;
    }
}

}  // namespace kopf::runtime
