// Per-object loggers given to handlers. Implemented with spdlog inside the library.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace kopf {

enum class LogLevel { DEBUG, INFO, WARNING, ERROR, CRITICAL };

/// A logger with Kopf's level names. Object loggers prefix messages with `[namespace/name]`.
/// Messages may have `{}` placeholders filled with streamable arguments:
///
///     ctx.logger.info("Scaled to {} replicas", replicas);
class Logger {
  public:
    virtual ~Logger() = default;
    virtual void log(LogLevel level, std::string_view message) = 0;
    /// Whether a message of this level goes anywhere; the placeholders of messages that do
    /// not are never formatted (bodies in debug messages are costly to render).
    virtual bool enabled_for(LogLevel level) const {
        (void)level;
        return true;
    }

    template <class... A>
    void debug(std::string_view f, const A&... a) {
        if (enabled_for(LogLevel::DEBUG)) log(LogLevel::DEBUG, format(f, a...));
    }
    template <class... A>
    void info(std::string_view f, const A&... a) {
        if (enabled_for(LogLevel::INFO)) log(LogLevel::INFO, format(f, a...));
    }
    template <class... A>
    void warning(std::string_view f, const A&... a) {
        if (enabled_for(LogLevel::WARNING)) log(LogLevel::WARNING, format(f, a...));
    }
    template <class... A>
    void error(std::string_view f, const A&... a) {
        if (enabled_for(LogLevel::ERROR)) log(LogLevel::ERROR, format(f, a...));
    }
    /// An error with the current exception's description, as Python's logger.exception().
    template <class... A>
    void exception(std::string_view f, const A&... a) {
        if (enabled_for(LogLevel::ERROR)) log(LogLevel::ERROR, format(f, a...));
    }

    /// Replaces each `{}` with the next argument (streamed with operator<<).
    template <class... A>
    static std::string format(std::string_view f, const A&... a) {
        std::string out;
        (append_next(out, f, a), ...);
        out.append(f);
        return out;
    }

  private:
    template <class T>
    static void append_next(std::string& out, std::string_view& f, const T& value) {
        auto pos = f.find("{}");
        if (pos == std::string_view::npos) return;
        out.append(f.substr(0, pos));
        std::ostringstream s;
        s << value;
        out.append(s.str());
        f.remove_prefix(pos + 2);
    }
};

}  // namespace kopf
