#include "source_tree.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace kopf::lint {

namespace fs = std::filesystem;

std::string blank_comments_and_literals(const std::string& text) {
    std::string code = text;
    const auto blank = [&code](std::size_t from, std::size_t to) {
        for (std::size_t i = from; i < to && i < code.size(); ++i) {
            if (code[i] != '\n') code[i] = ' ';
        }
    };
    std::size_t i = 0;
    while (i < code.size()) {
        const char c = code[i];
        const char next = i + 1 < code.size() ? code[i + 1] : '\0';
        if (c == '/' && next == '/') {
            const std::size_t end = code.find('\n', i);
            blank(i, end == std::string::npos ? code.size() : end);
            i = end == std::string::npos ? code.size() : end;
        } else if (c == '/' && next == '*') {
            const std::size_t end = code.find("*/", i + 2);
            const std::size_t stop = end == std::string::npos ? code.size() : end + 2;
            blank(i, stop);
            i = stop;
        } else if (c == 'R' && next == '"' && (i == 0 || !std::isalnum(code[i - 1]))) {
            // Raw string: R"delim( ... )delim"
            const std::size_t open = code.find('(', i + 2);
            if (open == std::string::npos) break;
            std::string closing = ")";
            closing += code.substr(i + 2, open - i - 2);
            closing += '"';
            const std::size_t end = code.find(closing, open);
            const std::size_t stop = end == std::string::npos ? code.size() : end + closing.size();
            blank(i + 1, stop);
            i = stop;
        } else if (c == '"' || (c == '\'' && (i == 0 || !std::isxdigit(code[i - 1])))) {
            // A string or character literal (a quote after a hex digit is a digit separator).
            std::size_t j = i + 1;
            while (j < code.size() && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
            blank(i + 1, std::min(j, code.size()));
            i = j + 1;
        } else {
            ++i;
        }
    }
    return code;
}

std::vector<SourceFile> read_sources(const std::vector<std::string>& folders) {
    const fs::path root = KOPF_SOURCE_DIR;
    std::vector<SourceFile> files;
    for (const auto& folder : folders) {
        if (!fs::exists(root / folder)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
            const auto extension = entry.path().extension();
            if (!entry.is_regular_file() ||
                (extension != ".cpp" && extension != ".hpp" && extension != ".h"))
                continue;
            std::ifstream in(entry.path(), std::ios::binary);
            std::stringstream buffer;
            buffer << in.rdbuf();
            SourceFile file{fs::relative(entry.path(), root), buffer.str(), {}};
            file.code = blank_comments_and_literals(file.text);
            files.push_back(std::move(file));
        }
    }
    std::sort(files.begin(), files.end(),
              [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
    return files;
}

int line_of(const std::string& text, std::size_t offset) {
    return 1 +
           static_cast<int>(std::count(
               text.begin(),
               text.begin() + static_cast<std::ptrdiff_t>(std::min(offset, text.size())), '\n'));
}

}  // namespace kopf::lint
