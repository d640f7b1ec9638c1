// Helpers for ApiCore tests: build requests, parse responses, collect watch lines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api/api_core.hpp"

namespace kopf::apiserver::testing {

using json = nlohmann::json;

inline HttpRequest request(std::string method, std::string path, std::string body = "",
                           std::string content_type = "application/json",
                           std::map<std::string, std::string> query = {}) {
    HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.body = std::move(body);
    r.content_type = body.empty() && r.method == "GET" ? "" : std::move(content_type);
    r.query = std::move(query);
    r.user_agent = "core-test/1.0";
    return r;
}

struct Reply {
    int status = 0;
    json body;
    std::string raw;
    HttpResponse response;
};

// The whole body of a response, also when the core streams it in pieces (lists).
inline std::string body_of(HttpResponse& response) {
    if (!response.body_stream) return response.body;
    std::string body, piece;
    while (response.body_stream->next(piece)) body += piece;
    return body;
}

inline Reply call(ApiCore& core, const HttpRequest& r) {
    Reply out;
    out.response = core.handle(r);
    out.status = out.response.status;
    out.raw = body_of(out.response);
    out.body = json::parse(out.raw, nullptr, false);
    return out;
}

inline Reply get(ApiCore& core, const std::string& path,
                 std::map<std::string, std::string> query = {}) {
    return call(core, request("GET", path, "", "", std::move(query)));
}
inline Reply post(ApiCore& core, const std::string& path, const json& body,
                  std::map<std::string, std::string> query = {}) {
    return call(core, request("POST", path, body.dump(), "application/json", std::move(query)));
}
inline Reply put(ApiCore& core, const std::string& path, const json& body) {
    return call(core, request("PUT", path, body.dump()));
}
inline Reply patch(ApiCore& core, const std::string& path, const json& body,
                   const std::string& type = "application/merge-patch+json",
                   std::map<std::string, std::string> query = {}) {
    return call(core, request("PATCH", path, body.dump(), type, std::move(query)));
}
inline Reply del(ApiCore& core, const std::string& path, const json& body = nullptr,
                 std::map<std::string, std::string> query = {}) {
    return call(core, request("DELETE", path, body.is_null() ? "" : body.dump(), "application/json",
                              std::move(query)));
}

// A WatchSink that stores every line; tests wait for lines with a generous deadline.
class CollectingSink : public WatchSink {
  public:
    void send(std::string line) override {
        std::lock_guard lock(mu_);
        lines_.push_back(std::move(line));
        cv_.notify_all();
    }
    void close() override {
        std::lock_guard lock(mu_);
        closed_ = true;
        cv_.notify_all();
    }
    std::vector<json> events() {
        std::lock_guard lock(mu_);
        std::vector<json> out;
        for (const auto& l : lines_) out.push_back(json::parse(l));
        return out;
    }
    std::vector<std::string> lines() {
        std::lock_guard lock(mu_);
        return lines_;
    }
    bool wait_for_count(std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, limit, [&] { return lines_.size() >= n; });
    }
    bool wait_closed(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, limit, [&] { return closed_; });
    }
    bool closed() {
        std::lock_guard lock(mu_);
        return closed_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::string> lines_;
    bool closed_ = false;
};

// Starts a watch on `path` with `query` and returns its sink.
inline std::shared_ptr<CollectingSink> watch(ApiCore& core, const std::string& path,
                                             std::map<std::string, std::string> query,
                                             std::shared_ptr<WatchStream>* stream_out = nullptr) {
    query["watch"] = "true";
    HttpResponse r = core.handle(request("GET", path, "", "", std::move(query)));
    auto sink = std::make_shared<CollectingSink>();
    if (!r.watch) {
        sink->send(r.body);
        sink->close();
        return sink;
    }
    r.watch->start(sink);
    if (stream_out) *stream_out = r.watch;
    return sink;
}

inline json widget_crd(const std::string& scope = "Namespaced") {
    return json::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "widgets.example.com"},
      "spec": {"group": "example.com", "scope": ")" +
                       scope + R"(",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
               "size": {"type": "integer", "default": 1, "minimum": 0},
               "color": {"type": "string"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
          "subresources": {"status": {}},
          "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}]}})");
}

inline void install_widgets(ApiCore& core, const std::string& scope = "Namespaced") {
    post(core, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd(scope));
}

inline json widget(const std::string& name, int size = 1) {
    return {{"apiVersion", "example.com/v1"},
            {"kind", "Widget"},
            {"metadata", {{"name", name}}},
            {"spec", {{"size", size}}}};
}

inline json configmap(const std::string& name, json data = {{"k", "v"}}) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}}},
            {"data", data}};
}

}  // namespace kopf::apiserver::testing
