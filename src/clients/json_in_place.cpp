#include "clients/json_in_place.hpp"

#include <algorithm>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <boost/json/basic_parser_impl.hpp>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "clients/json_codec.hpp"
#include "clients/json_pieces.hpp"

namespace kopf::clients {

namespace bj = boost::json;

namespace {

// The same values as parse_json()'s builder makes, compared by type and value (1 and 1u and
// 1.0 are different values here, as they dump differently).
bool same_scalar(const json& node, const json& value) {
    if (node.type() != value.type()) return false;
    switch (value.type()) {
        case json::value_t::string:
            return node.get_ref<const json::string_t&>() == value.get_ref<const json::string_t&>();
        case json::value_t::number_float:
            return std::bit_cast<std::uint64_t>(node.get<double>()) ==
                   std::bit_cast<std::uint64_t>(value.get<double>());
        case json::value_t::null:
            return true;
        default:
            return node == value;  // booleans and integers
    }
}

enum class Op { assigned, assigned_element, inserted, erased, pushed, truncated };
struct Undo {
    Op op;
    json* node = nullptr;                   // assigned
    json::array_t* array = nullptr;         // assigned_element, pushed, truncated
    std::size_t index = 0;                  // assigned_element; truncated: the new size
    json::object_t* object = nullptr;       // inserted, erased
    json::object_t::iterator position{};    // inserted
    json::object_t::node_type extracted{};  // erased
    json old{};                             // assigned, assigned_element
    std::vector<json> removed{};            // truncated
};

// What one parse changed, over all the builders it ran: the changes by key, and each change's
// undo, so that a failure can put the tree back as it was.
struct Journal {
    InPlaceChanges changes;
    std::vector<Undo> undo;

    // A timer's echo changes a few values (its status, the resourceVersion, a managedFields
    // time): room for them at the first, not three reallocations.
    void record(Undo&& entry) {
        if (undo.capacity() == 0) undo.reserve(8);
        undo.push_back(std::move(entry));
    }

    // Puts the tree back as it was before the parse.
    void rollback() noexcept {
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
            Undo& entry = *it;
            switch (entry.op) {
                case Op::assigned:
                    *entry.node = std::move(entry.old);
                    break;
                case Op::assigned_element:
                    (*entry.array)[entry.index] = std::move(entry.old);
                    break;
                case Op::inserted:
                    entry.object->erase(entry.position);
                    break;
                case Op::erased:
                    entry.object->insert(std::move(entry.extracted));
                    break;
                case Op::pushed:
                    entry.array->pop_back();
                    break;
                case Op::truncated:
                    for (auto& value : entry.removed) entry.array->push_back(std::move(value));
                    break;
            }
        }
        undo.clear();
        changes = {};
    }
};

// Where a value inside the object is: what the changes are reported by. `level` is the level
// of the frame the value's slot belongs to (1: the object's own keys, 2: those of its fields).
struct ValuePlace {
    int level = 1;
    std::string_view top;   // the object's key above the value
    std::string_view meta;  // under "metadata": the metadata's key above the value
};

void add_key(std::vector<std::string>& keys, std::string_view key) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
    if (keys.capacity() == 0) keys.reserve(4);
    keys.emplace_back(key);
}

// A change of a value in a frame at `level` (1: the object's own keys), under the object's key
// `top` (and, under "metadata", the metadata's key `meta`).
void note_change(InPlaceChanges& changes, int level, std::string_view top, std::string_view meta) {
    if (level == 0) {  // the object itself, replaced
        add_key(changes.top, "*");
        add_key(changes.metadata, "*");
        return;
    }
    add_key(changes.top, top);
    if (top != "metadata") return;
    add_key(changes.metadata, level == 1 ? std::string_view("*") : meta);  // 1: replaced whole
}

