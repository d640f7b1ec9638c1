#include "clients/json_codec.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdexcept>
#include <vector>

#include "clients/json_pieces.hpp"

namespace kopf::clients {
namespace {

namespace bj = boost::json;

// Builds nlohmann values straight from Boost.JSON's SAX events: no intermediate document.
class Builder : public JsonPieces {
  public:
    json root;

    bool on_object_begin(bj::error_code&) {
        stack_.push_back(place(json::object()));
        return true;
    }
    bool on_object_end(std::size_t, bj::error_code&) {
        stack_.pop_back();
        return true;
    }
    bool on_array_begin(bj::error_code&) {
        stack_.push_back(place(json::array()));
        return true;
    }
    bool on_array_end(std::size_t, bj::error_code&) {
        stack_.pop_back();
        return true;
    }
    bool on_string(bj::string_view s, std::size_t, bj::error_code&) {
        text_.append(s.data(), s.size());
        place(json(std::move(text_)));
        text_.clear();
        return true;
    }
    bool on_int64(std::int64_t i, bj::string_view, bj::error_code&) {
        number_.clear();
        place(integer(i));
        return true;
    }
    bool on_uint64(std::uint64_t u, bj::string_view, bj::error_code&) {
        number_.clear();
        place(json(u));
        return true;
    }
    bool on_double(double d, bj::string_view s, bj::error_code& error) {
        const auto exact = take_double(s, d, error);
        if (exact) place(json(*exact));
        return exact.has_value();
    }
    bool on_bool(bool b, bj::error_code&) {
        place(json(b));
        return true;
    }
    bool on_null(bj::error_code&) {
        place(json(nullptr));
        return true;
    }

  private:
    json* place(json value) {
        if (stack_.empty()) {
            root = std::move(value);
            return &root;
        }
        json* top = stack_.back();
        if (top->is_array()) {
            auto& array = top->get_ref<json::array_t&>();
            array.push_back(std::move(value));
            return &array.back();
        }
        auto& object = top->get_ref<json::object_t&>();
        // Hinted at the end: keys that come sorted (as this project's API server writes them)
        // are inserted without a search. A repeated key keeps its last value, as nlohmann's.
        const std::size_t size = object.size();
        auto it = object.try_emplace(object.end(), std::move(key_), std::move(value));
        if (object.size() == size) it->second = std::move(value);
        key_.clear();
        return &it->second;
    }

    std::vector<json*> stack_;
};

// Returns an empty string on success, else the error with its offset.
std::string parse_into(std::string_view text, json& out) {
    bj::basic_parser<Builder> parser(JsonPieces::options());
    bj::error_code error;
    const std::size_t used = parser.write_some(false, text.data(), text.size(), error);
    if (error) return error.message() + " at offset " + std::to_string(used);
    if (auto trailing = JsonPieces::trailing_data(text, used); !trailing.empty()) return trailing;
    out = std::move(parser.handler().root);
    return {};
}

constexpr char kHex[] = "0123456789abcdef";

// nlohmann's escaping: the short escapes, other control characters as \u00xx, the rest as is.
// Eight bytes at a time: true if any byte is non-ASCII, a control character, '"' or '\\'.
bool block_needs_care(std::uint64_t block) {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
    const std::uint64_t below_space = (block - ones * 0x20) & ~block & highs;
    return ((block & highs) | below_space | has_zero(block ^ (ones * '"')) |
            has_zero(block ^ (ones * '\\'))) != 0;
}

// The end of the run of bytes from `from` that are copied as is (ASCII, no quote, backslash or
// control character). Diff bases are kilobytes of such bytes: 16 at a time where SSE2 is there.
std::size_t plain_run_end(const std::string& s, std::size_t from) {
    std::size_t i = from;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    for (; i + 16 <= s.size(); i += 16) {
        const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
        // Signed: bytes from 0x80 up are negative, so below the space too.
        const __m128i care = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
            _mm_cmplt_epi8(chunk, space));
        if (_mm_movemask_epi8(care) != 0) break;
    }
#endif
    for (; i + 8 <= s.size(); i += 8) {
        std::uint64_t block;
        std::memcpy(&block, s.data() + i, 8);
        if (block_needs_care(block)) break;
    }
    for (; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80 || c < 0x20 || c == '"' || c == '\\') break;
    }
    return i;
}

void append_escape(std::string& out, unsigned char c) {
    switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
    }
}

void append_string(std::string& out, const std::string& s) {
    const std::size_t start = out.size();
    // Geometric growth: reserving the exact size reallocated the output at every string.
    if (const std::size_t needed = start + s.size() + 2; needed > out.capacity())
        out.reserve(std::max(needed, 2 * out.capacity()));
    out += '"';
    std::size_t i = 0;
    while (true) {
        const std::size_t end = plain_run_end(s, i);
        out.append(s, i, end - i);
        if (end == s.size()) break;
        const unsigned char c = static_cast<unsigned char>(s[end]);
        if (c >= 0x80) {
            // Non-ASCII: let nlohmann validate the UTF-8 (it throws on bad bytes).
            out.resize(start);
            out += json(s).dump();
            return;
        }
        append_escape(out, c);
        i = end + 1;
    }
    out += '"';
}

