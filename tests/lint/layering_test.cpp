// The layers of docs/architecture.md, enforced: a file includes only its own layer or lower
// ones, and the public headers (include/kopf/) include nothing of src/.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "lint/support/source_tree.hpp"

namespace kopf::lint {
namespace {

// Lowest first. Inside the core: intents < actions < engines < reactor (our intents hold the
// handler declarations and causes that the actions execute).
const std::vector<std::string> kLayers = {
    "structs",      "loop",         "clients",      "configs", "core/intents",
    "core/actions", "core/engines", "core/reactor", "kits",    "cli",
};

// The rank of a path under src/ ("core/reactor/serving.cpp" -> 7), if it is in a layer.
std::optional<std::size_t> rank_of(const std::string& path) {
    for (std::size_t rank = 0; rank < kLayers.size(); ++rank) {
        if (path.rfind(kLayers[rank] + "/", 0) == 0) return rank;
    }
    return std::nullopt;
}

struct Include {
    std::string target;  // as written between the quotes
    int line;
};

std::vector<Include> quoted_includes(const SourceFile& file) {
    static const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
    std::vector<Include> found;
    int line = 0;
    std::size_t start = 0;
    while (start <= file.text.size()) {
        std::size_t end = file.text.find('\n', start);
        if (end == std::string::npos) end = file.text.size();
        ++line;
        std::smatch match;
        const std::string text = file.text.substr(start, end - start);
        if (std::regex_search(text, match, include)) found.push_back({match[1], line});
        start = end + 1;
    }
    return found;
}

// "file:line: includes X (layer) from layer Y" for every include that runs upward.
std::string upward_includes(const std::vector<SourceFile>& files) {
    std::string report;
    for (const auto& file : files) {
        const std::string path = file.path.generic_string();
        const bool is_public = path.rfind("include/kopf/", 0) == 0;
        const auto own = path.rfind("src/", 0) == 0 ? rank_of(path.substr(4)) : std::nullopt;
        for (const auto& include : quoted_includes(file)) {
            const auto target = rank_of(include.target);
            if (!target) continue;
            if (is_public) {
                report += path + ":" + std::to_string(include.line) + ": the public API includes " +
                          include.target + "\n";
            } else if (own && *target > *own) {
                report += path + ":" + std::to_string(include.line) + ": " + kLayers[*own] +
                          " includes " + include.target + " (" + kLayers[*target] + ")\n";
            }
        }
    }
    return report;
}

TEST(Layering, UpwardIncludeIsFound) {
    std::vector<SourceFile> planted = {
        {"src/core/intents/registry.cpp", "#include \"core/actions/execution.hpp\"\n", ""},
        {"src/clients/api.cpp", "// x\n#include \"configs/settings.hpp\"\n", ""},
        {"include/kopf/kopf.hpp", "#include \"structs/dicts.hpp\"\n", ""},
    };
    EXPECT_EQ(upward_includes(planted),
              "src/core/intents/registry.cpp:1: core/intents includes core/actions/execution.hpp "
              "(core/actions)\n"
              "src/clients/api.cpp:2: clients includes configs/settings.hpp (configs)\n"
              "include/kopf/kopf.hpp:1: the public API includes structs/dicts.hpp\n");
}

TEST(Layering, DownwardAndSameLayerIncludesPass) {
    std::vector<SourceFile> fine = {
        {"src/core/reactor/serving.cpp",
         "#include \"core/reactor/queueing.hpp\"\n#include \"clients/api.hpp\"\n"
         "#include \"kopf/kopf.hpp\"\n",
         ""},
        {"src/cli/command_line.cpp", "#include \"core/reactor/running.hpp\"\n", ""},
    };
    EXPECT_EQ(upward_includes(fine), "");
}

TEST(Layering, EveryFolderOfSrcIsALayer) {
    std::string strays;
    for (const auto& file : read_sources({"src"})) {
        const std::string path = file.path.generic_string().substr(4);
        if (path.find('/') != std::string::npos && !rank_of(path)) strays += path + "\n";
    }
    EXPECT_EQ(strays, "") << "files in a folder that is not a layer of docs/architecture.md";
}

TEST(Layering, NoUpwardIncludesInTheTree) {
    const auto files = read_sources({"include", "src"});
    ASSERT_GT(files.size(), 50u) << "the source tree was not found under " << KOPF_SOURCE_DIR;
    EXPECT_EQ(upward_includes(files), "");
}

}  // namespace
}  // namespace kopf::lint
