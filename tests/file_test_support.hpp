// Helpers of the tests that write and read files: temporary directories,
// large .npy files streamed out piece by piece, and resident-memory probes.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "mosaic/sources/npy.hpp"

namespace mosaic_test {

// A fresh directory under GoogleTest's temporary directory, removed with its
// contents when the object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "mosaic") {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base += '/';
    std::string templ = base + prefix + "_XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes a float64 .npy file of shape (rows, d) with entries value(i, j),
// streamed out in pieces of 512 rows, so the whole file is never in memory.
// rows must be a multiple of 512. Throws on an I/O error.
template <class Value>
void write_f8_npy_streamed(const std::string& path, std::int64_t rows, int d, Value value) {
  if (rows % 512 != 0) throw std::invalid_argument("write_f8_npy_streamed: rows must be a multiple of 512");
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) throw std::runtime_error("cannot create " + path);
  const std::string preamble = mosaic::npy_preamble("<f8", {rows, d});
  bool ok = std::fwrite(preamble.data(), 1, preamble.size(), out) == preamble.size();
  std::vector<double> piece(std::size_t(512) * d);
  for (std::int64_t r0 = 0; ok && r0 < rows; r0 += 512) {
    for (std::int64_t i = 0; i < 512; ++i)
      for (int j = 0; j < d; ++j) piece[std::size_t(i * d + j)] = value(r0 + i, j);
    ok = std::fwrite(piece.data(), sizeof(double), piece.size(), out) == piece.size();
  }
  if (std::fclose(out) != 0 || !ok) throw std::runtime_error("cannot write " + path);
}

// Resident set size now (/proc/self/statm) and its peak (getrusage), bytes.
inline long current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * ::sysconf(_SC_PAGESIZE);
}
inline long peak_rss_bytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss * 1024L;  // Linux: kilobytes
}

}  // namespace mosaic_test
