// Watches: start positions, history replay, 410 Expired, selector transitions,
// bookmarks and timeouts (one background thread), watch-list initial events.
// Each event is serialized once per view and the line is shared by all watchers.
#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

std::string query(const RequestInfo& rq, const char* key) {
    auto it = rq.http->query.find(key);
    return it == rq.http->query.end() ? std::string() : it->second;
}

bool matches(const Watcher& w, const json& obj) {
    const json& meta = obj["metadata"];
    if (!w.ns.empty() && meta.value("namespace", "") != w.ns) return false;
    if (!w.labels.empty() && !w.labels.matches(meta.contains("labels") ? meta["labels"] : json()))
        return false;
    if (!w.fields.empty() && !w.fields.matches(obj)) return false;
    return true;
}

}  // namespace

void Watcher::start(std::shared_ptr<WatchSink> s) {
    if (auto e = engine.lock()) {
        e->start_watch(shared_from_this(), std::move(s));
    } else {
        s->close();
    }
}

void Watcher::cancel() {
    if (auto e = engine.lock()) e->cancel_watch(shared_from_this());
}

HttpResponse Engine::do_watch(RequestInfo& rq) {
    const Resource& res = *rq.res;
    auto w = std::make_shared<Watcher>();
    w->engine = weak_from_this();
    w->res = rq.res;
    w->version = rq.version;
    w->view_key = res.group + "/" + rq.version;
    w->ns = rq.ns;
    try {
        w->labels = LabelSelector::parse(query(rq, "labelSelector"));
        w->fields = FieldSelector::parse(query(rq, "fieldSelector"), res.group, res.kind);
    } catch (const SelectorError& e) {
        throw bad_request(e.what());
    }
    if (!rq.name.empty()) {
        // A watch on an item path: the same as metadata.name=<name>.
        w->fields = FieldSelector::parse("metadata.name=" + rq.name, res.group, res.kind);
    }
    w->bookmarks = parse_bool(query(rq, "allowWatchBookmarks"), false);
    std::string sie = query(rq, "sendInitialEvents");
    std::string rv_match = query(rq, "resourceVersionMatch");
    w->send_initial_events = parse_bool(sie, false);
    if (!sie.empty() && rv_match != "NotOlderThan")
        throw invalid_error("meta.k8s.io", "ListOptions", "",
                            json::array({cause("FieldValueForbidden", "resourceVersionMatch",
                                               "Forbidden: sendInitialEvents requires setting "
                                               "resourceVersionMatch to NotOlderThan")}));
    if (sie.empty() && !rv_match.empty())
        throw invalid_error("meta.k8s.io", "ListOptions", "",
                            json::array({cause("FieldValueForbidden", "resourceVersionMatch",
                                               "Forbidden: resourceVersionMatch is forbidden for "
                                               "watch unless sendInitialEvents is provided")}));
    std::string rv = query(rq, "resourceVersion");
    if (!rv.empty() && rv != "0") {
        if (rv.find_first_not_of("0123456789") != std::string::npos)
            throw bad_request("invalid resource version: " + rv);
        try {
            w->start_rv = std::stoull(rv);
        } catch (...) {
            throw bad_request("invalid resource version: " + rv);
        }
    }
    if (w->send_initial_events) w->start_rv.reset();
    if (std::string t = query(rq, "timeoutSeconds"); !t.empty()) {
        long seconds = 0;
        try {
            seconds = std::stol(t);
        } catch (...) {
            throw bad_request("invalid timeoutSeconds: " + t);
        }
        if (seconds > 0) w->deadline = Clock::now() + std::chrono::seconds(seconds);
    }
    w->table = wants_table(rq.http->accept);
    if (std::string inc = query(rq, "includeObject"); !inc.empty()) w->table_include = inc;
    HttpResponse r;
    r.watch = w;
    return r;
}

std::string Engine::render_event(const Watcher& w, const std::string& type, const json& view) {
    if (w.table) {
        json t = to_table(*w.res, w.version, {view}, w.table_include, !w.table_header_sent);
        const_cast<Watcher&>(w).table_header_sent = true;
        return json{{"type", type}, {"object", std::move(t)}}.dump() + "\n";
    }
    return event_line_head(type) + view.dump() + "}\n";
}

std::string Engine::event_line_head(const std::string& type) {
    return "{\"type\":\"" + type + "\",\"object\":";
}

std::shared_ptr<const std::string> Engine::event_line(const WatchEventPtr& event,
                                                      const Watcher& w) {
    const std::string& key = w.view_key;
    auto it = event->lines.find(key);
    if (it != event->lines.end()) return it->second;
    std::shared_ptr<const std::string> line;
    auto api_version = event->object->find("apiVersion");
    if (view_is_identity(*w.res, w.version) && api_version != event->object->end() &&
        *api_version == w.res->group_version(w.version))
        line = std::make_shared<const std::string>(event_line_head(event->type) +
                                                   event->object->dump() + "}\n");
    else
        line = std::make_shared<const std::string>(
            render_event(w, event->type, to_view(*w.res, w.version, *event->object)));
    event->lines.emplace(key, line);
    return line;
}

