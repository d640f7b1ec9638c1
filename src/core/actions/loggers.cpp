// Object loggers: "[namespace/name] message" through spdlog's default logger.
#include <spdlog/spdlog.h>

#include "core/reactor/processing.hpp"
#include "structs/dicts.hpp"

namespace kopf::reactor {

namespace {
class SpdlogObjectLogger final : public Logger {
  public:
    explicit SpdlogObjectLogger(std::string prefix) : prefix_(std::move(prefix)) {}
    void log(LogLevel level, std::string_view message) override {
        auto lvl = spdlog::level::info;
        switch (level) {
            case LogLevel::DEBUG:
                lvl = spdlog::level::debug;
                break;
            case LogLevel::INFO:
                lvl = spdlog::level::info;
                break;
            case LogLevel::WARNING:
                lvl = spdlog::level::warn;
                break;
            case LogLevel::ERROR:
                lvl = spdlog::level::err;
                break;
            case LogLevel::CRITICAL:
                lvl = spdlog::level::critical;
                break;
        }
        spdlog::log(lvl, "{}{}", prefix_, message);
    }

  private:
    std::string prefix_;
};
}  // namespace

std::shared_ptr<Logger> make_object_logger(const json& body) {
    const json* ns = dicts::resolve(body, {"metadata", "namespace"});
    const json* name = dicts::resolve(body, {"metadata", "name"});
    std::string prefix = "[";
    if (ns && ns->is_string()) prefix += ns->get<std::string>() + "/";
    prefix += name && name->is_string() ? name->get<std::string>() : "";
    prefix += "] ";
    return std::make_shared<SpdlogObjectLogger>(prefix);
}

}  // namespace kopf::reactor