// Boost.JSON's parser handler: walks the tree beside the text, changing only what differs, and
// logs each change so that a failure can undo them all. Either the whole event (its "object"
// goes into the target), or one value somewhere inside the object (see ValuePlace).
class InPlaceBuilder : public JsonPieces {
  public:
    InPlaceBuilder(Journal& journal, json& target, std::span<const std::string_view> kept_top,
                   std::span<const std::string_view> kept_meta)
        : journal_(journal), target_(target), kept_top_(kept_top), kept_meta_(kept_meta) {
        stack_.reserve(16);
    }
    InPlaceBuilder(Journal& journal, json& target, std::span<const std::string_view> kept_top,
                   std::span<const std::string_view> kept_meta, const ValuePlace& place)
        : InPlaceBuilder(journal, target, kept_top, kept_meta) {
        stack_.push_back(Frame{.level = place.level, .root = &target});
        top_key_ = place.top;
        meta_key_ = place.meta;
    }

    bool found_object = false;

    bool on_object_begin(bj::error_code&) {
        if (stack_.empty()) {  // the event: only its "object" is read
            stack_.push_back(Frame{.level = 0, .skip = true});
            return true;
        }
        open(json::value_t::object);
        return true;
    }
    bool on_object_end(std::size_t, bj::error_code&) {
        close_object(stack_.back());
        stack_.pop_back();
        return true;
    }
    bool on_array_begin(bj::error_code& error) {
        if (!inside_event(error)) return false;
        open(json::value_t::array);
        return true;
    }
    bool on_array_end(std::size_t, bj::error_code&) {
        Frame& frame = stack_.back();
        if (frame.array && frame.index < frame.array->size()) {
            Undo entry{.op = Op::truncated, .array = frame.array, .index = frame.index};
            std::move(frame.array->begin() + static_cast<std::ptrdiff_t>(frame.index),
                      frame.array->end(), std::back_inserter(entry.removed));
            frame.array->resize(frame.index);
            journal_.record(std::move(entry));
            note_change(frame);
        }
        stack_.pop_back();
        return true;
    }
    bool on_string(bj::string_view s, std::size_t, bj::error_code& error) {
        if (!inside_event(error)) return false;
        const Slot slot = take_slot();
        if (slot.node) {
            const auto* current = slot.node->get_ptr<const json::string_t*>();
            const std::size_t size = text_.size() + s.size();
            const bool same = current && current->size() == size &&
                              current->compare(0, text_.size(), text_) == 0 &&
                              current->compare(text_.size(), s.size(), s.data(), s.size()) == 0;
            if (!same) {
                text_.append(s.data(), s.size());
                assign(slot, json(std::move(text_)));
            }
        }
        text_.clear();
        return true;
    }
    bool on_int64(std::int64_t i, bj::string_view, bj::error_code& error) {
        number_.clear();
        return scalar(integer(i), error);
    }
    bool on_uint64(std::uint64_t u, bj::string_view, bj::error_code& error) {
        number_.clear();
        return scalar(json(u), error);
    }
    bool on_double(double d, bj::string_view s, bj::error_code& error) {
        const auto exact = take_double(s, d, error);
        return exact && scalar(json(*exact), error);
    }
    bool on_bool(bool b, bj::error_code& error) { return scalar(json(b), error); }
    bool on_null(bj::error_code& error) { return scalar(json(nullptr), error); }

  private:
    // An object or array being walked; `level` 0 is the event, 1 its object, 2 the object's
    // fields, and so on. A skipped one is outside the event's object: read, not kept.
    struct Frame {
        int level = 0;
        bool skip = false;
        json::object_t* object = nullptr;
        // Keys that come in the tree's order are met one after the other: the entries before
        // `next` are the ones named so far. After the first that is not, `seen` lists them.
        json::object_t::iterator next{};
        bool searched = false;
        std::vector<const void*> seen{};
        json::array_t* array = nullptr;
        std::size_t index = 0;
        json* root = nullptr;  // a value's own parse: the node its value goes to
    };

    // Where the next value goes: a node (in an object, or an array's element), or nowhere.
    struct Slot {
        json* node = nullptr;
        json::array_t* array = nullptr;  // the node is this array's element `index`
        std::size_t index = 0;
    };

