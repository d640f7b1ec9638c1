#include "core/engines/posting.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <mutex>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kopf::runtime {
namespace {

thread_local std::shared_ptr<PostingContext> thread_context;

std::mutex fallbacks_mutex;
std::vector<std::shared_ptr<PostingContext>> fallbacks;  // running operators, oldest first

void queue_events(EventQueue& queue, const json& objects, const std::string& type,
                  const std::string& reason, const std::string& message,
                  const EventIdentity& identity) {
    if (objects.is_array()) {
        for (const auto& object : objects) {
            queue_events(queue, object, type, reason, message, identity);
        }
    } else if (auto post = build_event(objects, type, reason, message, identity)) {
        queue.push(std::move(*post));
    }
}

LogLevel kopf_level_of(spdlog::level::level_enum level) {
    if (level >= spdlog::level::critical) return LogLevel::CRITICAL;
    if (level >= spdlog::level::err) return LogLevel::ERROR;
    if (level >= spdlog::level::warn) return LogLevel::WARNING;
    if (level >= spdlog::level::info) return LogLevel::INFO;
    return LogLevel::DEBUG;
}

}  // namespace

void PostingContext::configure(const PostingSettings& settings) {
    {
        std::lock_guard lock(mutex_);
        identity_ = EventIdentity{settings.reporting_component, settings.reporting_instance,
                                  settings.event_name_prefix, "default"};
        enabled_ = settings.enabled;
        level_ = settings.level;
    }
    if (!settings.enabled || !settings.loggers) {
        object_log_hooks_.set(nullptr);
        return;
    }
    // The hook belongs to this context and dies with it: a plain pointer cannot dangle.
    object_log_hooks_.set(
        [this](spdlog::level::level_enum level, const ObjectRef& ref, std::string_view message) {
            const LogLevel kopf_level = kopf_level_of(level);
            const json object = {
                {"apiVersion", ref.api_version},
                {"kind", ref.kind},
                {"metadata",
                 {{"name", ref.name}, {"namespace", ref.namespace_}, {"uid", ref.uid}}}};
            post(object, event_type_for_level(kopf_level), "Logging", std::string(message),
                 kopf_level);
        },
        actions::spdlog_level_of(settings.level));
}

void PostingContext::post(const json& objects, const std::string& type, const std::string& reason,
                          const std::string& message, LogLevel level) {
    EventIdentity identity;
    {
        std::lock_guard lock(mutex_);
        if (!enabled_ || level < level_) return;
        identity = identity_;
    }
    queue_events(queue_, objects, type, reason, message, identity);
}

const std::shared_ptr<PostingContext>& process_posting_context() {
    static const auto context = std::make_shared<PostingContext>();
    return context;
}

std::shared_ptr<PostingContext> current_posting_context() {
    if (thread_context) return thread_context;
    {
        std::lock_guard lock(fallbacks_mutex);
        if (!fallbacks.empty()) return fallbacks.back();
    }
    return process_posting_context();
}

PostingScope::PostingScope(std::shared_ptr<PostingContext> context)
    : previous_(std::exchange(thread_context, std::move(context))) {}

PostingScope::~PostingScope() {
    thread_context = std::move(previous_);
}

PostingFallback::PostingFallback(std::shared_ptr<PostingContext> context)
    : context_(std::move(context)) {
    std::lock_guard lock(fallbacks_mutex);
    fallbacks.push_back(context_);
}

PostingFallback::~PostingFallback() {
    std::lock_guard lock(fallbacks_mutex);
    if (auto it = std::find(fallbacks.rbegin(), fallbacks.rend(), context_);
        it != fallbacks.rend()) {
        fallbacks.erase(std::next(it).base());
    }
}

void post_event(const json& objects, const std::string& type, const std::string& reason,
                const std::string& message, LogLevel level) {
    current_posting_context()->post(objects, type, reason, message, level);
}

}  // namespace kopf::runtime

namespace kopf {

void event(const json& objects, const std::string& type, const std::string& reason,
           const std::string& message) {
    runtime::post_event(objects, type, reason, message);
}

void info(const json& objects, const std::string& reason, const std::string& message) {
    runtime::post_event(objects, "Normal", reason, message, LogLevel::INFO);
}

void warn(const json& objects, const std::string& reason, const std::string& message) {
    runtime::post_event(objects, "Warning", reason, message, LogLevel::WARNING);
}

void exception(const json& objects, const std::string& reason, const std::string& message) {
    std::string exception_reason = reason;
    std::string text = message;
    if (auto current = std::current_exception()) {
        try {
            std::rethrow_exception(current);
        } catch (const std::exception& error) {
            if (exception_reason.empty()) {
                int status = 0;
                char* name = abi::__cxa_demangle(typeid(error).name(), nullptr, nullptr, &status);
                exception_reason = status == 0 && name ? name : typeid(error).name();
                std::free(name);
                if (auto pos = exception_reason.rfind("::"); pos != std::string::npos) {
                    exception_reason = exception_reason.substr(pos + 2);
                }
            }
            text = text.empty() ? error.what() : text + " " + error.what();
        } catch (...) {
        }
    }
    runtime::post_event(objects, "Error", exception_reason.empty() ? "Exception" : exception_reason,
                        text, LogLevel::ERROR);
}

}  // namespace kopf
