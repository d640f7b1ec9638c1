// The metadata fields of raw bodies (Kopf's structs/bodies.py), read in place: the hot path
// keys every watch event by them.
#pragma once

#include <charconv>
#include <cstdint>
#include <kopf/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kopf::structs {

// The string at object.<key>, or null when there is none (or `object` is not an object).
inline const std::string* string_member(const json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    auto value = object.find(key);
    return value != object.end() && value->is_string() ? value->get_ptr<const std::string*>()
                                                       : nullptr;
}

// The string at metadata.<field>, or null when there is none.
inline const std::string* metadata_string(const json& body, const char* field) {
    if (!body.is_object()) return nullptr;
    auto meta = body.find("metadata");
    return meta == body.end() ? nullptr : string_member(*meta, field);
}

inline std::string metadata_field(const json& body, const char* field) {
    const std::string* value = metadata_string(body, field);
    return value ? *value : std::string();
}

// A resourceVersion as a number, if it is one. Kubernetes calls versions opaque, but etcd's
// (and the embedded API server's) are increasing revision numbers: where both versions are
// numbers, the smaller is the older state of the object. Otherwise, nothing is compared.
inline std::optional<std::uint64_t> version_number(std::string_view version) {
    std::uint64_t number = 0;
    const auto [end, error] =
        std::from_chars(version.data(), version.data() + version.size(), number);
    if (error != std::errc() || end != version.data() + version.size() || version.empty())
        return std::nullopt;
    return number;
}

// The resourceVersion of a body as a number (version_number).
inline std::optional<std::uint64_t> body_version_number(const json& body) {
    const std::string* version = metadata_string(body, "resourceVersion");
    return version ? version_number(*version) : std::nullopt;
}

}  // namespace kopf::structs
