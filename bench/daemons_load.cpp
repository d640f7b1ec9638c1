// The `daemons` group of bench/run.sh: daemons and timers. This tool creates the
// objects and runs the operator as its own child process (`kopf run`, pinned to its own core),
// so that it can measure the operator's CPU and memory from outside, including the CPU of its
// exit: a process's CPU is no longer readable in /proc once it has exited, so the tool reads the
// operator's CPU clock right before SIGTERM (clock_getcpuclockid: nanoseconds, all threads, the
// exited ones too) and takes the total from wait4()'s rusage of the reaped child (µs); the
// difference is what the exit cost. Any CPU of the operator's own children (the plugin compiler,
// only ever at the first start, which this tool never measures) is taken out from
// /proc/<pid>/stat's cutime+cstime.
//
//   daemons_load create --url URL --objects N --label KEY=VALUE [--spec-bytes 200] [--connections
//   4] daemons_load run --mode idle|plain|daemons|timers --url URL --kopf BIN --operator FILE
//                    --kubeconfig FILE --log FILE --records FILE [--objects N] [--seconds S]
//                    [--operator-cpu C] [--server-pid P] [--settle S] [--timeout S]
//
// Modes of `run` (one operator lifetime each, started by this tool, stopped with SIGTERM):
//   idle     no objects: the operator's RSS once it serves and is idle.
//   plain    N objects are there already and get no daemon: RSS once the operator is idle
//            (and idle again --settle seconds later, 5 by default: the objects' workers exit
//            after settings.queueing.idle_timeout).
//   daemons  N objects with a daemon each are there already: the time from the operator's start
//            until the N-th daemon has started (bench/operators/daemons_operator.cpp records it),
//            then RSS once the operator is idle (and settled, as for `plain`).
//   timers   N objects with a 1 s timer each (bench/operators/timers_operator.cpp): once every
//            timer has ticked twice and 2 s more, a window of S seconds: ticks per second, the
//            operator's CPU per tick, API writes per tick, the ticks' lateness; RSS at its end;
//            with --server-pid, the API server's CPU over the window too.
// Every mode ends with the exit: the operator's CPU and wall time from SIGTERM to its exit.
//
// Every figure is printed as one line "<name>: ..." that bench/run.sh picks up.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "load_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using bench::Connection;
using bench::Endpoint;
using bench::http::verb;

const std::string kCollection = "/apis/bench.kopf.dev/v1/namespaces/default/benchobjects";

struct Options {
    std::string command;
    std::map<std::string, std::string> flags;

    std::string text(const std::string& name, const std::string& fallback = {}) const {
        auto it = flags.find(name);
        if (it != flags.end()) return it->second;
        if (fallback.empty()) throw std::invalid_argument("missing option --" + name);
        return fallback;
    }
    long number(const std::string& name, long fallback = -2) const {
        auto it = flags.find(name);
        if (it == flags.end()) {
            if (fallback == -2) throw std::invalid_argument("missing option --" + name);
            return fallback;
        }
        try {
            std::size_t used = 0;
            const long value = std::stol(it->second, &used);
            if (used != it->second.size()) throw std::invalid_argument("");
            return value;
        } catch (const std::exception&) {
            throw std::invalid_argument("--" + name + " needs an integer, got '" + it->second +
                                        "'");
        }
    }
    Endpoint endpoint() const { return Endpoint::parse(text("url")); }
};

std::string object_name(long i) {
    char name[32];
    std::snprintf(name, sizeof name, "bench-%07ld", i);
    return name;
}

std::int64_t wall_microseconds() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

