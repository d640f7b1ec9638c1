// docs/options.md lists every field of every option struct of the public headers (`struct
// XxxOptions` under include/kopf/) in declaration order: designated initialisers must follow
// that order, and the page is where a newcomer looks it up.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "lint/support/source_tree.hpp"

namespace kopf::lint {
namespace {

struct OptionStruct {
    std::string name;
    std::string header;
    std::vector<std::string> fields;
};

// The data members of `body` (comments and literals blanked) in order: the last identifier
// of each statement before its initialiser.
std::vector<std::string> fields_of(const std::string& body) {
    std::vector<std::string> fields;
    std::string statement;
    int depth = 0;
    for (char c : body) {
        if (c == '{' || c == '(' || c == '<') ++depth;
        if (c == '}' || c == ')' || c == '>') --depth;
        if (c == ';' && depth == 0) {
            const std::size_t init = statement.find_first_of("{=");
            const std::string declaration = statement.substr(0, init);
            static const std::regex last_identifier(R"((\w+)\s*$)");
            std::smatch match;
            if (std::regex_search(declaration, match, last_identifier)) {
                fields.push_back(match[1]);
            }
            statement.clear();
            continue;
        }
        statement += c;
    }
    return fields;
}

std::vector<OptionStruct> option_structs() {
    std::vector<OptionStruct> found;
    static const std::regex opening(R"(\bstruct (\w+Options) \{)");
    for (const auto& file : read_sources({"include/kopf"})) {
        for (auto it = std::sregex_iterator(file.code.begin(), file.code.end(), opening);
             it != std::sregex_iterator(); ++it) {
            const std::size_t begin = it->position(0) + it->length(0);
            int depth = 1;
            std::size_t end = begin;
            for (; end < file.code.size() && depth > 0; ++end) {
                if (file.code[end] == '{') ++depth;
                if (file.code[end] == '}') --depth;
            }
            found.push_back({(*it)[1], file.path.string(),
                             fields_of(file.code.substr(begin, end - 1 - begin))});
        }
    }
    return found;
}

std::string read_page(const std::string& relative) {
    std::ifstream in(std::string(KOPF_SOURCE_DIR) + "/" + relative);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The fields listed in the section "### `kopf::NAME`" of the page: the rows "| `.field` |".
std::vector<std::string> documented_fields(const std::string& page, const std::string& name) {
    const std::string heading = "### `kopf::" + name + "`";
    const std::size_t begin = page.find(heading);
    if (begin == std::string::npos) return {};
    const std::size_t end = page.find("\n#", begin + heading.size());
    const std::string section = page.substr(begin, end - begin);
    std::vector<std::string> fields;
    static const std::regex row(R"(\n\| `\.(\w+)` \|)");
    for (auto it = std::sregex_iterator(section.begin(), section.end(), row);
         it != std::sregex_iterator(); ++it) {
        fields.push_back((*it)[1]);
    }
    return fields;
}

TEST(OptionsDocs, EveryOptionStructIsListedFieldByFieldInDeclarationOrder) {
    const auto structs = option_structs();
    ASSERT_GE(structs.size(), 10u) << "the option structs were not found";
    const std::string page = read_page("docs/options.md");
    ASSERT_FALSE(page.empty()) << "docs/options.md is missing";
    for (const auto& option : structs) {
        ASSERT_FALSE(option.fields.empty()) << option.name << " in " << option.header;
        EXPECT_EQ(documented_fields(page, option.name), option.fields)
            << "docs/options.md: the section \"### `kopf::" << option.name
            << "`\" must list the fields of " << option.header << " in declaration order";
    }
}

TEST(OptionsDocs, FieldsAreFoundAsDeclared) {
    const std::string body = blank_comments_and_literals(
        "std::string id{};  ///< x\n std::optional<bool> flag = true;\n"
        "std::function<void(int)> fn;\n std::vector<std::string> nested = {};\n");
    EXPECT_EQ(fields_of(body), (std::vector<std::string>{"id", "flag", "fn", "nested"}));
}

}  // namespace
}  // namespace kopf::lint