    int level_of_child() const { return stack_.empty() ? 0 : stack_.back().level + 1; }

    // Only the event itself, an object, may be the document's root.
    bool inside_event(bj::error_code& error) const {
        if (!stack_.empty()) return true;
        error = bj::error::syntax;
        return false;
    }

    // Walks into the object or array that follows (made one if the tree had something else).
    void open(json::value_t type) {
        const Slot slot = take_slot();
        Frame frame{.level = level_of_child()};
        if (!slot.node) {
            frame.skip = true;
        } else if (type == json::value_t::object) {
            if (!slot.node->is_object()) assign(slot, json::object());
            frame.object = &slot.node->get_ref<json::object_t&>();
            frame.next = frame.object->begin();
        } else {
            if (!slot.node->is_array()) assign(slot, json::array());
            frame.array = &slot.node->get_ref<json::array_t&>();
        }
        stack_.push_back(std::move(frame));
    }

    bool scalar(json value, bj::error_code& error) {
        if (!inside_event(error)) return false;
        const Slot slot = take_slot();
        if (slot.node && !same_scalar(*slot.node, value)) assign(slot, std::move(value));
        return true;
    }

    // The node for the value that follows the current key (or array position); a new key or
    // position gets a null node (logged).
    Slot take_slot() {
        Frame& frame = stack_.back();
        const std::string& key = key_;  // cleared at the end (its buffer is kept)
        struct Clear {
            std::string& key;
            ~Clear() { key.clear(); }
        } clear{key_};
        if (frame.root) {
            return {std::exchange(frame.root, nullptr)};
        }
        if (frame.skip) {
            if (frame.level == 0 && key == "object") {
                found_object = true;
                top_key_.clear();
                return {&target_};
            }
            return {};
        }
        if (frame.array) {
            const std::size_t index = frame.index++;
            if (index < frame.array->size()) return {&(*frame.array)[index], frame.array, index};
            frame.array->emplace_back();
            journal_.record(Undo{.op = Op::pushed, .array = frame.array});
            note_change(frame);
            return {&frame.array->back(), frame.array, index};
        }
        if (frame.level == 1) top_key_ = key;
        if (frame.level == 2 && top_key_ == "metadata") meta_key_ = key;
        auto& object = *frame.object;
        json::object_t::iterator it;
        if (frame.next != object.end() && frame.next->first == key) {
            it = frame.next++;
        } else {
            if (!frame.searched) {
                frame.searched = true;
                for (auto named = object.begin(); named != frame.next; ++named)
                    frame.seen.push_back(&*named);
            }
            it = object.find(key);
            if (it == object.end()) {
                it = object.emplace_hint(frame.next, key, json());
                journal_.record(Undo{.op = Op::inserted, .object = &object, .position = it});
                note_change(frame);
            }
            frame.next = std::next(it);
        }
        if (frame.searched) frame.seen.push_back(&*it);
        return {&it->second};
    }

    void assign(const Slot& slot, json value) {
        Frame& frame = stack_.back();
        if (slot.array) {
            journal_.record(Undo{.op = Op::assigned_element,
                                 .array = slot.array,
                                 .index = slot.index,
                                 .old = std::move(*slot.node)});
        } else {
            journal_.record(
                Undo{.op = Op::assigned, .node = slot.node, .old = std::move(*slot.node)});
        }
        *slot.node = std::move(value);
        note_change(frame);
    }

