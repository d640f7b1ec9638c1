// Finalizer marks on objects: detection and the body transformations that add/remove ours.
#pragma once

#include <kopf/json.hpp>
#include <string>

namespace kopf::finalizers {

bool is_deletion_ongoing(const json& body);
bool is_deletion_blocked(const json& body, const std::string& finalizer);
/// Append our finalizer to metadata.finalizers (no-op if present).
void block_deletion(json& body, const std::string& finalizer);
/// Remove our finalizer; drops the list when it becomes empty (Kopf's wire format).
void allow_deletion(json& body, const std::string& finalizer);

}  // namespace kopf::finalizers
