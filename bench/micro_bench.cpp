// Micro-benchmarks of the operator's per-event work, on a ~5 KB object like the ones the
// operator benchmarks create: watch-line parsing, cause detection, diff, progress records
// (encode/decode) and patch building. They use the library's internal headers (src/).
//
//   build/bench/micro_bench [--benchmark_filter=Diff]
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <prometheus/counter.h>

#include <chrono>
#include <kopf/diff.hpp>
#include <kopf/json.hpp>
#include <kopf/kopf.hpp>
#include <kopf/patch.hpp>
#include <kopf/storage.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clients/json_codec.hpp"
#include "clients/lines.hpp"
#include "core/actions/execution.hpp"
#include "core/engines/indexing.hpp"
#include "core/engines/metrics.hpp"
#include "core/intents/causes.hpp"
#include "loop/virtual_executor.hpp"

namespace {

using kopf::json;

// An object as the operator sees it after handling: ~2 KB spec, labels, Kopf's annotations
// (progress record and diff base), a result in status — about 5 KB of JSON.
json handled_object() {
    json spec = {{"filler", std::string(1800, 'x')},
                 {"replicas", 3},
                 {"image", "registry.example.com/app:1.2.3"},
                 {"ports", json::array({{{"name", "http"}, {"port", 80}},
                                        {{"name", "https"}, {"port", 443}}})},
                 {"stamp", 1700000000000000}};
    json body = {{"apiVersion", "bench.kopf.dev/v1"},
                 {"kind", "BenchObject"},
                 {"metadata",
                  {{"name", "bench-0000042"},
                   {"namespace", "default"},
                   {"uid", "8c55892d-8ee9-4b87-9866-0c4a5ea44200"},
                   {"resourceVersion", "123456"},
                   {"generation", 2},
                   {"creationTimestamp", "2024-01-01T00:00:00Z"},
                   {"labels", {{"app", "bench"}, {"tier", "backend"}}},
                   {"finalizers", json::array({"kopf.zalando.org/KopfFinalizerMarker"})}}},
                 {"spec", spec},
                 {"status", {{"create_fn", {{"message", "handled"}}}}}};
    kopf::AnnotationsDiffBaseStorage diffbase;
    kopf::Patch patch;
    diffbase.store(body, patch, diffbase.build(body));
    body["metadata"]["annotations"] = patch.merge["metadata"]["annotations"];
    body["metadata"]["annotations"]["kopf.zalando.org/create_fn"] =
        R"({"started":"2024-01-01T00:00:00.000000+00:00","purpose":"create","retries":0})";
    return body;
}

const json& object() {
    static const json body = handled_object();
    return body;
}

// A watch stream chunk of 16 MODIFIED events of the 5 KB object, as the server sends it.
const std::string& watch_chunk() {
    static const std::string chunk = [] {
        std::string text;
        const std::string line = json({{"type", "MODIFIED"}, {"object", object()}}).dump() + "\n";
        for (int i = 0; i < 16; ++i) text += line;
        return text;
    }();
    return chunk;
}

// First: Google Benchmark's CSV names the user counters from the first benchmark that runs.
// One update of an in-memory index: a MODIFIED event of one of N indexed objects that
// moves it to another key ({spec.field: name}), through the indexing engine as the watcher calls
// it: the handler, the context, the index's write lock, the old entry out and the new one in.
void BM_IndexUpdate(benchmark::State& state) {
    kopf::Registry registry;
    kopf::on::index idx(registry, "benchobjects", {.id = "by_field"}, [](kopf::Context& ctx) {
        return json{{ctx.spec.value("field", ""), ctx.name}};
    });
    kopf::loop::VirtualExecutor loop;
    kopf::OperatorSettings settings;
    kopf::Memo memo;
    kopf::engines::IndexingEngine engine({loop, settings, memo}, registry.indexing,
                                         kopf::engines::make_indices_data(registry.indexing));
    kopf::Resource resource;
    resource.group = "bench.kopf.dev";
    resource.version = "v1";
    resource.plural = "benchobjects";
    resource.kind = "BenchObject";
    engine.discovered();
    const auto watcher = engine.watcher_started(resource);
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<json> bodies;
    bodies.reserve(n);
    // The heap an entry takes (glibc's in-use bytes, chunk overheads included), beside the heap
    // of the value's own JSON (the name: one string).
    {
        std::vector<json> names;
        names.reserve(n);
        const auto reserved = ::mallinfo2().uordblks;
        for (std::size_t i = 0; i < n; ++i) names.emplace_back("bench-" + std::to_string(i));
        state.counters["value_heap_bytes"] =
            static_cast<double>(::mallinfo2().uordblks - reserved) / static_cast<double>(n) +
            sizeof(json);
    }
    std::size_t heap_before_entries = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::string name = "bench-" + std::to_string(i);
        bodies.push_back({{"apiVersion", "bench.kopf.dev/v1"},
                          {"kind", "BenchObject"},
                          {"metadata",
                           {{"name", name},
                            {"namespace", "default"},
                            {"uid", "8c55892d-8ee9-4b87-9866-" + std::to_string(100000000000 + i)},
                            {"labels", {{"app", "bench"}}}}},
                          {"spec", {{"field", "key-" + std::to_string(i % 100)}}}});
    }
    heap_before_entries = ::mallinfo2().uordblks;
    for (const json& body : bodies) engine.on_event(watcher, "", body, true, [] {});
    engine.listed(watcher);
    state.counters["heap_bytes_per_entry"] =
        static_cast<double>(::mallinfo2().uordblks - heap_before_entries) / static_cast<double>(n);
    std::size_t i = 0;
    for (auto _ : state) {
        json& body = bodies[i % n];
        body["spec"]["field"] = "key-" + std::to_string((i * 7) % 100);
        engine.on_event(watcher, "MODIFIED", body, false, [] {});
        ++i;
    }
}
BENCHMARK(BM_IndexUpdate)->Arg(10000)->Arg(100000);

