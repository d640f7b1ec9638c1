// Parsing a watch event's object into an existing tree, in place: what the daemons' views need
// (references into the tree stay valid, and an echo that changed three values costs three
// assignments, not a tree built and another freed).
#pragma once

#include <cstdint>
#include <kopf/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kopf::clients {

/// An object's text as last parsed into a tree, with where each of its objects and arrays
/// starts and ends (offsets into the text, in the order they start).
struct RememberedText {
    std::string text;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> containers;
    void clear() {
        text.clear();
        containers.clear();
    }
};

/// What parse_event_object_in_place() changed in the tree.
struct InPlaceChanges {
    std::vector<std::string> top;       ///< the object's keys whose values changed (or went)
    std::vector<std::string> metadata;  ///< the same in its metadata; "*": replaced as a whole
};

/// Parses the "object" of a watch event's line (`{"type": ..., "object": {...}}`) into
/// `target`: a value that did not change stays where it is, a changed one is assigned, a key
/// gone is erased — except the `kept_top` keys of the object and the `kept_meta` keys of its
/// metadata, which are emptied instead (references to them stay valid). Keys and values as
/// parse_json() reads them (the last of repeated keys; non-negative integers unsigned).
/// Throws std::invalid_argument naming the offset on a malformed line, or one without an object;
/// `target` is then as it was (nodes erased on the way are put back where they were).
///
/// `remembered`, if given, is the object's text as last parsed into `target` (empty: unknown);
/// it is updated with the line's. The values whose text has not changed since are then passed
/// over without being read (the tree is the same as without it, the changes too, but for a key
/// named twice, which the whole line's parse reports even if its values did not change). Whoever
/// changes `target` otherwise must empty it.
InPlaceChanges parse_event_object_in_place(std::string_view line, json& target,
                                           std::span<const std::string_view> kept_top,
                                           std::span<const std::string_view> kept_meta,
                                           RememberedText* remembered = nullptr);

}  // namespace kopf::clients
