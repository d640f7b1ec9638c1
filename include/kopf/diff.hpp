// Diffs of object essences, as Kopf presents them to update and field handlers.
#pragma once

#include <kopf/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace kopf {

enum class DiffOperation { ADD, CHANGE, REMOVE };

/// One change: the operation, the field path (("spec", "size")), the old and the new values.
struct DiffItem {
    DiffOperation operation;
    std::vector<std::string> field;
    json old;
    json new_;
    /// "add", "change" or "remove".
    std::string op() const;
    bool operator==(const DiffItem&) const = default;
};

/// A sequence of changes between two essences. Iterable; empty means "no essential changes".
///
///     for (const auto& item : ctx.diff) ctx.logger.info("{} {}", item.op(), item.field[0]);
class Diff {
  public:
    Diff() = default;
    explicit Diff(std::vector<DiffItem> items) : items_(std::move(items)) {}
    auto begin() const { return items_.begin(); }
    auto end() const { return items_.end(); }
    std::size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    explicit operator bool() const { return !items_.empty(); }
    const DiffItem& operator[](std::size_t i) const { return items_[i]; }
    /// As Kopf's repr: [["add", ["spec", "x"], null, 1], ...] as JSON.
    json to_json() const;
    bool operator==(const Diff&) const = default;

  private:
    std::vector<DiffItem> items_;
};

/// Compute the diff of two JSON values, recursing into objects (lists are compared whole).
Diff diff(const json& a, const json& b);
/// Narrow a diff to the changes at or under `field`, with paths relative to it.
Diff reduce(const Diff& d, const std::vector<std::string>& field);

std::ostream& operator<<(std::ostream& os, const Diff& d);

}  // namespace kopf
