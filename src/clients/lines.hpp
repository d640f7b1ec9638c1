// Splitting a byte stream into lines as chunks arrive (watch streams are JSON lines).
#pragma once

#include <cstddef>
#include <kopf/json.hpp>
#include <string>
#include <string_view>
#include <utility>

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

// One line of a watch stream, decoded: the event's type ("ADDED", "MODIFIED", "DELETED",
// "BOOKMARK", "ERROR", or whatever else the server sent; "" if not a string), its object, and
// the object's metadata.resourceVersion ("" if absent or not a string).
struct WatchLine {
    std::string type;
    json object;
    std::string resource_version;
};

// Throws WatchingError naming `stream` for a line that is not a JSON object with an "object".
// Fields of other types than expected are taken as absent, never thrown as type errors: the
// line comes from the network.
WatchLine decode_watch_line(std::string_view line, const std::string& stream);

// The code and message of an ERROR event's object (a Status): 0 and "" where absent.
std::pair<int, std::string> watch_error_status(const json& object);

}  // namespace kopf::clients
