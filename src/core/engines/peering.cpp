#include "core/engines/peering.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <random>

#include "clients/api.hpp"
#include "clients/errors.hpp"
#include "clients/stop.hpp"
#include "configs/client_settings.hpp"
#include "core/actions/logging.hpp"
#include "structs/bodies.hpp"
#include "structs/timestamps.hpp"

namespace asio = boost::asio;

namespace kopf::engines {

namespace {

constexpr const char* kLogger = "kopf.engines.peering";

std::mt19937& rng() {
    static thread_local std::mt19937 generator{std::random_device{}()};
    return generator;
}

// Python's getpass.getuser(): the login variables first, then the password database.
std::string current_user() {
    for (const char* name : {"LOGNAME", "USER", "LNAME", "USERNAME"}) {
        if (const char* value = std::getenv(name); value && *value) return value;
    }
    if (const passwd* entry = getpwuid(geteuid()); entry && entry->pw_name) return entry->pw_name;
    return std::to_string(geteuid());
}

bool is_ip_address(const std::string& name) {
    unsigned char buffer[sizeof(in6_addr)];
    return inet_pton(AF_INET, name.c_str(), buffer) == 1 ||
           inet_pton(AF_INET6, name.c_str(), buffer) == 1;
}

std::string remove_useless_suffixes(std::string hostname) {
    for (bool removed = true; removed;) {
        removed = false;
        for (const std::string suffix : {".local", ".localdomain"}) {
            if (hostname.size() > suffix.size() && hostname.ends_with(suffix)) {
                hostname.resize(hostname.size() - suffix.size());
                removed = true;
            }
        }
    }
    return hostname;
}

// Kopf's descriptive hostname: the canonical name if it is dotted (not an address, not an ARPA
// name), else the plain host name; ".local" and ".localdomain" removed.
std::string descriptive_hostname() {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof buffer - 1) != 0) return "localhost";
    const std::string plain = buffer;
    addrinfo hints{};
    hints.ai_flags = AI_CANONNAME;
    hints.ai_family = AF_UNSPEC;
    addrinfo* found = nullptr;
    if (getaddrinfo(plain.c_str(), nullptr, &hints, &found) == 0 && found) {
        const std::string canonical = found->ai_canonname ? found->ai_canonname : "";
        freeaddrinfo(found);
        if (canonical.find('.') != std::string::npos && !canonical.ends_with(".arpa") &&
            !is_ip_address(canonical)) {
            return remove_useless_suffixes(canonical);
        }
    }
    return remove_useless_suffixes(plain);
}

long integer_or(const json& value, long fallback) {
    if (value.is_number_integer()) return value.get<long>();
    if (value.is_number()) {
        // Anyone may write a peering's status: a number beyond a long's range is no priority.
        const double number = value.get<double>();
        constexpr double kLimit = 9.2e18;  // below 2^63, so that the conversion is defined
        return std::isfinite(number) && std::abs(number) < kLimit ? static_cast<long>(number)
                                                                  : fallback;
    }
    if (value.is_string()) {
        try {
            return std::stol(value.get<std::string>());
        } catch (const std::exception&) {
            return fallback;
        }
    }
    return fallback;
}

std::string where(const std::string& namespace_) {
    return namespace_.empty() ? "cluster-wide" : fmt::format("in '{}'", namespace_);
}

}  // namespace

// ---- identity, peers, verdicts -------------------------------------------------------------

std::string detect_own_id(bool manual) {
    if (const char* pod = std::getenv("POD_ID"); pod) return pod;
    const std::string user_host = current_user() + "@" + descriptive_hostname();
    if (manual) return user_host;
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
    static constexpr std::string_view alphabet = "abcdefhijklmnopqrstuvwxyz0123456789";
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::string random;
    for (int i = 0; i < 3; ++i) random += alphabet[pick(rng())];
    return fmt::format("{}/{}/{}", user_host, stamp, random);
}

json Peer::as_dict() const {
    return {{"priority", priority},
            {"lifetime", lifetime},
            {"lastseen", structs::format_iso8601(lastseen)}};
}

std::string Peer::repr() const {
    return fmt::format("<Peer {}: priority={}, lifetime={}, lastseen='{}'>", identity, priority,
                       lifetime, structs::format_iso8601(lastseen));
}