// Follows only what leads to metadata.resourceVersion and stops parsing once it is read.
class ResourceVersionFinder : public JsonPieces {
  public:
    std::optional<std::string> found;

    bool on_object_begin(bj::error_code&) { return enter(); }
    bool on_object_end(std::size_t, bj::error_code&) { return leave(); }
    bool on_array_begin(bj::error_code&) { return enter(); }
    bool on_array_end(std::size_t, bj::error_code&) { return leave(); }
    bool on_key(bj::string_view s, std::size_t, bj::error_code&) {
        key_.append(s.data(), s.size());
        current_key_ = std::move(key_);
        key_.clear();
        return true;
    }
    bool on_string_part(bj::string_view s, std::size_t, bj::error_code&) {
        if (at_version()) text_.append(s.data(), s.size());
        return true;
    }
    bool on_string(bj::string_view s, std::size_t, bj::error_code& error) {
        if (!at_version()) return true;
        text_.append(s.data(), s.size());
        found = std::move(text_);
        error = bj::error::syntax;  // stop: the rest of the document is not needed
        return false;
    }
    bool on_number_part(bj::string_view, bj::error_code&) { return true; }
    bool on_int64(std::int64_t, bj::string_view, bj::error_code&) { return true; }
    bool on_uint64(std::uint64_t, bj::string_view, bj::error_code&) { return true; }
    bool on_double(double, bj::string_view, bj::error_code&) { return true; }
    bool on_bool(bool, bj::error_code&) { return true; }
    bool on_null(bj::error_code&) { return true; }

  private:
    bool at_version() const {
        return depth_ == 2 && in_metadata_ && current_key_ == "resourceVersion";
    }
    bool enter() {
        if (depth_ == 1) in_metadata_ = current_key_ == "metadata";
        ++depth_;
        return true;
    }
    bool leave() {
        --depth_;
        if (depth_ == 1) in_metadata_ = false;
        return true;
    }

    int depth_ = 0;
    bool in_metadata_ = false;
    std::string current_key_;
};

// The first `needle` (2 bytes or more) in `text` from `from`, or npos: 16 positions at a time
// are compared by the needle's first and last bytes, and only where both match by the rest.
std::size_t find_by_ends(std::string_view text, std::size_t from, std::string_view needle) {
    const std::size_t size = needle.size();
    if (from > text.size() || size > text.size() - from) return std::string_view::npos;
    std::size_t at = from;
#if defined(__SSE2__)
    const __m128i first = _mm_set1_epi8(needle.front());
    const __m128i last = _mm_set1_epi8(needle.back());
    for (; at + size - 1 + 16 <= text.size(); at += 16) {
        const char* block = text.data() + at;
        const __m128i starts = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
        const __m128i ends = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + size - 1));
        auto candidates = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_and_si128(_mm_cmpeq_epi8(starts, first), _mm_cmpeq_epi8(ends, last))));
        while (candidates != 0) {
            const auto bit = static_cast<std::size_t>(__builtin_ctz(candidates));
            if (std::memcmp(block + bit + 1, needle.data() + 1, size - 2) == 0) return at + bit;
            candidates &= candidates - 1;
        }
    }
#endif
    for (; at + size <= text.size(); ++at) {
        if (text[at] == needle.front() && text.compare(at, size, needle) == 0) return at;
    }
    return std::string_view::npos;
}

// What a quoted key found at `at` in a JSON text is.
struct KeyAt {
    bool is_key = false;                      // an unescaped quote, then a colon
    std::optional<std::string_view> value{};  // its value, if a plain string (no escapes)
};

KeyAt key_at(std::string_view text, std::size_t at, std::size_t key_size) {
    // A quote after an odd number of backslashes is inside a string: not a key.
    std::size_t backslashes = 0;
    while (backslashes < at && text[at - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 1) return {};
    // An unescaped quote opens or closes a string; followed by a colon, it is a key.
    std::size_t next = at + key_size;
    while (next < text.size() && is_json_space(text[next])) ++next;
    if (next == text.size() || text[next] != ':') return {};
    do ++next;
    while (next < text.size() && is_json_space(text[next]));
    if (next == text.size() || text[next] != '"') return {true};
    const std::size_t end = text.find('"', next + 1);
    if (end == std::string_view::npos) return {true};
    const std::string_view value = text.substr(next + 1, end - next - 1);
    if (value.find('\\') != std::string_view::npos) return {true};
    return {true, value};
}

// The value of the only key among the candidates that `find_key(from)` finds, in order.
template <typename FindKey>
std::optional<std::string_view> sole_value(std::string_view text, std::size_t key_size,
                                           FindKey find_key) {
    std::optional<std::string_view> found;
    for (auto at = find_key(0); at != std::string_view::npos; at = find_key(at + 1)) {
        const KeyAt key = key_at(text, at, key_size);
        if (!key.is_key) continue;
        // Named twice: which one is metadata's is for a parser.
        if (found || !key.value) return std::nullopt;
        found = key.value;
    }
    return found;
}

}  // namespace

