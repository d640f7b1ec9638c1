// Fast JSON text <-> kopf::json for the hot paths (watch lines, response and request bodies,
// diff-base annotations). nlohmann's own parser and serializer work byte by byte; these produce
// the same values and the same text several times faster (see bench/micro_bench.cpp).
#pragma once

#include <kopf/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kopf::clients {

/// Parses one JSON document (Boost.JSON's parser building nlohmann values directly).
/// Throws std::invalid_argument naming the error and its offset on malformed input.
json parse_json(std::string_view text);

/// As parse_json(), but returns a discarded value (json::value_t::discarded) on malformed input.
json parse_json_or_discarded(std::string_view text) noexcept;

/// A number Boost.JSON's parser read as `parsed` from the text `digits`, read again as
/// nlohmann's parser reads it (correctly rounded); nullopt if out of a double's range (an error
/// in nlohmann, which has no infinity). For the parsers built on Boost.JSON's.
std::optional<double> exact_double(std::string_view digits, double parsed) noexcept;

/// metadata.resourceVersion of an object's JSON text, reading no further than needed and
/// building nothing; nullopt if absent or if the text is malformed before it.
std::optional<std::string> find_resource_version(std::string_view text) noexcept;

/// The value of the only "resourceVersion" key in a JSON text (a view into it), found by a
/// search instead of a parse; nullopt if no key or several keys have that name, or the value
/// is not a plain string. In an object served by an API server, the only such key is
/// metadata.resourceVersion: the text is assumed to be valid JSON and is not validated.
std::optional<std::string_view> sole_resource_version(std::string_view text) noexcept;
/// The same for the only "uid" key: metadata.uid in an object without owner references.
std::optional<std::string_view> sole_uid(std::string_view text) noexcept;

/// Exactly json.dump() (compact, UTF-8 as is, strict about invalid UTF-8), faster.
std::string dump_json(const json& value);

/// Appends dump_json(value) to `out`.
void append_json(std::string& out, const json& value);
/// Appends `text` as a JSON string, as append_json(out, json(text)) would, without the json.
void append_json_string(std::string& out, const std::string& text);

}  // namespace kopf::clients