void Engine::fan_out(const WatchEventPtr& event) {
    auto it = watchers_.find(event->storage_key);
    if (it == watchers_.end() || stalled_) return;
    for (const auto& wp : it->second) {
        Watcher& w = *wp;
        if (!w.active || !w.sink) continue;
        w.seen_rv = event->rv;
        if (!w.ns.empty() && event->ns != w.ns) continue;
        bool filtered = !w.labels.empty() || !w.fields.empty();
        if (!filtered && !w.table) {
            w.sink->send(*event_line(event, w));
            continue;
        }
        bool now = matches(w, *event->object);
        bool before = event->previous && matches(w, *event->previous);
        std::string type = event->type;
        const json* obj = event->object.get();
        json gone;
        if (event->type == "MODIFIED") {
            if (now && !before)
                type = "ADDED";
            else if (!now && before) {
                type = "DELETED";
                gone = *event->previous;
                gone["metadata"]["resourceVersion"] = std::to_string(event->rv);
                obj = &gone;
            } else if (!now)
                continue;
        } else if (!now) {
            continue;
        }
        if (type == event->type && !w.table)
            w.sink->send(*event_line(event, w));
        else
            w.sink->send(render_event(w, type, to_view(*w.res, w.version, *obj)));
    }
}

void Engine::send_bookmark(Watcher& w, bool initial_end) {
    json obj = {{"kind", w.res->kind},
                {"apiVersion", w.res->group_version(w.version)},
                {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
    if (initial_end) obj["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    w.sink->send(json{{"type", "BOOKMARK"}, {"object", obj}}.dump() + "\n");
    w.last_bookmark = Clock::now();
}

void Engine::start_watch(const std::shared_ptr<Watcher>& w, std::shared_ptr<WatchSink> sink) {
    std::unique_lock lock(mu_);
    if (stopping_) {
        sink->close();
        return;
    }
    w->sink = std::move(sink);
    const Resource& res = *w->res;
    if (w->start_rv) {
        replay(w, *w->start_rv);
        if (!w->sink) return;  // expired
    } else {
        auto s = store_.find(res.storage_key);
        if (s != store_.end()) {
            for (const auto& [key, obj] : s->second) {
                if (!matches(*w, *obj)) continue;
                w->sink->send(render_event(*w, "ADDED", to_view(res, w->version, *obj)));
            }
        }
        if (w->send_initial_events) send_bookmark(*w, true);
    }
    w->active = true;
    w->last_bookmark = Clock::now();
    // A stalled server holds the live events back from here on; resuming replays them.
    w->seen_rv = rv_;
    watchers_[res.storage_key].push_back(w);
}

void Engine::replay(const std::shared_ptr<Watcher>& w, uint64_t after_rv) {
    if (after_rv < oldest_available_rv_) {
        json status = make_status(410, "Expired",
                                  "too old resource version: " + std::to_string(after_rv) + " (" +
                                      std::to_string(oldest_available_rv_) + ")");
        w->sink->send(json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
        w->sink->close();
        w->sink.reset();
        w->active = false;
        return;
    }
    const std::string& storage_key = w->res->storage_key;
    auto first = std::lower_bound(history_.begin(), history_.end(), after_rv + 1,
                                  [](const WatchEventPtr& e, uint64_t rv) { return e->rv < rv; });
    const bool was_active = w->active;
    w->active = true;
    std::vector<std::shared_ptr<Watcher>> single{w};
    for (auto it = first; it != history_.end() && w->sink; ++it) {
        if ((*it)->storage_key != storage_key) continue;
        // Delivered through the same transition logic as live events, to this watcher alone.
        auto saved = watchers_.find(storage_key);
        std::vector<std::shared_ptr<Watcher>> others;
        if (saved != watchers_.end()) others.swap(saved->second);
        watchers_[storage_key] = single;
        bool stalled = stalled_;
        stalled_ = false;
        fan_out(*it);
        stalled_ = stalled;
        watchers_[storage_key].swap(others);
    }
    w->active = was_active;
}

void Engine::close_watcher(Watcher& w) {
    if (w.sink) w.sink->close();
    w.sink.reset();
    w.active = false;
}

void Engine::cancel_watch(const std::shared_ptr<Watcher>& w) {
    std::unique_lock lock(mu_);
    w->active = false;
    w->sink.reset();
    auto it = watchers_.find(w->res->storage_key);
    if (it == watchers_.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), w), list.end());
}

void Engine::background_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
        cv_.wait_for(lock, std::chrono::milliseconds(20));
        if (stopping_) break;
        auto now = Clock::now();
        for (auto& [key, list] : watchers_) {
            for (auto& w : list) {
                if (!w->active) continue;
                if (w->deadline && now >= *w->deadline) {
                    close_watcher(*w);
                    continue;
                }
                if (stalled_ || !w->bookmarks || !w->sink) continue;
                if (now - w->last_bookmark >= options_.bookmark_interval) send_bookmark(*w, false);
            }
            list.erase(
                std::remove_if(list.begin(), list.end(), [](const auto& w) { return !w->active; }),
                list.end());
        }
        if (controllers_dirty_) run_controllers();
        retired_.clear();
    }
}

}  // namespace kopf::apiserver::core
