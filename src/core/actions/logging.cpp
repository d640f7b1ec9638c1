#include "core/actions/logging.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <kopf/run.hpp>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace kopf::runtime {
namespace {

// The object of the record being logged on this thread (set only inside log_object):
// spdlog formats synchronously in the calling thread, so the formatter can read it.
thread_local const ObjectRef* current_object = nullptr;

const char* level_name(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:  // Kopf's DEBUG covers spdlog's trace too
        case spdlog::level::debug:
            return "DEBUG";
        case spdlog::level::info:
            return "INFO";
        case spdlog::level::warn:
            return "WARNING";
        case spdlog::level::err:
            return "ERROR";
        case spdlog::level::critical:
            return "CRITICAL";
        default:
            return "NOTSET";
    }
}

const char* severity_name(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:
        case spdlog::level::debug:
            return "debug";
        case spdlog::level::info:
            return "info";
        case spdlog::level::warn:
            return "warning";
        case spdlog::level::err:
            return "error";
        case spdlog::level::critical:
            return "critical";
        default:
            return "notset";
    }
}

// "YYYY-mm-dd HH:MM:SS" in local time, rendered once per second per thread.
std::string_view local_seconds(std::time_t time) {
    thread_local std::time_t cached_time = -1;
    thread_local std::string cached_text;
    if (time != cached_time) {
        std::tm local{};
        localtime_r(&time, &local);
        cached_text = fmt::format("{:%Y-%m-%d %H:%M:%S}", local);
        cached_time = time;
    }
    return cached_text;
}

// "[namespace/name]" or "[name]" (cluster-scoped), into a std::string or a format buffer.
template <class Out>
void append_prefix(Out& out, const ObjectRef& ref) {
    out.push_back('[');
    if (!ref.namespace_.empty()) {
        out.append(ref.namespace_.data(), ref.namespace_.data() + ref.namespace_.size());
        out.push_back('/');
    }
    out.append(ref.name.data(), ref.name.data() + ref.name.size());
    out.push_back(']');
}

class KopfFormatter final : public spdlog::formatter {
  public:
    KopfFormatter(LogFormat format, bool prefix, std::string refkey)
        : format_(format), prefix_(prefix), refkey_(std::move(refkey)) {}

    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const std::string_view payload(msg.payload.data(), msg.payload.size());
        const auto since_epoch = msg.time.time_since_epoch();
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
        const auto micros =
            std::chrono::duration_cast<std::chrono::microseconds>(since_epoch - seconds).count();
        const std::time_t time = std::chrono::system_clock::to_time_t(msg.time);
        // The plain and full lines are appended piece by piece: two lines per handled object
        // on a busy operator made a general-purpose format call per line show in profiles.
        switch (format_) {
            case LogFormat::plain:
                append_message(dest, payload);
                dest.push_back('\n');
                break;
            case LogFormat::full: {
                // "[%(asctime)s,%(msecs)03d] %(name)-20.20s [%(levelname)-8s] %(message)s"
                const std::string_view name(msg.logger_name.data(), msg.logger_name.size());
                const int millis = static_cast<int>(micros / 1000);
                const char fraction[] = {',',
                                         static_cast<char>('0' + millis / 100),
                                         static_cast<char>('0' + millis / 10 % 10),
                                         static_cast<char>('0' + millis % 10),
                                         ']',
                                         ' '};
                dest.push_back('[');
                append(dest, local_seconds(time));
                append(dest, std::string_view(fraction, sizeof fraction));
                append_padded(dest, name, 20);
                append(dest, " [");
                append_padded(dest, level_name(msg.level), 8);
                append(dest, "] ");
                append_message(dest, payload);
                dest.push_back('\n');
                break;
            }
            case LogFormat::json: {
                std::tm utc{};
                gmtime_r(&time, &utc);
                std::string message(payload);
                if (current_object && prefix_) message = current_object->prefix() + " " + message;
                nlohmann::ordered_json record;
                record["message"] = message;
                if (current_object) record[refkey_] = current_object->to_json();
                record["severity"] = severity_name(msg.level);
                record["timestamp"] =
                    fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}", utc, static_cast<int>(micros));
                const std::string line =
                    record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
                fmt::format_to(std::back_inserter(dest), "{}\n", line);
                break;
            }
        }
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<KopfFormatter>(format_, prefix_, refkey_);
    }

  private:
    static void append(spdlog::memory_buf_t& dest, std::string_view text) {
        dest.append(text.data(), text.data() + text.size());
    }

    // As "%-{width}.{width}s" for ASCII text; other text goes through fmt's width rules.
    static void append_padded(spdlog::memory_buf_t& dest, std::string_view text,
                              std::size_t width) {
        const bool ascii = std::all_of(text.begin(), text.end(),
                                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
        if (!ascii) {
            fmt::format_to(fmt::appender(dest), "{:<{}.{}}", text, width, width);
            return;
        }
        text = text.substr(0, width);
        append(dest, text);
        for (std::size_t i = text.size(); i < width; ++i) dest.push_back(' ');
    }

    // The message, after the "[namespace/name] " prefix of the object being logged.
    void append_message(spdlog::memory_buf_t& dest, std::string_view payload) const {
        if (current_object && prefix_) {
            append_prefix(dest, *current_object);
            dest.push_back(' ');
        }
        append(dest, payload);
    }

    LogFormat format_;
    bool prefix_;
    std::string refkey_;
};

