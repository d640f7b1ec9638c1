// src/structs: plain data helpers of the handling core — field paths in JSON bodies, diffs,
// patches, finalizers. No I/O; usable from every higher layer.
#pragma once

#include <initializer_list>
#include <kopf/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kopf::dicts {

using FieldPath = std::vector<std::string>;

/// "spec.field" -> {"spec", "field"}; "" -> {}.
FieldPath parse_field(const std::string& field);
std::string format_field(const FieldPath& path);
/// The value at `path`, or nullptr if any step is absent or not an object.
const json* resolve(const json& root, const FieldPath& path);
/// The same for a literal path (`resolve(body, {"metadata", "uid"})`) without building a
/// FieldPath: hot paths look up fixed fields of every object.
const json* resolve(const json& root, std::initializer_list<std::string_view> path);
/// Set the value at `path`, creating objects on the way.
void ensure(json& root, const FieldPath& path, json value);
/// Remove the key at `path` if present (no-op otherwise).
void remove(json& root, const FieldPath& path);
/// Remove empty objects recursively (as Kopf's remove_empty_stanzas).
void remove_empty_stanzas(json& root);

}  // namespace kopf::dicts
