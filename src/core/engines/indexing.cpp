#include "core/engines/indexing.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <kopf/errors.hpp>
#include <kopf/settings.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/actions/execution.hpp"
#include "core/actions/logging.hpp"
#include "core/intents/causes.hpp"
#include "core/intents/matching.hpp"

namespace kopf {

// ---- the read-only containers (kopf/index.hpp) -------------------------------------------------

namespace {

const detail::IndexData& data_of(const std::shared_ptr<const detail::IndexData>& data) {
    if (!data) {
        throw std::logic_error(
            "This kopf::Index is not bound to an index: get one with ctx.index(name).");
    }
    return *data;
}

Store snapshot(const detail::IndexData::StoreData& store) {
    Store::Values values;
    values.reserve(store.values.size());
    for (const auto& slot : store.values) values.push_back(slot.value);
    return Store(std::move(values));
}

}  // namespace

const json& Store::front() const {
    if (values_.empty()) throw std::out_of_range("The store is empty: it has no first value.");
    return *values_.front();
}

bool Store::contains(const json& value) const {
    return std::any_of(values_.begin(), values_.end(),
                       [&value](const auto& stored) { return *stored == value; });
}

const std::string& Index::name() const {
    return data_of(data_).name;
}

std::size_t Index::size() const {
    const auto& data = data_of(data_);
    std::shared_lock lock(data.mutex);
    return data.items.size();
}

bool Index::contains(const json& key) const {
    const auto& data = data_of(data_);
    std::shared_lock lock(data.mutex);
    return data.items.count(key) > 0;
}

Store Index::get(const json& key) const {
    const auto& data = data_of(data_);
    std::shared_lock lock(data.mutex);
    const auto found = data.items.find(key);
    return found == data.items.end() ? Store() : snapshot(found->second);
}

Store Index::at(const json& key) const {
    const auto& data = data_of(data_);
    std::shared_lock lock(data.mutex);
    const auto found = data.items.find(key);
    if (found == data.items.end())
        throw std::out_of_range(
            fmt::format("The index '{}' has no key {}.", data.name, key.dump()));
    return snapshot(found->second);
}

std::vector<json> Index::keys() const {
    const auto& data = data_of(data_);
    std::shared_lock lock(data.mutex);
    std::vector<json> out;
    out.reserve(data.items.size());
    for (const auto& item : data.items) out.push_back(item.first);
    return out;
}

std::vector<std::pair<json, Store>> Index::items() const {
    const auto& data = data_of(data_);
    std::shared_lock lock(data.mutex);
    std::vector<std::pair<json, Store>> out;
    out.reserve(data.items.size());
    for (const auto& item : data.items) out.emplace_back(item.first, snapshot(item.second));
    return out;
}

Index Indices::get(const std::string& name) const {
    if (data_) {
        for (const auto& index : data_->indices) {
            if (index->name == name) return Index(index);
        }
    }
    const auto known = names();
    if (known.empty()) {
        throw std::out_of_range(fmt::format(
            "No index named '{}': the operator has no index handlers (kopf::on::index).", name));
    }
    throw std::out_of_range(
        fmt::format("No index named '{}'; the indices are: {}.", name, fmt::join(known, ", ")));
}

bool Indices::contains(const std::string& name) const {
    if (!data_) return false;
    return std::any_of(data_->indices.begin(), data_->indices.end(),
                       [&name](const auto& index) { return index->name == name; });
}

std::vector<std::string> Indices::names() const {
    std::vector<std::string> out;
    if (data_) {
        for (const auto& index : data_->indices) out.push_back(index->name);
    }
    return out;
}

IndexEntries::IndexEntries(json result) {
    if (result.is_null()) return;
    if (result.is_object()) {
        entries_.reserve(result.size());
        for (auto& [key, value] : result.items())
            entries_.emplace_back(json(key), std::move(value));
    } else {
        entries_.emplace_back(json(), std::move(result));
    }
}

IndexEntries& IndexEntries::add(json key, json value) & {
    entries_.emplace_back(std::move(key), std::move(value));
    return *this;
}

IndexEntries&& IndexEntries::add(json key, json value) && {
    entries_.emplace_back(std::move(key), std::move(value));
    return std::move(*this);
}

}  // namespace kopf

