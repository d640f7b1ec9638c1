// Field paths in bodies: resolving, ensuring and removing them.
#include "structs/dicts.hpp"

#include <gtest/gtest.h>

namespace {

using kopf::json;

TEST(Dicts, ResolveEnsureAndRemoveFieldPaths) {
    json body = json::object();
    kopf::dicts::ensure(body, {"a", "b"}, 1);
    EXPECT_EQ(*kopf::dicts::resolve(body, {"a", "b"}), 1);
    EXPECT_EQ(kopf::dicts::resolve(body, {"a", "x"}), nullptr);
    kopf::dicts::remove(body, {"a", "b"});
    EXPECT_EQ(body, (json{{"a", json::object()}}));
    kopf::dicts::remove_empty_stanzas(body);
    EXPECT_TRUE(body.empty());
    EXPECT_EQ(kopf::dicts::parse_field("spec.x.y"), (std::vector<std::string>{"spec", "x", "y"}));
}

}  // namespace