std::string repr(const std::vector<Peer>& peers) {
    std::vector<std::string> items;
    items.reserve(peers.size());
    for (const auto& peer : peers) items.push_back(peer.repr());
    return fmt::format("[{}]", fmt::join(items, ", "));
}

std::vector<Peer> parse_peers(const json& body, PeeringClock::time_point now) {
    std::vector<Peer> peers;
    const auto status = body.is_object() ? body.find("status") : body.end();
    if (!body.is_object() || status == body.end() || !status->is_object()) return peers;
    for (const auto& [identity, info] : status->items()) {
        if (!info.is_object()) continue;
        Peer peer{identity, 0, 60, now};
        if (const auto it = info.find("priority"); it != info.end())
            peer.priority = integer_or(*it, 0);
        if (const auto it = info.find("lifetime"); it != info.end())
            peer.lifetime = integer_or(*it, 60);
        if (const auto it = info.find("lastseen"); it != info.end() && it->is_string()) {
            if (auto parsed = structs::parse_iso8601(it->get<std::string>()))
                peer.lastseen = *parsed;
        }
        peers.push_back(std::move(peer));
    }
    return peers;
}

PeeringVerdict judge_peers(const json& body, const std::string& identity, long priority,
                           PeeringClock::time_point now) {
    PeeringVerdict verdict;
    verdict.peers = parse_peers(body, now);
    for (const auto& peer : verdict.peers) {
        if (peer.is_dead(now)) {
            verdict.dead.push_back(peer);
            continue;
        }
        if (peer.identity == identity) continue;
        if (peer.priority > priority) verdict.higher.push_back(peer);
        if (peer.priority == priority) verdict.same.push_back(peer);
    }
    for (const auto* group : {&verdict.higher, &verdict.same}) {
        for (const auto& peer : *group) {
            if (!verdict.recheck || peer.deadline() < *verdict.recheck)
                verdict.recheck = peer.deadline();
        }
    }
    return verdict;
}

json touch_patch(const std::string& identity, long priority, long lifetime,
                 PeeringClock::time_point now) {
    json entry = lifetime > 0 ? Peer{identity, priority, lifetime, now}.as_dict() : json();
    return {{"status", {{identity, std::move(entry)}}}};
}

json clean_patch(const std::vector<Peer>& peers) {
    json status = json::object();
    for (const auto& peer : peers) status[peer.identity] = nullptr;
    return {{"status", std::move(status)}};
}

std::vector<structs::Resource> peering_resources(const PeeringSettings& settings,
                                                 const std::vector<structs::Resource>& found) {
    const std::string plural = settings.clusterwide ? "clusterkopfpeerings" : "kopfpeerings";
    std::vector<structs::Resource> resources;
    for (const std::string group : {"kopf.dev", "zalando.org"}) {
        for (const auto& resource : found) {
            if (resource.group == group && resource.version == "v1" && resource.plural == plural &&
                resource.namespaced == !settings.clusterwide)
                resources.push_back(resource);
        }
    }
    return resources;
}

asio::awaitable<bool> touch_peering(clients::ApiClient& api, structs::Resource resource,
                                    std::string namespace_, std::string name, std::string identity,
                                    long priority, long lifetime) {
    const json patch = touch_patch(identity, priority, lifetime, PeeringClock::now());
    // Kopf's CRDs keep the status in the object itself; one with a status subresource would
    // ignore it there.
    const std::string subresource = resource.subresources.count("status") ? "status" : "";
    try {
        co_await api.patch(std::move(resource), std::move(namespace_), std::move(name),
                           clients::PatchType::Merge, patch, subresource);
    } catch (const clients::NotFoundError&) {
        co_return false;
    }
    co_return true;
}

// ---- the pause -----------------------------------------------------------------------------

OperatorPause::Id OperatorPause::make(bool on, std::string name, bool warm) {
    const State before = state();
    const Id id = next_++;
    toggles_.emplace(id, Toggle{std::move(name), on, warm});
    changed(before);
    return id;
}

void OperatorPause::turn(Id id, bool on) {
    const auto found = toggles_.find(id);
    if (found == toggles_.end() || found->second.on == on) return;
    const State before = state();
    found->second.on = on;
    changed(before);
}

void OperatorPause::drop(Id id) {
    const State before = state();
    if (toggles_.erase(id) > 0) changed(before);
}

