#include "clients/json_in_place.hpp"

#include <algorithm>
#include <bit>
#include <boost/json/basic_parser_impl.hpp>
#include <cstdint>
#include <stdexcept>

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

// Boost.JSON's parser handler: walks the tree beside the text, changing only what differs, and
// logs each change so that a failure can undo them all.
class InPlaceBuilder : public JsonPieces {
  public:
    InPlaceBuilder(json& target, std::span<const std::string_view> kept_top,
                   std::span<const std::string_view> kept_meta)
        : target_(target), kept_top_(kept_top), kept_meta_(kept_meta) {
        stack_.reserve(16);
    }

    InPlaceChanges changes;
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
            undo_.push_back(std::move(entry));
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

    // Puts the tree back as it was before the parse.
    void rollback() noexcept {
        for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
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
        undo_.clear();
    }

  private:
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
            undo_.push_back(Undo{.op = Op::pushed, .array = frame.array});
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
                undo_.push_back(Undo{.op = Op::inserted, .object = &object, .position = it});
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
            undo_.push_back(Undo{.op = Op::assigned_element,
                                 .array = slot.array,
                                 .index = slot.index,
                                 .old = std::move(*slot.node)});
        } else {
            undo_.push_back(
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
                    undo_.push_back(Undo{
                        .op = Op::assigned, .node = &it->second, .old = std::move(it->second)});
                    it->second = json::object();
                }
                ++it;
                continue;
            }
            note_erased(frame, it->first);
            auto next = std::next(it);
            undo_.push_back(
                Undo{.op = Op::erased, .object = &object, .extracted = object.extract(it)});
            it = next;
        }
    }

    void add(std::vector<std::string>& keys, const std::string& key) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }

    // A change inside the walk's current frame.
    void note_change(const Frame& frame) {
        if (frame.level == 0) {  // the object itself, replaced
            add(changes.top, "*");
            add(changes.metadata, "*");
            return;
        }
        add(changes.top, top_key_);
        if (top_key_ != "metadata") return;
        if (frame.level == 1) {
            add(changes.metadata, "*");  // the metadata, replaced as a whole
        } else {
            add(changes.metadata, meta_key_);
        }
    }

    // A key erased (or emptied) from the frame's object.
    void note_erased(const Frame& frame, const std::string& key) {
        if (frame.level == 1) {
            add(changes.top, key);
            if (key == "metadata") add(changes.metadata, "*");
            return;
        }
        add(changes.top, top_key_);
        if (top_key_ != "metadata") return;
        add(changes.metadata, frame.level == 2 ? key : meta_key_);
    }

    json& target_;
    std::span<const std::string_view> kept_top_;
    std::span<const std::string_view> kept_meta_;
    std::vector<Frame> stack_;
    std::vector<Undo> undo_;
    std::string top_key_;   // the object's key being walked (level 1)
    std::string meta_key_;  // the metadata's key being walked (level 2 under "metadata")
};

}  // namespace

InPlaceChanges parse_event_object_in_place(std::string_view line, json& target,
                                           std::span<const std::string_view> kept_top,
                                           std::span<const std::string_view> kept_meta) {
    bj::basic_parser<InPlaceBuilder> parser(JsonPieces::options(), target, kept_top, kept_meta);
    bj::error_code error;
    std::size_t used = 0;
    try {
        used = parser.write_some(false, line.data(), line.size(), error);
    } catch (...) {
        parser.handler().rollback();
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
        parser.handler().rollback();
        throw std::invalid_argument("Malformed watch event: " + problem);
    }
    return std::move(parser.handler().changes);
}

}  // namespace kopf::clients
