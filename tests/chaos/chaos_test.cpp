// The chaos test (issue 23): a real operator process (`kopf run tests/chaos/chaos_operator.cpp`)
// with creation, update, field and deletion handlers over a few hundred objects, while the API
// server it talks to (over TLS, with token authentication) drops every watch, compacts its
// history (410 on resume), fails bursts of requests with 500/503/429 + Retry-After, delays
// responses, stalls watches, restarts on its data directory and rotates the operator's token,
// and while the operator is killed with SIGKILL in the middle of a handler and started again.
//
// At the end, every change of every object has had exactly one successful run of each matching
// handler, counted from the handlers' side effects in a file outside the operator (not from its
// memory, which SIGKILL loses), no Kopf progress is left on the objects, and the time to
// converge is printed with the faults injected per kind (figures: docs/reliability.md).
//
// The faults come from a seeded schedule; the seed is printed. To replay a run's schedule:
//   KOPF_CHAOS_SEED=<seed> ctest --preset default -R chaos
// KOPF_CHAOS_OBJECTS sets the number of objects (default 300; 60 under AddressSanitizer).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <kopf/apiserver/server.hpp>
#include <kopf/connection.hpp>
#include <kopf/json.hpp>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "clients/api.hpp"
#include "clients/errors.hpp"
#include "e2e/support/e2e.hpp"
#include "net/certificates.hpp"
#include "net/kubeconfig.hpp"
#include "sanitizers.hpp"
#include "structs/credentials.hpp"
#include "support/restartable_port.hpp"