// What the operator's metrics (`--metrics`) add to one object of the create figure: its patch
// (one API request), its handler's invocation, and the watch events of its creation and of the
// patch's echo; the timestamps around the request and the invocation included. Compare with
// "create N: operator CPU per object".
void BM_MetricsPerHandledObject(benchmark::State& state) {
    kopf::engines::Metrics metrics;
    const auto events = metrics.resource("benchobjects.v1.bench.kopf.dev").events;
    const std::string target =
        "/apis/bench.kopf.dev/v1/namespaces/default/benchobjects/bench-0000001?fieldManager=kopf";
    for (auto _ : state) {
        events->Increment();
        const auto invoked = std::chrono::steady_clock::now();
        const auto sent = std::chrono::steady_clock::now();
        metrics.request(
            "PATCH", target, 200,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count());
        metrics.invoked(
            "create_fn", kopf::actions::HandlerOutcome::success,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - invoked).count(),
            false);
        events->Increment();
    }
    state.SetLabel("per handled object");
}
BENCHMARK(BM_MetricsPerHandledObject);

void BM_WatchLineSplitAndParse(benchmark::State& state) {
    const std::string& chunk = watch_chunk();
    kopf::clients::LineSplitter splitter;
    std::size_t events = 0;
    for (auto _ : state) {
        splitter.feed(chunk, [&](std::string_view line) {
            json event = json::parse(line);
            benchmark::DoNotOptimize(event);
            ++events;
        });
    }
    state.SetItemsProcessed(static_cast<int64_t>(events));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * chunk.size()));
    state.SetLabel("per 16 events");
}
BENCHMARK(BM_WatchLineSplitAndParse);

// The same with the client's codec (Boost.JSON's SAX parser building nlohmann values), which the
// client uses for watch lines and bodies; the nlohmann figure above is the baseline.
void BM_WatchLineSplitAndParseFast(benchmark::State& state) {
    const std::string& chunk = watch_chunk();
    kopf::clients::LineSplitter splitter;
    std::size_t events = 0;
    for (auto _ : state) {
        splitter.feed(chunk, [&](std::string_view line) {
            json event = kopf::clients::parse_json(line);
            benchmark::DoNotOptimize(event);
            ++events;
        });
    }
    state.SetItemsProcessed(static_cast<int64_t>(events));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * chunk.size()));
    state.SetLabel("per 16 events");
}
BENCHMARK(BM_WatchLineSplitAndParseFast);

