// What npy.cpp and npy_header.cpp share, internal to the .npy format's
// implementation: the error of a file, messages' renderings, the reads, and
// the header's parser.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mosaic/sources/npy.hpp"

namespace mosaic::npy_detail {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMaxHeaderBytes = std::size_t(1) << 20;  // NumPy itself refuses > 10000 by default
constexpr int kMaxNesting = 32;

// Throws NpyError("<path>: <what>").
[[noreturn]] void fail(const std::string& path, const std::string& what);
// Bytes as a readable, bounded C-like string literal for messages.
std::string quoted_bytes(const std::string& bytes, std::size_t max_len = 80);
// A shape as NumPy prints it: (3, 4), (5,).
std::string shape_repr(const std::vector<std::int64_t>& shape);
// A file's modification time in nanoseconds.
std::int64_t mtime_ns(const struct stat& st);
// Reads exactly `n` bytes at `offset`; returns how many were there.
std::size_t pread_all(int fd, void* buf, std::size_t n, std::size_t offset, const std::string& path);

NpyHeader parse_header_fd(int fd, const std::string& path);

}  // namespace mosaic::npy_detail
