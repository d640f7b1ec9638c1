// Kopf's timestamps in progress records and annotations.
#include "structs/timestamps.hpp"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace kopf::structs {

std::string format_iso8601(Clock::time_point t) {
    using namespace std::chrono;
    auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
    auto secs = static_cast<std::time_t>(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
    long frac = static_cast<long>(us - static_cast<long long>(secs) * 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld+00:00", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
    return buf;
}

std::optional<Clock::time_point> parse_iso8601(const std::string& s) {
    int y, mo, d, h, mi, sec;
    int consumed = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &consumed) <
        6)
        return std::nullopt;
    std::size_t pos = static_cast<std::size_t>(consumed);
    long long micros = 0;
    if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
        ++pos;
        int digits = 0;
        while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
            if (digits < 6) {
                micros = micros * 10 + (s[pos] - '0');
                ++digits;
            }
            ++pos;
        }
        while (digits++ < 6) micros *= 10;
    }
    long offset = 0;
    if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
        int oh = 0, om = 0;
        if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &oh, &om) < 1) return std::nullopt;
        offset = (s[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    }
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    const std::time_t t = timegm(&tm) - offset;
    // The clock counts nanoseconds in 64 bits (the years 1677 to 2262): a time outside is not a
    // timestamp of ours (anyone may edit an annotation), and converting it would overflow.
    constexpr std::time_t latest =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::duration::max()).count() - 1;
    if (t > latest || t < -latest) return std::nullopt;
    return Clock::from_time_t(t) + std::chrono::microseconds(micros);
}

}  // namespace kopf::structs
