// The indexing engine and Kopf's containers on a virtual clock: what the indices hold as events
// come (Kopf's documented index structures), removal by deletion and by a relisting, typed and
// name-based access, readiness, coroutine index handlers keeping the events' order, and readers
// on other threads while the index changes underneath (for the sanitizers to watch).
#include "core/engines/indexing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <kopf/kopf.hpp>
#include <set>
#include <thread>

#include "loop/virtual_executor.hpp"

namespace kopf::testing {
namespace {

json pod(const std::string& ns, const std::string& name, json labels = json::object(),
         const std::string& phase = "Pending") {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"namespace", ns},
              {"name", name},
              {"uid", "uid-" + ns + "-" + name},
              {"labels", std::move(labels)},
              {"annotations", {{"kopf.zalando.org/last-handled-configuration", "{\"spec\":{}}"}}}}},
            {"spec", {{"containers", {{{"name", "main"}}, {{"name", "sidecar"}}}}}},
            {"status", {{"phase", phase}}}};
}

const Resource kPods = [] {
    Resource r;
    r.group = "";
    r.version = "v1";
    r.plural = "pods";
    r.kind = "Pod";
    r.namespaced = true;
    return r;
}();

// One operator's indexing, driven by hand.
struct Bed {
    explicit Bed(Registry& registry)
        : registry(registry),
          data(engines::make_indices_data(registry.indexing)),
          engine(engines::IndexingEngine::Env{loop, settings, memo}, registry.indexing, data) {
        engine.discovered();
        watcher = engine.watcher_started(kPods);
    }
    void event(const std::string& type, const json& body, bool listed = false) {
        engine.on_event(watcher, type, body, listed, [this] { ++queued; });
        loop.run();
    }
    // The index as {key dump: sorted values}.
    json contents(const std::string& name) const {
        json out = json::object();
        for (const auto& [key, store] : engine.indices().get(name).items()) {
            std::vector<json> values(store.begin(), store.end());
            std::sort(values.begin(), values.end());
            out[key.dump()] = values;
        }
        return out;
    }

    Registry& registry;
    kopf::loop::VirtualExecutor loop;
    OperatorSettings settings;
    Memo memo;
    std::shared_ptr<detail::IndicesData> data;
    engines::IndexingEngine engine;
    engines::IndexingEngine::WatcherId watcher = 0;
    int queued = 0;
};

TEST(Indexing, KopfsDocumentedStructuresFromTheHandlersResults) {
    Registry registry;
    on::index by_ns(registry, "pods", {.id = "by_ns"}, [](Context& ctx) {
        return json{{ctx.namespace_, ctx.name}};
    });
    on::index by_label(registry, "pods", {.id = "by_label"}, [](Context& ctx) {
        IndexEntries entries;
        for (const auto& [label, value] : ctx.labels.items()) entries.add({label, value}, ctx.name);
        return entries;
    });
    on::index names(registry, "pods", {.id = "names"}, [](Context& ctx) { return ctx.name; });
    on::index nested(registry, "pods", {.id = "nested"}, [](Context& ctx) {
        return json{{"k", {{"deep", ctx.name}}}};
    });
    Bed bed(registry);
    EXPECT_FALSE(bed.engine.ready());  // the watcher has not listed yet
    bed.event("", pod("ns1", "p1", {{"app", "a"}, {"tier", "db"}}), true);
    bed.event("", pod("ns1", "p2", {{"app", "a"}}), true);
    bed.event("", pod("ns2", "p3", {{"app", "b"}}), true);
    bed.engine.listed(bed.watcher);
    EXPECT_TRUE(bed.engine.ready());
    EXPECT_EQ(bed.queued, 3);  // every event goes on to the other handlers

    EXPECT_EQ(bed.contents("by_ns"), (json{{"\"ns1\"", {"p1", "p2"}}, {"\"ns2\"", {"p3"}}}));
    EXPECT_EQ(bed.contents("by_label"), (json{{R"(["app","a"])", {"p1", "p2"}},
                                              {R"(["app","b"])", {"p3"}},
                                              {R"(["tier","db"])", {"p1"}}}));
    EXPECT_EQ(bed.contents("names"), (json{{"null", {"p1", "p2", "p3"}}}));  // Kopf's None key
    EXPECT_EQ(bed.contents("nested"),
              (json{{"\"k\"", {{{"deep", "p1"}}, {{"deep", "p2"}}, {{"deep", "p3"}}}}}));

    // Typed and name-based access.
    const Indices& indices = bed.engine.indices();
    EXPECT_EQ(TypedIndex<std::string>(indices.get("by_ns")).get("ns2"),
              std::vector<std::string>{"p3"});
    EXPECT_TRUE(indices.get("by_ns").get("ns-none").empty());
    EXPECT_THROW(indices.get("by_ns").at("ns-none"), std::out_of_range);
    EXPECT_TRUE(indices.get("by_label").get(json::array({"tier", "db"})).contains("p1"));
    try {
        indices.get("by_nothing");
        FAIL() << "an unknown index must throw";
    } catch (const std::out_of_range& e) {
        EXPECT_NE(std::string(e.what()).find("by_ns, by_label, names, nested"), std::string::npos)
            << e.what();
    }
}