    // The object's keys the text did not name are erased (the kept ones emptied).
    void close_object(Frame& frame) {
        if (frame.skip || !frame.object) return;
        auto& object = *frame.object;
        if (!frame.searched) {
            if (frame.next == object.end()) return;  // every key named, in order
            for (auto named = object.begin(); named != frame.next; ++named)
                frame.seen.push_back(&*named);
        }
        std::sort(frame.seen.begin(), frame.seen.end());
        frame.seen.erase(std::unique(frame.seen.begin(), frame.seen.end()), frame.seen.end());
        if (frame.seen.size() == object.size()) return;
        const bool in_meta = frame.level == 2 && top_key_ == "metadata";
        const auto kept = frame.level == 1 ? kept_top_
                          : in_meta        ? kept_meta_
                                           : decltype(kept_top_){};
        for (auto it = object.begin(); it != object.end();) {
            if (std::binary_search(frame.seen.begin(), frame.seen.end(),
                                   static_cast<const void*>(&*it))) {
                ++it;
                continue;
            }
            if (std::find(kept.begin(), kept.end(), it->first) != kept.end()) {
                if (!it->second.is_object() || !it->second.empty()) {
                    note_erased(frame, it->first);
                    journal_.record(Undo{
                        .op = Op::assigned, .node = &it->second, .old = std::move(it->second)});
                    it->second = json::object();
                }
                ++it;
                continue;
            }
            note_erased(frame, it->first);
            auto next = std::next(it);
            journal_.record(
                Undo{.op = Op::erased, .object = &object, .extracted = object.extract(it)});
            it = next;
        }
    }

    // A change inside the walk's current frame.
    void note_change(const Frame& frame) {
        clients::note_change(journal_.changes, frame.level, top_key_, meta_key_);
    }

    // A key erased (or emptied) from the frame's object.
    void note_erased(const Frame& frame, const std::string& key) {
        if (frame.level == 1) {
            add_key(journal_.changes.top, key);
            if (key == "metadata") add_key(journal_.changes.metadata, "*");
            return;
        }
        add_key(journal_.changes.top, top_key_);
        if (top_key_ != "metadata") return;
        add_key(journal_.changes.metadata, frame.level == 2 ? key : meta_key_);
    }

    Journal& journal_;
    json& target_;
    std::span<const std::string_view> kept_top_;
    std::span<const std::string_view> kept_meta_;
    std::vector<Frame> stack_;
    std::string top_key_;   // the object's key being walked (level 1)
    std::string meta_key_;  // the metadata's key being walked (level 2 under "metadata")
};

// ---- the remembered text -----------------------------------------------------------------
//
// A timer's echo differs from the line before it in a few values (the resource version, the
// writer's time, the status field it patched). With the object's text as last parsed into the
// tree, the new text is walked beside the old one: a value whose text is the same is the same
// value (the tree already holds it), and is passed over without being read or touching the tree;
// only the values whose text differs are parsed, each into its own node. Anything else — keys
// added, gone, reordered or escaped, elements added or gone, a text that is not as expected —
// gives up, puts back what it did, and parses the whole line.

std::size_t skip_spaces(std::string_view text, std::size_t at) {
    while (at < text.size() && is_json_space(text[at])) ++at;
    return at;
}

// The first of `bytes` at or after `at` in `text`, or its size: 16 bytes at a time where SSE2
// is there (the texts are kilobytes, the strings in them short).
template <char... bytes>
std::size_t find_any(std::string_view text, std::size_t at) {
#if defined(__SSE2__)
    for (; at + 16 <= text.size(); at += 16) {
        const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + at));
        __m128i hits = _mm_setzero_si128();
        ((hits = _mm_or_si128(hits, _mm_cmpeq_epi8(chunk, _mm_set1_epi8(bytes)))), ...);
        if (const int mask = _mm_movemask_epi8(hits); mask != 0)
            return at + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    for (; at < text.size(); ++at) {
        if (((text[at] == bytes) || ...)) return at;
    }
    return text.size();
}

// Where the string that opens at `at` ends (after its closing quote). Only for text already
// parsed: the string is known to end.
std::size_t end_of_string(std::string_view text, std::size_t at) {
    for (at = find_any<'"', '\\'>(text, at + 1); at < text.size();
         at = find_any<'"', '\\'>(text, at + 2)) {
        if (text[at] == '"') return at + 1;
    }
    return text.size();
}

// Where the number or literal that starts at `at` ends. Only for text already parsed.
std::size_t end_of_scalar(std::string_view text, std::size_t at) {
    while (at < text.size() && !is_json_space(text[at]) && text[at] != ',' && text[at] != '}' &&
           text[at] != ']')
        ++at;
    return at;
}

