// What the project's Boost.JSON parser handlers share (json_codec.cpp, json_in_place.cpp): no
// size limits, the parse options, the check after a document, and the keys, strings and numbers
// that arrive in pieces, collected. Internal:
// included by those two sources only (Boost.JSON's parser is a heavy header).
#pragma once

#include <boost/json/basic_parser.hpp>
#include <cstddef>
#include <cstdint>
#include <kopf/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "clients/json_codec.hpp"

namespace kopf::clients {

inline bool is_json_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

class JsonPieces {
  public:
    // nlohmann has no depth limit, and CRD schemas nest deeply.
    static boost::json::parse_options options() {
        boost::json::parse_options options;
        options.max_depth = 100000;
        return options;
    }
    // What is wrong with `text` after a document that ended at `used`: "" if only whitespace.
    static std::string trailing_data(std::string_view text, std::size_t used) {
        for (std::size_t i = used; i < text.size(); ++i) {
            if (!is_json_space(text[i]))
                return "extra data after the JSON value at offset " + std::to_string(i);
        }
        return {};
    }

    // nlohmann keeps non-negative integers as unsigned: so do these parsers, so that values
    // compare and report their types alike whichever parser read them.
    static json integer(std::int64_t i) {
        return i >= 0 ? json(static_cast<std::uint64_t>(i)) : json(i);
    }

    constexpr static std::size_t max_object_size = std::size_t(-1);
    constexpr static std::size_t max_array_size = std::size_t(-1);
    constexpr static std::size_t max_key_size = std::size_t(-1);
    constexpr static std::size_t max_string_size = std::size_t(-1);

    bool on_document_begin(boost::json::error_code&) { return true; }
    bool on_document_end(boost::json::error_code&) { return true; }
    bool on_key_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_key(boost::json::string_view s, std::size_t, boost::json::error_code&) {
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_string_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
        text_.append(s.data(), s.size());
        return true;
    }
    bool on_number_part(boost::json::string_view s, boost::json::error_code&) {
        number_.append(s.data(), s.size());
        return true;
    }
    bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

  protected:
    // The double whose last piece of text is `s`, as nlohmann reads it (exact_double()); out of
    // range: nullopt and `error` set.
    std::optional<double> take_double(boost::json::string_view s, double parsed,
                                      boost::json::error_code& error) {
        number_.append(s.data(), s.size());
        const auto exact = exact_double(number_, parsed);
        number_.clear();
        if (!exact) error = boost::json::error::exponent_overflow;
        return exact;
    }

    std::string key_;     // the key being read
    std::string text_;    // the string value being read, but its last piece
    std::string number_;  // the number being read, but its last piece
};

}  // namespace kopf::clients
