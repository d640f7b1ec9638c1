// The contract between the API server's network layer (src/net/) and its request
// semantics (src/core/). The network layer parses HTTP, authenticates, applies
// overload and fault-injection rules, and hands a decoded HttpRequest to
// ApiCore::handle(); everything Kubernetes-specific lives behind that call.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kopf::apiserver {

// Who is calling, as established by the network layer (token, client certificate
// or anonymous on plain HTTP).
struct UserInfo {
    std::string name = "system:anonymous";
    std::vector<std::string> groups = {"system:unauthenticated"};
    bool anonymous = true;
};

struct HttpRequest {
    std::string method;  // GET, POST, PUT, PATCH, DELETE (upper case)
    std::string path;    // percent-decoded path without the query: /api/v1/namespaces/ns/pods
    std::map<std::string, std::string> query;  // percent-decoded query parameters (last wins)
    std::string content_type;                  // raw Content-Type header ("" if absent)
    std::string accept;                        // raw Accept header ("" if absent)
    std::string user_agent;
    std::string if_none_match;  // raw If-None-Match header ("" if absent)
    std::string body;
    UserInfo user;
};

// The sink a watch writes to. Implemented by the network layer; thread-safe: the core
// may call it from any thread. Each send() is one complete JSON event line ending
// in '\n'. close() ends the HTTP response (terminating chunk); later calls are no-ops.
class WatchSink {
  public:
    virtual ~WatchSink() = default;
    virtual void send(std::string line) = 0;
    virtual void close() = 0;
};

// A watch accepted by the core. The network layer writes the response headers
// (200, chunked, application/json), then calls start() once with its sink. When the
// client disconnects the network layer calls cancel(); the core must then stop
// sending and drop the sink. The core owns timeoutSeconds, bookmarks, history and
// the fault-injection knobs for watches.
class WatchStream {
  public:
    virtual ~WatchStream() = default;
    virtual void start(std::shared_ptr<WatchSink> sink) = 0;
    virtual void cancel() = 0;
};

// A response body produced piece by piece, so that a large list never exists whole in
// memory: the core snapshots what the body shows and serializes it on demand. The network
// layer calls next() from one thread at a time until it returns false; it may drop the
// stream at any point (client gone), which releases the snapshot.
class BodyStream {
  public:
    virtual ~BodyStream() = default;
    // Replaces `piece` with the next part of the body (a few hundred kilobytes at most);
    // returns false, with `piece` empty, once the body is complete. May throw: the network
    // layer then answers 500 if nothing is sent yet, else ends the connection mid-body.
    virtual bool next(std::string& piece) = 0;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // e.g. Warning, Retry-After
    std::shared_ptr<WatchStream> watch;       // non-null: stream events instead of `body`
    std::shared_ptr<BodyStream> body_stream;  // non-null: the body is its pieces, `body` unused
};

}  // namespace kopf::apiserver
