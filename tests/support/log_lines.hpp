// The log lines of some of the operator's named loggers (e.g. "kopf.engines.peering"), from the
// debug level on, for the tests that check what is logged: attached when constructed, detached
// (and the loggers' levels restored) when destroyed. All operators of the process log to them.
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/actions/logging.hpp"

namespace kopf::testing {

class LogLines {
  public:
    explicit LogLines(std::initializer_list<const char*> names) : sink_(std::make_shared<Sink>()) {
        for (const char* name : names) {
            auto logger = runtime::logger(name);
            loggers_.emplace_back(logger, logger->level());
            logger->set_level(spdlog::level::debug);
            logger->sinks().push_back(sink_);
        }
    }
    ~LogLines() {
        for (auto& [logger, level] : loggers_) {
            auto& sinks = logger->sinks();
            sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
            logger->set_level(level);
        }
    }
    LogLines(const LogLines&) = delete;
    LogLines& operator=(const LogLines&) = delete;

    bool contains(const std::string& text) const { return count(text) > 0; }
    int count(const std::string& text) const {
        std::lock_guard lock(sink_->lines_mutex);
        return static_cast<int>(
            std::count_if(sink_->lines.begin(), sink_->lines.end(),
                          [&](const auto& line) { return line.find(text) != std::string::npos; }));
    }
    std::string text() const {
        std::lock_guard lock(sink_->lines_mutex);
        std::string all;
        for (const auto& line : sink_->lines) all += line + "\n";
        return all;
    }

  private:
    struct Sink : spdlog::sinks::base_sink<std::mutex> {
        mutable std::mutex lines_mutex;
        std::vector<std::string> lines;

      protected:
        void sink_it_(const spdlog::details::log_msg& msg) override {
            std::lock_guard lock(lines_mutex);
            lines.emplace_back(msg.payload.data(), msg.payload.size());
        }
        void flush_() override {}
    };
    std::shared_ptr<Sink> sink_;
    std::vector<std::pair<std::shared_ptr<spdlog::logger>, spdlog::level::level_enum>> loggers_;
};

}  // namespace kopf::testing