bool OperatorPause::is_on(Id id) const {
    const auto found = toggles_.find(id);
    return found != toggles_.end() && found->second.on;
}

bool OperatorPause::paused() const {
    return std::any_of(toggles_.begin(), toggles_.end(),
                       [](const auto& toggle) { return toggle.second.on; });
}

bool OperatorPause::cold() const {
    return std::any_of(toggles_.begin(), toggles_.end(),
                       [](const auto& toggle) { return toggle.second.on && !toggle.second.warm; });
}

bool OperatorPause::warm() const {
    return std::any_of(toggles_.begin(), toggles_.end(),
                       [](const auto& toggle) { return toggle.second.on && toggle.second.warm; });
}

std::vector<std::string> OperatorPause::blockers() const {
    std::vector<std::string> names;
    for (const auto& [id, toggle] : toggles_) {
        if (toggle.on) names.push_back(toggle.name);
    }
    return names;
}

void OperatorPause::changed(State before) {
    const State now = state();
    if (now != before && listener_) listener_(now.cold || now.warm);
}

// ---- the engine ----------------------------------------------------------------------------

struct PeeringEngine::Impl : std::enable_shared_from_this<PeeringEngine::Impl> {
    // One peering object: its watch, its keep-alives, its toggle of the pause.
    struct Peering {
        structs::Resource resource;
        std::string namespace_;
        OperatorPause::Id toggle = 0;
        std::shared_ptr<clients::StopSignal> stop = std::make_shared<clients::StopSignal>();
        json body;          // the latest state seen; null until seen (or after its deletion)
        bool told = false;  // the absence of the object is said once
        std::optional<asio::steady_timer> recheck;

        std::string what(const std::string& name) const {
            return fmt::format("{}@{}", name, namespace_.empty() ? "None" : namespace_);
        }
    };
    using Key = std::pair<std::string, std::string>;  // resource, namespace

    Impl(asio::io_context& io, clients::ApiClient& api, const OperatorSettings& settings,
         std::string identity, OperatorPause& pause)
        : io(io),
          api(api),
          settings(settings),
          peering(settings.peering),
          identity(std::move(identity)),
          pause(pause),
          log(runtime::logger(kLogger)) {}

    // This, keeping its owner alive (what shared_from_this() is to a class of its own).
    std::shared_ptr<Impl> anchored() {
        if (auto owner_alive = owner.lock()) return {owner_alive, this};
        return shared_from_this();
    }

    void adjust(const std::vector<structs::Resource>& resources,
                const std::set<std::string>& namespaces) {
        if (stopping) return;
        const bool missing = resources.empty();
        if (!missing_toggle) missing_toggle = pause.make(false, "peering CRD is missing");
        if (missing && peering.mandatory && !pause.is_on(*missing_toggle)) {
            log->error(
                "The mandatory peering '{}' cannot be used: the cluster has no {} CRD (apply "
                "deploy/peering.yaml). The operator is paused until it appears.",
                peering.name, peering.clusterwide ? "ClusterKopfPeering" : "KopfPeering");
        } else if (missing && !peering.mandatory && !warned_standalone) {
            warned_standalone = true;
            log->warn(
                "The peering CRD {} is absent: running in the standalone mode, not pausing for "
                "other operators (apply deploy/peering.yaml to peer; --standalone to say so).",
                peering.clusterwide ? "clusterkopfpeerings.kopf.dev" : "kopfpeerings.kopf.dev");
        }

        std::map<Key, structs::Resource> wanted;
        for (const auto& resource : resources) {
            if (!resource.namespaced) {
                wanted.emplace(Key{resource.to_string(), ""}, resource);
            } else {
                for (const auto& ns : namespaces)
                    wanted.emplace(Key{resource.to_string(), ns}, resource);
            }
        }
        for (auto it = peerings.begin(); it != peerings.end();) {
            if (wanted.count(it->first)) {
                ++it;
                continue;
            }
            // Its keep-alive removes this operator's entry on its way out.
            it->second->stop->stop();
            if (it->second->recheck) it->second->recheck->cancel();
            pause.drop(it->second->toggle);
            it = peerings.erase(it);
        }
        for (const auto& [key, resource] : wanted) {
            if (peerings.count(key)) continue;
            auto entry = std::make_shared<Peering>();
            entry->resource = resource;
            entry->namespace_ = key.second;
            // A mandatory peering pauses until its object says that nobody is in the way.
            entry->toggle = pause.make(peering.mandatory, entry->what(peering.name));
            peerings.emplace(key, entry);
            start_keepalive(entry);
            start_watching(entry);
        }
        // Last: a mandatory peering's new toggles are on before this one goes off.
        pause.turn(*missing_toggle, missing && peering.mandatory);
    }

