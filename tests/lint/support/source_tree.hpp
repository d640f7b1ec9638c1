// Reading the project's own C++ sources for the checks in tests/lint: every file under the
// given top-level folders, and its text with comments and literals blanked out (so that a
// check does not trip over prose or strings; line numbers and columns are kept).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kopf::lint {

struct SourceFile {
    std::filesystem::path path;  // relative to the source root
    std::string text;            // as on disk
    std::string code;            // comments, string and character literals blanked
};

// The C++ files (.cpp, .hpp, .h) under `folders` of the source root, in path order.
std::vector<SourceFile> read_sources(const std::vector<std::string>& folders);

// `text` with comments and literals replaced by spaces (newlines kept).
std::string blank_comments_and_literals(const std::string& text);

// The 1-based line number of `offset` in `text`.
int line_of(const std::string& text, std::size_t offset);

}  // namespace kopf::lint
