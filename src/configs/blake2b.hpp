// src/configs: settings, progress and diff-base storages, and their key conventions.
// BLAKE2b (RFC 7693) with a configurable digest size: Kopf hashes long annotation keys with
// blake2b(digest_size=4); OpenSSL 3.0 offers only the fixed 64-byte variant.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kopf::configs {

std::vector<std::uint8_t> blake2b(std::string_view data, std::size_t digest_size);

}  // namespace kopf::configs