// Who else receives the formatted lines (the testing kit's captured output), besides stderr.
struct LogListeners {
    std::mutex mutex;
    std::map<int, std::function<void(std::string_view)>> by_id;
    int next_id = 0;
    std::atomic<std::size_t> count{0};  // the fast path of every line: nobody listens
};
LogListeners& log_listeners() {
    static LogListeners listeners;
    return listeners;
}

// Standard error, written in batches: a busy operator logs two INFO lines per handled object,
// and a write(2) per line cost more than formatting them. Lines reach stderr within
// kFlushDelay; warnings and errors (logged before any forced exit) write out everything at
// once, and so does the end of the process.
class BatchingStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    ~BatchingStderrSink() override {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wakeup_.notify_all();
        if (flusher_.joinable()) flusher_.join();
        write_out();
    }

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t formatted;
        formatter_->format(msg, formatted);
        buffer_.append(formatted.data(), formatted.size());
        if (auto& listeners = log_listeners(); listeners.count.load(std::memory_order_relaxed)) {
            const std::string_view line(formatted.data(), formatted.size());
            std::lock_guard lock(listeners.mutex);
            for (auto& [id, listener] : listeners.by_id) listener(line);
        }
        if (msg.level >= spdlog::level::warn || buffer_.size() >= kMaxBuffered) {
            write_out();
        } else if (!flusher_.joinable()) {
            flusher_ = std::thread([this] { flush_periodically(); });
        } else if (buffer_.size() == formatted.size()) {
            wakeup_.notify_one();  // the first line of a batch
        }
    }
    void flush_() override { write_out(); }

  private:
    static constexpr std::size_t kMaxBuffered = 64 * 1024;
    static constexpr auto kFlushDelay = std::chrono::milliseconds(20);

    // Called with the base sink's mutex held.
    void write_out() {
        std::size_t written = 0;
        while (written < buffer_.size()) {
            const ssize_t n =
                ::write(STDERR_FILENO, buffer_.data() + written, buffer_.size() - written);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;  // nowhere to write: drop, as stderr would
            written += static_cast<std::size_t>(n);
        }
        buffer_.clear();
    }

    void flush_periodically() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            wakeup_.wait(lock, [this] { return stopping_ || !buffer_.empty(); });
            if (stopping_) break;
            // Let the batch gather, then write it out.
            wakeup_.wait_for(lock, kFlushDelay, [this] { return stopping_; });
            write_out();
        }
    }

    std::string buffer_;
    std::condition_variable wakeup_;
    std::thread flusher_;
    bool stopping_ = false;
};

std::shared_ptr<spdlog::sinks::sink> shared_sink() {
    static auto sink = std::make_shared<BatchingStderrSink>();
    return sink;
}

}  // namespace

LogFormat parse_log_format(std::string_view text) {
    if (text == "full") return LogFormat::full;
    if (text == "plain") return LogFormat::plain;
    if (text == "json") return LogFormat::json;
    throw std::invalid_argument(
        fmt::format("Unknown log format '{}': use one of full, plain, json.", text));
}