using Spans = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// How deep the objects and arrays whose ends are remembered go: the object's own (0) down to
// the entries of its managedFields (3) and what they hold (4). Deeper ones are passed over with
// their parents, and a walk that needs one gives up; remembering them would cost most of the
// spans (each managedFields entry nests a dozen).
constexpr std::size_t remembered_depth = 5;

// Where each object and array of a text already parsed starts and ends, appended to `spans` in
// the order they start, offset by `base`; the text's own value is at `depth`.
void add_containers(std::string_view text, std::size_t base, std::size_t depth, Spans& spans) {
    std::size_t open[remembered_depth];
    for (std::size_t at = find_any<'"', '{', '}', '[', ']'>(text, 0); at < text.size();
         at = find_any<'"', '{', '}', '[', ']'>(text, at)) {
        const char c = text[at];
        if (c == '"') {
            at = end_of_string(text, at);
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth < remembered_depth) {
                open[depth] = spans.size();
                spans.emplace_back(static_cast<std::uint32_t>(base + at),
                                   static_cast<std::uint32_t>(base + text.size()));
            }
            ++depth;
        } else if (depth > 0) {
            --depth;
            if (depth < remembered_depth)
                spans[open[depth]].second = static_cast<std::uint32_t>(base + at + 1);
        }
        ++at;
    }
}

// The object's text in a line as API servers write them, `{"type":"...","object":{...}}`;
// empty for any other form. The object's text is not checked here (it is what the walk reads);
// the type, which nothing reads after this, must be printable ASCII, or the whole line's parse
// is the one to refuse it (invalid UTF-8, a control character).
std::string_view object_text_of(std::string_view line) {
    constexpr std::string_view type_key = R"({"type":")";
    constexpr std::string_view object_key = R"(","object":)";
    if (!line.starts_with(type_key)) return {};
    const std::size_t type_end = line.find_first_of("\"\\", type_key.size());
    if (type_end == std::string_view::npos || line[type_end] != '"' ||
        line.compare(type_end, object_key.size(), object_key) != 0)
        return {};
    for (std::size_t i = type_key.size(); i < type_end; ++i) {
        const auto c = static_cast<unsigned char>(line[i]);
        if (c < 0x20 || c >= 0x7f) return {};
    }
    std::size_t begin = skip_spaces(line, type_end + object_key.size());
    std::size_t end = line.size();
    while (end > begin && is_json_space(line[end - 1])) --end;
    if (end <= begin || line[end - 1] != '}') return {};
    --end;
    while (end > begin && is_json_space(line[end - 1])) --end;
    if (end <= begin || line[begin] != '{') return {};
    return line.substr(begin, end - begin);
}

// Values shorter than this are parsed whole rather than walked member by member.
constexpr std::size_t worth_walking = 48;

class Lockstep {
  public:
    Lockstep(Journal& journal, const RememberedText& old, std::string_view new_text,
             std::span<const std::string_view> kept_top,
             std::span<const std::string_view> kept_meta)
        : journal_(journal),
          old_(old.text),
          new_(new_text),
          old_spans_(old.containers),
          kept_top_(kept_top),
          kept_meta_(kept_meta) {
        new_spans_.reserve(old_spans_.size() + 4);
    }

    // The new text's objects and arrays, once walked.
    Spans& new_spans() { return new_spans_; }

    // False: given up (what was changed is in the journal, to be rolled back).
    bool walk(json& target) {
        if (!target.is_object() || old_.empty() || new_.empty() || old_[0] != '{' || new_[0] != '{')
            return false;
        ValuePlace place;
        return walk_object(target.get_ref<json::object_t&>(), place) &&
               skip_spaces(old_, o_) == old_.size() && skip_spaces(new_, n_) == new_.size();
    }

