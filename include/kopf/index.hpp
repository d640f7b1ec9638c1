// In-memory indices (Kopf's "In-memory indexing"): what index handlers (kopf::on::index) make of
// the objects of a resource, readable by every handler, daemon, timer and probe.
//
//     kopf::json by_namespace(kopf::Context& ctx) { return {{ctx.namespace_, ctx.name}}; }
//     KOPF_INDEX(by_namespace, "pods");
//
//     void tick(kopf::Context& ctx) {
//         for (const kopf::json& pod : ctx.index("by_namespace").get(ctx.namespace_))
//             ctx.logger.info("Pod {} is here.", pod.get<std::string>());
//     }
//
// An index maps keys to stores; a store holds the values of every object that put one under
// that key (Kopf's kopf.Index and kopf.Store). Stores are never empty: a key disappears with its
// last value. Reads are safe from any thread while the index changes: each lookup returns a
// snapshot, so iterating it never sees a half-made change.
#pragma once

#include <cstddef>
#include <kopf/json.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kopf {

namespace detail {
struct IndexData;
struct IndicesData;
}  // namespace detail

/// The values under one key of an index (Kopf's kopf.Store): a read-only snapshot.
class Store {
  public:
    using Values = std::vector<std::shared_ptr<const json>>;

    class iterator {
      public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = json;
        using difference_type = std::ptrdiff_t;
        using pointer = const json*;
        using reference = const json&;
        iterator() = default;
        explicit iterator(Values::const_iterator it) : it_(it) {}
        reference operator*() const { return **it_; }
        pointer operator->() const { return it_->get(); }
        iterator& operator++() {
            ++it_;
            return *this;
        }
        iterator operator++(int) {
            auto old = *this;
            ++it_;
            return old;
        }
        bool operator==(const iterator& other) const { return it_ == other.it_; }

      private:
        Values::const_iterator it_{};
    };

    Store() = default;
    explicit Store(Values values) : values_(std::move(values)) {}

    std::size_t size() const { return values_.size(); }
    bool empty() const { return values_.empty(); }
    explicit operator bool() const { return !values_.empty(); }
    iterator begin() const { return iterator(values_.begin()); }
    iterator end() const { return iterator(values_.end()); }
    /// The first value (Kopf's `value, *_ = store`); throws std::out_of_range if empty.
    const json& front() const;
    bool contains(const json& value) const;
    /// The values converted to T (`store.as<std::string>()`).
    template <class T>
    std::vector<T> as() const {
        std::vector<T> out;
        out.reserve(values_.size());
        for (const auto& value : values_) out.push_back(value->get<T>());
        return out;
    }

  private:
    Values values_;
};

/// One index (Kopf's kopf.Index): keys (any JSON: strings, arrays for Kopf's tuple keys, null
/// for unkeyed collections) to stores. A handle: copies share the same live index.
class Index {
  public:
    Index() = default;
    explicit Index(std::shared_ptr<const detail::IndexData> data) : data_(std::move(data)) {}

    const std::string& name() const;
    std::size_t size() const;  ///< the number of keys
    bool empty() const { return size() == 0; }
    explicit operator bool() const { return !empty(); }
    bool contains(const json& key) const;
    /// The store under `key`, or an empty one (Kopf's `index.get(key, [])`).
    Store get(const json& key) const;
    /// The store under `key`; throws std::out_of_range naming the index and the key.
    Store at(const json& key) const;
    Store operator[](const json& key) const { return at(key); }
    /// Snapshots of the keys, and of the keys with their stores (Kopf's keys() and items()).
    std::vector<json> keys() const;
    std::vector<std::pair<json, Store>> items() const;

  private:
    std::shared_ptr<const detail::IndexData> data_;
};

/// An index whose values are read as T: `ctx.index<bool>("is_running").get(key)`.
template <class T>
class TypedIndex {
  public:
    explicit TypedIndex(Index index) : index_(std::move(index)) {}
    const Index& untyped() const { return index_; }
    std::size_t size() const { return index_.size(); }
    bool empty() const { return index_.empty(); }
    bool contains(const json& key) const { return index_.contains(key); }
    std::vector<T> get(const json& key) const { return index_.get(key).template as<T>(); }
    std::vector<T> at(const json& key) const { return index_.at(key).template as<T>(); }
    std::vector<json> keys() const { return index_.keys(); }
    std::vector<std::pair<json, std::vector<T>>> items() const {
        std::vector<std::pair<json, std::vector<T>>> out;
        for (auto& [key, store] : index_.items())
            out.emplace_back(std::move(key), store.template as<T>());
        return out;
    }

  private:
    Index index_;
};

/// The operator's indices by name (the ids of the index handlers).
class Indices {
  public:
    Indices() = default;
    explicit Indices(std::shared_ptr<const detail::IndicesData> data) : data_(std::move(data)) {}
    /// The index named so; throws std::out_of_range naming the known indices.
    Index get(const std::string& name) const;
    bool contains(const std::string& name) const;
    std::vector<std::string> names() const;

  private:
    std::shared_ptr<const detail::IndicesData> data_;
};

/// What an index handler returns for one object. From a JSON result, as in Kopf: an object
/// gives its members (string keys); null puts nothing (the object is not in the index); any
/// other value goes under the null key. Other keys (Kopf's tuples) with add():
///
///     return kopf::IndexEntries().add({ctx.namespace_, ctx.name}, ctx.status["phase"]);
class IndexEntries {
  public:
    IndexEntries() = default;
    IndexEntries(json result);  // NOLINT(google-explicit-constructor): handlers return JSON
    IndexEntries& add(json key, json value) &;
    IndexEntries&& add(json key, json value) &&;
    const std::vector<std::pair<json, json>>& entries() const { return entries_; }
    bool empty() const { return entries_.empty(); }

  private:
    std::vector<std::pair<json, json>> entries_;
};

}  // namespace kopf