namespace kopf::chaos {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

#if defined(KOPF_UNDER_ADDRESS_SANITIZER)
constexpr int kDefaultObjects = 60;
#else
constexpr int kDefaultObjects = 300;
#endif

int object_count() {
    const char* text = std::getenv("KOPF_CHAOS_OBJECTS");
    return text ? std::max(1, std::atoi(text)) : kDefaultObjects;
}

std::uint64_t chaos_seed() {
    if (const char* text = std::getenv("KOPF_CHAOS_SEED")) return std::stoull(text);
    return std::random_device{}();
}

// ---------------------------------------------------------------------------------------------
// The schedule of faults: made from the seed alone, before the run, so a seed replays it.

enum class Kind { drop, compact, fail500, fail503, fail429, delay, stall, restart, rotate, kill };
constexpr Kind kKinds[] = {Kind::drop,  Kind::compact, Kind::fail500, Kind::fail503, Kind::fail429,
                           Kind::delay, Kind::stall,   Kind::restart, Kind::rotate,  Kind::kill};

const char* name_of(Kind kind) {
    switch (kind) {
        case Kind::drop:
            return "drop-watches";
        case Kind::compact:
            return "compact-history";
        case Kind::fail500:
            return "fail-500";
        case Kind::fail503:
            return "fail-503";
        case Kind::fail429:
            return "fail-429";
        case Kind::delay:
            return "delay-responses";
        case Kind::stall:
            return "stall-watches";
        case Kind::restart:
            return "restart-apiserver";
        case Kind::rotate:
            return "rotate-token";
        case Kind::kill:
            return "kill-9-operator";
    }
    return "?";
}

struct Fault {
    Kind kind = Kind::drop;
    int count = 0;                          // failed requests in a burst
    int retry_after = 0;                    // seconds, for 429/503
    std::chrono::milliseconds delay{0};     // of each response while delaying
    std::chrono::milliseconds duration{0};  // of a delay or a stall
    std::chrono::milliseconds pause{0};     // before the fault
    std::string describe() const {
        std::ostringstream text;
        text << name_of(kind);
        if (count) text << " x" << count;
        if (retry_after) text << " retry-after=" << retry_after << "s";
        if (delay.count()) text << " " << delay.count() << "ms";
        if (duration.count()) text << " for " << duration.count() << "ms";
        return text.str();
    }
};

// Every kind twice, in a seeded order, with seeded parameters; split into `phases` slices.
std::vector<std::vector<Fault>> make_schedule(std::uint64_t seed, int phases) {
    std::mt19937_64 random(seed);
    auto between = [&random](int low, int high) {
        return low + static_cast<int>(random() % static_cast<std::uint64_t>(high - low + 1));
    };
    std::vector<Fault> faults;
    for (int round = 0; round < 2; ++round) {
        for (Kind kind : kKinds) faults.push_back({.kind = kind});
    }
    for (std::size_t i = faults.size() - 1; i > 0; --i) {  // Fisher-Yates, the same everywhere
        std::swap(faults[i], faults[static_cast<std::size_t>(between(0, static_cast<int>(i)))]);
    }
    for (auto& fault : faults) {
        fault.pause = std::chrono::milliseconds(between(50, 400));
        switch (fault.kind) {
            case Kind::fail500:
                fault.count = between(3, 20);
                break;
            case Kind::fail503:
            case Kind::fail429:
                fault.count = between(3, 20);
                fault.retry_after = between(0, 2);
                break;
            case Kind::delay:
                fault.delay = std::chrono::milliseconds(between(50, 400));
                fault.duration = std::chrono::milliseconds(between(1000, 2500));
                break;
            case Kind::stall:
                fault.duration = std::chrono::milliseconds(between(500, 3000));
                break;
            default:
                break;
        }
    }
    std::vector<std::vector<Fault>> slices(static_cast<std::size_t>(phases));
    for (std::size_t i = 0; i < faults.size(); ++i) {
        slices[i * static_cast<std::size_t>(phases) / faults.size()].push_back(faults[i]);
    }
    // A kill goes first in its phase, while the phase's changes are being handled: it is meant
    // to land in the middle of a handler.
    for (auto& slice : slices) {
        std::stable_partition(slice.begin(), slice.end(),
                              [](const Fault& fault) { return fault.kind == Kind::kill; });
    }
    return slices;
}

// ---------------------------------------------------------------------------------------------
// The handlers' records ("<event> <handler> <name> <step>", see chaos_operator.cpp).

struct Records {
    std::map<std::string, int> done;          // "handler name step" -> successful runs
    std::map<std::string, std::string> last;  // the same key -> its last event
    int held = 0;
};

Records read_records(const fs::path& path) {
    Records records;
    std::ifstream in(path);
    std::string event, handler, name, step;
    while (in >> event >> handler >> name >> step) {
        const std::string key = handler + " " + name + " " + step;
        if (event == "done") ++records.done[key];
        if (event == "held") ++records.held;
        records.last[key] = event;
    }
    return records;
}

// Handlers that have started and neither finished nor been held.
int running_handlers(const Records& records) {
    return static_cast<int>(std::count_if(records.last.begin(), records.last.end(),
                                          [](const auto& kv) { return kv.second == "start"; }));
}

// ---------------------------------------------------------------------------------------------
// The test's own client: the client layer on a thread of its own, with a token that the test
// never rotates, and every call retried until it lands (the faults hit the test's requests too).

structs::Resource chaosobjects() {
    structs::Resource resource;
    resource.group = "chaos.kopf.dev";
    resource.version = "v1";
    resource.plural = "chaosobjects";
    resource.kind = "ChaosObject";
    resource.singular = "chaosobject";
    resource.subresources = {"status"};
    resource.namespaced = true;
    return resource;
}

structs::Resource crds() {
    structs::Resource resource;
    resource.group = "apiextensions.k8s.io";
    resource.version = "v1";
    resource.plural = "customresourcedefinitions";
    resource.kind = "CustomResourceDefinition";
    resource.namespaced = false;
    return resource;
}

json chaosobjects_crd() {
    const json preserved = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    return {{"apiVersion", "apiextensions.k8s.io/v1"},
            {"kind", "CustomResourceDefinition"},
            {"metadata", {{"name", "chaosobjects.chaos.kopf.dev"}}},
            {"spec",
             {{"scope", "Namespaced"},
              {"group", "chaos.kopf.dev"},
              {"names",
               {{"kind", "ChaosObject"}, {"plural", "chaosobjects"}, {"singular", "chaosobject"}}},
              {"versions",
               {{{"name", "v1"},
                 {"served", true},
                 {"storage", true},
                 {"subresources", {{"status", json::object()}}},
                 {"schema",
                  {{"openAPIV3Schema",
                    {{"type", "object"},
                     {"properties", {{"spec", preserved}, {"status", preserved}}}}}}}}}}}}};
}

class Client {
  public:
    explicit Client(const ConnectionInfo& admin) {
        auto vault = std::make_shared<structs::Vault>();
        vault->populate({{"admin", admin}});
        clients::ClientSettings settings;
        // Short and many: the test's polls meet the injected failures too, and must not add
        // seconds of their own backoff to the time to converge that they measure.
        settings.error_backoffs = std::vector<double>(40, 0.1);
        settings.request_timeout = clients::Seconds(30);
        api_ = std::make_unique<clients::ApiClient>(
            io_.get_executor(), vault,
            [admin] {
                return std::map<std::string, ConnectionInfo>{{"admin", admin}};
            },
            settings);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~Client() {
        work_.reset();
        io_.stop();
        thread_.join();
        api_.reset();
    }
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    clients::ApiClient& api() { return *api_; }

    // Runs `make()` (a fresh awaitable per attempt) until it succeeds or throws `Done` (an
    // answer that means the call has had its effect), for up to two minutes.
    template <class Done = std::nullptr_t, class Make>
    std::optional<json> until_done(const Make& make) {
        const auto deadline = Clock::now() + 120s;
        while (true) {
            try {
                return asio::co_spawn(io_, make(), asio::use_future).get();
            } catch (const std::exception& error) {
                if constexpr (!std::is_same_v<Done, std::nullptr_t>) {
                    if (dynamic_cast<const Done*>(&error)) return std::nullopt;
                }
                if (Clock::now() > deadline) throw;
                std::this_thread::sleep_for(200ms);
            }
        }
    }

    // The same for many calls at once (the faults delay each of them).
    template <class Done = std::nullptr_t, class Make>
    void all_until_done(int count, const Make& make_for) {
        std::vector<std::future<void>> calls;
        for (int i = 0; i < count; ++i) {
            calls.push_back(std::async(std::launch::async, [this, i, &make_for] {
                until_done<Done>([&make_for, i] { return make_for(i); });
            }));
            if (calls.size() >= 32) {
                for (auto& call : calls) call.get();
                calls.clear();
            }
        }
        for (auto& call : calls) call.get();
    }

  private:
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
    std::unique_ptr<clients::ApiClient> api_;
    std::thread thread_;
};

// ---------------------------------------------------------------------------------------------
// The API server, restarted on the same port, data directory and serving certificate.

class Cluster {
  public:
    explicit Cluster(const fs::path& dir) : dir_(dir) {
        const auto ca = apiserver::net::generate_ca("chaos-ca");
        const auto serving = apiserver::net::issue_certificate(ca, "kopf-apiserver", {},
                                                               {"localhost"}, {"127.0.0.1"}, true);
        ca_pem_ = ca.cert_pem;
        write(dir_ / "serving.crt", serving.cert_pem);
        write(dir_ / "serving.key", serving.key_pem);
        options_.tls = true;
        options_.tls_cert_file = dir_ / "serving.crt";
        options_.tls_private_key_file = dir_ / "serving.key";
        options_.token_auth_file = dir_ / "tokens.csv";
        options_.data_dir = dir_ / "data";
        options_.bookmark_interval = 1s;
        fs::create_directories(options_.data_dir);
        write_tokens();
        options_.port = kopf::testing::restartable_port();  // the same port on every restart
        start();
    }
    ~Cluster() { server_->stop(); }
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    apiserver::Server& server() { return *server_; }
    fs::path operator_kubeconfig() const { return dir_ / "operator-kubeconfig.yaml"; }
    ConnectionInfo admin() const {
        ConnectionInfo info;
        info.server = server_->url();
        info.ca_data = ca_pem_;
        info.scheme = "Bearer";
        info.token = kTestToken;
        return info;
    }