// from_chars rounds correctly, as nlohmann's strtod; Boost.JSON's fast path may not.
std::optional<double> exact_double(std::string_view digits, double parsed) noexcept {
    double exact = parsed;
    const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), exact);
    if (status != std::errc()) exact = parsed;  // out of range: Boost's infinity or zero
    if (!std::isfinite(exact)) return std::nullopt;
    return exact;
}

std::optional<std::string_view> sole_resource_version(std::string_view text) noexcept {
    constexpr std::string_view kKey = "\"resourceVersion\"";
    // By its 'V', which is rare in objects (memchr skips the rest at vector speed); find() and
    // memmem stop at every quote, and diff bases are full of them (so are pairs of quotes 16
    // bytes apart: find_by_ends is slower here on Kopf's annotations).
    constexpr std::size_t kV = 9;  // "resourceVersion": the V's offset
    return sole_value(text, kKey.size(), [text, kKey](std::size_t from) -> std::size_t {
        for (std::size_t v = from + kV; v < text.size();) {
            const void* hit = std::memchr(text.data() + v, 'V', text.size() - v);
            if (!hit) break;
            v = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
            if (text.compare(v - kV, kKey.size(), kKey) == 0) return v - kV;
            ++v;
        }
        return std::string_view::npos;
    });
}

std::optional<std::string_view> sole_uid(std::string_view text) noexcept {
    constexpr std::string_view kKey = "\"uid\"";
    // By `uid"` (a 'u' with a quote three bytes on is rare: a watch line of 1.2 KB has one or
    // two), 16 bytes at a time; memmem spent 1.7k instructions per line.
    return sole_value(text, kKey.size(), [text](std::size_t from) -> std::size_t {
        for (std::size_t at = from + 1;; ++at) {
            at = find_by_ends(text, at, "uid\"");
            if (at == std::string_view::npos) return at;
            if (text[at - 1] == '"') return at - 1;
        }
    });
}

std::optional<std::string> find_resource_version(std::string_view text) noexcept {
    if (const auto sole = sole_resource_version(text)) return std::string(*sole);
    try {
        bj::basic_parser<ResourceVersionFinder> parser(JsonPieces::options());
        bj::error_code error;
        parser.write_some(false, text.data(), text.size(), error);
        return std::move(parser.handler().found);
    } catch (...) {
        return std::nullopt;
    }
}

json parse_json(std::string_view text) {
    json out;
    if (auto error = parse_into(text, out); !error.empty())
        throw std::invalid_argument("Invalid JSON: " + error);
    return out;
}

json parse_json_or_discarded(std::string_view text) noexcept {
    json out;
    try {
        if (parse_into(text, out).empty()) return out;
    } catch (...) {
    }
    return json(json::value_t::discarded);
}

void append_json_string(std::string& out, const std::string& text) {
    append_string(out, text);
}

namespace {

// Integers as nlohmann dumps them (its serializer, made per value, cost most of a small patch).
template <class Integer>
void append_integer(std::string& out, Integer number) {
    char digits[24];
    const auto written = std::to_chars(digits, digits + sizeof digits, number);
    out.append(digits, static_cast<std::size_t>(written.ptr - digits));
}

}  // namespace

void append_json(std::string& out, const json& value) {
    switch (value.type()) {
        case json::value_t::object: {
            out += '{';
            bool first = true;
            for (const auto& [key, item] : value.get_ref<const json::object_t&>()) {
                if (!first) out += ',';
                first = false;
                append_string(out, key);
                out += ':';
                append_json(out, item);
            }
            out += '}';
            return;
        }
        case json::value_t::array: {
            out += '[';
            bool first = true;
            for (const auto& item : value.get_ref<const json::array_t&>()) {
                if (!first) out += ',';
                first = false;
                append_json(out, item);
            }
            out += ']';
            return;
        }
        case json::value_t::string:
            append_string(out, value.get_ref<const std::string&>());
            return;
        case json::value_t::number_integer:
            append_integer(out, value.get<std::int64_t>());
            return;
        case json::value_t::number_unsigned:
            append_integer(out, value.get<std::uint64_t>());
            return;
        case json::value_t::boolean:
            out += value.get<bool>() ? "true" : "false";
            return;
        case json::value_t::null:
            out += "null";
            return;
        default:
            out += value.dump();  // floating-point numbers, binary, discarded: nlohmann's forms
    }
}

std::string dump_json(const json& value) {
    std::string out;
    append_json(out, value);
    return out;
}

}  // namespace kopf::clients
