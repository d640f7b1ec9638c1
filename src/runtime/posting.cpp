#include "runtime/posting.hpp"

#include <cxxabi.h>

#include <exception>
#include <mutex>
#include <typeinfo>

namespace kopf::runtime {
namespace {

std::mutex identity_mutex;
EventIdentity current_identity;
bool posting_enabled = true;
LogLevel posting_level = LogLevel::INFO;

void queue_events(const json& objects, const std::string& type, const std::string& reason,
                  const std::string& message, const EventIdentity& identity) {
    if (objects.is_array()) {
        for (const auto& object : objects) queue_events(object, type, reason, message, identity);
    } else if (auto post = build_event(objects, type, reason, message, identity)) {
        posting_queue().push(std::move(*post));
    }
}

}  // namespace

EventQueue& posting_queue() {
    static EventQueue queue;
    return queue;
}

void set_posting_identity(EventIdentity identity, bool enabled) {
    std::lock_guard lock(identity_mutex);
    current_identity = std::move(identity);
    posting_enabled = enabled;
}

void set_posting_level(LogLevel level) {
    std::lock_guard lock(identity_mutex);
    posting_level = level;
}

void post_event(const json& objects, const std::string& type, const std::string& reason,
                const std::string& message, LogLevel level) {
    EventIdentity identity;
    {
        std::lock_guard lock(identity_mutex);
        if (!posting_enabled || level < posting_level) return;
        identity = current_identity;
    }
    queue_events(objects, type, reason, message, identity);
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