    void restart() {
        server_->stop();
        server_.reset();
        start();
    }
    // A new token for the operator, the old one revoked: its next request gets 401, and its
    // login handler reads the new one from its kubeconfig.
    void rotate_token() {
        ++generation_;
        server_->stop();
        server_.reset();
        write_tokens();
        start();
    }

  private:
    static constexpr const char* kTestToken = "chaos-test-token";
    static void write(const fs::path& path, const std::string& text) {
        const fs::path temporary = path.string() + ".tmp";
        std::ofstream(temporary, std::ios::trunc) << text;
        fs::rename(temporary, path);  // readers never see half a file
    }
    std::string operator_token() const { return "operator-token-" + std::to_string(generation_); }
    void write_tokens() {
        write(options_.token_auth_file,
              std::string(kTestToken) + ",chaos-test,1,\"system:masters\"\n" + operator_token() +
                  ",chaos-operator,2,\"system:masters\"\n");
    }
    void start() {
        for (int attempt = 0;; ++attempt) {
            try {
                server_ = std::make_unique<apiserver::Server>(options_);
                server_->start();
                break;
            } catch (const std::exception& error) {
                if (attempt >= 50) throw;  // the port is still held by the stopped server
                std::this_thread::sleep_for(100ms);
            }
        }
        write(operator_kubeconfig(),
              apiserver::net::render_kubeconfig({server_->url(), ca_pem_, operator_token()}));
    }