namespace kopf::engines {

std::shared_ptr<detail::IndicesData> make_indices_data(
    const std::vector<IndexingHandler>& handlers) {
    auto data = std::make_shared<detail::IndicesData>();
    for (const auto& h : handlers)
        data->indices.push_back(std::make_shared<detail::IndexData>(h.id));
    return data;
}

namespace {

using Node = detail::IndexData::Items::value_type;
using WatcherId = IndexingEngine::WatcherId;

// Kopf's TerseObjectLogger: index handlers run on every event of every indexed object, so
// their info lines show only with --verbose, their debug lines never, and none become Events.
class TerseLogger final : public Logger {
  public:
    explicit TerseLogger(const json& body) : body_(body) {}
    void log(LogLevel level, std::string_view message) override {
        if (!enabled_for(level)) return;
        runtime::log_object(actions::spdlog_level_of(level), runtime::ObjectRef::from_body(body_),
                            message);
    }
    bool enabled_for(LogLevel level) const override {
        if (level == LogLevel::DEBUG) return false;
        static const runtime::ObjectLogHooks no_hooks;
        const auto lowered =
            level == LogLevel::INFO ? spdlog::level::debug : actions::spdlog_level_of(level);
        return runtime::object_logging_enabled(lowered, no_hooks);
    }

  private:
    const json& body_;
};

// One object's value in one index: the node of its key, and its slot in that key's store.
struct Contribution {
    std::uint32_t index;
    std::uint32_t slot;
    Node* node;
};

// An object's identity: its uid's 128 bits (no string per object), or for the rare object
// without a UUID, two independent 64-bit hashes of its uid or namespace/name.
struct ObjectKey {
    std::uint64_t hi = 0;
    std::uint64_t lo = 0;
    bool operator==(const ObjectKey&) const = default;
};
struct ObjectKeyHash {
    std::size_t operator()(const ObjectKey& key) const noexcept {
        return static_cast<std::size_t>(key.hi ^ (key.lo * 0x9E3779B97F4A7C15ULL));
    }
};

// The retry state of one failed index handler on one object.
struct Failure {
    actions::HandlerState state;
    bool permanent = false;  // not retried for this object (its entries stay)
};

// What few objects need: failures being retried, and events held behind a coroutine handler.
struct Extras {
    std::map<std::uint32_t, Failure> failures;  // by handler number
    std::optional<json> body;                   // the latest, for retries by timer
    bool busy = false;                          // a coroutine index handler runs
    std::deque<std::function<void()>> backlog;  // events that came meanwhile, in order
};

struct Record {
    WatcherId watcher = 0;
    std::uint32_t listing = 0;  // the watcher's listing that last showed it
    std::vector<Contribution> contributions;
    std::unique_ptr<Extras> extras;
};

struct Watcher {
    Resource resource;
    std::vector<std::uint32_t> handlers;
    bool any_async = false;
    bool listed_once = false;
    bool listing = false;  // a listing is being delivered
    std::uint32_t generation = 0;
};

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<ObjectKey> parse_uuid(std::string_view text) {
    if (text.size() != 36) return std::nullopt;
    ObjectKey key;
    int digits = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool dash_place = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash_place) {
            if (text[i] != '-') return std::nullopt;
            continue;
        }
        const int digit = hex_digit(text[i]);
        if (digit < 0) return std::nullopt;
        std::uint64_t& half = digits < 16 ? key.hi : key.lo;
        half = (half << 4) | static_cast<std::uint64_t>(digit);
        ++digits;
    }
    return key;
}

ObjectKey hashed_key(std::string_view text) {
    std::uint64_t fnv = 0xcbf29ce484222325ULL;
    for (const char c : text) fnv = (fnv ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    return ObjectKey{std::hash<std::string_view>{}(text), fnv};
}

ObjectKey key_of(const json& body) {
    const auto meta = body.find("metadata");
    if (meta == body.end() || !meta->is_object()) return hashed_key("/");
    const auto uid = meta->find("uid");
    if (uid != meta->end() && uid->is_string()) {
        const auto& text = uid->get_ref<const std::string&>();
        if (auto parsed = parse_uuid(text)) return *parsed;
        if (!text.empty()) return hashed_key("uid:" + text);
    }
    return hashed_key(meta->value("namespace", "") + "/" + meta->value("name", ""));
}

}  // namespace

