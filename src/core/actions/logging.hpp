// The log formats of `kopf run` (full, plain, json), verbosity, and
// the per-object log records (`[namespace/name] message`, the object reference in
// JSON) that may also be posted as Kubernetes Events.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <exception>
#include <functional>
#include <kopf/logger.hpp>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kopf::actions {

/// The default object logger: spdlog with a "[namespace/name] " prefix (loggers.cpp).
std::shared_ptr<Logger> make_object_logger(const nlohmann::json& body);

/// Kopf's log levels as spdlog's.
spdlog::level::level_enum spdlog_level_of(LogLevel level);

}  // namespace kopf::actions

namespace kopf::runtime {

enum class LogFormat { full, plain, json };

// Parses "full", "plain" or "json"; throws std::invalid_argument naming the value otherwise.
LogFormat parse_log_format(std::string_view text);

struct LoggingOptions {
    LogFormat format = LogFormat::full;
    std::optional<bool> prefix;     // unset: on for full/plain, off for json (as in Kopf)
    std::string refkey = "object";  // JSON key holding the object reference
    bool verbose = false;           // -v: debug messages
    bool debug = false;             // -d: also the low-level (trace) messages, e.g. API traffic
    bool quiet = false;             // -q: warnings and errors only
};

// Every log line, formatted as written to stderr, is also handed to `listener` (called under the
// sink's lock: it must not log) until remove_log_listener(the returned id).
int add_log_listener(std::function<void(std::string_view)> listener);
void remove_log_listener(int id);

// Installs the format and level on every spdlog logger, present and future.
void configure_logging(const LoggingOptions& options);

// The object a log record is about: rendered as `[namespace/name] ` before the message
// and, in JSON, as {"apiVersion", "kind", "name", "uid", "namespace"} under the refkey.
struct ObjectRef {
    std::string api_version;
    std::string kind;
    std::string namespace_;
    std::string name;
    std::string uid;

    static ObjectRef from_body(const nlohmann::json& body);
    nlohmann::json to_json() const;
    std::string prefix() const;  // "[namespace/name]" or "[name]" for cluster objects
};

// Called for every object log record; installed by the running operator for settings.posting.
using ObjectLogHook =
    std::function<void(spdlog::level::level_enum, const ObjectRef&, std::string_view)>;

// One object-log hook and the lowest level it acts on. Every operator has its own (its posting
// context, posting.hpp).
class ObjectLogHooks {
  public:
    // `minimal`: the lowest level the hook acts on (lower levels are not even formatted).
    void set(ObjectLogHook hook, spdlog::level::level_enum minimal = spdlog::level::trace);
    ObjectLogHook get() const;
    // Whether a record of this level is handed to the hook.
    bool wants(spdlog::level::level_enum level) const { return level >= minimal_.load(); }

  private:
    mutable std::mutex mutex_;
    ObjectLogHook hook_;
    std::atomic<spdlog::level::level_enum> minimal_{spdlog::level::off};
};

// Logs a message about an object through the "kopf.objects" logger, and hands it to the
// event hook (Kubernetes Events posting) of `hooks` when one is installed.
void log_object(spdlog::level::level_enum level, const ObjectRef& ref, std::string_view message,
                const ObjectLogHooks& hooks);
// The same without any hook (records logged outside any operator).
void log_object(spdlog::level::level_enum level, const ObjectRef& ref, std::string_view message);

// Whether an object log record of this level would be written or handed to the hook of `hooks`.
bool object_logging_enabled(spdlog::level::level_enum level, const ObjectLogHooks& hooks);

// A kopf::Logger that writes to the named spdlog logger (activities and framework messages).
class NamedLogger final : public kopf::Logger {
  public:
    explicit NamedLogger(std::string name) : name_(std::move(name)) {}
    void log(LogLevel level, std::string_view message) override;

  private:
    std::string name_;
};

// The spdlog logger with the given dotted name (e.g. "kopf.activities"), created on first use.
std::shared_ptr<spdlog::logger> logger(const std::string& name);

// The message of a failed task's exception, for the log line about it.
std::string describe(std::exception_ptr error);

}  // namespace kopf::runtime
