// What one wake-up of a sleeping thread costs on this machine, with nothing of Kopf++ in it: the
// floor under every per-object figure at moderate rates, where each step of an object's cycle
// (its event, each patch's answer, each echo) finds the operator asleep.
//
//   wake_load [--wakeups N] [--period-us P] [--touch-bytes B]
//
// A child process on core 0 writes one byte to a socket pair every P µs; this process, on core
// 1, blocks in read(2) for each byte and then touches B bytes of its memory (one write per cache
// line: the working set a real wake-up brings back into the caches). Prints this process's CPU
// time (user + system, getrusage) per wake-up.
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void pin_to(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) std::perror("wake_load: sched_setaffinity");
}

double cpu_microseconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto micros = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
    };
    return micros(usage.ru_utime) + micros(usage.ru_stime);
}

long number_argument(const char* name, const char* text) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < 0) {
        std::fprintf(stderr, "wake_load: %s wants a non-negative integer, got '%s'\n", name, text);
        std::exit(2);
    }
    return value;
}

}  // namespace

int main(int argc, char** argv) {
    long wakeups = 2000, period_us = 10000, touch_bytes = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "wake_load: %s wants a value\n", arg.c_str());
            return 2;
        }
        if (arg == "--wakeups") {
            wakeups = number_argument("--wakeups", argv[++i]);
        } else if (arg == "--period-us") {
            period_us = number_argument("--period-us", argv[++i]);
        } else if (arg == "--touch-bytes") {
            touch_bytes = number_argument("--touch-bytes", argv[++i]);
        } else {
            std::fprintf(stderr,
                         "usage: wake_load [--wakeups N] [--period-us P] [--touch-bytes B]\n");
            return 2;
        }
    }
    int sockets[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) {
        std::perror("wake_load: socketpair");
        return 1;
    }
    const pid_t writer = ::fork();
    if (writer < 0) {
        std::perror("wake_load: fork");
        return 1;
    }
    if (writer == 0) {
        pin_to(0);
        for (long i = 0; i < wakeups; ++i) {
            std::this_thread::sleep_for(std::chrono::microseconds(period_us));
            if (::write(sockets[1], "x", 1) != 1) _exit(1);
        }
        _exit(0);
    }
    pin_to(1);
    std::vector<unsigned char> memory(static_cast<std::size_t>(touch_bytes) + 1, 1);
    unsigned long checksum = 0;
    const double before = cpu_microseconds();
    long woken = 0;
    for (char byte; woken < wakeups && ::read(sockets[0], &byte, 1) == 1; ++woken) {
        for (std::size_t at = 0; at < static_cast<std::size_t>(touch_bytes); at += 64)
            checksum += memory[at]++;
    }
    const double spent = cpu_microseconds() - before;
    ::waitpid(writer, nullptr, 0);
    std::printf(
        "wake_load: %ld wake-ups, one per %ld us, %ld bytes touched each: %.1f us of CPU per "
        "wake-up (checksum %lu)\n",
        woken, period_us, touch_bytes, woken ? spent / static_cast<double>(woken) : 0.0, checksum);
    return woken == wakeups ? 0 : 1;
}
