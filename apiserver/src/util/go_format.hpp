// Go-compatible rendering of values inside error messages, so that the texts match
// kube-apiserver's byte for byte (Go's %q for strings, %v for numbers).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kopf::apiserver {

// Go's strconv.Quote: double quotes, backslash escapes, \xNN for control bytes and invalid
// UTF-8 (valid multi-byte characters are kept as they are).
std::string go_quote(std::string_view text);

// Go's %v of a float64 (strconv 'g', shortest): exponent form when the decimal exponent
// is < -4 or >= 6, e.g. 0.5, 100000, 1e+06, 1.5e-05.
std::string go_float(double value);

// Go's %v of a JSON value as decoded by apimachinery: int64, float64, bool, string
// (unquoted), null as "<nil>", objects and arrays as compact JSON.
std::string go_value(const nlohmann::json& value);

// The value part of a field error ("Invalid value: <here>"): strings quoted, numbers and
// booleans plain, null as "null", objects and arrays as compact JSON.
std::string field_value_text(const nlohmann::json& value);

}  // namespace kopf::apiserver