struct IndexingEngine::Core : std::enable_shared_from_this<IndexingEngine::Core> {
    Core(Env env, const std::vector<IndexingHandler>& registered,
         std::shared_ptr<detail::IndicesData> given)
        : env(std::move(env)), data(std::move(given)), indices(data) {
        if (!data || data->indices.size() != registered.size())
            throw std::logic_error("The indices do not match the index handlers.");
        for (const auto& h : registered) {
            handlers.push_back(&h);
            ChangingHandler stub;  // what make_context reads: the id and the options
            stub.id = h.id;
            stub.options = h.options;
            stubs.push_back(std::move(stub));
        }
    }

    Env env;
    std::vector<const IndexingHandler*> handlers;
    std::vector<ChangingHandler> stubs;
    std::shared_ptr<detail::IndicesData> data;
    Indices indices;
    using Records = std::unordered_map<ObjectKey, Record, ObjectKeyHash>;
    Records records;
    std::unordered_map<WatcherId, Watcher> watchers;
    WatcherId last_watcher = 0;
    std::size_t unlisted = 1;  // watchers not listed yet, and discovery
    bool discovered = false;
    std::size_t listing_inflight = 0;  // coroutine handlers running on listed objects
    std::vector<std::function<void()>> waiters;

    bool ready() const { return unlisted == 0 && listing_inflight == 0; }

    void check_ready() {
        if (!ready() || waiters.empty()) return;
        auto due = std::move(waiters);
        waiters.clear();
        for (auto& fn : due) fn();
    }

    // ---- writing the indices ----

