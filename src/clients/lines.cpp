#include "clients/lines.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kopf::clients {

void LineSplitter::throw_too_long() const {
    throw std::length_error(
        fmt::format("A line in the stream exceeds {} bytes without a line break", max_line_bytes_));
}

}  // namespace kopf::clients
