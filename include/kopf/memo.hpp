// In-memory containers ("memos"): per-object and operator-wide scratch space.
#pragma once

#include <any>
#include <kopf/json.hpp>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace kopf {

/// A free-form container kept in memory (never persisted). Each object gets its own memo,
/// a shallow copy of the operator's memo: values set by startup handlers are visible to all
/// objects, and shared_ptr values are shared, not copied.
///
///     ctx.memo["counter"] = 1;                      // JSON values
///     ctx.memo.set("client", std::make_shared<Db>());  // any C++ object
///     auto db = ctx.memo.get<std::shared_ptr<Db>>("client");
///
/// Custom memo types derive from kopf::Memo and override `copy()`:
///
///     struct MyMemo : kopf::Memo {
///         std::shared_ptr<Cache> cache = std::make_shared<Cache>();
///         std::shared_ptr<kopf::Memo> copy() const override { return
///         std::make_shared<MyMemo>(*this); }
///     };
///     ... then: ctx.memo_as<MyMemo>().cache
class Memo {
  public:
    virtual ~Memo() = default;
    /// The shallow copy given to each new object.
    virtual std::shared_ptr<Memo> copy() const { return std::make_shared<Memo>(*this); }

    json& operator[](const std::string& key) { return values[key]; }
    bool contains(const std::string& key) const {
        return values.contains(key) || objects.count(key) > 0;
    }
    template <class T>
    void set(const std::string& key, T value) {
        objects[key] = std::move(value);
    }
    template <class T>
    T& get(const std::string& key) {
        auto it = objects.find(key);
        if (it == objects.end()) throw std::out_of_range("No memo entry named '" + key + "'");
        auto* p = std::any_cast<T>(&it->second);
        if (!p) throw std::bad_any_cast();
        return *p;
    }

    json values = json::object();
    std::map<std::string, std::any> objects;
};

}  // namespace kopf