    fs::path dir_;
    apiserver::ServerOptions options_;
    std::string ca_pem_;
    int generation_ = 0;
    std::unique_ptr<apiserver::Server> server_;
};

// ---------------------------------------------------------------------------------------------

class Chaos : public ::testing::Test {
  protected:
    void SetUp() override {
        char name[] = "/tmp/kopf-chaos-XXXXXX";
        dir_ = ::mkdtemp(name);
        records_ = dir_ / "records.txt";
        hold_ = dir_ / "hold";
        ::setenv("KOPF_CHAOS_RECORDS", records_.c_str(), 1);
        ::setenv("KOPF_CHAOS_HOLD", hold_.c_str(), 1);
    }
    void TearDown() override {
        operator_.reset();
        client_.reset();
        cluster_.reset();
        if (!HasFailure()) {
            std::error_code ignored;
            fs::remove_all(dir_, ignored);
        } else {
            std::cout << "chaos: files kept in " << dir_ << std::endl;
        }
    }

    void start_operator() {
        operator_ = std::make_unique<e2e::OperatorProcess>(
            cluster_->operator_kubeconfig(),
            std::vector<std::string>{
                (e2e::source_dir() / "tests/chaos/chaos_operator.cpp").string(), "--standalone",
                "-n", "default"});
    }

    // SIGKILL while a handler is held before its side effect (and none is between its side
    // effect and the patch that records it, which no framework can make atomic with a file
    // outside it); then a fresh operator process.
    // From now on, handlers that start wait before their side effects (until the kill).
    void hold_handlers() {
        if (fs::exists(hold_)) return;
        held_before_hold_ = read_records(records_).held;
        std::ofstream(hold_) << "held\n";
    }

    // With `another_follows`, the handlers stay held for the next kill: the fresh operator
    // would otherwise finish the phase's work before it.
    void kill_operator_mid_handler(bool another_follows) {
        hold_handlers();
        // The phase's handlers are held from its start, so one always comes; under a loaded
        // machine (sanitizers, tests beside it) after a fault's backoffs it can take seconds.
        const bool mid_handler =
            wait([&] { return read_records(records_).held > held_before_hold_; }, 30s);
        // Let the handlers that passed the hold before it was set finish and record success.
        int done_before = -1;
        wait(
            [&] {
                const auto records = read_records(records_);
                int done = 0;
                for (const auto& [key, count] : records.done) done += count;
                const bool quiet = running_handlers(records) == 0 && done == done_before;
                done_before = done;
                return quiet;
            },
            10s, 1s);
        EXPECT_EQ(operator_->stop(SIGKILL, 30s), 128 + SIGKILL);
        if (mid_handler) ++killed_mid_handler_;
        if (another_follows) {
            held_before_hold_ = read_records(records_).held;
        } else {
            fs::remove(hold_);
        }
        start_operator();
    }

