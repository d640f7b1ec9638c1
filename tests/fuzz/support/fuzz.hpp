// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cpp): how a target reports a broken
// contract, and how it cuts one input into the several strings a parser pair takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace kopf::fuzz {

// A documented property did not hold (an exception type the function does not promise, two
// codecs that disagree): abort, so that libFuzzer saves the input as a crash.
[[noreturn]] inline void violated(const char* what, std::string_view detail = {}) {
    std::fprintf(stderr, "fuzz: contract violated: %s%s%.*s\n", what, detail.empty() ? "" : ": ",
                 static_cast<int>(detail.size()), detail.data());
    std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// The part of `text` before the first `separator`; `text` keeps the rest (all of it if none).
inline std::string_view take_until(std::string_view& text, char separator) {
    const auto at = text.find(separator);
    if (at == std::string_view::npos) {
        const std::string_view all = text;
        text = {};
        return all;
    }
    const std::string_view head = text.substr(0, at);
    text.remove_prefix(at + 1);
    return head;
}

}  // namespace kopf::fuzz
