// Finalizers: blocking and allowing the deletion of an object.
#include "structs/finalizers.hpp"

#include <gtest/gtest.h>

namespace {

using kopf::json;

TEST(Finalizers, BlockingAndReleasingAreIdempotent) {
    json body = {{"metadata", json::object()}};
    kopf::finalizers::block_deletion(body, "f");
    kopf::finalizers::block_deletion(body, "f");
    EXPECT_EQ(body["metadata"]["finalizers"], (json{"f"}));
    EXPECT_TRUE(kopf::finalizers::is_deletion_blocked(body, "f"));
    kopf::finalizers::allow_deletion(body, "f");
    EXPECT_FALSE(body["metadata"].contains("finalizers"));
    EXPECT_FALSE(kopf::finalizers::is_deletion_ongoing(body));
}

TEST(Finalizers, ReleasingKeepsForeignFinalizers) {
    json body = {{"metadata", {{"finalizers", {"a", "f", "b"}}}}};
    kopf::finalizers::allow_deletion(body, "f");
    EXPECT_EQ(body["metadata"]["finalizers"], (json{"a", "b"}));
}

}  // namespace