TEST(Indexing, ChangesMoveEntriesAndDeletionsEmptyTheKeys) {
    Registry registry;
    on::index by_label(registry, "pods", {.id = "by_label"}, [](Context& ctx) {
        IndexEntries entries;
        for (const auto& [label, value] : ctx.labels.items()) entries.add({label, value}, ctx.name);
        return entries;
    });
    Bed bed(registry);
    bed.event("ADDED", pod("ns", "p1", {{"app", "a"}, {"tier", "db"}}));
    bed.event("MODIFIED", pod("ns", "p1", {{"app", "b"}}));
    EXPECT_EQ(bed.contents("by_label"), (json{{R"(["app","b"])", {"p1"}}}));
    bed.event("DELETED", pod("ns", "p1", {{"app", "b"}}));
    EXPECT_TRUE(bed.engine.indices().get("by_label").empty());
    EXPECT_EQ(bed.engine.objects(), 0u);
}

TEST(Indexing, RemovalsFromABigStoreKeepEveryOtherValue) {
    Registry registry;
    on::index names(registry, "pods", {.id = "names"}, [](Context& ctx) { return ctx.name; });
    Bed bed(registry);
    std::set<std::string> expected;
    for (int i = 0; i < 50; ++i) {
        bed.event("ADDED", pod("ns", "p" + std::to_string(i)));
        expected.insert("p" + std::to_string(i));
    }
    for (int i = 0; i < 50; i += 3) {  // from the front, the middle and the end of the store
        bed.event("DELETED", pod("ns", "p" + std::to_string(i)));
        expected.erase("p" + std::to_string(i));
    }
    bed.event("MODIFIED", pod("ns", "p49"));  // an update in place after the moves
    const auto values = bed.engine.indices().get("names").get(nullptr).as<std::string>();
    EXPECT_EQ(std::set<std::string>(values.begin(), values.end()), expected);
    EXPECT_EQ(values.size(), expected.size());
}

TEST(Indexing, ARelistingRemovesWhatItNoLongerShows) {
    Registry registry;
    on::index names(registry, "pods", {.id = "names"}, [](Context& ctx) { return ctx.name; });
    Bed bed(registry);
    for (const auto* name : {"p1", "p2", "p3"}) bed.event("", pod("ns", name), true);
    bed.engine.listed(bed.watcher);
    bed.event("ADDED", pod("ns", "p4"));
    // 410 Gone: the relisting shows p1 and p4 only; p2 and p3 were deleted meanwhile.
    bed.event("", pod("ns", "p1"), true);
    bed.event("", pod("ns", "p4"), true);
    bed.engine.listed(bed.watcher);
    EXPECT_EQ(bed.contents("names"), (json{{"null", {"p1", "p4"}}}));
    // An empty relisting leaves nothing.
    bed.engine.listed(bed.watcher);
    EXPECT_TRUE(bed.engine.indices().get("names").empty());
}