  private:
    // Both cursors at a value: if its text is the same, it is passed over (true), the tree
    // untouched. Else `old_end_` is where the old value ends.
    bool passed_over() {
        o_ = skip_spaces(old_, o_);
        n_ = skip_spaces(new_, n_);
        if (o_ >= old_.size() || n_ >= new_.size()) return false;
        const char first = old_[o_];
        const bool container = first == '{' || first == '[';
        old_end_ = first == '"' ? end_of_string(old_, o_)
                   : container  ? old_container_end()
                                : end_of_scalar(old_, o_);
        const std::size_t size = old_end_ - o_;
        const std::size_t after = n_ + size;
        if (old_end_ <= o_ || !same_text(size) ||
            !(after == new_.size() || is_json_space(new_[after]) || new_[after] == ',' ||
              new_[after] == '}' || new_[after] == ']'))
            return false;
        if (container) {
            // Its objects and arrays are where they were, shifted.
            auto span = old_spans_.begin() + static_cast<std::ptrdiff_t>(next_span_);
            for (; span != old_spans_.end() && span->first < old_end_; ++span) {
                new_spans_.emplace_back(static_cast<std::uint32_t>(span->first - o_ + n_),
                                        static_cast<std::uint32_t>(span->second - o_ + n_));
            }
            next_span_ = static_cast<std::size_t>(span - old_spans_.begin());
        }
        o_ = old_end_;
        n_ = after;
        return true;
    }

    // Whether the next `size` bytes of both texts are the same.
    bool same_text(std::size_t size) const {
        return n_ + size <= new_.size() && o_ + size <= old_.size() &&
               std::memcmp(new_.data() + n_, old_.data() + o_, size) == 0;
    }

    // The end of the old text's object or array at `o_` (remembered); `o_` itself if unknown.
    std::size_t old_container_end() {
        const auto span = std::lower_bound(
            old_spans_.begin() + static_cast<std::ptrdiff_t>(next_span_), old_spans_.end(), o_,
            [](const auto& known, std::size_t at) { return known.first < at; });
        next_span_ = static_cast<std::size_t>(span - old_spans_.begin());
        return span != old_spans_.end() && span->first == o_ ? span->second : o_;
    }

    // Both cursors at a value whose text changed (passed_over() said so): walked into if both
    // are objects or arrays long enough, else parsed into `node`, whose slot is at `place`.
    bool walk_changed(json& node, const ValuePlace& place) {
        if (old_end_ <= o_) return false;  // an old value too deep to be remembered
        const char kind = old_[o_];
        if (old_end_ - o_ >= worth_walking && new_[n_] == kind) {
            ValuePlace inner = place;
            ++inner.level;
            if (kind == '{' && node.is_object())
                return walk_object(node.get_ref<json::object_t&>(), inner);
            if (kind == '[' && node.is_array())
                return walk_array(node.get_ref<json::array_t&>(), inner);
        }
        if (assigned_plain_scalar(node, place)) return true;
        const std::size_t old_end = old_end_;
        bj::basic_parser<InPlaceBuilder> parser(JsonPieces::options(), journal_, node, kept_top_,
                                                kept_meta_, place);
        bj::error_code error;
        const std::size_t used =
            parser.write_some(false, new_.data() + n_, new_.size() - n_, error);
        if (error) return false;
        if (new_[n_] == '{' || new_[n_] == '[')
            add_containers(new_.substr(n_, used), n_, static_cast<std::size_t>(place.level),
                           new_spans_);
        o_ = old_end;
        n_ += used;
        return true;
    }

