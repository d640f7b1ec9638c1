// In-memory indices and probes against the embedded API server: what handlers and the test
// (through the indices a startup handler hands over) see as objects come, change and go, filters
// flip, index handlers fail, the watch relists after 410 Gone, and a small worker limit meets
// many indexed objects; the liveness endpoint reporting the probes.
#include <atomic>
#include <set>
#include <string>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

// The indices of the running operator, handed over by its startup handler; shared with the
// operator's threads as users' closures share their state.
struct Shared {
    std::mutex mutex;
    Indices indices;
    Calls calls;
    std::atomic<int> failures_left{0};
};

class Indexing : public HandlingTest {
  protected:
    std::shared_ptr<Shared> shared = std::make_shared<Shared>();

    // Objects as users' are: a spec nested deep, and the annotation kubectl writes (a JSON copy
    // of the whole object) beside the test's own metadata.
    static json example(const std::string& name, const json& spec,
                        const json& metadata = json::object()) {
        json rich_spec = spec;
        rich_spec["nested"] = {{"level1", {{"level2", {{"level3", {1, 2, {{"deep", true}}}}}}}}};
        json rich_metadata = {{"annotations",
                               {{"kubectl.kubernetes.io/last-applied-configuration",
                                 json{{"apiVersion", "kopf.dev/v1"},
                                      {"kind", "KopfExample"},
                                      {"metadata", {{"name", name}, {"namespace", "default"}}},
                                      {"spec", rich_spec}}
                                     .dump()}}}};
        rich_metadata.update(metadata);
        return HandlingTest::example(name, rich_spec, rich_metadata);
    }

    void hand_over_indices(Registry& registry) {
        auto s = shared;
        on::startup grab(registry, {.id = "grab"}, [s](ActivityContext& ctx) {
            std::lock_guard lock(s->mutex);
            s->indices = ctx.indices;
        });
    }

    Index index(const std::string& name) {
        std::lock_guard lock(shared->mutex);
        return shared->indices.get(name);
    }

    // The index as {key: sorted values}, for comparisons.
    json contents(const std::string& name) {
        json out = json::object();
        for (const auto& [key, store] : index(name).items()) {
            std::vector<json> values(store.begin(), store.end());
            std::sort(values.begin(), values.end());
            out[key.is_string() ? key.get<std::string>() : key.dump()] = values;
        }
        return out;
    }
};

// By spec.field: the object's name.
json by_field(Context& ctx) {
    return {{ctx.spec.value("field", "none"), ctx.name}};
}

