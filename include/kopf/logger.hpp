// Per-object loggers given to handlers. Implemented with spdlog inside the library.
#pragma once

#include <charconv>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace kopf {

enum class LogLevel { DEBUG, INFO, WARNING, ERROR, CRITICAL };

/// A logger with Kopf's level names. Object loggers prefix messages with `[namespace/name]`.
/// Messages may have `{}` placeholders filled with streamable arguments (booleans as `true` and
/// `false`):
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
    // Integers that streams print as numbers (not bool, not the character types).
    template <class T>
    static constexpr bool is_number_v =
        std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
        !std::is_same_v<T, signed char> && !std::is_same_v<T, unsigned char> &&
        !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> &&
        !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

    template <class T>
    static void append_next(std::string& out, std::string_view& f, const T& value) {
        auto pos = f.find("{}");
        if (pos == std::string_view::npos) return;
        out.append(f.substr(0, pos));
        // Strings and integers are appended directly: a stream per argument costs more than
        // the rest of a log line (two lines per handled object on a busy operator).
        if constexpr (std::is_convertible_v<const T&, std::string_view>) {
            out.append(std::string_view(value));
        } else if constexpr (std::is_same_v<T, bool>) {
            out.append(value ? "true" : "false");  // not the stream's 1/0
        } else if constexpr (is_number_v<T>) {
            char digits[24];
            const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
            out.append(digits, end);
        } else {
            std::ostringstream s;
            s << value;
            out.append(s.str());
        }
        f.remove_prefix(pos + 2);
    }
};

}  // namespace kopf