    // A changed string of printable ASCII without escapes, or a changed integer of up to 18
    // digits, assigned to its node here as the parser would (a timer's echo changes a few such
    // values: a parser made for each, with its handler's stacks, cost most of their walk); any
    // other value is left to the parser (false).
    bool assigned_plain_scalar(json& node, const ValuePlace& place) {
        std::size_t end = n_;
        std::optional<json> value;  // none: the node holds it already
        if (new_[n_] == '"') {
            for (++end; end < new_.size(); ++end) {
                const auto c = static_cast<unsigned char>(new_[end]);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
            }
            if (end >= new_.size() || new_[end] != '"') return false;
            const std::string_view text = new_.substr(n_ + 1, end - n_ - 1);
            ++end;
            const auto* current = node.get_ptr<const json::string_t*>();
            if (!current || *current != text) value.emplace(std::string(text));
        } else {
            const bool negative = new_[n_] == '-';
            const std::size_t digits = n_ + (negative ? 1 : 0);
            end = digits;
            while (end < new_.size() && new_[end] >= '0' && new_[end] <= '9') ++end;
            const std::size_t count = end - digits;
            // No leading zeros ("-0" and "01" are the parser's), no fraction or exponent.
            if (count == 0 || count > 18 || (new_[digits] == '0' && (count > 1 || negative)))
                return false;
            if (end < new_.size() && (new_[end] == '.' || new_[end] == 'e' || new_[end] == 'E'))
                return false;
            std::int64_t number = 0;
            std::from_chars(new_.data() + digits, new_.data() + end, number);
            json parsed = JsonPieces::integer(negative ? -number : number);
            if (!same_scalar(node, parsed)) value = std::move(parsed);
        }
        if (value) {
            json* const slot = &node;
            journal_.record(Undo{.op = Op::assigned, .node = slot, .old = std::move(*slot)});
            *slot = std::move(*value);
            note_change(journal_.changes, place.level, place.top, place.meta);
        }
        o_ = old_end_;
        n_ = end;
        return true;
    }

    // Both cursors at the same punctuation (after spaces): passed.
    bool expect(char c) {
        o_ = skip_spaces(old_, o_);
        n_ = skip_spaces(new_, n_);
        if (o_ >= old_.size() || n_ >= new_.size() || old_[o_] != c || new_[n_] != c) return false;
        ++o_;
        ++n_;
        return true;
    }
    // Whether both cursors are at `c` (after spaces); nullopt if only one is.
    std::optional<bool> both_at(char c) {
        o_ = skip_spaces(old_, o_);
        n_ = skip_spaces(new_, n_);
        const bool old_at = o_ < old_.size() && old_[o_] == c;
        const bool new_at = n_ < new_.size() && new_[n_] == c;
        if (old_at != new_at) return std::nullopt;
        return old_at;
    }

    // A container walked into: its span, the end filled in when it closes.
    std::size_t open_span() {
        new_spans_.emplace_back(static_cast<std::uint32_t>(n_), static_cast<std::uint32_t>(n_));
        return new_spans_.size() - 1;
    }
    bool close_span(std::size_t span, char c) {
        if (!expect(c)) return false;
        new_spans_[span].second = static_cast<std::uint32_t>(n_);
        return true;
    }

    // The object's frame is at `place.level` (that of its members' slots).
    bool walk_object(json::object_t& object, const ValuePlace& place) {
        o_ = skip_spaces(old_, o_);
        n_ = skip_spaces(new_, n_);
        const std::size_t span = open_span();
        if (!expect('{')) return false;
        // The keys met, so that a key named twice (the last one counts) gives up.
        boost::container::small_vector<std::string_view, 16> keys;
        boost::container::small_vector<std::size_t, 4> changed;  // which keys' values changed
        std::size_t members = 0;
        for (auto end = both_at('}'); !end || !*end; end = both_at('}')) {
            if (!end) return false;
            if (members++ > 0 && !expect(',')) return false;
            o_ = skip_spaces(old_, o_);
            n_ = skip_spaces(new_, n_);
            if (o_ >= old_.size() || old_[o_] != '"') return false;
            // An escaped key gives up: the tree's key is not its text.
            const std::size_t close = find_any<'"', '\\'>(old_, o_ + 1);
            if (close >= old_.size() || old_[close] != '"' || !same_text(close + 1 - o_))
                return false;
            const std::string_view key = old_.substr(o_ + 1, close - o_ - 1);
            n_ += close + 1 - o_;
            o_ = close + 1;
            if (!expect(':')) return false;
            keys.push_back(key);
            if (passed_over()) continue;
            const auto it = object.find(key);
            if (it == object.end()) return false;
            ValuePlace member = place;
            if (place.level == 1) member.top = key;
            if (place.level == 2 && place.top == "metadata") member.meta = key;
            const std::size_t undone = journal_.undo.size();
            if (!walk_changed(it->second, member)) return false;
            if (journal_.undo.size() != undone) changed.push_back(keys.size() - 1);
        }
        // A key named twice whose value changed: which value is the tree's depends on all.
        for (const std::size_t index : changed) {
            for (std::size_t other = 0; other < keys.size(); ++other) {
                if (other != index && keys[other] == keys[index]) return false;
            }
        }
        return close_span(span, '}');
    }

