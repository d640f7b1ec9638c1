// The metadata fields of raw bodies (Kopf's structs/bodies.py), read in place: the hot path
// keys every watch event by them.
#pragma once

#include <kopf/json.hpp>
#include <string>

namespace kopf::structs {

// The string at metadata.<field>, or null when there is none.
inline const std::string* metadata_string(const json& body, const char* field) {
    if (!body.is_object()) return nullptr;
    auto meta = body.find("metadata");
    if (meta == body.end() || !meta->is_object()) return nullptr;
    auto value = meta->find(field);
    return value != meta->end() && value->is_string() ? value->get_ptr<const std::string*>()
                                                      : nullptr;
}

inline std::string metadata_field(const json& body, const char* field) {
    const std::string* value = metadata_string(body, field);
    return value ? *value : std::string();
}

}  // namespace kopf::structs
