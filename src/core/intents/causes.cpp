#include "core/intents/causes.hpp"

#include "structs/finalizers.hpp"

namespace kopf::intents {

std::string to_string(Reason reason) {
    switch (reason) {
        case Reason::CREATE:
            return "create";
        case Reason::UPDATE:
            return "update";
        case Reason::DELETE:
            return "delete";
        case Reason::RESUME:
            return "resume";
        case Reason::NOOP:
            return "noop";
        case Reason::FREE:
            return "free";
        case Reason::GONE:
            return "gone";
    }
    return "noop";
}

std::string title(Reason reason) {
    switch (reason) {
        case Reason::CREATE:
            return "creation";
        case Reason::UPDATE:
            return "updating";
        case Reason::DELETE:
            return "deletion";
        case Reason::RESUME:
            return "resuming";
        case Reason::NOOP:
            return "noop";
        case Reason::FREE:
            return "free";
        case Reason::GONE:
            return "gone";
    }
    return "noop";
}

bool is_handler_reason(Reason r) {
    return r == Reason::CREATE || r == Reason::UPDATE || r == Reason::DELETE || r == Reason::RESUME;
}

bool ChangingCause::deleted() const {
    return body && finalizers::is_deletion_ongoing(*body);
}

Reason detect_reason(const std::string& raw_type, const json& body, const std::string& finalizer,
                     const std::optional<json>& old, const Diff& diff, bool initial) {
    if (raw_type == "DELETED") return Reason::GONE;
    if (finalizers::is_deletion_ongoing(body) && !finalizers::is_deletion_blocked(body, finalizer))
        return Reason::FREE;
    if (finalizers::is_deletion_ongoing(body)) return Reason::DELETE;
    if (!old) return Reason::CREATE;
    if (diff.empty() && initial) return Reason::RESUME;
    if (diff.empty()) return Reason::NOOP;
    return Reason::UPDATE;
}

}  // namespace kopf::intents
