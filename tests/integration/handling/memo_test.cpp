// The operator's memo against the embedded API server: what startup handlers put into it
// reaches every object's memo (values copied, shared_ptr values shared), and an embedding
// application gives the operator a memo of its own type (RunOptions::memo).
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

class Memos : public HandlingTest {};

TEST_F(Memos, WhatStartupHandlersPutIntoTheMemoReachesEveryObject) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::startup prepare(registry, {.id = "prepare"}, [](ActivityContext& ctx) {
        ctx.memo["greeting"] = "hello";
        ctx.memo.set("counter", std::make_shared<std::atomic<int>>(0));
    });
    on::create fn(registry, "kopfexamples", {.id = "create_fn"}, [calls](Context& ctx) {
        const auto counter = ctx.memo.get<std::shared_ptr<std::atomic<int>>>("counter");
        calls->add("seen", {{"greeting", ctx.memo["greeting"]}, {"count", ++*counter}});
        ctx.memo["mine"] = ctx.name;  // the object's own copy: no other object sees it
    });
    on::update upd(registry, "kopfexamples", {.id = "update_fn"},
                   [calls](Context& ctx) { calls->add("mine", ctx.memo["mine"]); });
    auto operator_ = start_operator(registry);

    create(example("kex-memo-1", {{"field", 1}}));
    create(example("kex-memo-2", {{"field", 2}}));
    ASSERT_TRUE(eventually([&] { return calls->count("seen") == 2; }));
    std::vector<int> counts;
    for (const auto& seen : calls->details("seen")) {
        EXPECT_EQ(seen["greeting"], "hello") << seen;
        counts.push_back(seen["count"]);
    }
    std::sort(counts.begin(), counts.end());
    EXPECT_EQ(counts, (std::vector<int>{1, 2}));  // one counter, shared by both objects

    patch("kex-memo-2", {{"spec", {{"field", 3}}}});
    ASSERT_TRUE(eventually([&] { return calls->count("mine") == 1; }));
    EXPECT_EQ(calls->details("mine").at(0), "kex-memo-2");
    EXPECT_EQ(operator_->stop(), "");
}

// An application's own memo type, with what it shares with the operator's objects.
struct AppMemo : Memo {
    struct Shared {
        std::mutex mutex;
        std::vector<std::string> names;
    };
    std::shared_ptr<Shared> shared = std::make_shared<Shared>();
    std::shared_ptr<Memo> copy() const override { return std::make_shared<AppMemo>(*this); }
};

TEST_F(Memos, AnEmbeddingApplicationGivesTheOperatorItsOwnMemoType) {
    Registry registry;
    on::create fn(registry, "kopfexamples", {.id = "create_fn"}, [](Context& ctx) {
        auto& memo = ctx.memo_as<AppMemo>();  // throws std::bad_cast for a plain memo
        std::lock_guard lock(memo.shared->mutex);
        memo.shared->names.push_back(ctx.name);
    });
    auto memo = std::make_shared<AppMemo>();
    auto operator_ = start_operator(registry, fast_settings(),
                                    [memo](RunOptions& options) { options.memo = memo; });
    create(example("kex-app-memo", {}));
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lock(memo->shared->mutex);
        return memo->shared->names == std::vector<std::string>{"kex-app-memo"};
    }));
    EXPECT_EQ(operator_->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
