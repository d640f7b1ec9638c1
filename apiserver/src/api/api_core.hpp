// The request semantics of the embedded API server: storage, catalog, CRDs,
// discovery, OpenAPI, Table output, selectors, patches, watches, garbage
// collection, namespaces, admission and persistence. Transport-free: the network
// layer (src/net/) calls handle() from any of its threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "api/admission_transport.hpp"
#include "api/http_types.hpp"

namespace kopf::apiserver {

// The nesting allowed in request bodies. kube-apiserver allows 10,000 levels; the recursion
// of copying, pruning and serialising an object that deep overflows a thread's stack under
// AddressSanitizer, so the limit is the YAML parser's 2,000 (no real object nears either).
inline constexpr int kMaxBodyDepth = 2'000;

// The stack of the threads that call handle(): 32 KB per level of the deepest accepted body
// (under clang's AddressSanitizer nlohmann's writer alone needs over 4 KB per level, more than
// the default 8 MB of a std::thread). Only the pages a thread touches are ever resident.
inline constexpr std::size_t kRequestThreadStackBytes =
    static_cast<std::size_t>(kMaxBodyDepth) * 32 * 1024;

struct CoreOptions {
    std::filesystem::path data_dir;                       // empty: in memory only
    std::chrono::milliseconds bookmark_interval{60'000};  // periodic BOOKMARK events
    std::size_t history_size = 100'000;  // watch events kept for resuming from a resourceVersion
    std::size_t history_bytes = 256 * 1024 * 1024;  // and their objects' serialised size at most
    std::string server_address = "127.0.0.1:0";     // for serverAddressByClientCIDRs
    std::shared_ptr<AdmissionTransport> admission;  // calls webhooks; null: webhooks fail
    bool rbac = false;  // authorize requests with Roles and bindings (--authorization-mode=RBAC)
};

class ApiCore {
  public:
    explicit ApiCore(CoreOptions options);
    ~ApiCore();
    ApiCore(const ApiCore&) = delete;
    ApiCore& operator=(const ApiCore&) = delete;

    // Thread-safe. Never throws: every failure becomes a Kubernetes Status response.
    HttpResponse handle(const HttpRequest& request);
    // Whether handle() may wait on something slow for this request (SQLite durability,
    // admission webhooks): the network layer then runs it off its own threads.
    bool may_block(const HttpRequest& request) const;

    // Fault injection (tests): end every open watch stream now (clients see EOF).
    void drop_watches();
    // Forget all watch history: resuming from any older resourceVersion gets 410 Expired.
    void compact_history();
    // While stalled, open watches receive nothing (no events, no bookmarks) but stay open.
    void stall_watches(bool stalled);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kopf::apiserver
