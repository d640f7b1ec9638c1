// Filters of handlers: label/annotation values, markers, value callbacks, combinators.
//
//     KOPF_ON_CREATE(fn, "kopfexamples", {
//         .labels = {{"app", "demo"}, {"tier", kopf::PRESENT}, {"legacy", kopf::ABSENT}},
//         .when = kopf::all_(is_big, [](const kopf::Context& c) { return c.name != "x"; }),
//     });
#pragma once

#include <functional>
#include <kopf/json.hpp>
#include <map>
#include <string>
#include <type_traits>

namespace kopf {

struct Context;

/// The key or field must be present (any value).
struct PresentMarker {};
/// The key or field must be absent.
struct AbsentMarker {};
inline constexpr PresentMarker PRESENT{};
inline constexpr AbsentMarker ABSENT{};

/// A value criterion: unset, an exact value, PRESENT, ABSENT, or a callback
/// `bool(const json& value, const Context&)` / `bool(const json& value)` (null when absent).
class ValueFilter {
  public:
    enum class Kind { UNSET, EQUALS, PRESENT, ABSENT, CALLBACK };
    using Callback = std::function<bool(const json* value, const Context& ctx)>;

    ValueFilter() = default;
    ValueFilter(PresentMarker) : kind_(Kind::PRESENT) {}                    // NOLINT
    ValueFilter(AbsentMarker) : kind_(Kind::ABSENT) {}                      // NOLINT
    ValueFilter(const char* value) : kind_(Kind::EQUALS), value_(value) {}  // NOLINT
    template <class F>
    requires std::is_invocable_r_v<bool, F, const json&, const Context&> ValueFilter(
        F fn)  // NOLINT
        : kind_(Kind::CALLBACK),
          callback_([fn](const json* v, const Context& c) { return fn(v ? *v : json(), c); }) {}
    template <class F>
    requires(std::is_invocable_r_v<bool, F, const json&> &&
             !std::is_invocable_r_v<bool, F, const json&, const Context&> &&
             !std::is_constructible_v<json, F>) ValueFilter(F fn)  // NOLINT
        : kind_(Kind::CALLBACK),
          callback_([fn](const json* v, const Context&) { return fn(v ? *v : json()); }) {}
    template <class T>
    requires(std::is_constructible_v<json, T> && !std::is_invocable_v<T, const json&> &&
             !std::is_same_v<std::decay_t<T>, const char*>) ValueFilter(T value)
        : kind_(Kind::EQUALS), value_(std::move(value)) {}  // NOLINT

    Kind kind() const { return kind_; }
    bool is_set() const { return kind_ != Kind::UNSET; }
    /// Checks a value; `value == nullptr` means absent.
    bool check(const json* value, const Context& ctx) const;
    const json& value() const { return value_; }

  private:
    Kind kind_ = Kind::UNSET;
    json value_;
    Callback callback_;
};

/// `{{"key", "value"}, {"key2", kopf::PRESENT}, {"key3", callback}}` for labels/annotations.
using MetaFilter = std::map<std::string, ValueFilter>;

/// A `when=` callback: decides by the whole context.
using WhenFilter = std::function<bool(const Context&)>;

/// Negation of a callback (for `when=` or value callbacks).
template <class F>
auto not_(F fn) {
    return [fn](const auto&... args) -> bool { return !fn(args...); };
}
/// True if all callbacks are true.
template <class... F>
auto all_(F... fns) {
    return [fns...](const auto&... args) -> bool { return (fns(args...) && ...); };
}
/// True if any callback is true.
template <class... F>
auto any_(F... fns) {
    return [fns...](const auto&... args) -> bool { return (fns(args...) || ...); };
}
/// True if no callback is true.
template <class... F>
auto none_(F... fns) {
    return [fns...](const auto&... args) -> bool { return !(fns(args...) || ...); };
}

}  // namespace kopf