    void inject(const Fault& fault, bool another_kill_follows) {
        auto& server = cluster_->server();
        // A new burst or a new server replaces what is left of the last burst.
        if (fault.count || fault.kind == Kind::restart || fault.kind == Kind::rotate)
            unused_failures_ += server.failing_requests_left();
        switch (fault.kind) {
            case Kind::drop:
                server.drop_watches();
                break;
            case Kind::compact:
                server.compact_history();
                server.drop_watches();  // their resumption meets the compacted history: 410
                break;
            case Kind::fail500:
            case Kind::fail503:
            case Kind::fail429:
                failures_ += fault.count;
                server.fail_next_requests(fault.count,
                                          fault.kind == Kind::fail500   ? 500
                                          : fault.kind == Kind::fail503 ? 503
                                                                        : 429,
                                          fault.retry_after);
                break;
            case Kind::delay:
                server.delay_responses(fault.delay);
                std::this_thread::sleep_for(fault.duration);
                cluster_->server().delay_responses(0ms);
                break;
            case Kind::stall:
                server.stall_watches(true);
                std::this_thread::sleep_for(fault.duration);
                cluster_->server().stall_watches(false);
                break;
            case Kind::restart:
                cluster_->restart();
                break;
            case Kind::rotate:
                cluster_->rotate_token();
                break;
            case Kind::kill:
                kill_operator_mid_handler(another_kill_follows);
                break;
        }
        ++injected_[fault.kind];
    }

    // Polls every `interval` until `condition` holds (true) or `limit` passes (false).
    static bool wait(const std::function<bool()>& condition, std::chrono::milliseconds limit,
                     std::chrono::milliseconds interval = 200ms) {
        const auto deadline = Clock::now() + limit;
        while (!condition()) {
            if (Clock::now() >= deadline) return false;
            std::this_thread::sleep_for(interval);
        }
        return true;
    }

    // Kopf's progress records still on an object: per-handler annotations and
    // status.kopf.progress (the diff base, last-handled-configuration, is meant to stay).
    static std::vector<std::string> leftover_progress(const json& object) {
        std::vector<std::string> leftovers;
        const auto annotations = object.value("/metadata/annotations"_json_pointer, json::object());
        for (const auto& [key, value] : annotations.items()) {
            if (key.rfind("kopf.zalando.org/", 0) == 0 &&
                key != "kopf.zalando.org/last-handled-configuration") {
                leftovers.push_back(key);
            }
        }
        const auto progress = object.value("/status/kopf/progress"_json_pointer, json());
        if (!progress.is_null() && !progress.empty()) leftovers.push_back("status.kopf.progress");
        return leftovers;
    }

