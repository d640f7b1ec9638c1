// A test bed for the processing of watch events: a registry, settings, a fixed clock, recorded
// log lines, and an in-memory "cluster" object that receives the patches.
#pragma once

#include <kopf/kopf.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/reactor/processing.hpp"
#include "loop/virtual_executor.hpp"

namespace kopf::testing {

/// The memories of the harness's objects, by metadata.uid (the runtime keeps each object's
/// memory in its own per-object entry).
class ResourceMemories {
  public:
    reactor::ResourceMemory& recall(const json& raw_event, const Memo& memobase) {
        const json& body = raw_event.contains("object") ? raw_event["object"] : raw_event;
        auto it = memories_.find(uid_of(body));
        if (it == memories_.end())
            it =
                memories_.emplace(uid_of(body), reactor::ResourceMemory::first(raw_event, memobase))
                    .first;
        return it->second;
    }
    void forget(const json& body) { memories_.erase(uid_of(body)); }
    std::size_t size() const { return memories_.size(); }

  private:
    // The uid, or "namespace/name" for objects without one.
    static std::string uid_of(const json& body) {
        const json meta = body.value("metadata", json::object());
        if (meta.contains("uid") && meta["uid"].is_string()) return meta["uid"].get<std::string>();
        return meta.value("namespace", std::string()) + "/" + meta.value("name", std::string());
    }
    std::unordered_map<std::string, reactor::ResourceMemory> memories_;
};

struct RecordingLogger : Logger {
    std::vector<std::pair<LogLevel, std::string>>* lines;
    LogLevel minimal;
    explicit RecordingLogger(std::vector<std::pair<LogLevel, std::string>>* l,
                             LogLevel minimal_level = LogLevel::DEBUG)
        : lines(l), minimal(minimal_level) {}
    void log(LogLevel level, std::string_view message) override {
        lines->emplace_back(level, std::string(message));
    }
    bool enabled_for(LogLevel level) const override { return level >= minimal; }
};

inline Resource kopfexamples() {
    Resource r;
    r.group = "kopf.dev";
    r.version = "v1";
    r.plural = "kopfexamples";
    r.kind = "KopfExample";
    r.singular = "kopfexample";
    r.shortcuts = {"kex"};
    return r;
}

inline json example_body() {
    return json::parse(R"({
        "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kopf-example-1", "namespace": "default", "uid": "uid-1",
                     "resourceVersion": "100", "labels": {"somelabel": "somevalue"}},
        "spec": {"field": "value", "items": ["item1", "item2"]}
    })");
}

struct Harness {
    Registry registry;
    OperatorSettings settings;
    Resource resource = kopfexamples();
    ResourceMemories memories;
    Memo memobase;
    std::vector<std::pair<LogLevel, std::string>> lines;
    LogLevel log_level = LogLevel::DEBUG;  // the object loggers' level
    actions::TimePoint clock =
        actions::Clock::from_time_t(1795735298) + std::chrono::microseconds(929772);
    json body = example_body();
    int rv = 100;
    actions::Lifecycle lifecycle = actions::lifecycles::asap;

    reactor::ProcessingEnv env() {
        reactor::ProcessingEnv e{registry, settings};
        e.lifecycle = lifecycle;
        e.now = [this] { return clock; };
        e.make_logger = [this](const json&) {
            return std::make_shared<RecordingLogger>(&lines, log_level);
        };
        return e;
    }

    /// Process one event of the current body ("" = initial listing).
    reactor::ProcessingOutcome process(const std::string& type = "MODIFIED") {
        json event = {{"object", body}};
        event["type"] = type.empty() ? json() : json(type);
        auto& memory = memories.recall(event, memobase);
        auto e = env();
        auto out = loop::run_sync(reactor::process_resource_event(e, resource, memory, event));
        if (out.gone) memories.forget(body);
        return out;
    }

    /// Apply the outcome to the in-memory object as the API server would.
    void apply(const reactor::ProcessingOutcome& out) {
        json ops = out.json_patch();
        if (!out.patch.merge.empty()) body.merge_patch(out.patch.merge);
        if (!ops.empty()) body = body.patch(ops);
        if (!out.patch.empty()) body["metadata"]["resourceVersion"] = std::to_string(++rv);
    }

    /// Process and apply.
    reactor::ProcessingOutcome step(const std::string& type = "MODIFIED") {
        auto out = process(type);
        apply(out);
        return out;
    }

    void advance(double seconds) {
        clock += std::chrono::duration_cast<actions::Clock::duration>(
            std::chrono::duration<double>(seconds));
    }

    bool logged(const std::string& text) const {
        for (const auto& [lvl, line] : lines) {
            if (line.find(text) != std::string::npos) return true;
        }
        return false;
    }

    json annotation(const std::string& key) const {
        const auto& m = body["metadata"];
        if (!m.contains("annotations") || !m["annotations"].contains(key)) return json();
        return m["annotations"][key];
    }
};

}  // namespace kopf::testing