int add_log_listener(std::function<void(std::string_view)> listener) {
    auto& listeners = log_listeners();
    std::lock_guard lock(listeners.mutex);
    const int id = ++listeners.next_id;
    listeners.by_id.emplace(id, std::move(listener));
    listeners.count = listeners.by_id.size();
    return id;
}

void remove_log_listener(int id) {
    auto& listeners = log_listeners();
    std::lock_guard lock(listeners.mutex);
    listeners.by_id.erase(id);
    listeners.count = listeners.by_id.size();
}

void configure_logging(const LoggingOptions& options) {
    const bool prefix = options.prefix.value_or(options.format != LogFormat::json);
    auto level = spdlog::level::info;
    if (options.quiet) level = spdlog::level::warn;
    if (options.verbose) level = spdlog::level::debug;
    if (options.debug) level = spdlog::level::trace;

    // Route the default logger (used by code that calls spdlog::info directly) to our sink.
    auto default_logger = std::make_shared<spdlog::logger>("kopf", shared_sink());
    spdlog::set_default_logger(default_logger);
    spdlog::set_formatter(std::make_unique<KopfFormatter>(options.format, prefix, options.refkey));
    spdlog::set_level(level);
    spdlog::flush_on(spdlog::level::warn);  // lower levels reach stderr in short batches
}

ObjectRef ObjectRef::from_body(const nlohmann::json& body) {
    ObjectRef ref;
    if (!body.is_object()) return ref;
    ref.api_version = body.value("apiVersion", "");
    ref.kind = body.value("kind", "");
    if (auto meta = body.find("metadata"); meta != body.end() && meta->is_object()) {
        ref.namespace_ = meta->value("namespace", "");
        ref.name = meta->value("name", "");
        ref.uid = meta->value("uid", "");
    }
    return ref;
}

nlohmann::json ObjectRef::to_json() const {
    nlohmann::ordered_json out;
    out["apiVersion"] = api_version;
    out["kind"] = kind;
    out["name"] = name;
    out["uid"] = uid;
    out["namespace"] = namespace_;
    return nlohmann::json::parse(out.dump());
}

std::string ObjectRef::prefix() const {
    std::string out;
    append_prefix(out, *this);
    return out;
}

void ObjectLogHooks::set(ObjectLogHook hook, spdlog::level::level_enum minimal) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
    minimal_ = hook_ ? minimal : spdlog::level::off;
}

ObjectLogHook ObjectLogHooks::get() const {
    std::lock_guard lock(mutex_);
    return hook_;
}

void log_object(spdlog::level::level_enum level, const ObjectRef& ref, std::string_view message,
                const ObjectLogHooks& hooks) {
    static auto objects = logger("kopf.objects");
    const ObjectRef* previous = current_object;
    current_object = &ref;
    objects->log(level, spdlog::string_view_t(message.data(), message.size()));
    current_object = previous;

    if (!hooks.wants(level)) return;
    if (auto hook = hooks.get()) hook(level, ref, message);
}

void log_object(spdlog::level::level_enum level, const ObjectRef& ref, std::string_view message) {
    static const ObjectLogHooks none;
    log_object(level, ref, message, none);
}

bool object_logging_enabled(spdlog::level::level_enum level, const ObjectLogHooks& hooks) {
    static auto objects = logger("kopf.objects");
    return objects->should_log(level) || hooks.wants(level);
}

std::shared_ptr<spdlog::logger> logger(const std::string& name) {
    if (auto existing = spdlog::get(name)) return existing;
    auto created = std::make_shared<spdlog::logger>(name, shared_sink());
    try {
        spdlog::initialize_logger(created);  // applies the configured formatter and level
    } catch (const spdlog::spdlog_ex&) {
        // Registered concurrently by another thread: use that one.
        if (auto existing = spdlog::get(name)) return existing;
    }
    return created;
}

std::string describe(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace kopf::runtime

namespace kopf {

void configure(const LogOptions& options) {
    runtime::LoggingOptions logging;
    logging.format = runtime::parse_log_format(options.format);
    logging.prefix = options.prefix;
    logging.refkey = options.refkey;
    logging.verbose = options.verbose;
    logging.debug = options.debug;
    logging.quiet = options.quiet;
    runtime::configure_logging(logging);
}

}  // namespace kopf