TEST_F(Indexing, IndexIsCompleteBeforeTheFirstHandlerRuns) {
    for (const auto* name : {"kex-a", "kex-b", "kex-c"}) create(example(name, {{"field", "x"}}));
    Registry registry;
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, by_field);
    auto s = shared;
    on::create fn(registry, "kopfexamples", {.id = "create_fn"}, [s](Context& ctx) {
        // Every object is in the index already, whichever is handled first.
        s->calls.add("seen", static_cast<int>(ctx.index("by_field").get("x").size()));
    });
    auto operator_ = start_operator(registry);
    ASSERT_TRUE(eventually([&] { return shared->calls.count("seen") == 3; }));
    for (const auto& seen : shared->calls.details("seen")) EXPECT_EQ(seen, 3);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Indexing, IndexFollowsCreationsChangesAndDeletions) {
    Registry registry;
    hand_over_indices(registry);
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, by_field);
    auto operator_ = start_operator(registry);

    create(example("kex-1", {{"field", "a"}}));
    create(example("kex-2", {{"field", "a"}}));
    ASSERT_TRUE(eventually([&] {
        return contents("by_field") == json{{"a", {"kex-1", "kex-2"}}};
    })) << contents("by_field");

    patch("kex-1", {{"spec", {{"field", "b"}}}});
    ASSERT_TRUE(eventually([&] {
        return contents("by_field") == json{{"a", {"kex-2"}}, {"b", {"kex-1"}}};
    })) << contents("by_field");

    remove("kex-2");
    ASSERT_TRUE(eventually([&] {
        return contents("by_field") == json{{"b", {"kex-1"}}};
    })) << contents("by_field");
    EXPECT_FALSE(index("by_field").contains("a"));  // emptied stores go with their keys
    EXPECT_THROW(index("by_field").at("a"), std::out_of_range);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Indexing, ObjectsLeaveAndReturnAsTheirFiltersFlip) {
    Registry registry;
    hand_over_indices(registry);
    on::index idx(registry, "kopfexamples", {.id = "labelled", .labels = {{"indexed", "yes"}}},
                  [](Context& ctx) { return json(ctx.name); });
    auto operator_ = start_operator(registry);

    create(example("kex-flip", {}, {{"labels", {{"indexed", "yes"}}}}));
    ASSERT_TRUE(eventually([&] { return index("labelled").get(nullptr).size() == 1; }));
    patch("kex-flip", {{"metadata", {{"labels", {{"indexed", "no"}}}}}});
    ASSERT_TRUE(eventually([&] { return index("labelled").empty(); }));
    patch("kex-flip", {{"metadata", {{"labels", {{"indexed", "yes"}}}}}});
    ASSERT_TRUE(eventually([&] { return index("labelled").get(nullptr).contains("kex-flip"); }));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Indexing, FailingIndexHandlersKeepTheObjectsEarlierEntries) {
    Registry registry;
    hand_over_indices(registry);
    auto s = shared;
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, [s](Context& ctx) -> json {
        const std::string field = ctx.spec.value("field", "");
        if (field == "broken") throw std::runtime_error("cannot index a broken field");
        if (field == "later" && s->failures_left.fetch_sub(1) > 0)
            throw TemporaryError("not yet", 0.2);
        return {{field, ctx.name}};
    });
    auto operator_ = start_operator(registry);

    create(example("kex-err", {{"field", "good"}}));
    ASSERT_TRUE(eventually([&] { return contents("by_field") == json{{"good", {"kex-err"}}}; }));
    // An ignored error (the default): the earlier entry stays; the next event tries again.
    patch("kex-err", {{"spec", {{"field", "broken"}}}});
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(contents("by_field"), (json{{"good", {"kex-err"}}}));
    patch("kex-err", {{"spec", {{"field", "fixed"}}}});
    ASSERT_TRUE(eventually([&] { return contents("by_field") == json{{"fixed", {"kex-err"}}}; }));

    // A temporary error is retried after its delay with no new event.
    shared->failures_left = 2;
    patch("kex-err", {{"spec", {{"field", "later"}}}});
    ASSERT_TRUE(eventually([&] {
        return contents("by_field") == json{{"later", {"kex-err"}}};
    })) << contents("by_field");
    EXPECT_LT(shared->failures_left.load(), 0);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Indexing, RelistingAfterGoneLeavesNoStaleOrDuplicateEntries) {
    Registry registry;
    hand_over_indices(registry);
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, by_field);
    auto operator_ = start_operator(registry);
    for (const auto* name : {"kex-r1", "kex-r2", "kex-r3"}) create(example(name, {{"field", "r"}}));
    ASSERT_TRUE(eventually([&] { return index("by_field").get("r").size() == 3; }));

    server->stall_watches(true);  // the operator misses what follows
    remove("kex-r2");
    patch("kex-r3", {{"spec", {{"field", "s"}}}});
    create(example("kex-r4", {{"field", "r"}}));
    server->compact_history();  // its resourceVersion is too old: it must relist
    server->drop_watches();
    server->stall_watches(false);

    ASSERT_TRUE(eventually([&] {
        return contents("by_field") == json{{"r", {"kex-r1", "kex-r4"}}, {"s", {"kex-r3"}}};
    })) << contents("by_field");
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Indexing, WorkerLimitSmallerThanTheIndexedObjectsStillStarts) {
    constexpr int kObjects = 1000;
    for (int i = 0; i < kObjects; ++i)
        create(example("kex-" + std::to_string(i), {{"field", "w"}}));
    Registry registry;
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, by_field);
    auto s = shared;
    on::event fn(registry, "kopfexamples", {.id = "event_fn"}, [s](Context& ctx) {
        s->calls.add("seen", static_cast<int>(ctx.index("by_field").get("w").size()));
    });
    auto settings = fast_settings();
    settings.queueing.worker_limit = 2;
    settings.queueing.idle_timeout = 0.01;  // workers hold their slot while idle
    auto operator_ = start_operator(registry, settings);
    ASSERT_TRUE(eventually([&] { return shared->calls.count("seen") >= kObjects; }, 120s))
        << shared->calls.count("seen") << " of " << kObjects << " handled";
    for (const auto& seen : shared->calls.details("seen")) ASSERT_EQ(seen, kObjects);
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Indexing, TypedAndUnknownIndicesAsHandlersSeeThem) {
    Registry registry;
    on::index idx(registry, "kopfexamples", {.id = "sizes"}, [](Context& ctx) {
        return IndexEntries().add(json::array({ctx.namespace_, ctx.name}), ctx.spec["size"]);
    });
    auto s = shared;
    on::create fn(registry, "kopfexamples", {.id = "create_fn"}, [s](Context& ctx) {
        const auto sizes = ctx.index<int>("sizes");
        s->calls.add("size", sizes.get(json::array({ctx.namespace_, ctx.name})).at(0));
        try {
            ctx.index("no-such-index");
        } catch (const std::out_of_range& e) {
            s->calls.add("unknown", e.what());
        }
    });
    auto operator_ = start_operator(registry);
    create(example("kex-typed", {{"size", 42}}));
    ASSERT_TRUE(eventually([&] { return shared->calls.count("unknown") == 1; }));
    EXPECT_EQ(shared->calls.details("size").at(0), 42);
    const std::string unknown = shared->calls.details("unknown").at(0);
    EXPECT_NE(unknown.find("no-such-index"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("sizes"), std::string::npos) << unknown;  // the known ones
    EXPECT_EQ(operator_->stop(), "");
}

// ---- probes ----

json body_of(const std::string& answer) {
    const auto start = answer.find("\r\n\r\n");
    return json::parse(answer.substr(start + 4));
}

TEST_F(Indexing, LivenessEndpointReportsTheProbesCachedAndTheirFailures) {
    Registry registry;
    on::index idx(registry, "kopfexamples", {.id = "by_field"}, by_field);
    auto runs = std::make_shared<std::atomic<int>>(0);
    auto broken = std::make_shared<std::atomic<bool>>(false);
    on::probe count(registry, {.id = "count"}, [runs](ActivityContext& ctx) {
        ++*runs;
        return ctx.index("by_field").get("p").size();
    });
    on::probe fragile(registry, {.id = "fragile"}, [broken](ActivityContext&) -> json {
        if (*broken) throw std::runtime_error("the backend is down");
        return "fine";
    });
    const int port = free_port();
    auto settings = fast_settings();
    auto operator_ = start_operator(registry, settings, [port](RunOptions& options) {
        options.liveness_endpoint = "http://127.0.0.1:" + std::to_string(port) + "/healthz";
    });
    create(example("kex-probed", {{"field", "p"}}));
    std::string answer;
    ASSERT_TRUE(eventually([&] {
        answer = http_get(port, "/healthz");
        return !answer.empty() && body_of(answer).value("count", 0) == 1;
    })) << answer;
    EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
    EXPECT_EQ(body_of(answer)["fragile"], "fine");

    // Within the cache's age, requests do not run the probes again.
    const int before = runs->load();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(body_of(http_get(port, "/healthz"))["count"], 1);
    EXPECT_EQ(runs->load(), before);
    EXPECT_NE(http_get(port, "/elsewhere").find("404"), std::string::npos);
    EXPECT_EQ(operator_->stop(), "");

    // A failing probe fails the liveness check (a fresh operator: no cached results).
    *broken = true;
    const int port2 = free_port();
    auto second = start_operator(registry, settings, [port2](RunOptions& options) {
        options.liveness_endpoint = "http://127.0.0.1:" + std::to_string(port2) + "/healthz";
    });
    answer = http_get(port2, "/healthz");
    EXPECT_NE(answer.find("500"), std::string::npos) << answer;
    EXPECT_NE(body_of(answer).value("error", "").find("the backend is down"), std::string::npos)
        << answer;
    EXPECT_EQ(second->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