// Serialising the 5 KB object: nlohmann's dump() against the codec's byte-identical dump.
void BM_ObjectDumpNlohmann(benchmark::State& state) {
    const json& body = object();
    for (auto _ : state) benchmark::DoNotOptimize(body.dump());
}
BENCHMARK(BM_ObjectDumpNlohmann);

void BM_ObjectDumpFast(benchmark::State& state) {
    const json& body = object();
    for (auto _ : state) benchmark::DoNotOptimize(kopf::clients::dump_json(body));
}
BENCHMARK(BM_ObjectDumpFast);

void BM_WatchLineSplitOnly(benchmark::State& state) {
    const std::string& chunk = watch_chunk();
    kopf::clients::LineSplitter splitter;
    for (auto _ : state) {
        std::size_t lines = 0;
        splitter.feed(chunk, [&](std::string_view) { ++lines; });
        benchmark::DoNotOptimize(lines);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * chunk.size()));
    state.SetLabel("per 16 events");
}
BENCHMARK(BM_WatchLineSplitOnly);

// What every MODIFIED line costs before any parse: its object's uid (the queue's key) and its
// resourceVersion, found in the text. On the 5 KB object's line (Kopf's annotations: quotes
// everywhere) and on a timer's echo as the API server sends it (1.1 KB, managedFields).
void BM_SoleKeysOfAWatchLine(benchmark::State& state) {
    static const std::string handled = json{{"type", "MODIFIED"}, {"object", object()}}.dump();
    static const std::string echo =
        R"({"type":"MODIFIED","object":{"apiVersion":"bench.kopf.dev/v1","kind":"BenchObject",)"
        R"("metadata":{"creationTimestamp":"2026-11-27T22:37:31Z","finalizers":)"
        R"(["kopf.zalando.org/KopfFinalizerMarker"],"generation":12,"labels":{"bench-timer":)"
        R"("on"},"managedFields":[{"apiVersion":"bench.kopf.dev/v1","fieldsType":"FieldsV1",)"
        R"("fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:bench-timer":{}}},"f:spec":{".":{},)"
        R"("f:filler":{},"f:stamp":{}}},"manager":"unknown","operation":"Update","time":)"
        R"("2026-11-27T22:37:31Z"},{"apiVersion":"bench.kopf.dev/v1","fieldsType":"FieldsV1",)"
        R"("fieldsV1":{"f:metadata":{"f:finalizers":{".":{},)"
        R"("v:\"kopf.zalando.org/KopfFinalizerMarker\"":{}}},"f:status":{".":{},"f:tick":{}}},)"
        R"("manager":"kopf","operation":"Update","time":"2026-11-27T22:37:41Z"}],"name":)"
        R"("bench-0000002","namespace":"default","resourceVersion":"44","uid":)"
        R"("02ca9364-9fbf-472c-ba33-88f435bc9354"},"spec":{"filler":")" +
        std::string(200, 'x') + R"(","stamp":0},"status":{"tick":33}}})";
    const std::string& line = state.range(0) == 0 ? echo : handled;
    for (auto _ : state) {
        benchmark::DoNotOptimize(kopf::clients::sole_uid(line));
        benchmark::DoNotOptimize(kopf::clients::sole_resource_version(line));
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
    state.SetLabel(state.range(0) == 0 ? "a timer's echo" : "the 5 KB object");
}
BENCHMARK(BM_SoleKeysOfAWatchLine)->Arg(0)->Arg(1);

// The diff base is read back, the essence rebuilt, diffed and the reason decided: the work an
// unchanged object costs on every MODIFIED event.
void BM_CauseDetectionUnchanged(benchmark::State& state) {
    const json& body = object();
    kopf::AnnotationsDiffBaseStorage diffbase;
    for (auto _ : state) {
        std::optional<json> old = diffbase.fetch(body);
        json new_essence = diffbase.build(body);
        kopf::Diff diff = old ? kopf::diff(*old, new_essence) : kopf::Diff{};
        auto reason = kopf::intents::detect_reason(
            "MODIFIED", body, "kopf.zalando.org/KopfFinalizerMarker", old, diff, false);
        benchmark::DoNotOptimize(reason);
    }
}
BENCHMARK(BM_CauseDetectionUnchanged);

