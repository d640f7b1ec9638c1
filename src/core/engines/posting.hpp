// Posting Kubernetes Events from handlers: kopf::event / info / warn / exception put Events
// into the queue of the operator whose handler calls them; its poster sends them
// asynchronously (core/reactor/serving.cpp). Every operator in the process has its own posting
// context (queue, identity, enabled flag and level, object-log hook) from its own settings.posting.
//
// Which context a call reaches: the operator's whose loop or worker thread calls it
// (PostingScope); on other threads (e.g. ones a handler started), the most recently started
// operator still running (PostingFallback); with no operator running, the process-wide
// context, whose Events are queued until an operator starts and posts them.
#pragma once

#include <kopf/events.hpp>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <kopf/settings.hpp>
#include <memory>
#include <mutex>
#include <string>

#include "core/actions/logging.hpp"
#include "core/engines/events.hpp"

namespace kopf::runtime {

class PostingContext {
  public:
    // The Events waiting for the operator's poster.
    EventQueue& queue() { return queue_; }
    // The hook that posts object log lines (settings.posting.loggers); the object loggers of
    // the operator's handlers log through it.
    ObjectLogHooks& object_log_hooks() { return object_log_hooks_; }

    // Takes the identity, enabled flag and level from settings.posting, and installs or
    // removes the object-log hook for settings.posting.loggers.
    void configure(const PostingSettings& settings);

    // Queues one Event per object (`objects` is one body or an array of bodies, nested or
    // not), if posting is enabled and `level` (the level an Event of this kind stands for) is
    // at least settings.posting.level.
    void post(const json& objects, const std::string& type, const std::string& reason,
              const std::string& message, LogLevel level = LogLevel::CRITICAL);

  private:
    std::mutex mutex_;
    EventIdentity identity_;
    bool enabled_ = true;
    LogLevel level_ = LogLevel::INFO;
    EventQueue queue_;
    ObjectLogHooks object_log_hooks_;
};

// The context for posting outside any operator (default settings.posting).
const std::shared_ptr<PostingContext>& process_posting_context();

// The context posting on this thread reaches (see the top of this file).
std::shared_ptr<PostingContext> current_posting_context();

// While alive, makes `context` the current one of this thread (an operator's loop thread, or
// its worker thread while it runs a synchronous handler).
class PostingScope {
  public:
    explicit PostingScope(std::shared_ptr<PostingContext> context);
    ~PostingScope();
    PostingScope(const PostingScope&) = delete;
    PostingScope& operator=(const PostingScope&) = delete;

  private:
    std::shared_ptr<PostingContext> previous_;
};

// While alive, makes `context` (a running operator's) the one for threads with no current
// context; the most recently made one wins.
class PostingFallback {
  public:
    explicit PostingFallback(std::shared_ptr<PostingContext> context);
    ~PostingFallback();
    PostingFallback(const PostingFallback&) = delete;
    PostingFallback& operator=(const PostingFallback&) = delete;

  private:
    std::shared_ptr<PostingContext> context_;
};

// Posts through current_posting_context() (see PostingContext::post).
void post_event(const json& objects, const std::string& type, const std::string& reason,
                const std::string& message, LogLevel level = LogLevel::CRITICAL);

}  // namespace kopf::runtime
