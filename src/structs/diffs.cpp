// Diffs as Kopf computes them (kopf/_cogs/structs/diffs.py): objects are recursed into,
// everything else (incl. lists) is compared as a whole.
#include <kopf/diff.hpp>

namespace kopf {

namespace {
void diff_into(std::vector<DiffItem>& out, const json& a, const json& b,
               std::vector<std::string>& path) {
    if (a == b) return;
    if (a.is_null() && !b.is_null()) {
        out.push_back({DiffOperation::ADD, path, nullptr, b});
    } else if (!a.is_null() && b.is_null()) {
        out.push_back({DiffOperation::REMOVE, path, a, nullptr});
    } else if (a.is_object() && b.is_object()) {
        for (auto it = a.begin(); it != a.end(); ++it) {
            path.push_back(it.key());
            auto other = b.find(it.key());
            diff_into(out, it.value(), other == b.end() ? json() : *other, path);
            path.pop_back();
        }
        for (auto it = b.begin(); it != b.end(); ++it) {
            if (a.contains(it.key())) continue;
            path.push_back(it.key());
            diff_into(out, json(), it.value(), path);
            path.pop_back();
        }
    } else {
        out.push_back({DiffOperation::CHANGE, path, a, b});
    }
}
}  // namespace

std::string DiffItem::op() const {
    switch (operation) {
        case DiffOperation::ADD:
            return "add";
        case DiffOperation::CHANGE:
            return "change";
        case DiffOperation::REMOVE:
            return "remove";
    }
    return "change";
}

json Diff::to_json() const {
    json out = json::array();
    for (const auto& item : items_)
        out.push_back(json::array({item.op(), item.field, item.old, item.new_}));
    return out;
}

Diff diff(const json& a, const json& b) {
    std::vector<DiffItem> items;
    std::vector<std::string> path;
    diff_into(items, a, b, path);
    return Diff(std::move(items));
}

Diff reduce(const Diff& d, const std::vector<std::string>& field) {
    std::vector<DiffItem> out;
    for (const auto& item : d) {
        // The item is at or under the field: strip the prefix.
        if (item.field.size() >= field.size() &&
            std::equal(field.begin(), field.end(), item.field.begin())) {
            DiffItem copy = item;
            copy.field.erase(copy.field.begin(),
                             copy.field.begin() + static_cast<long>(field.size()));
            out.push_back(std::move(copy));
        } else if (item.field.size() < field.size() &&
                   std::equal(item.field.begin(), item.field.end(), field.begin())) {
            // The item is above the field: dive into its values.
            std::vector<std::string> rest(field.begin() + static_cast<long>(item.field.size()),
                                          field.end());
            const json* o = &item.old;
            const json* n = &item.new_;
            json none;
            for (const auto& key : rest) {
                o = (o->is_object() && o->contains(key)) ? &(*o)[key] : &none;
                n = (n->is_object() && n->contains(key)) ? &(*n)[key] : &none;
            }
            for (auto& sub : diff(*o, *n)) out.push_back(sub);
        }
    }
    return Diff(std::move(out));
}

std::ostream& operator<<(std::ostream& os, const Diff& d) {
    return os << d.to_json().dump();
}

}  // namespace kopf
