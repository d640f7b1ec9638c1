// Splitting a byte stream into lines as chunks arrive (watch streams are JSON lines).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kopf::clients {

// Feed arbitrary chunks; complete lines (without '\n' or "\r\n") go to the callback at once, a
// partial line waits for its end. Empty lines are skipped. Only the partial tail is buffered.
class LineSplitter {
  public:
    explicit LineSplitter(std::size_t max_line_bytes = 64 * 1024 * 1024)
        : max_line_bytes_(max_line_bytes) {}

    // Throws std::length_error when a single line exceeds the limit (a broken stream).
    template <class OnLine>
    void feed(std::string_view chunk, OnLine&& on_line) {
        while (!chunk.empty()) {
            auto newline = chunk.find('\n');
            if (newline == std::string_view::npos) {
                if (tail_.size() + chunk.size() > max_line_bytes_) throw_too_long();
                tail_.append(chunk);
                return;
            }
            std::string_view line = chunk.substr(0, newline);
            chunk.remove_prefix(newline + 1);
            if (!tail_.empty()) {
                tail_.append(line);
                emit(tail_, on_line);
                tail_.clear();
            } else {
                emit(line, on_line);
            }
        }
    }

    // The unterminated rest at the end of the stream (empty if the stream ended cleanly).
    const std::string& tail() const { return tail_; }
    void reset() { tail_.clear(); }

  private:
    template <class OnLine>
    static void emit(std::string_view line, OnLine& on_line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.empty()) on_line(line);
    }
    [[noreturn]] void throw_too_long() const;

    std::size_t max_line_bytes_;
    std::string tail_;
};

}  // namespace kopf::clients