    void replace(Record& record, std::uint32_t n, const IndexEntries& result) {
        auto& index = *data->indices[n];
        // Made before the lock: readers wait only for the pointer moves.
        std::vector<std::pair<const json*, std::shared_ptr<const json>>> prepared;
        const auto& entries = result.entries();
        prepared.reserve(entries.size());
        for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
            const bool repeated = std::any_of(prepared.begin(), prepared.end(),
                                              [&it](auto& p) { return *p.first == it->first; });
            if (!repeated)  // the last value of a repeated key wins, as in a dict
                prepared.emplace_back(&it->first, std::make_shared<const json>(it->second));
        }
        std::unique_lock lock(index.mutex);
        std::vector<Node*> fresh;
        fresh.reserve(prepared.size());
        for (auto& [key, value] : prepared) {
            Node& node = *index.items.try_emplace(*key).first;
            fresh.push_back(&node);
            auto& slots = node.second.values;
            const auto existing = std::find_if(
                record.contributions.begin(), record.contributions.end(),
                [n, &node](const Contribution& c) { return c.index == n && c.node == &node; });
            if (existing != record.contributions.end()) {
                auto& slot = slots[existing->slot].value;
                if (*slot != *value) slot = std::move(value);
            } else {
                slots.push_back({&record, std::move(value)});
                record.contributions.push_back(
                    Contribution{n, static_cast<std::uint32_t>(slots.size() - 1), &node});
            }
        }
        // The keys it no longer has: out of their stores.
        for (std::size_t i = 0; i < record.contributions.size();) {
            const Contribution c = record.contributions[i];
            if (c.index == n && std::find(fresh.begin(), fresh.end(), c.node) == fresh.end()) {
                remove_value(index, c);
                record.contributions.erase(record.contributions.begin() +
                                           static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
    }

    // Takes the contribution's value out of its store: the store's last slot moves into its
    // place (its owner's contribution follows it), and an emptied key goes.
    static void remove_value(detail::IndexData& index, const Contribution& c) {
        auto& slots = c.node->second.values;
        if (c.slot + 1 < slots.size()) {
            slots[c.slot] = std::move(slots.back());
            auto* moved = static_cast<Record*>(slots[c.slot].owner);
            for (auto& other : moved->contributions) {
                if (other.index == c.index && other.node == c.node) {
                    other.slot = c.slot;
                    break;
                }
            }
        }
        slots.pop_back();
        if (slots.empty()) index.items.erase(index.items.find(c.node->first));
    }

    // The object's values in index `n`, or in every index if `n` is none.
    void discard(Record& record, std::optional<std::uint32_t> n = std::nullopt) {
        std::vector<Contribution> kept;
        for (const auto& c : record.contributions) {
            if (n && c.index != *n) {
                kept.push_back(c);
                continue;
            }
            auto& index = *data->indices[c.index];
            std::unique_lock lock(index.mutex);
            remove_value(index, c);
        }
        record.contributions = std::move(kept);
    }

    void forget(Records::iterator it) {
        discard(it->second);
        records.erase(it);
    }

    // ---- running the handlers ----

    // The handlers' environment for one object's body.
    struct Invocation {
        Invocation(Core& core, const Resource& resource, const json& body)
            : logger(body),
              cause{intents::Reason::NOOP, &resource, &body, std::nullopt,
                    std::nullopt,          Diff(),    false},
              env{core.env.settings,
                  resource,
                  body,
                  patch,
                  logger,
                  core.env.memo,
                  cause,
                  core.env.now,
                  actions::lifecycles::all_at_once,
                  core.env.client},
              now(core.env.now()) {
            env.indices = core.indices;
        }
        Patch patch;  // not applied, as in Kopf: index handlers do not change the object
        TerseLogger logger;
        intents::ChangingCause cause;
        actions::InvocationEnv env;
        actions::TimePoint now;
        actions::FieldValues no_field;
    };

    // The context for handler `n`, or none if it is not to run now (its filters do not match:
    // its entries leave; it failed for good; it waits for its retry).
    std::optional<Context> prepare(Invocation& inv, Record& record, std::uint32_t n) {
        const Failure* failure = nullptr;
        if (record.extras) {
            const auto found = record.extras->failures.find(n);
            if (found != record.extras->failures.end()) failure = &found->second;
        }
        if (failure && failure->permanent) return std::nullopt;
        if (failure && failure->state.delayed && *failure->state.delayed > inv.now)
            return std::nullopt;
        const auto state =
            failure ? failure->state : actions::HandlerState::from_scratch(inv.now, std::nullopt);
        std::optional<Context> ctx;
        ctx.emplace(actions::make_context(inv.env, stubs[n], state, nullptr, inv.no_field));
        if (!intents::match(*handlers[n], inv.env.resource, inv.env.body, *ctx)) {
            discard(record, n);
            if (record.extras) record.extras->failures.erase(n);
            return std::nullopt;
        }
        return ctx;
    }

    void conclude(Invocation& inv, const ObjectKey& key, Record& record, std::uint32_t n,
                  const IndexEntries& result, std::exception_ptr error) {
        const std::string name = "Handler '" + handlers[n]->id + "'";
        if (!error) {
            if (result.empty())
                discard(record, n);
            else
                replace(record, n, result);
            if (record.extras) record.extras->failures.erase(n);
            if (inv.logger.enabled_for(LogLevel::INFO)) inv.logger.info("{} succeeded.", name);
            return;
        }
        Failure* failure = nullptr;
        if (record.extras) {
            const auto found = record.extras->failures.find(n);
            if (found != record.extras->failures.end()) failure = &found->second;
        }
        const auto state =
            failure ? failure->state : actions::HandlerState::from_scratch(inv.now, std::nullopt);
        // The object's earlier entries stay until the handler succeeds.
        const auto outcome =
            actions::outcome_of_failure(env.settings, inv.logger, stubs[n].options, state, name,
                                        state.runtime(inv.now).count(), error);
        if (outcome.final && !outcome.failed) {  // ignored: tried again on the next event
            if (record.extras) record.extras->failures.erase(n);
            return;
        }
        if (!record.extras) record.extras = std::make_unique<Extras>();
        auto& kept = record.extras->failures[n];
        kept.state = state;
        kept.state.retries += 1;
        if (outcome.final) {
            kept.permanent = true;
            return;
        }
        const double delay = outcome.delay.value_or(0.0);
        kept.state.delayed = inv.now + std::chrono::duration_cast<actions::Clock::duration>(
                                           std::chrono::duration<double>(delay));
        record.extras->body = inv.env.body;
        arm_retry(key, delay);
    }

    void arm_retry(const ObjectKey& key, double delay) {
        std::weak_ptr<Core> weak = shared_from_this();
        env.loop.post_after(delay, [weak, key] {
            if (auto core = weak.lock()) core->retry(key);
        });
    }

    // A failed handler's backoff is over: index the latest body again.
    void retry(const ObjectKey& key) {
        const auto it = records.find(key);
        if (it == records.end() || !it->second.extras || !it->second.extras->body) return;
        Record& record = it->second;
        if (record.extras->busy) return;  // the running one retries it
        const auto w = watchers.find(record.watcher);
        if (w == watchers.end()) return;
        const json body = *record.extras->body;
        run(w->second, it, body, false, [] {});
    }

    void index_now(const Watcher& watcher, const ObjectKey& key, Record& record, const json& body) {
        Invocation inv(*this, watcher.resource, body);
        for (const std::uint32_t n : watcher.handlers) {
            auto ctx = prepare(inv, record, n);
            if (!ctx) continue;
            IndexEntries result;
            std::exception_ptr error;
            try {
                result = handlers[n]->sync(*ctx);
            } catch (...) {
                error = std::current_exception();
            }
            conclude(inv, key, record, n, result, error);
        }
        settle(record, body);
    }

    static Task<void> index_later(std::weak_ptr<Core> weak, Resource resource,
                                  std::vector<std::uint32_t> numbers, ObjectKey key, json body) {
        for (const std::uint32_t n : numbers) {
            auto core = weak.lock();
            if (!core) co_return;
            auto it = core->records.find(key);
            if (it == core->records.end()) co_return;
            Invocation inv(*core, resource, body);
            auto ctx = core->prepare(inv, it->second, n);
            if (!ctx) continue;
            IndexEntries result;
            std::exception_ptr error;
            const IndexingHandler& handler = *core->handlers[n];
            try {
                if (handler.async) {
                    core.reset();  // the operator may stop while the handler waits
                    result = co_await handler.async(*ctx);
                } else {
                    result = handler.sync(*ctx);
                }
            } catch (...) {
                error = std::current_exception();
            }
            core = weak.lock();
            if (!core) co_return;
            it = core->records.find(key);
            if (it == core->records.end()) co_return;
            core->conclude(inv, key, it->second, n, result, error);
        }
        if (auto core = weak.lock()) {
            const auto it = core->records.find(key);
            if (it != core->records.end()) core->settle(it->second, body);
        }
    }

    // Keeps the body for retries only while some are pending; frees the extras when unused.
    static void settle(Record& record, const json& body) {
        if (!record.extras) return;
        auto& extras = *record.extras;
        const bool retrying = std::any_of(extras.failures.begin(), extras.failures.end(),
                                          [](const auto& f) { return !f.second.permanent; });
        if (retrying)
            extras.body = body;
        else
            extras.body.reset();
        if (extras.failures.empty() && !extras.busy && extras.backlog.empty())
            record.extras.reset();
    }

    // Indexes one body of the record's object, then runs `then`.
    void run(const Watcher& watcher, Records::iterator it, const json& body, bool listed,
             std::function<void()> then) {
        Record& record = it->second;
        if (!watcher.any_async) {
            index_now(watcher, it->first, record, body);
            then();
            return;
        }
        if (!record.extras) record.extras = std::make_unique<Extras>();
        record.extras->busy = true;
        if (listed) ++listing_inflight;
        std::weak_ptr<Core> weak = shared_from_this();
        auto task = index_later(weak, watcher.resource, watcher.handlers, it->first, body);
        kopf::start_detached(
            env.loop, std::move(task),
            [weak, key = it->first, listed, then = std::move(then)](std::exception_ptr) {
                auto core = weak.lock();
                if (!core) return;
                if (listed) --core->listing_inflight;
                then();
                core->resume_backlog(key);
                core->check_ready();
            });
    }

    // The events that came while a coroutine index handler ran, in order, until one of them
    // suspends again. Each may free the record's extras or forget the record: found anew.
    void resume_backlog(const ObjectKey& key) {
        for (bool first = true;; first = false) {
            const auto it = records.find(key);
            if (it == records.end() || !it->second.extras) return;
            auto& extras = *it->second.extras;
            if (first) extras.busy = false;
            if (extras.busy) return;
            if (extras.backlog.empty()) {
                if (extras.failures.empty()) it->second.extras.reset();
                return;
            }
            auto next = std::move(extras.backlog.front());
            extras.backlog.pop_front();
            next();
        }
    }

    void on_event(WatcherId id, const std::string& type, const json& body, bool listed,
                  std::function<void()> then) {
        const auto w = watchers.find(id);
        if (w == watchers.end()) {
            then();
            return;
        }
        Watcher& watcher = w->second;
        const ObjectKey key = key_of(body);
        auto it = records.find(key);
        if (it != records.end() && it->second.extras && it->second.extras->busy) {
            std::weak_ptr<Core> weak = shared_from_this();
            it->second.extras->backlog.push_back(
                [weak, id, type, body, listed, then = std::move(then)]() mutable {
                    if (auto core = weak.lock())
                        core->on_event(id, type, body, listed, std::move(then));
                });
            return;
        }
        if (type == "DELETED") {
            if (it != records.end()) forget(it);
            then();
            return;
        }
        if (listed && !watcher.listing) {
            watcher.listing = true;
            ++watcher.generation;
        }
        if (it == records.end()) it = records.try_emplace(key).first;
        it->second.watcher = id;
        if (listed) it->second.listing = watcher.generation;
        run(watcher, it, body, listed, std::move(then));
    }

    void listed(WatcherId id) {
        const auto w = watchers.find(id);
        if (w == watchers.end()) return;
        Watcher& watcher = w->second;
        if (!watcher.listing) ++watcher.generation;  // an empty listing: everything is stale
        watcher.listing = false;
        if (watcher.listed_once) {
            // A relisting (after 410 Gone): what it did not show was deleted meanwhile.
            for (auto it = records.begin(); it != records.end();) {
                const Record& r = it->second;
                const bool busy = r.extras && r.extras->busy;
                auto next = std::next(it);
                if (r.watcher == id && r.listing != watcher.generation && !busy) forget(it);
                it = next;
            }
            return;
        }
        watcher.listed_once = true;
        --unlisted;
        check_ready();
    }

    void watcher_stopped(WatcherId id) {
        const auto w = watchers.find(id);
        if (w == watchers.end()) return;
        if (!w->second.listed_once) --unlisted;
        watchers.erase(w);
        for (auto it = records.begin(); it != records.end();) {
            auto next = std::next(it);
            const bool busy = it->second.extras && it->second.extras->busy;
            if (it->second.watcher == id && !busy) forget(it);
            it = next;
        }
        check_ready();
    }
};

IndexingEngine::IndexingEngine(Env env, const std::vector<IndexingHandler>& handlers,
                               std::shared_ptr<detail::IndicesData> data)
    : core_(std::make_shared<Core>(std::move(env), handlers, std::move(data))) {}

IndexingEngine::~IndexingEngine() = default;

const Indices& IndexingEngine::indices() const {
    return core_->indices;
}

bool IndexingEngine::indexes(const Resource& resource) const {
    return std::any_of(
        core_->handlers.begin(), core_->handlers.end(),
        [&resource](const IndexingHandler* h) { return h->selector.check(resource); });
}

void IndexingEngine::discovered() {
    if (core_->discovered) return;
    core_->discovered = true;
    --core_->unlisted;
    core_->check_ready();
}

IndexingEngine::WatcherId IndexingEngine::watcher_started(const Resource& resource) {
    Watcher watcher;
    watcher.resource = resource;
    for (std::uint32_t n = 0; n < core_->handlers.size(); ++n) {
        if (!core_->handlers[n]->selector.check(resource)) continue;
        watcher.handlers.push_back(n);
        if (core_->handlers[n]->async) watcher.any_async = true;
    }
    const WatcherId id = ++core_->last_watcher;
    core_->watchers.emplace(id, std::move(watcher));
    ++core_->unlisted;
    return id;
}

void IndexingEngine::listed(WatcherId watcher) {
    core_->listed(watcher);
}

void IndexingEngine::watcher_stopped(WatcherId watcher) {
    core_->watcher_stopped(watcher);
}

void IndexingEngine::on_event(WatcherId watcher, const std::string& type, const json& body,
                              bool listed, std::function<void()> then) {
    core_->on_event(watcher, type, body, listed, std::move(then));
}

bool IndexingEngine::ready() const {
    return core_->ready();
}

void IndexingEngine::when_ready(std::function<void()> fn) {
    if (core_->ready()) {
        fn();
        return;
    }
    core_->waiters.push_back(std::move(fn));
}

void IndexingEngine::release_waiters() {
    auto due = std::move(core_->waiters);
    core_->waiters.clear();
    for (auto& fn : due) fn();
}

void IndexingEngine::measure(Metrics::Gauges& gauges) const {
    for (const auto& index : core_->data->indices) {
        std::size_t keys = 0;
        std::size_t values = 0;
        {
            std::shared_lock lock(index->mutex);
            keys = index->items.size();
            for (const auto& [key, store] : index->items) values += store.values.size();
        }
        gauges.set("kopf_index_keys", "index", index->name, static_cast<double>(keys));
        gauges.set("kopf_index_values", "index", index->name, static_cast<double>(values));
    }
}

std::size_t IndexingEngine::objects() const {
    return core_->records.size();
}

}  // namespace kopf::engines