void sleep_seconds(double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

long current_resource_version(const Endpoint& endpoint) {
    Connection connection(endpoint);
    auto response = connection.send(verb::get, kCollection + "?limit=1");
    if (response.result_int() != 200) {
        throw std::runtime_error("listing " + kCollection + " failed: " + response.body());
    }
    return std::stol(
        nlohmann::json::parse(response.body())["metadata"]["resourceVersion"].get<std::string>());
}

// ---- create -----------------------------------------------------------------------------------

int command_create(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const long objects = options.number("objects");
    const long connections = std::max(1L, options.number("connections", 4));
    const std::string label = options.text("label");
    const auto equals = label.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("--label needs KEY=VALUE");
    nlohmann::json labels = {{label.substr(0, equals), label.substr(equals + 1)}};
    const long spec_bytes = options.number("spec-bytes", 200);
    const std::string spec =
        nlohmann::json(
            {{"filler", std::string(static_cast<std::size_t>(spec_bytes), 'x')}, {"stamp", 0}})
            .dump();
    const std::string labels_json = labels.dump();
    const auto start = Clock::now();
    bench::in_parallel(endpoint, objects, connections, [&](long i, Connection& connection) {
        const std::string body = R"({"apiVersion":"bench.kopf.dev/v1","kind":"BenchObject",)"
                                 R"("metadata":{"name":")" +
                                 object_name(i) + R"(","labels":)" + labels_json + R"(},"spec":)" +
                                 spec + "}";
        auto response = connection.send(verb::post, kCollection, body);
        if (response.result_int() != 201) {
            throw std::runtime_error("creating " + object_name(i) + " failed with HTTP " +
                                     std::to_string(response.result_int()) + ": " +
                                     response.body());
        }
    });
    const double elapsed = seconds_since(start);
    std::printf("created: %ld objects (label %s, spec %ld bytes) in %.2f s = %.0f objects/s\n",
                objects, label.c_str(), spec_bytes, elapsed, objects / elapsed);
    return 0;
}

// ---- the operator as a child process ------------------------------------------------------------

// The operator's user+sys CPU so far, all its threads (also the exited ones), in seconds.
double process_cpu_seconds(pid_t pid) {
    clockid_t clock;
    if (clock_getcpuclockid(pid, &clock) != 0) throw std::runtime_error("clock_getcpuclockid");
    timespec t{};
    if (clock_gettime(clock, &t) != 0) throw std::runtime_error("clock_gettime of the operator");
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// cutime + cstime of /proc/<pid>/stat: the CPU of the process's children it has waited for.
double children_cpu_seconds(pid_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream fields(stat.substr(paren + 2));
    std::vector<std::string> values;
    for (std::string value; fields >> value;) values.push_back(value);
    // After "pid (comm) ": state is field 3, so cutime (16) and cstime (17) are at 13 and 14.
    if (values.size() < 15) return 0;
    return static_cast<double>(std::stol(values[13]) + std::stol(values[14])) /
           static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Open file descriptors of a process (its connections to the API server, mostly).
long open_files(pid_t pid) {
    std::error_code error;
    long count = 0;
    for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", error), end;
         !error && it != end; it.increment(error))
        ++count;
    return count;
}

long status_kb(pid_t pid, const char* key) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/status");
    const std::string prefix = std::string(key) + ":";
    for (std::string line; std::getline(file, line);) {
        if (line.rfind(prefix, 0) == 0) return std::atol(line.c_str() + prefix.size());
    }
    return -1;
}