    // ---- keep-alives ----

    void start_keepalive(const std::shared_ptr<Peering>& entry) {
        ++keepalives;
        asio::co_spawn(io, keepalive(anchored(), entry), [](std::exception_ptr) {});
    }

    static asio::awaitable<void> keepalive(std::shared_ptr<Impl> self,
                                           std::shared_ptr<Peering> entry) {
        while (!entry->stop->stopped()) {
            try {
                co_await self->touch(*entry, self->peering.lifetime);
            } catch (const std::exception& error) {
                self->log->error("Keep-alive in '{}' {} has failed: {}", self->peering.name,
                                 where(entry->namespace_), error.what());
            }
            if (entry->stop->stopped()) break;
            // Slightly before the lifetime ends, with a jitter to spread the operators' patches.
            const long lifetime = self->peering.lifetime;
            std::uniform_int_distribution<long> jitter(5, 10);
            const long duration = std::min(lifetime, std::max(1L, lifetime - jitter(rng())));
            co_await self->api.sleep(clients::Seconds(std::max(1L, duration)), entry->stop.get());
        }
        try {
            co_await self->touch(*entry, 0);
        } catch (const std::exception& error) {
            self->log->error("Couldn't remove self from the peering. Ignoring. {}", error.what());
        }
        --self->keepalives;
        self->check_stopped();
    }

    asio::awaitable<void> touch(const Peering& entry, long lifetime) {
        const bool found =
            co_await touch_peering(api, entry.resource, entry.namespace_, peering.name, identity,
                                   peering.priority, lifetime);
        if (!peering.stealth || !found) {
            log->debug("Keep-alive in '{}' {}: {}.", peering.name, where(entry.namespace_),
                       found ? "ok" : "not found");
        }
    }

    // ---- watching ----

    void start_watching(const std::shared_ptr<Peering>& entry) {
        auto self = anchored();
        asio::co_spawn(
            io,
            [self, entry]() -> asio::awaitable<void> {
                // Named first: g++ 12 destroys argument temporaries of a co_await twice.
                clients::WatchRequest request{
                    .resource = entry->resource,
                    .namespace_ = entry->namespace_,
                    .settings = configs::watch_settings(self->settings),
                    .selectors = {.field_selector = "metadata.name=" + self->peering.name},
                    .on_event =
                        [self, entry](clients::WatchEvent&& event) {
                            self->on_event(entry, std::move(event));
                        },
                    .stop = entry->stop.get(),
                    .on_listed = [self, entry] { self->on_listed(entry); }};
                auto watching = self->api.watch_objs(std::move(request));
                co_await std::move(watching);
            },
            [log = log, what = entry->what(peering.name)](std::exception_ptr error) {
                if (error)
                    log->error("Watching the peering {} has failed: {}", what,
                               runtime::describe(error));
            });
    }

    void on_event(const std::shared_ptr<Peering>& entry, clients::WatchEvent&& event) {
        if (stopping || entry->stop->stopped()) return;
        if (structs::metadata_field(event.object, "name") != peering.name) return;
        entry->body = event.type == "DELETED" ? json() : std::move(event.object);
        judge(entry);
    }

    void on_listed(const std::shared_ptr<Peering>& entry) {
        if (stopping || entry->stop->stopped() || !entry->body.is_null() || entry->told) return;
        entry->told = true;
        if (peering.mandatory) {
            log->warn(
                "The mandatory peering '{}' {} does not exist: the operator is paused until it is "
                "created.",
                peering.name, where(entry->namespace_));
        } else {
            log->warn(
                "The peering '{}' {} does not exist: running in the standalone mode until it is "
                "created.",
                peering.name, where(entry->namespace_));
        }
    }

