// The rule of include/kopf/task.hpp ("Temporaries in co_await"): g++ 12 destroys a lambda's
// closure or a braced temporary that is created inside a co_await expression twice, so a
// capture that owns heap memory (a std::function, a string, a shared_ptr) is freed twice. The
// operator's re-login crashed every operator at its first 401 this way. Such temporaries are
// named before the co_await; this check finds any that are not, in the whole tree.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "lint/support/source_tree.hpp"

namespace kopf::lint {
namespace {

bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Offsets of the `co_await` expressions in `code` that create a lambda or a braced temporary.
std::vector<std::size_t> temporaries_in_co_await(const std::string& code) {
    std::vector<std::size_t> found;
    const std::string keyword = "co_await";
    for (std::size_t at = code.find(keyword); at != std::string::npos;
         at = code.find(keyword, at + keyword.size())) {
        if ((at > 0 && is_word_char(code[at - 1])) ||
            (at + keyword.size() < code.size() && is_word_char(code[at + keyword.size()])))
            continue;
        // The expression runs to a `;` or `,` at its own depth, or to the bracket that closes
        // the one it sits in (an `if (co_await x)`).
        int depth = 0;
        char previous = ' ';  // the last non-space character before the current one
        for (std::size_t i = at + keyword.size(); i < code.size(); ++i) {
            const char c = code[i];
            if (std::isspace(static_cast<unsigned char>(c))) continue;
            if (c == '(' || c == '[' || c == '{') {
                const bool subscript =
                    c == '[' && (is_word_char(previous) || previous == ')' || previous == ']');
                if (c == '{' || (c == '[' && !subscript)) {
                    found.push_back(at);
                    break;
                }
                ++depth;
            } else if (c == ')' || c == ']' || c == '}') {
                if (--depth < 0) break;
            } else if ((c == ';' || c == ',') && depth == 0) {
                break;
            }
            previous = c;
        }
    }
    return found;
}

TEST(CoroutineTemporaries, LambdaArgumentIsFound) {
    EXPECT_EQ(temporaries_in_co_await(
                  "x = co_await co_spawn(ex, [fn = f]() -> awaitable<int> { co_return fn(); },"
                  " use_awaitable);")
                  .size(),
              1u);
}

TEST(CoroutineTemporaries, BracedTemporaryIsFound) {
    EXPECT_EQ(temporaries_in_co_await("co_await send(Request{std::string(\"x\")});").size(), 1u);
    EXPECT_EQ(temporaries_in_co_await("co_await watch(resource, {}, stop);").size(), 1u);
}

TEST(CoroutineTemporaries, NamedAwaitablesAndSubscriptsPass) {
    EXPECT_TRUE(temporaries_in_co_await("auto login = [fn] { return fn(); };\n"
                                        "auto awaiting = run(std::move(login));\n"
                                        "auto result = co_await std::move(awaiting);\n"
                                        "co_await step(items[0], table[key]);\n"
                                        "if (co_await ready(x)) { go({1, 2}); }\n"
                                        "for (auto& e : co_await list(a)) { use([&] {}); }\n")
                    .empty());
}

TEST(CoroutineTemporaries, CommentsAndStringsAreNotCode) {
    EXPECT_TRUE(temporaries_in_co_await(
                    blank_comments_and_literals("// co_await f([x] {});\n"
                                                "log(\"co_await {}\");\n"
                                                "/* co_await g({}) */ co_await h(\"{[\");\n"))
                    .empty());
}

TEST(CoroutineTemporaries, NoneInTheTree) {
    const auto files = read_sources({"include", "src", "apiserver", "examples", "tests", "bench"});
    ASSERT_GT(files.size(), 100u) << "the source tree was not found under " << KOPF_SOURCE_DIR;
    std::string report;
    for (const auto& file : files) {
        if (file.path.filename() == "coroutine_temporaries_test.cpp") continue;
        for (std::size_t at : temporaries_in_co_await(file.code)) {
            report += file.path.string() + ":" + std::to_string(line_of(file.text, at)) + "\n";
        }
    }
    EXPECT_EQ(report, "") << "A lambda or braced temporary inside a co_await expression (name it "
                             "first; see include/kopf/task.hpp):\n"
                          << report;
}

}  // namespace
}  // namespace kopf::lint
