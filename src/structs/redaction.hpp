// Secrets' values kept out of the logs. Kopf prints whole bodies and diffs at debug level,
// Secrets' data included; Kopf++ shows their keys with "<redacted>" values instead.
#pragma once

#include <kopf/diff.hpp>
#include <kopf/json.hpp>
#include <kopf/resource.hpp>

namespace kopf::structs {

inline constexpr const char* redacted_value = "<redacted>";

/// Core v1 Secrets: the kind whose values are redacted in log lines.
bool is_secret(const kopf::Resource& resource);

/// A copy of a Secret's body for logging: the values of `data` and `stringData` and the
/// annotations that hold copies of them (kubectl's last-applied-configuration, Kopf's diff base)
/// replaced by "<redacted>".
json redact_secret_values(const json& body);

/// The same for a diff of a Secret's essence: changes in `data`/`stringData` keep their paths.
Diff redact_secret_values(const Diff& diff);

/// The same for a JSON patch of a Secret: the values its operations write there.
json redact_secret_json_patch(const json& operations);

}  // namespace kopf::structs
