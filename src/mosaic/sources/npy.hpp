// NumPy .npy files on the host: a real header parser, a reader of one
// ordered sample stream (shape (samples, features)) that hands out chunks of
// rows with bounded resident memory and notices a file that changes under
// it, and an atomic writer whose files NumPy reads back (used for the state
// files of output.state_dir).
//
// Format: https://numpy.org/devdocs/reference/generated/numpy.lib.format.html
//   "\x93NUMPY" major minor, header length (uint16 LE for 1.0, uint32 LE for
//   2.0 and 3.0), then a Python-literal dict {'descr': ..., 'fortran_order':
//   ..., 'shape': (...)} (latin-1 for 1.0/2.0, UTF-8 for 3.0), then the data.
//
// Every problem with a file is reported as an NpyError whose message starts
// with the file's path, e.g.
//   "data/a.npy: unsupported dtype '>f8' (big-endian float64); expected '<f4' or '<f8'".
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mosaic {

struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A bad value in the data (non-finite, or a float64 that overflows a float
// run), as opposed to a problem with the file itself: the npy source freezes
// the stream at that row and goes on (npy_source.hpp), while every other
// NpyError stops the run.
struct NpyValueError : NpyError {
  using NpyError::NpyError;
};

enum class NpyDtype { f4, f8 };

// "<f4" / "<f8".
const char* npy_descr(NpyDtype dtype);

struct NpyHeader {
  int major = 1, minor = 0;  // format version: 1.0, 2.0 or 3.0
  NpyDtype dtype = NpyDtype::f8;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;  // () for a 0-d array
  std::size_t data_offset = 0;      // bytes from the start of the file to the data
  std::size_t item_size = 8;        // 4 or 8
  std::uint64_t data_bytes = 0;     // prod(shape) * item_size
  std::uint64_t file_bytes = 0;     // size of the file when it was parsed (>= data_offset + data_bytes)
  std::int64_t mtime_ns = 0;        // its modification time then, ns since the epoch
};

// "2026-12-01T20:22:09.123456789Z": a file time (ns since the epoch) for messages.
std::string file_time_text(std::int64_t ns);

// What a checkpoint records of an input file, to refuse a restart on other
// data (docs/CHECKPOINT.md): the size, modification time and header as
// found, and an FNV-1a 64 hash of the data of rows [0, rows): of all of them
// when they are at most kFingerprintBlocks blocks of about
// kFingerprintBlockBytes, else of kFingerprintBlocks such blocks spread
// evenly over them, the first starting at row 0 and the last ending at row
// `rows` (so reading it costs at most 1 MiB per file, whatever its size).
struct NpyFingerprint {
  std::string path;
  std::uint64_t file_bytes = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t header_fnv1a64 = 0;  // of the bytes before the data
  std::int64_t rows = 0;             // the rows the content hash covers: [0, rows)
  bool sampled = false;              // only kFingerprintBlocks blocks of the rows are hashed
  std::uint64_t hashed_bytes = 0;    // data bytes hashed
  std::uint64_t rows_fnv1a64 = 0;
};
constexpr int kFingerprintBlocks = 16;
constexpr std::size_t kFingerprintBlockBytes = std::size_t(64) << 10;

// Reads and validates only the header of `path` (never the data): that it
// is a regular file (a FIFO, a directory or a device is refused naming its
// type, without waiting on it), the magic, the version (1.0, 2.0, 3.0), the
// header dict (parsed as a Python literal: exactly the keys 'descr',
// 'fortran_order' and 'shape'), the dtype ('<f4' or '<f8'; big-endian and
// every other type are rejected, saying which they are), the shape (a tuple
// of non-negative integers) and that the file holds all the data the header
// announces (a truncated file says expected vs actual bytes). Bytes after
// the data are tolerated, as NumPy does. Throws NpyError.
NpyHeader parse_npy_header(const std::string& path);

// One ordered stream: a 2-D .npy file of shape (samples, features), kept
// open. Rows are read on request with pread(), straight into the caller's
// buffer when no conversion is needed, else through a 256 KiB buffer per
// thread, so the resident memory this reader adds is bounded by that buffer,
// not by the file. (The page cache holds whatever the kernel chooses to
// keep: reclaimable kernel memory, not this process's.)
//
// A file that changes while it is read stops the reader with an NpyError
// naming the file, what it was when it was opened and what it is now: it
// shrank (a read meets the end of the file) or it was written to (its size
// or modification time differ from those at open; checked after every
// read, so rows read from a file whose writing had begun are not handed
// out). Reading with pread instead of a memory map is what makes a
// shrinking file an error and not a SIGBUS. A file replaced by a rename (a
// new file under the same name) does not affect the reader: it keeps
// reading the file it opened.
//
// Both C order and Fortran order (fortran_order: True, column-major data) are
// read; Fortran order reads `features` separate runs per request, so it is
// slower for small requests but returns the same rows.
//
// Not thread-safe: one thread at a time per reader (different readers are
// independent). Movable, not copyable.
class NpyStreamReader {
 public:
  // Opens and parses `path`. `expected_d` is problem.d: a file with a
  // different number of columns is rejected (pass expected_d <= 0 to accept
  // any). Throws NpyError: everything parse_npy_header checks, plus not 2-D,
  // features != expected_d.
  NpyStreamReader(const std::string& path, int expected_d);
  ~NpyStreamReader();
  NpyStreamReader(NpyStreamReader&& other) noexcept;
  NpyStreamReader& operator=(NpyStreamReader&& other) noexcept;
  NpyStreamReader(const NpyStreamReader&) = delete;
  NpyStreamReader& operator=(const NpyStreamReader&) = delete;

  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return header_; }
  std::int64_t rows() const { return rows_; }
  int cols() const { return cols_; }
  std::size_t row_bytes() const { return std::size_t(cols_) * header_.item_size; }

  // Throws NpyError "<path>: has R rows (samples), fewer than the N required
  // by <what>" if rows() < min_rows. For the driver's init_samples check.
  void require_rows(std::int64_t min_rows, const std::string& what = "init_samples") const;

  // Copies rows [first, first + count) into dst (row-major, count x cols()),
  // converting to T (float or double). Throws NpyError naming the file if the
  // range is outside the file or the file changed since it was opened, or
  // NpyValueError naming the file, the row (0-based, in the file) and the
  // column at the first non-finite value in the range (or a float64 value
  // that overflows float); dst is then partly written. With
  // set_nan_is_missing(true) a NaN is a missing entry (ALGORITHM.md section
  // 7), copied as it is, and only +-inf (or an overflow) is refused. Adds
  // the file bytes read to bytes_read().
  template <class T>
  void read_rows(std::int64_t first, std::int64_t count, T* dst);

  // Asks the kernel to start reading rows [first, first + count) in the
  // background (posix_fadvise WILLNEED); for staging the next chunk while the
  // current one is processed. Never throws for a range that is in the file;
  // clamps a range that is not.
  void prefetch_rows(std::int64_t first, std::int64_t count) const;

  // Whether read_rows passes NaN values through as missing entries.
  void set_nan_is_missing(bool on) { nan_is_missing_ = on; }
  bool nan_is_missing() const { return nan_is_missing_; }

  // Data bytes read by read_rows so far (header excluded).
  std::uint64_t bytes_read() const { return bytes_read_; }

  // The fingerprint of the file (see NpyFingerprint) for rows [0, rows),
  // rows <= rows(). Throws NpyError naming the file if it changed since it
  // was opened. Reads at most kFingerprintBlocks * kFingerprintBlockBytes
  // data bytes, plus the header; bytes_read() does not count them.
  NpyFingerprint fingerprint(std::int64_t rows) const;

 private:
  void release() noexcept;
  // Reads exactly n bytes at `offset`; rows [first, first + count) name what
  // is being read if the file ends early (it shrank; count 0: the header).
  void read_exact(std::size_t offset, void* dst, std::size_t n, std::int64_t first, std::int64_t count) const;
  // Throws if the file's size or modification time differ from those at open.
  void check_unchanged() const;
  [[noreturn]] void fail_changed(const std::string& now) const;
  // n values of the file's type S at byte `offset`, converted to T, into
  // dst[i * stride]; rows [first, first + count) as for read_exact.
  template <class S, class T>
  void read_values(std::size_t offset, std::size_t n, T* dst, std::size_t stride, std::int64_t first,
                   std::int64_t count) const;

  std::string path_;
  NpyHeader header_;
  std::int64_t rows_ = 0;
  int cols_ = 0;
  int fd_ = -1;  // -1: moved from
  std::uint64_t bytes_read_ = 0;
  bool nan_is_missing_ = false;
};

extern template void NpyStreamReader::read_rows<float>(std::int64_t, std::int64_t, float*);
extern template void NpyStreamReader::read_rows<double>(std::int64_t, std::int64_t, double*);

// The full preamble of a version-1.0 .npy file as NumPy writes it: magic,
// version, header length and the dict, padded with spaces and a final '\n' to
// a multiple of 64 bytes. (Falls back to version 2.0 if the dict is longer
// than 65535 bytes, as NumPy does.) `descr` is a dtype string such as "<f8".
// For writers that stream their data (tests, tools).
std::string npy_preamble(const std::string& descr, const std::vector<std::int64_t>& shape, bool fortran_order = false);

// What write_npy wrote: the file's size and its CRC-32 (crc32 below), for
// the manifest of a state set (states.json, run.hpp).
struct NpyWritten {
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

// Writes a C-order, little-endian .npy file that numpy.load reads:
// T = float, double, std::int64_t, std::uint64_t -> '<f4', '<f8', '<i8', '<u8'.
// `data` holds prod(shape) values in C order. Atomic: a temporary file in
// the same directory is written, fsync'ed and renamed over `path`, so readers
// see either the old file or the complete new one (atomic_file.hpp, also for
// two writers of one path). Throws NpyError (message starts with `path`) on
// any failure, leaving no temporary file behind.
template <class T>
NpyWritten write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const T* data);

extern template NpyWritten write_npy<float>(const std::string&, const std::vector<std::int64_t>&, const float*);
extern template NpyWritten write_npy<double>(const std::string&, const std::vector<std::int64_t>&, const double*);
extern template NpyWritten write_npy<std::int64_t>(const std::string&, const std::vector<std::int64_t>&,
                                                   const std::int64_t*);
extern template NpyWritten write_npy<std::uint64_t>(const std::string&, const std::vector<std::int64_t>&,
                                                    const std::uint64_t*);

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) of n bytes, continuing
// from `crc`: the value of Python's zlib.crc32(data, crc), so that readers
// check a file with the standard library alone.
std::uint32_t crc32(const void* data, std::size_t n, std::uint32_t crc = 0);

}  // namespace mosaic