void BM_CauseDetectionUpdated(benchmark::State& state) {
    json body = object();
    body["spec"]["replicas"] = 5;  // an essential change since the diff base
    kopf::AnnotationsDiffBaseStorage diffbase;
    for (auto _ : state) {
        std::optional<json> old = diffbase.fetch(body);
        json new_essence = diffbase.build(body);
        kopf::Diff diff = old ? kopf::diff(*old, new_essence) : kopf::Diff{};
        auto reason = kopf::intents::detect_reason(
            "MODIFIED", body, "kopf.zalando.org/KopfFinalizerMarker", old, diff, false);
        benchmark::DoNotOptimize(reason);
    }
}
BENCHMARK(BM_CauseDetectionUpdated);

void BM_DiffOfEssences(benchmark::State& state) {
    kopf::AnnotationsDiffBaseStorage diffbase;
    const json old_essence = diffbase.build(object());
    json new_essence = old_essence;
    new_essence["spec"]["replicas"] = 5;
    new_essence["spec"]["ports"][1]["port"] = 8443;
    new_essence["metadata"]["labels"]["tier"] = nullptr;
    for (auto _ : state) {
        kopf::Diff diff = kopf::diff(old_essence, new_essence);
        benchmark::DoNotOptimize(diff);
    }
}
BENCHMARK(BM_DiffOfEssences);

void BM_ProgressRecordEncode(benchmark::State& state) {
    const json& body = object();
    kopf::AnnotationsProgressStorage storage;
    const auto now = kopf::actions::Clock::now();
    auto handler_state = kopf::actions::HandlerState::from_scratch(now, "create");
    kopf::actions::Outcome outcome;
    outcome.final = true;
    outcome.result = json{{"message", "handled"}};
    handler_state = handler_state.with_outcome(outcome, now);
    for (auto _ : state) {
        kopf::Patch patch;
        storage.store("create_fn", handler_state.for_storage(), body, patch);
        benchmark::DoNotOptimize(patch.merge);
    }
}
BENCHMARK(BM_ProgressRecordEncode);

void BM_ProgressRecordDecode(benchmark::State& state) {
    const json& body = object();
    kopf::AnnotationsProgressStorage storage;
    const auto now = kopf::actions::Clock::now();
    for (auto _ : state) {
        auto record = storage.fetch("create_fn", body);
        auto handler_state = kopf::actions::HandlerState::from_storage(record.value(), now);
        benchmark::DoNotOptimize(handler_state);
    }
}
BENCHMARK(BM_ProgressRecordDecode);

// The patch that ends a creation cycle: progress record, the result in status and the new
// diff base, serialised for the PATCH request.
void BM_PatchBuildEndOfCycle(benchmark::State& state) {
    const json& body = object();
    kopf::AnnotationsProgressStorage progress;
    kopf::AnnotationsDiffBaseStorage diffbase;
    const auto now = kopf::actions::Clock::now();
    kopf::actions::Outcome outcome;
    outcome.final = true;
    outcome.result = json{{"message", "handled"}};
    const auto handler_state =
        kopf::actions::HandlerState::from_scratch(now, "create").with_outcome(outcome, now);
    for (auto _ : state) {
        kopf::Patch patch;
        progress.store("create_fn", handler_state.for_storage(), body, patch);
        patch.status()["create_fn"] = outcome.result;
        diffbase.store(body, patch, diffbase.build(body));
        std::string request_body = patch.merge.dump();
        benchmark::DoNotOptimize(request_body);
    }
}
BENCHMARK(BM_PatchBuildEndOfCycle);

// A JSON-patch transformation (adding a finalizer) turned into RFC 6902 operations.
void BM_PatchBuildJsonPatch(benchmark::State& state) {
    json body = object();
    body["metadata"].erase("finalizers");
    for (auto _ : state) {
        kopf::Patch patch;
        patch.transform([](json& target) {
            target["metadata"]["finalizers"].push_back("kopf.zalando.org/KopfFinalizerMarker");
        });
        json operations = patch.build_json_patch(body);
        benchmark::DoNotOptimize(operations);
    }
}
BENCHMARK(BM_PatchBuildJsonPatch);

}  // namespace

BENCHMARK_MAIN();