    bool walk_array(json::array_t& array, const ValuePlace& place) {
        o_ = skip_spaces(old_, o_);
        n_ = skip_spaces(new_, n_);
        const std::size_t span = open_span();
        if (!expect('[')) return false;
        std::size_t index = 0;
        for (auto end = both_at(']'); !end || !*end; end = both_at(']')) {
            if (!end) return false;
            if (index > 0 && !expect(',')) return false;
            if (index >= array.size()) return false;
            if (!passed_over() && !walk_changed(array[index], place)) return false;
            ++index;
        }
        return index == array.size() && close_span(span, ']');
    }

    Journal& journal_;
    std::string_view old_;
    std::string_view new_;
    const Spans& old_spans_;
    std::size_t next_span_ = 0;  // the walk goes forward: no span before it is asked for again
    Spans new_spans_;
    std::span<const std::string_view> kept_top_;
    std::span<const std::string_view> kept_meta_;
    std::size_t o_ = 0;
    std::size_t n_ = 0;
    std::size_t old_end_ = 0;  // see passed_over()
};

InPlaceChanges parse_whole_line(std::string_view line, json& target,
                                std::span<const std::string_view> kept_top,
                                std::span<const std::string_view> kept_meta) {
    Journal journal;
    bj::basic_parser<InPlaceBuilder> parser(JsonPieces::options(), journal, target, kept_top,
                                            kept_meta);
    bj::error_code error;
    std::size_t used = 0;
    try {
        used = parser.write_some(false, line.data(), line.size(), error);
    } catch (...) {
        journal.rollback();
        throw;
    }
    std::string problem;
    if (error) {
        problem = error.message() + " at offset " + std::to_string(used);
    } else if (!parser.handler().found_object) {
        problem = "no \"object\" in the event";
    } else if (!target.is_object()) {
        problem = "the event's \"object\" is not an object";
    } else {
        problem = JsonPieces::trailing_data(line, used);
    }
    if (!problem.empty()) {
        journal.rollback();
        throw std::invalid_argument("Malformed watch event: " + problem);
    }
    return std::move(journal.changes);
}

}  // namespace

InPlaceChanges parse_event_object_in_place(std::string_view line, json& target,
                                           std::span<const std::string_view> kept_top,
                                           std::span<const std::string_view> kept_meta,
                                           RememberedText* remembered) {
    std::string_view object_text = remembered ? object_text_of(line) : std::string_view();
    if (object_text.size() >= std::numeric_limits<std::uint32_t>::max()) object_text = {};
    if (!object_text.empty() && !remembered->text.empty()) {
        Journal journal;
        std::optional<Lockstep> lockstep;
        bool walked = false;
        try {
            lockstep.emplace(journal, *remembered, object_text, kept_top, kept_meta);
            walked = lockstep->walk(target);
        } catch (...) {
            journal.rollback();
            throw;
        }
        if (walked) {
            remembered->text.assign(object_text);
            remembered->containers.swap(lockstep->new_spans());
            return std::move(journal.changes);
        }
        journal.rollback();
    }
    auto changes = parse_whole_line(line, target, kept_top, kept_meta);
    if (remembered) {
        remembered->text.assign(object_text);
        remembered->containers.clear();
        add_containers(object_text, 0, 0, remembered->containers);
    }
    return changes;
}

}  // namespace kopf::clients
