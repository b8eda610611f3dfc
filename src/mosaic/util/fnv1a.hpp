// FNV-1a, 64 bit: the checksum of checkpoint files (checkpoint.hpp) and of
// the sampled input rows an npy checkpoint records (NpyStreamReader::
// fingerprint). Not cryptographic: it detects damage and changed data, not
// an adversary.
#pragma once

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mosaic {

constexpr std::uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;

// Continues hash `h` over n bytes (start with kFnv1a64Offset).
inline std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t h = kFnv1a64Offset) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// 16 lower-case hex digits.
inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

}  // namespace mosaic