TEST(Indexing, HandlingWaitsForEveryWatcherAndDiscovery) {
    Registry registry;
    on::index names(registry, "pods", {.id = "names"}, [](Context& ctx) { return ctx.name; });
    kopf::loop::VirtualExecutor loop;
    OperatorSettings settings;
    Memo memo;
    engines::IndexingEngine engine({loop, settings, memo}, registry.indexing,
                                   engines::make_indices_data(registry.indexing));
    int released = 0;
    engine.when_ready([&] { ++released; });
    const auto first = engine.watcher_started(kPods);
    const auto second = engine.watcher_started(kPods);
    engine.discovered();
    engine.listed(first);
    EXPECT_EQ(released, 0);
    engine.watcher_stopped(second);  // a namespace gone before its listing
    EXPECT_EQ(released, 1);
    EXPECT_TRUE(engine.ready());
}

TEST(Indexing, CoroutineHandlersKeepEachObjectsEventsInOrder) {
    Registry registry;
    on::index slow(registry, "pods", {.id = "slow"}, [](Context& ctx) -> Task<json> {
        const std::string phase = ctx.status.value("phase", "");
        co_await kopf::sleep(phase == "Pending" ? 2.0 : 0.1);  // the first one is the slowest
        co_return json{{phase, ctx.name}};
    });
    Bed bed(registry);
    std::vector<std::string> order;
    for (const auto* phase : {"Pending", "Running", "Succeeded"}) {
        bed.engine.on_event(bed.watcher, "MODIFIED", pod("ns", "p1", {}, phase), false,
                            [&order, phase] { order.emplace_back(phase); });
    }
    bed.loop.run();
    EXPECT_EQ(order, (std::vector<std::string>{"Pending", "Running", "Succeeded"}));
    EXPECT_EQ(bed.contents("slow"), (json{{"\"Succeeded\"", {"p1"}}}));
}

TEST(Indexing, ADeletionWaitingBehindACoroutineHandlerEmptiesTheIndex) {
    Registry registry;
    on::index slow(registry, "pods", {.id = "slow"}, [](Context& ctx) -> Task<json> {
        co_await kopf::sleep(1.0);
        co_return json{{ctx.namespace_, ctx.name}};
    });
    Bed bed(registry);
    bed.engine.on_event(bed.watcher, "ADDED", pod("ns", "p1"), false, [&bed] { ++bed.queued; });
    bed.engine.on_event(bed.watcher, "MODIFIED", pod("ns", "p1"), false, [&bed] { ++bed.queued; });
    bed.engine.on_event(bed.watcher, "DELETED", pod("ns", "p1"), false, [&bed] { ++bed.queued; });
    bed.loop.run();
    EXPECT_EQ(bed.queued, 3);
    EXPECT_TRUE(bed.engine.indices().get("slow").empty());
    EXPECT_EQ(bed.engine.objects(), 0u);
}

TEST(Indexing, ReadersOnOtherThreadsSeeWholeSnapshotsWhileTheIndexChanges) {
    Registry registry;
    on::index by_ns(registry, "pods", {.id = "by_ns"}, [](Context& ctx) {
        return json{{ctx.namespace_, ctx.spec}};
    });
    Bed bed(registry);
    const Index index = bed.engine.indices().get("by_ns");
    std::atomic<bool> done{false};
    std::atomic<long> seen{0};
    std::atomic<long> passes{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 2; ++t) {
        readers.emplace_back([&] {
            while (!done) {
                for (const auto& [key, store] : index.items()) {
                    for (const json& value : store) seen += value.contains("containers") ? 1 : 0;
                }
                seen += static_cast<long>(index.get("ns-3").size());
                ++passes;
            }
        });
    }
    for (int round = 0; round < 80; ++round) {
        for (int i = 0; i < 20; ++i) {
            const auto name = "p" + std::to_string(i);
            const auto ns = "ns-" + std::to_string((i + round) % 5);
            bed.event(round % 7 == 6 ? "DELETED" : "MODIFIED", pod(ns, name));
        }
    }
    // On a loaded machine the readers may not have been scheduled while the index changed: let
    // them read the final index too (at most 10 s) before they stop.
    const long before = passes.load();
    for (int waited = 0; passes.load() < before + 2 && waited < 10000; ++waited)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    done = true;
    for (auto& reader : readers) reader.join();
    EXPECT_GT(seen.load(), 0);
}

}  // namespace
}  // namespace kopf::testing
