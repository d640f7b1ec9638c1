#include "core/engines/leases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <ctime>
#include <utility>

#include "clients/api.hpp"
#include "clients/errors.hpp"
#include "clients/stop.hpp"
#include "core/actions/logging.hpp"
#include "structs/timestamps.hpp"

namespace asio = boost::asio;

namespace kopf::engines {

namespace {

structs::Resource leases_resource() {
    structs::Resource resource;
    resource.group = "coordination.k8s.io";
    resource.version = "v1";
    resource.plural = "leases";
    resource.kind = "Lease";
    resource.singular = "lease";
    resource.namespaced = true;
    return resource;
}

template <class Duration>
asio::steady_timer::duration steady(Duration seconds) {
    return std::chrono::duration_cast<asio::steady_timer::duration>(
        std::chrono::duration<double>(seconds));
}

}  // namespace

std::string format_micro_time(PeeringClock::time_point t) {
    using namespace std::chrono;
    const auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
    const auto secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
}

bool lease_is_available(const json& spec, const std::string& identity,
                        PeeringClock::time_point now) {
    if (!spec.is_object()) return true;
    const std::string holder = spec.value("holderIdentity", std::string());
    if (holder.empty() || holder == identity) return true;
    const auto renewed = structs::parse_iso8601(spec.value("renewTime", std::string()));
    if (!renewed) return true;
    const auto duration = spec.value("leaseDurationSeconds", 0L);
    return *renewed + std::chrono::seconds(duration) <= now;
}

double standby_retry_delay(const json& spec, PeeringClock::time_point now, double retry_period) {
    if (!spec.is_object()) return retry_period;
    const auto renewed = structs::parse_iso8601(spec.value("renewTime", std::string()));
    if (!renewed) return retry_period;
    const auto expiry = *renewed + std::chrono::seconds(spec.value("leaseDurationSeconds", 0L));
    const double until = std::chrono::duration<double>(expiry - now).count();
    // A little after the expiry: the holder's clock wrote renewTime, and "expired" is strict.
    return std::clamp(until + 0.01, 0.01, retry_period);
}

struct LeaseElector::Impl : std::enable_shared_from_this<LeaseElector::Impl> {
    Impl(asio::io_context& io, clients::ApiClient& api, const OperatorSettings& settings,
         std::string identity, OperatorPause& pause)
        : io(io),
          api(api),
          leasing(settings.leasing),
          name(settings.leasing.name.value_or("")),
          identity(std::move(identity)),
          pause(pause),
          log(runtime::logger("kopf.engines.leases")),
          deadline(io),
          next_attempt(settings.leasing.retry_period) {
        // A standby until the Lease is held: a warm pause (watching goes on, handling does not).
        toggle = pause.make(true, fmt::format("lease {}/{}", leasing.namespace_, name),
                            /*warm=*/true);
    }

    std::shared_ptr<Impl> anchored() {
        if (auto owner_alive = owner.lock()) return {owner_alive, this};
        return shared_from_this();
    }

    void start() {
        log->info("Competing for the lease {}/{} as '{}'.", leasing.namespace_, name, identity);
        asio::co_spawn(io, run(anchored()), [](std::exception_ptr) {});
    }

    static asio::awaitable<void> run(std::shared_ptr<Impl> self) {
        while (!self->stop_signal.stopped()) {
            try {
                co_await self->acquire_or_renew();
            } catch (const std::exception& error) {
                self->log->warn("The lease {}/{} is not acquired or renewed: {}",
                                self->leasing.namespace_, self->name, error.what());
            }
            if (self->stop_signal.stopped()) break;
            co_await self->api.sleep(
                clients::Seconds(std::exchange(self->next_attempt, self->leasing.retry_period)),
                &self->stop_signal);
        }
        if (self->leading) {
            try {
                co_await self->release();
            } catch (const std::exception& error) {
                self->log->warn("The lease {}/{} is not released: {}", self->leasing.namespace_,
                                self->name, error.what());
            }
        }
        self->deadline.cancel();
        self->running = false;
        if (auto finished = std::move(self->on_stopped)) finished();
    }

    long duration_seconds() const {
        return std::max(1L, static_cast<long>(std::ceil(leasing.lease_duration)));
    }