    fs::path dir_, records_, hold_;
    std::unique_ptr<Cluster> cluster_;
    std::unique_ptr<Client> client_;
    std::unique_ptr<e2e::OperatorProcess> operator_;
    std::map<Kind, int> injected_;
    int failures_ = 0;         // requests to fail, over all bursts
    int unused_failures_ = 0;  // of those, not requested by anyone before their phase ended
    int killed_mid_handler_ = 0;
    int held_before_hold_ = 0;
};

TEST_F(Chaos, EveryChangeIsHandledExactlyOnceThroughFaultsRestartsAndKills) {
    const int objects = object_count();
    const std::uint64_t seed = chaos_seed();
    constexpr int kPhases = 5;  // create, three rounds of updates, delete
    const auto schedule = make_schedule(seed, kPhases);
    std::cout << "chaos: seed " << seed << " (replay: KOPF_CHAOS_SEED=" << seed << "), objects "
              << objects << std::endl;
    for (int phase = 0; phase < kPhases; ++phase) {
        std::cout << "chaos: phase " << phase << " faults:";
        for (const auto& fault : schedule[static_cast<std::size_t>(phase)]) {
            std::cout << " [" << fault.describe() << "]";
        }
        std::cout << std::endl;
    }

    cluster_ = std::make_unique<Cluster>(dir_);
    client_ = std::make_unique<Client>(cluster_->admin());
    const auto resource = chaosobjects();
    client_->until_done<clients::AlreadyExistsError>(
        [&] { return client_->api().create(crds(), "", chaosobjects_crd()); });
    ASSERT_TRUE(wait(
        [&] {
            try {
                client_->until_done([&] { return client_->api().list(resource, "default"); });
                return true;
            } catch (const std::exception&) {
                return false;
            }
        },
        30s));
    start_operator();

    auto name_of_object = [](int i) { return "chaos-" + std::to_string(i); };
    // What each phase changes and which handler runs it must cause ("handler name step").
    std::set<std::string> expected;
    auto expect = [&expected](const std::string& handler, const std::string& name, int step) {
        expected.insert(handler + " " + name + " " + std::to_string(step));
    };
    auto change = [&](int phase) {
        if (phase == 0) {
            client_->all_until_done<clients::AlreadyExistsError>(objects, [&](int i) {
                return client_->api().create(
                    resource, "default",
                    {{"apiVersion", "chaos.kopf.dev/v1"},
                     {"kind", "ChaosObject"},
                     {"metadata", {{"name", name_of_object(i)}, {"namespace", "default"}}},
                     {"spec", {{"step", 0}, {"field", "f0"}}}});
            });
        } else if (phase < kPhases - 1) {
            client_->all_until_done(objects, [&](int i) {
                // Round 1 changes the field of all objects, round 2 of none, round 3 of half.
                json spec = {{"step", phase}};
                if (phase == 1 || (phase == 3 && i % 2 == 0)) {
                    spec["field"] = "f" + std::to_string(phase);
                }
                return client_->api().patch(resource, "default", name_of_object(i),
                                            clients::PatchType::Merge, {{"spec", spec}});
            });
        } else {
            client_->all_until_done<clients::NotFoundError>(objects, [&](int i) {
                return client_->api().remove(resource, "default", name_of_object(i));
            });
        }
    };
    for (int i = 0; i < objects; ++i) {
        const std::string name = name_of_object(i);
        expect("create", name, 0);
        expect("field", name, 0);  // the field appears: field handlers see creations too
        for (int step = 1; step <= 3; ++step) {
            expect("update", name, step);
            if (step == 1 || (step == 3 && i % 2 == 0)) expect("field", name, step);
        }
        expect("delete", name, 3);
    }

    auto missing = [&](int phase) {
        const auto records = read_records(records_);
        std::vector<std::string> absent;
        for (const auto& key : expected) {
            std::istringstream words(key);
            std::string handler, name;
            int step = 0;
            words >> handler >> name >> step;
            const bool due = phase == kPhases - 1 ? true : handler != "delete" && step <= phase;
            if (due && !records.done.count(key)) absent.push_back(key);
        }
        return absent;
    };
    auto objects_left = [&]() -> std::optional<json> {
        try {
            return client_->until_done([&] { return client_->api().list(resource, "default"); });
        } catch (const std::exception&) {
            return std::nullopt;
        }
    };

    const auto started = Clock::now();
    std::vector<double> converged_after;  // per phase: seconds from its last fault
    for (int phase = 0; phase < kPhases; ++phase) {
        // A kill is meant to land in a handler of this phase: its handlers are held from the
        // start, before they may all be done.
        const auto& slice = schedule[static_cast<std::size_t>(phase)];
        if (std::any_of(slice.begin(), slice.end(),
                        [](const Fault& fault) { return fault.kind == Kind::kill; })) {
            hold_handlers();
        }
        std::thread faults([&] {
            for (std::size_t i = 0; i < slice.size(); ++i) {
                const Fault& fault = slice[i];
                const bool another_kill_follows =
                    i + 1 < slice.size() && slice[i + 1].kind == Kind::kill;
                std::this_thread::sleep_for(fault.pause);
                std::cout << "chaos: " << seconds_since(started) << " s: " << fault.describe()
                          << std::endl;
                try {
                    inject(fault, another_kill_follows);
                } catch (const std::exception& error) {
                    ADD_FAILURE() << fault.describe() << " failed: " << error.what();
                }
            }
        });
        change(phase);
        faults.join();
        // The failures of a burst that nobody asked for by now are dropped: otherwise they
        // would fall on the test's own polls and be counted in the time to converge.
        unused_failures_ += cluster_->server().failing_requests_left();
        cluster_->server().fail_next_requests(0, 500);
        const auto quiet_since = Clock::now();
        std::vector<std::string> leftovers;
        std::optional<double> handled_after;  // every due handler has run
        const bool converged = wait(
            [&] {
                if (!missing(phase).empty()) return false;
                if (!handled_after) handled_after = seconds_since(quiet_since);
                auto list = objects_left();
                if (!list) return false;
                leftovers.clear();
                if (phase == kPhases - 1) {
                    for (const auto& item : (*list)["items"])
                        leftovers.push_back(item["metadata"]["name"].get<std::string>());
                } else {
                    for (const auto& item : (*list)["items"]) {
                        for (const auto& key : leftover_progress(item))
                            leftovers.push_back(item["metadata"]["name"].get<std::string>() + ": " +
                                                key);
                    }
                }
                return leftovers.empty();
            },
            90s, 250ms);
        converged_after.push_back(seconds_since(quiet_since));
        std::cout << "chaos: phase " << phase << " converged " << converged_after.back()
                  << " s after its last fault (its handlers were done after "
                  << handled_after.value_or(-1) << " s; " << seconds_since(started) << " s in)"
                  << std::endl;
        if (!converged) {
            const auto absent = missing(phase);
            ADD_FAILURE() << "phase " << phase << " did not converge (seed " << seed
                          << "): " << absent.size() << " handler runs missing"
                          << (absent.empty() ? "" : ", e.g. " + absent.front()) << "; "
                          << leftovers.size() << " leftovers"
                          << (leftovers.empty() ? "" : ", e.g. " + leftovers.front())
                          << "\noperator log tail:\n"
                          << operator_->log().substr(operator_->log().size() > 4000
                                                         ? operator_->log().size() - 4000
                                                         : 0);
            break;
        }
    }
    const double total = seconds_since(started);

    // Exactly one successful run per expected key, none of any other.
    const auto records = read_records(records_);
    int lost = 0, repeated = 0, unexpected = 0;
    std::string example;
    for (const auto& key : expected) {
        const auto found = records.done.find(key);
        const int runs = found == records.done.end() ? 0 : found->second;
        if (runs == 0) ++lost;
        if (runs > 1) {
            repeated += runs - 1;
            if (example.empty()) example = key + " ran " + std::to_string(runs) + " times";
        }
    }
    for (const auto& [key, runs] : records.done) {
        if (!expected.count(key)) {
            unexpected += runs;
            if (example.empty()) example = key + " was not expected";
        }
    }
    std::cout << "chaos: faults injected:";
    int faults_total = 0;
    for (Kind kind : kKinds) {
        std::cout << " " << name_of(kind) << "=" << injected_[kind];
        faults_total += injected_[kind];
    }
    std::cout << " (total " << faults_total << "; " << killed_mid_handler_ << " kills mid-handler; "
              << failures_ - unused_failures_ << " of " << failures_
              << " injected request failures served)" << std::endl;
    std::cout << "chaos: " << objects << " objects, " << expected.size()
              << " handler runs expected: lost " << lost << ", repeated " << repeated
              << ", unexpected " << unexpected << "; converged in " << total << " s, at most "
              << (converged_after.empty()
                      ? 0.0
                      : *std::max_element(converged_after.begin(), converged_after.end()))
              << " s after a phase's last fault" << std::endl;
    EXPECT_EQ(lost, 0) << "seed " << seed;
    EXPECT_EQ(repeated, 0) << example << " (seed " << seed << ")";
    EXPECT_EQ(unexpected, 0) << example << " (seed " << seed << ")";
    // After all that, the operator still stops cleanly (and, in the ASan build, leak-free).
    const int exit_code = operator_->stop(SIGTERM, 60s);
    EXPECT_EQ(exit_code, 0) << operator_->log().substr(
        operator_->log().size() > 4000 ? operator_->log().size() - 4000 : 0);
    EXPECT_EQ(killed_mid_handler_, injected_[Kind::kill]) << "a SIGKILL found no handler running";
}

}  // namespace
}  // namespace kopf::chaos