    // Kopf's process_peering_event: pause in favour of higher peers, pause everyone for peers of
    // the same priority, resume when they are gone; clean the dead ones.
    void judge(const std::shared_ptr<Peering>& entry) {
        const auto now = PeeringClock::now();
        const auto verdict = judge_peers(entry->body, identity, peering.priority, now);
        if (!verdict.dead.empty()) clean(entry, verdict.dead);
        const OperatorPause::Id toggle = entry->toggle;
        if (!verdict.higher.empty()) {
            if (!pause.is_on(toggle)) {
                log->info("Pausing operations in favour of {}.", repr(verdict.higher));
                pause.turn(toggle, true);
            }
        } else if (!verdict.same.empty()) {
            log->warn("Possibly conflicting operators with the same priority: {}.",
                      repr(verdict.same));
            if (!pause.is_on(toggle)) {
                log->warn("Pausing all operators, including self: {}", repr(verdict.peers));
                pause.turn(toggle, true);
            }
        } else if (pause.is_on(toggle)) {
            log->info(
                "Resuming operations after the pause. Conflicting operators with the same "
                "priority are gone.");
            pause.turn(toggle, false);
        }
        // The blocking peers may expire in silence: judge again at their deadline.
        if (entry->recheck) entry->recheck->cancel();
        if (!verdict.recheck) return;
        const auto delay = std::max(PeeringClock::duration::zero(), *verdict.recheck - now) +
                           std::chrono::milliseconds(1);
        entry->recheck.emplace(io, std::chrono::duration_cast<asio::steady_timer::duration>(delay));
        entry->recheck->async_wait([self = anchored(), entry](const boost::system::error_code& ec) {
            if (ec || self->stopping || entry->stop->stopped()) return;
            self->judge(entry);
        });
    }

    void clean(const std::shared_ptr<Peering>& entry, const std::vector<Peer>& dead) {
        auto self = anchored();
        log->debug("Removing the expired peers from '{}' {}: {}.", peering.name,
                   where(entry->namespace_), repr(dead));
        asio::co_spawn(
            io,
            [self, entry, patch = clean_patch(dead)]() -> asio::awaitable<void> {
                const std::string subresource =
                    entry->resource.subresources.count("status") ? "status" : "";
                co_await self->api.patch(entry->resource, entry->namespace_, self->peering.name,
                                         clients::PatchType::Merge, patch, subresource);
            },
            [self](std::exception_ptr error) {
                if (error)
                    self->log->warn("Expired peers are not removed: {}", runtime::describe(error));
            });
    }

    // ---- stopping ----

    void stop(std::function<void()> finished) {
        stopping = true;
        on_stopped = std::move(finished);
        for (auto& [key, entry] : peerings) {
            entry->stop->stop();
            if (entry->recheck) entry->recheck->cancel();
        }
        check_stopped();
    }

    void check_stopped() {
        if (!stopping || keepalives > 0 || !on_stopped) return;
        auto finished = std::move(on_stopped);
        on_stopped = nullptr;
        finished();
    }

    asio::io_context& io;
    clients::ApiClient& api;
    const OperatorSettings& settings;
    const PeeringSettings& peering;
    const std::string identity;
    OperatorPause& pause;
    std::shared_ptr<spdlog::logger> log;
    std::weak_ptr<void> owner;
    std::map<Key, std::shared_ptr<Peering>> peerings;
    std::optional<OperatorPause::Id> missing_toggle;
    bool warned_standalone = false;
    bool stopping = false;
    int keepalives = 0;
    std::function<void()> on_stopped;
};

PeeringEngine::PeeringEngine(asio::io_context& io, clients::ApiClient& api,
                             const OperatorSettings& settings, std::string identity,
                             OperatorPause& pause)
    : impl_(std::make_shared<Impl>(io, api, settings, std::move(identity), pause)) {}

PeeringEngine::~PeeringEngine() = default;

void PeeringEngine::adjust(const std::vector<structs::Resource>& resources,
                           const std::set<std::string>& namespaces) {
    impl_->adjust(resources, namespaces);
}

void PeeringEngine::stop(std::function<void()> finished) {
    impl_->stop(std::move(finished));
}

const std::string& PeeringEngine::identity() const {
    return impl_->identity;
}

void PeeringEngine::anchor(std::weak_ptr<void> owner) {
    impl_->owner = std::move(owner);
}

}  // namespace kopf::engines
