// Kubernetes Events about the handled object: the all-purpose kopf::event() and the shortcuts
// for the usual types (info = Normal, warn = Warning, exception = Error with the exception text).
// Run it with: kopf run examples/04-events/example.cpp --verbose -A --standalone
#include <kopf/kopf.hpp>
#include <stdexcept>
#include <string>

#if __has_include(<kopf/events.hpp>)
#include <kopf/events.hpp>
#endif

// The posting functions live in libkopf; these declarations match its definitions, so the
// example compiles whether or not the public header above exists yet.
namespace kopf {
void event(const json& objects, const std::string& type, const std::string& reason,
           const std::string& message);
void info(const json& objects, const std::string& reason, const std::string& message);
void warn(const json& objects, const std::string& reason, const std::string& message);
void exception(const json& objects, const std::string& reason, const std::string& message);
}  // namespace kopf

void create_fn(kopf::Context& ctx) {
    // The all-purpose function: any type, any reason.
    kopf::event(ctx.body, "SomeType", "SomeReason", "Some message");

    // The shortcuts for the conventional types.
    kopf::info(ctx.body, "SomeReason", "Some message");
    kopf::warn(ctx.body, "SomeReason", "Some message");

    try {
        throw std::runtime_error("Exception text.");
    } catch (...) {
        kopf::exception(ctx.body, "SomeReason", "Some exception:");
    }
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
