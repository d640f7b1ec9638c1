// Causes: what happened to an object, detected from the event, the diff base and deletion marks
// (Kopf's intents/causes.py detect_changing_cause).
#pragma once

#include <kopf/diff.hpp>
#include <kopf/json.hpp>
#include <kopf/resource.hpp>
#include <optional>
#include <string>

namespace kopf::intents {

enum class Reason { CREATE, UPDATE, DELETE, RESUME, NOOP, FREE, GONE };

/// "create", "update", "delete", "resume", "noop", "free", "gone".
std::string to_string(Reason reason);
/// "creation", "update", "deletion", "resuming", ... (for log lines).
std::string title(Reason reason);
bool is_handler_reason(Reason reason);

struct ChangingCause {
    Reason reason;
    const Resource* resource;
    const json* body;
    std::optional<json> old;  ///< the essence from the diff base (none if never handled)
    std::optional<json> new_;
    Diff diff;
    bool initial = false;  ///< seen in the initial listing and not yet fully handled once
    bool deleted() const;  ///< the object is marked for deletion
};

/// Detect the cause; `raw_type` is the watch event type ("" for the initial listing).
Reason detect_reason(const std::string& raw_type, const json& body, const std::string& finalizer,
                     const std::optional<json>& old, const Diff& diff, bool initial);

}  // namespace kopf::intents