    asio::awaitable<void> acquire_or_renew() {
        // The renewTime written below is as old as this attempt: the leadership it gives lasts
        // from here, however long the requests take.
        const auto started = asio::steady_timer::clock_type::now();
        const auto resource = leases_resource();
        json lease;
        try {
            lease = co_await api.get(resource, leasing.namespace_, name);
        } catch (const clients::NotFoundError&) {
            lease = nullptr;
        }
        const auto now = PeeringClock::now();
        if (lease.is_null()) {
            json body = {{"apiVersion", "coordination.k8s.io/v1"},
                         {"kind", "Lease"},
                         {"metadata", {{"name", name}, {"namespace", leasing.namespace_}}},
                         {"spec",
                          {{"holderIdentity", identity},
                           {"leaseDurationSeconds", duration_seconds()},
                           {"acquireTime", format_micro_time(now)},
                           {"renewTime", format_micro_time(now)},
                           {"leaseTransitions", 0}}}};
            try {
                co_await api.create(resource, leasing.namespace_, body);
            } catch (const clients::ConflictError&) {
                co_return;  // another replica created it first
            }
            lead(started, 0);
            co_return;
        }
        json spec = lease.value("spec", json::object());
        if (!lease_is_available(spec, identity, now)) {
            if (leading) lost(fmt::format("it is held by '{}'", spec.value("holderIdentity", "")));
            next_attempt = standby_retry_delay(spec, PeeringClock::now(), leasing.retry_period);
            co_return;
        }
        const bool own = spec.value("holderIdentity", std::string()) == identity;
        spec["holderIdentity"] = identity;
        spec["leaseDurationSeconds"] = duration_seconds();
        spec["renewTime"] = format_micro_time(now);
        if (!own || !leading) {
            spec["acquireTime"] = format_micro_time(now);
            if (!own) spec["leaseTransitions"] = spec.value("leaseTransitions", 0L) + 1;
        }
        lease["spec"] = spec;
        try {
            co_await api.update(resource, leasing.namespace_, name, lease);
        } catch (const clients::ConflictError&) {
            co_return;  // changed meanwhile: judged again at the next try
        }
        lead(started, spec.value("leaseTransitions", 0L));
    }

    // client-go's release on cancel: no holder, a 1-second lease, so a standby takes it now.
    asio::awaitable<void> release() {
        const auto resource = leases_resource();
        json lease = co_await api.get(resource, leasing.namespace_, name);
        json& spec = lease["spec"];
        if (spec.value("holderIdentity", std::string()) != identity) co_return;
        const auto now = PeeringClock::now();
        spec["holderIdentity"] = "";
        spec["leaseDurationSeconds"] = 1;
        spec["renewTime"] = format_micro_time(now);
        co_await api.update(resource, leasing.namespace_, name, lease);
        leading = false;
        log->info("Released the lease {}/{}.", leasing.namespace_, name);
    }

    // The Lease is written with this replica as its holder by the attempt begun at `started`.
    // The leader stops handling once the renew deadline passes without a renewal: earlier than
    // its lease can expire for the standbys. An answer that comes after that is too late to lead.
    void lead(asio::steady_timer::time_point started, long transitions) {
        const auto until = started + steady(leasing.renew_deadline);
        if (until <= asio::steady_timer::clock_type::now()) {
            if (leading) lost("it is renewed too late (after the renew deadline)");
            return;
        }
        deadline.expires_at(until);
        deadline.async_wait([self = anchored()](const boost::system::error_code& ec) {
            if (ec || !self->leading || self->stop_signal.stopped()) return;
            self->lost(fmt::format("it is not renewed within the renew deadline ({}s)",
                                   self->leasing.renew_deadline));
        });
        if (leading) return;
        leading = true;
        log->info("Acquired the lease {}/{} (transitions: {}): this operator leads.",
                  leasing.namespace_, name, transitions);
        pause.turn(toggle, false);
    }

    void lost(const std::string& why) {
        leading = false;
        deadline.cancel();
        log->warn("Lost the lease {}/{}: {}. Standing by.", leasing.namespace_, name, why);
        pause.turn(toggle, true);
    }

    void stop(std::function<void()> finished) {
        if (!running) {
            finished();
            return;
        }
        on_stopped = std::move(finished);
        stop_signal.stop();
    }

    asio::io_context& io;
    clients::ApiClient& api;
    const LeasingSettings& leasing;
    const std::string name;
    const std::string identity;
    OperatorPause& pause;
    std::shared_ptr<spdlog::logger> log;
    std::weak_ptr<void> owner;
    OperatorPause::Id toggle = 0;
    asio::steady_timer deadline;
    clients::StopSignal stop_signal;
    bool leading = false;
    bool running = false;
    double next_attempt = 0;  // seconds until the next attempt (standby_retry_delay)
    std::function<void()> on_stopped;
};

LeaseElector::LeaseElector(asio::io_context& io, clients::ApiClient& api,
                           const OperatorSettings& settings, std::string identity,
                           OperatorPause& pause)
    : impl_(std::make_shared<Impl>(io, api, settings, std::move(identity), pause)) {}

LeaseElector::~LeaseElector() = default;

void LeaseElector::anchor(std::weak_ptr<void> owner) {
    impl_->owner = std::move(owner);
}

void LeaseElector::start() {
    impl_->running = true;
    impl_->start();
}

void LeaseElector::stop(std::function<void()> finished) {
    impl_->stop(std::move(finished));
}

bool LeaseElector::leading() const {
    return impl_->leading;
}

}  // namespace kopf::engines