std::string read_text(const std::string& path) {
    std::ifstream file(path);
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

std::string tail(const std::string& text, std::size_t lines) {
    std::size_t at = text.size();
    for (std::size_t n = 0; n <= lines && at > 0; ++n) {
        at = text.rfind('\n', at - 1);
        if (at == std::string::npos) return text;
    }
    return text.substr(at + 1);
}

class OperatorProcess {
  public:
    OperatorProcess(const Options& options, long expected)
        : log_(options.text("log")), timeout_(options.number("timeout", 900)) {
        const std::string kopf = options.text("kopf");
        const std::string source = options.text("operator");
        const long cpu = options.number("operator-cpu", -1);
        ::setenv("KUBECONFIG", options.text("kubeconfig").c_str(), 1);
        ::setenv("KOPF_BENCH_RECORDS", options.text("records").c_str(), 1);
        ::setenv("KOPF_BENCH_EXPECTED", std::to_string(expected).c_str(), 1);
        const pid_t parent = ::getpid();
        std::fflush(nullptr);
        // Emptied before the fork: wait_serving() must not find the previous operator's lines
        // (it did, and a first start still compiling its plugin was taken for idle).
        { std::ofstream truncate(log_, std::ios::trunc); }
        started_ = Clock::now();
        started_us_ = wall_microseconds();
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the tool
            if (::getppid() != parent) ::_exit(126);
            if (cpu >= 0) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(static_cast<int>(cpu), &set);
                ::sched_setaffinity(0, sizeof set, &set);
            }
            const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
            if (fd >= 0) {
                ::dup2(fd, STDOUT_FILENO);
                ::dup2(fd, STDERR_FILENO);
            }
            const char* argv[] = {kopf.c_str(), "run",     source.c_str(), "--standalone",
                                  "-n",         "default", nullptr};
            ::execv(kopf.c_str(), const_cast<char* const*>(argv));
            ::_exit(127);
        }
    }
    ~OperatorProcess() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    OperatorProcess(const OperatorProcess&) = delete;
    OperatorProcess& operator=(const OperatorProcess&) = delete;

    pid_t pid() const { return pid_; }
    std::int64_t started_us() const { return started_us_; }
    double seconds_since_start() const { return seconds_since(started_); }
    double cpu() const { return process_cpu_seconds(pid_); }
    long rss_kb() const { return status_kb(pid_, "VmRSS"); }
    long files() const { return open_files(pid_); }

    void check_alive() {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            fail("the operator exited unexpectedly");
        }
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(what + "; the end of its log (" + log_ + "):\n" +
                                 tail(read_text(log_), 20));
    }
    void check_deadline() const {
        if (seconds_since(started_) > static_cast<double>(timeout_))
            fail("timed out after " + std::to_string(timeout_) + " s");
    }

    // Until the operator logs that it serves the benchmark resource (the first start compiles it).
    void wait_serving() {
        while (read_text(log_).find("Serving resource benchobjects") == std::string::npos) {
            check_alive();
            check_deadline();
            sleep_seconds(0.05);
        }
    }

    // Idle, then `settle` seconds more and idle again: the objects' workers exit after
    // settings.queueing.idle_timeout (5 s), as they would in a long-running operator.
    double wait_settled(double settle) {
        const double idle_at = wait_idle();
        if (settle <= 0) return idle_at;
        sleep_seconds(settle);
        wait_idle();
        return idle_at;
    }

    // Until the operator used < 20 ms of CPU in each of two consecutive 0.5 s windows (as
    // bench/run.sh's wait_idle); returns the seconds from its start until the quiet began.
    double wait_idle() {
        int quiet = 0;
        double since = 0;
        double before = cpu();
        while (true) {
            const double sample_at = seconds_since_start();
            sleep_seconds(0.5);
            check_alive();
            const double after = cpu();
            if (after - before < 0.020) {
                if (quiet++ == 0) since = sample_at;
                if (quiet >= 2) return since;
            } else {
                quiet = 0;
            }
            before = after;
            check_deadline();
        }
    }

    struct Exit {
        double cpu_seconds;
        double wall_seconds;
        int status;
    };
    // SIGTERM, then the CPU from the signal to the exit: rusage of the reaped child − its CPU
    // clock just before the signal.
    Exit terminate() {
        const double before = cpu();
        const double children_before = children_cpu_seconds(pid_);
        const auto signalled = Clock::now();
        ::kill(pid_, SIGTERM);
        int status = 0;
        rusage usage{};
        while (true) {
            const pid_t got = ::wait4(pid_, &status, WNOHANG, &usage);
            if (got == pid_) break;
            if (got < 0 && errno != EINTR) throw std::runtime_error("wait4 failed");
            if (seconds_since(signalled) > 120) {
                ::kill(pid_, SIGKILL);
                ::wait4(pid_, &status, 0, &usage);
                pid_ = -1;
                fail("the operator did not exit within 120 s of SIGTERM");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        const double wall = seconds_since(signalled);
        pid_ = -1;
        auto seconds = [](const timeval& t) {
            return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
        };
        const double total = seconds(usage.ru_utime) + seconds(usage.ru_stime);
        // The rusage includes the children the operator waited for; the CPU clock does not.
        return {total - children_before - before, wall,
                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
    }

  private:
    std::string log_;
    long timeout_;
    pid_t pid_ = -1;
    Clock::time_point started_;
    std::int64_t started_us_ = 0;
};

struct Record {
    std::string kind;
    std::int64_t a = 0;
    std::int64_t b = 0;
};

std::vector<Record> read_records(const std::string& path) {
    std::vector<Record> records;
    std::ifstream file(path);
    Record r;
    while (file >> r.kind >> r.a >> r.b) records.push_back(r);
    return records;
}

double percentile(std::vector<std::int64_t>& sorted, double fraction) {
    if (sorted.empty()) return 0;
    const auto rank =
        static_cast<std::size_t>(fraction * static_cast<double>(sorted.size() - 1) + 0.5);
    return static_cast<double>(sorted[std::min(rank, sorted.size() - 1)]);
}

// ---- run ----------------------------------------------------------------------------------------

void report_exit(OperatorProcess& op, const Endpoint& endpoint) {
    const long rv_before = current_resource_version(endpoint);
    const auto exit = op.terminate();
    const long rv_after = current_resource_version(endpoint);
    std::printf(
        "exit: operator CPU %.1f ms from SIGTERM to its exit, wall %.3f s, exit status %d, "
        "%ld API writes during the exit\n",
        exit.cpu_seconds * 1e3, exit.wall_seconds, exit.status, rv_after - rv_before);
    if (exit.status != 0) op.fail("the operator exited with status " + std::to_string(exit.status));
}

int command_run(const Options& options) {
    const Endpoint endpoint = options.endpoint();
    const std::string mode = options.text("mode");
    const long objects = options.number("objects", 0);
    const double settle = static_cast<double>(options.number("settle", 5));
    const std::string records_path = options.text("records");
    { std::ofstream truncate(records_path, std::ios::trunc); }

    if (mode == "idle" || mode == "plain") {
        OperatorProcess op(options, 0);
        op.wait_serving();
        const double idle_at = op.wait_settled(mode == "idle" ? 0 : settle);
        const long rss = op.rss_kb();
        if (mode == "idle") {
            std::printf("idle: operator RSS %ld kB with no objects, idle %.2f s after its start\n",
                        rss, idle_at);
        } else {
            std::printf(
                "plain: %ld objects without daemons, operator idle %.2f s after its start "
                "(CPU %.2f s), RSS %ld kB\n",
                objects, idle_at, op.cpu(), rss);
        }
        std::fflush(stdout);
        report_exit(op, endpoint);
        return 0;
    }

    if (mode == "daemons") {
        OperatorProcess op(options, objects);
        op.wait_serving();
        std::int64_t first = 0, last = 0;
        while (true) {
            for (const auto& r : read_records(records_path)) {
                if (r.kind != "daemons") continue;
                if (r.a == 1) first = r.b;
                if (r.a >= objects) last = r.b;
            }
            if (last) break;
            op.check_alive();
            op.check_deadline();
            sleep_seconds(0.05);
        }
        const double idle_at = op.wait_settled(settle);
        const long rss = op.rss_kb();
        std::printf(
            "daemons: %ld daemons started, the first %.3f s and the last %.3f s after the "
            "operator's start; operator idle %.2f s after its start (CPU %.2f s), RSS %ld kB\n",
            objects, (first - op.started_us()) / 1e6, (last - op.started_us()) / 1e6, idle_at,
            op.cpu(), rss);
        std::fflush(stdout);
        report_exit(op, endpoint);
        return 0;
    }

    if (mode == "timers") {
        const double window = static_cast<double>(options.number("seconds", 30));
        OperatorProcess op(options, objects);
        op.wait_serving();
        // Warm-up: until there are as many second ticks as timers, then 2 s more.
        while (true) {
            long later_ticks = 0;
            for (const auto& r : read_records(records_path)) later_ticks += r.kind == "tick";
            if (later_ticks >= objects) break;
            op.check_alive();
            op.check_deadline();
            sleep_seconds(0.2);
        }
        sleep_seconds(2);
        const pid_t server = static_cast<pid_t>(options.number("server-pid", 0));
        // Each end of the window: the server's resourceVersion (one per write), then at once
        // the clocks; the window's writes are those between the two answers.
        const long rv1 = current_resource_version(endpoint);
        const std::int64_t t1 = wall_microseconds();
        const double cpu1 = op.cpu();
        const double server1 = server > 0 ? process_cpu_seconds(server) : 0;
        sleep_seconds(window);
        const long rv2 = current_resource_version(endpoint);
        const std::int64_t t2 = wall_microseconds();
        const double cpu2 = op.cpu();
        const double server2 = server > 0 ? process_cpu_seconds(server) : 0;
        const long rss = op.rss_kb();
        const long files = op.files();
        sleep_seconds(1.5);  // the operator writes its records every 0.5 s
        long ticks = 0;
        std::vector<std::int64_t> lateness;
        for (const auto& r : read_records(records_path)) {
            if ((r.kind != "tick" && r.kind != "tick0") || r.a < t1 || r.a >= t2) continue;
            ++ticks;
            if (r.kind == "tick") lateness.push_back(r.b);
        }
        if (ticks == 0) op.fail("no ticks in the measurement window");
        std::sort(lateness.begin(), lateness.end());
        const double seconds = static_cast<double>(t2 - t1) / 1e6;
        std::printf(
            "timers: %ld timers, %.1f s window: %ld ticks = %.0f ticks/s, operator CPU %.2f s = "
            "%.1f us per tick, %.2f API writes per tick; lateness p50 %.1f ms, p99 %.1f ms, "
            "max %.1f ms (%zu samples); RSS %ld kB, %ld open files\n",
            objects, seconds, ticks, static_cast<double>(ticks) / seconds, cpu2 - cpu1,
            (cpu2 - cpu1) * 1e6 / static_cast<double>(ticks),
            static_cast<double>(rv2 - rv1) / static_cast<double>(ticks),
            percentile(lateness, 0.50) / 1e3, percentile(lateness, 0.99) / 1e3,
            percentile(lateness, 1.0) / 1e3, lateness.size(), rss, files);
        if (server > 0) {
            std::printf("timers-server: API server CPU %.2f s in the window = %.0f%% of a core\n",
                        server2 - server1, (server2 - server1) * 100 / seconds);
        }
        std::fflush(stdout);
        report_exit(op, endpoint);
        return 0;
    }
    throw std::invalid_argument("unknown --mode '" + mode + "' (idle, plain, daemons, timers)");
}

int usage() {
    std::fprintf(stderr,
                 "usage: daemons_load create --url URL --objects N --label KEY=VALUE "
                 "[--spec-bytes B] [--connections C]\n"
                 "       daemons_load run --mode idle|plain|daemons|timers --url URL --kopf BIN "
                 "--operator FILE --kubeconfig FILE --log FILE --records FILE [--objects N] "
                 "[--seconds S] [--operator-cpu C] [--server-pid P] [--settle S] [--timeout S]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    Options options;
    options.command = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag.rfind("--", 0) != 0 || i + 1 >= argc) {
            std::fprintf(stderr, "daemons_load: expected '--option value', got '%s'\n",
                         flag.c_str());
            return usage();
        }
        options.flags[flag.substr(2)] = argv[i + 1];
    }
    try {
        if (options.command == "create") return command_create(options);
        if (options.command == "run") return command_run(options);
        std::fprintf(stderr, "daemons_load: unknown command '%s'\n", options.command.c_str());
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "daemons_load %s: %s\n", options.command.c_str(), e.what());
        return 1;
    }
}
