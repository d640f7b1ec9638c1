// Kopf's timestamps: what it writes into progress records ("started", "delayed", ...) and what it
// reads back, from Kopf and from Kopf++ alike.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace kopf::structs {

using Clock = std::chrono::system_clock;

/// "2026-11-21T23:21:38.929772+00:00" (UTC, microseconds), as Kopf writes timestamps.
std::string format_iso8601(Clock::time_point t);
/// Parses Kopf's timestamps with or without a zone ("+00:00", "Z", none = UTC) and fraction.
std::optional<Clock::time_point> parse_iso8601(const std::string& s);

}  // namespace kopf::structs
