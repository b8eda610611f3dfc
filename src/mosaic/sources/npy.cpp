#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/impl/npy_internal.hpp"

#include "mosaic/util/atomic_file.hpp"
#include "mosaic/util/fnv1a.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

// Data are copied byte for byte between .npy files (little-endian) and memory.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mosaic/npy.cpp assumes a little-endian host"
#endif

namespace mosaic {
namespace npy_detail {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw NpyError(path + ": " + what); }

std::string quoted_bytes(const std::string& bytes, std::size_t max_len) {
  std::string out = "\"";
  const std::size_t n = std::min(bytes.size(), max_len);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += '"';
  if (bytes.size() > max_len) out += "...";
  return out;
}

std::string shape_repr(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// "is a FIFO (named pipe), not a .npy file" for a file that is not regular.
[[noreturn]] void fail_not_regular(const std::string& path, mode_t mode) {
  const char* type = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                                      : "not a regular file";
  fail(path, std::string("is ") + type + ", not a .npy file (expected a regular file)");
}

std::int64_t mtime_ns(const struct stat& st) {
  return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + std::int64_t(st.st_mtim.tv_nsec);
}

// Opens a regular file for reading. O_NONBLOCK: opening a FIFO for reading
// blocks until a writer appears, so the type is checked on the open
// descriptor, never by waiting (O_NONBLOCK changes nothing for the reads of
// a regular file).
int open_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) fail(path, "file not found");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) fail_not_regular(path, st.st_mode);  // a socket
    fail(path, std::string("cannot open: ") + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(path, std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_not_regular(path, st.st_mode);
  }
  return fd;
}

std::size_t pread_all(int fd, void* buf, std::size_t n, std::size_t offset, const std::string& path) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, n - done, off_t(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(path, std::string("read error: ") + std::strerror(errno));
    }
    if (r == 0) break;
    done += std::size_t(r);
  }
  return done;
}

}  // namespace npy_detail

namespace {

using namespace npy_detail;

template <class T>
struct Bits;
template <>
struct Bits<float> {
  using U = std::uint32_t;
  static constexpr U exponent = 0x7f800000u;
};
template <>
struct Bits<double> {
  using U = std::uint64_t;
  static constexpr U exponent = 0x7ff0000000000000ull;
};

// Index of the first NaN or +-inf in p[0, n) (only +-inf when `nan_ok`: a
// NaN is then a missing entry), or n. Works on the bits, so it stays right
// under -ffast-math; a branch-free block pass keeps it vectorized.
template <class T>
std::size_t first_nonfinite(const T* p, std::size_t n, bool nan_ok) {
  using U = typename Bits<T>::U;
  constexpr U exp = Bits<T>::exponent;
  // +-inf: the exponent all ones and a zero mantissa (the sign masked off);
  // NaN or inf: the exponent all ones.
  constexpr U magnitude = ~(U(1) << (8 * sizeof(U) - 1));
  const U mask = nan_ok ? magnitude : exp;
  constexpr std::size_t block = 2048;
  for (std::size_t b = 0; b < n; b += block) {
    const std::size_t e = std::min(n, b + block);
    U bad = 0;
    for (std::size_t i = b; i < e; ++i) {
      U bits;
      std::memcpy(&bits, p + i, sizeof bits);
      bad |= U((bits & mask) == exp);
    }
    if (bad) {
      for (std::size_t i = b; i < e; ++i) {
        U bits;
        std::memcpy(&bits, p + i, sizeof bits);
        if ((bits & mask) == exp) return i;
      }
    }
  }
  return n;
}

// The buffer conversions and strided reads go through: 256 KiB per thread
// (a reader is used by one thread at a time; the staging thread and the
// main thread each have their own), so it stays in cache between the read
// and the conversion.
constexpr std::size_t kScratchBytes = std::size_t(256) << 10;
unsigned char* scratch() {
  thread_local std::vector<unsigned char> buffer(kScratchBytes);
  return buffer.data();
}

// dst[i * dst_stride] = T(src[i]) for i in [0, n); src may be unaligned.
template <class S, class T>
void convert(const unsigned char* src, std::size_t n, T* dst, std::size_t dst_stride) {
  if (std::is_same<S, T>::value && dst_stride == 1) {
    std::memcpy(dst, src, n * sizeof(T));
    return;
  }
  if (dst_stride == 1) {  // a loop of its own, so that it vectorizes
    for (std::size_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, src + i * sizeof(S), sizeof(S));
      dst[i] = static_cast<T>(v);
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    S v;
    std::memcpy(&v, src + i * sizeof(S), sizeof(S));
    dst[i * dst_stride] = static_cast<T>(v);
  }
}

template <class T>
const char* type_name() {
  return std::is_same<T, float>::value ? "float32" : "float64";
}

std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int digits = 6; digits <= 17; ++digits) {  // the shortest text that reads back as v
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

template <class T>
const char* descr_of();
template <>
const char* descr_of<float>() {
  return "<f4";
}
template <>
const char* descr_of<double>() {
  return "<f8";
}
template <>
const char* descr_of<std::int64_t>() {
  return "<i8";
}
template <>
const char* descr_of<std::uint64_t>() {
  return "<u8";
}

void write_all(int fd, const void* data, std::size_t n, const std::string& path, const std::string& tmp) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<std::size_t>(n, std::size_t(1) << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, std::string("cannot write: ") + std::strerror(e));
    }
    p += w;
    n -= std::size_t(w);
  }
}

}  // namespace

const char* npy_descr(NpyDtype dtype) { return dtype == NpyDtype::f4 ? "<f4" : "<f8"; }

NpyHeader parse_npy_header(const std::string& path) {
  FileDescriptor f;
  f.fd = open_regular_file(path);
  return parse_header_fd(f.fd, path);
}

std::string file_time_text(std::int64_t ns) {
  const std::time_t sec = std::time_t(ns / 1000000000);
  std::tm tm{};
  ::gmtime_r(&sec, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%09lldZ", (long long)(ns % 1000000000));
  return buf;
}

// ------------------------------------------------------------------------
// NpyStreamReader

NpyStreamReader::NpyStreamReader(const std::string& path, int expected_d) : path_(path) {
  FileDescriptor f;
  f.fd = open_regular_file(path);
  header_ = parse_header_fd(f.fd, path);
  const auto& shape = header_.shape;
  if (shape.size() != 2) {
    fail(path, "expected a 2-D array of shape (samples, features), found a " + std::to_string(shape.size()) +
                   "-D array of shape " + shape_repr(shape));
  }
  if (shape[1] > INT_MAX) fail(path, "too many features: shape " + shape_repr(shape));
  rows_ = shape[0];
  cols_ = int(shape[1]);
  if (expected_d > 0 && cols_ != expected_d)
    fail(path, "has " + std::to_string(cols_) + " features per sample (shape " + shape_repr(shape) +
                   ") but problem.d is " + std::to_string(expected_d));
  if (!header_.fortran_order) ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  fd_ = std::exchange(f.fd, -1);
}

NpyStreamReader::~NpyStreamReader() { release(); }

void NpyStreamReader::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

NpyStreamReader::NpyStreamReader(NpyStreamReader&& other) noexcept
    : path_(other.path_),  // kept by `other` too, for its error messages
      header_(other.header_),
      rows_(other.rows_),
      cols_(other.cols_),
      fd_(std::exchange(other.fd_, -1)),
      bytes_read_(other.bytes_read_),
      nan_is_missing_(other.nan_is_missing_) {}

NpyStreamReader& NpyStreamReader::operator=(NpyStreamReader&& other) noexcept {
  if (this != &other) {
    release();
    path_ = other.path_;
    header_ = other.header_;
    rows_ = other.rows_;
    cols_ = other.cols_;
    fd_ = std::exchange(other.fd_, -1);
    bytes_read_ = other.bytes_read_;
    nan_is_missing_ = other.nan_is_missing_;
  }
  return *this;
}

void NpyStreamReader::require_rows(std::int64_t min_rows, const std::string& what) const {
  if (rows_ < min_rows)
    fail(path_, "has " + std::to_string(rows_) + " rows (samples), fewer than the " + std::to_string(min_rows) +
                    " required by " + what);
}

void NpyStreamReader::fail_changed(const std::string& now) const {
  fail(path_, "the file changed while the run was reading it: when it was opened it had " +
                  std::to_string(header_.file_bytes) + " bytes (shape " + shape_repr(header_.shape) + " of '" +
                  npy_descr(header_.dtype) + "') and was last modified at " + file_time_text(header_.mtime_ns) +
                  "; now " + now + ". The run stops rather than read other data than it started with");
}

void NpyStreamReader::check_unchanged() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail(path_, std::string("cannot stat: ") + std::strerror(errno));
  const std::uint64_t bytes = std::uint64_t(st.st_size);
  const std::int64_t mtime = mtime_ns(st);
  if (bytes != header_.file_bytes || mtime != header_.mtime_ns)
    fail_changed("it has " + std::to_string(bytes) + " bytes and was last modified at " + file_time_text(mtime));
}

void NpyStreamReader::read_exact(std::size_t offset, void* dst, std::size_t n, std::int64_t first,
                                 std::int64_t count) const {
  if (pread_all(fd_, dst, n, offset, path_) == n) return;
  struct stat st {};
  const std::string size = ::fstat(fd_, &st) == 0 ? std::to_string(st.st_size) : std::string("fewer");
  fail_changed("it has " + size + " bytes: " +
               (count == 0 ? std::string("its header is")
                           : "rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ") are") +
               " no longer in it");
}

template <class S, class T>
void NpyStreamReader::read_values(std::size_t offset, std::size_t n, T* dst, std::size_t stride, std::int64_t first,
                                  std::int64_t count) const {
  if (std::is_same<S, T>::value && stride == 1) {
    read_exact(offset, dst, n * sizeof(T), first, count);
    return;
  }
  unsigned char* buf = scratch();
  constexpr std::size_t per_piece = kScratchBytes / sizeof(S);
  for (std::size_t done = 0; done < n; done += per_piece) {
    const std::size_t m = std::min(per_piece, n - done);
    read_exact(offset + done * sizeof(S), buf, m * sizeof(S), first, count);
    convert<S>(buf, m, dst + done * stride, stride);
  }
}

void NpyStreamReader::prefetch_rows(std::int64_t first, std::int64_t count) const {
  if (fd_ < 0) return;
  first = std::clamp<std::int64_t>(first, 0, rows_);
  count = std::clamp<std::int64_t>(count, 0, rows_ - first);
  if (count == 0 || cols_ == 0) return;
  const std::size_t isz = header_.item_size;
  auto advise = [&](std::size_t offset, std::size_t length) {
    ::posix_fadvise(fd_, off_t(offset), off_t(length), POSIX_FADV_WILLNEED);
  };
  if (!header_.fortran_order) {
    advise(header_.data_offset + std::size_t(first) * row_bytes(), std::size_t(count) * row_bytes());
  } else {
    for (int j = 0; j < cols_; ++j)
      advise(header_.data_offset + (std::size_t(j) * std::size_t(rows_) + std::size_t(first)) * isz,
             std::size_t(count) * isz);
  }
}

template <class T>
void NpyStreamReader::read_rows(std::int64_t first, std::int64_t count, T* dst) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value, "read_rows<float or double>");
  if (fd_ < 0) fail(path_, "read_rows on a moved-from reader");
  if (first < 0 || count < 0 || first > rows_ || count > rows_ - first)
    fail(path_, "rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                    ") requested, but the file has " + std::to_string(rows_) + " rows");
  if (count == 0 || cols_ == 0) return;
  if (dst == nullptr) fail(path_, "read_rows into a null buffer");

  const std::size_t isz = header_.item_size;
  const std::size_t n = std::size_t(count) * std::size_t(cols_);
  const bool f8 = header_.dtype == NpyDtype::f8;
  if (!header_.fortran_order) {
    const std::size_t offset = header_.data_offset + std::size_t(first) * row_bytes();
    if (f8) read_values<double>(offset, n, dst, 1, first, count);
    else read_values<float>(offset, n, dst, 1, first, count);
  } else {
    // Column j holds rows [0, rows) contiguously at data_offset + j * rows * isz.
    for (int j = 0; j < cols_; ++j) {
      const std::size_t offset = header_.data_offset + (std::size_t(j) * std::size_t(rows_) + std::size_t(first)) * isz;
      if (f8) read_values<double>(offset, std::size_t(count), dst + j, std::size_t(cols_), first, count);
      else read_values<float>(offset, std::size_t(count), dst + j, std::size_t(cols_), first, count);
    }
  }
  // After the read: a write that began before it is seen here, so the rows
  // just read are never other data than the file had when it was opened.
  check_unchanged();
  bytes_read_ += n * isz;

  const std::size_t bad = first_nonfinite(dst, n, nan_is_missing_);
  if (bad == n) return;
  const std::int64_t row = first + std::int64_t(bad / std::size_t(cols_));
  const int col = int(bad % std::size_t(cols_));
  // Read the file's own value to tell a non-finite value from a float64
  // that does not fit the run's float32.
  const std::size_t elem = header_.fortran_order ? std::size_t(col) * std::size_t(rows_) + std::size_t(row)
                                                 : std::size_t(row) * std::size_t(cols_) + std::size_t(col);
  double original;
  if (f8) {
    read_values<double>(header_.data_offset + elem * isz, 1, &original, 1, row, 1);
  } else {
    float v;
    read_values<float>(header_.data_offset + elem * isz, 1, &v, 1, row, 1);
    original = v;
  }
  const std::string where = " at row " + std::to_string(row) + ", column " + std::to_string(col) + " (0-based)";
  if (std::isfinite(original))
    throw NpyValueError(path_ + ": value " + number_text(original) + where + " does not fit in " + type_name<T>() +
                        " (the run's dtype): it would become " + number_text(double(dst[bad])));
  throw NpyValueError(path_ + ": non-finite value " + number_text(original) + where);
}

NpyFingerprint NpyStreamReader::fingerprint(std::int64_t rows) const {
  if (fd_ < 0) fail(path_, "fingerprint of a moved-from reader");
  if (rows < 0 || rows > rows_)
    fail(path_,
         "fingerprint of rows [0, " + std::to_string(rows) + "), but the file has " + std::to_string(rows_) + " rows");
  NpyFingerprint fp;
  fp.path = path_;
  fp.file_bytes = header_.file_bytes;
  fp.mtime_ns = header_.mtime_ns;
  fp.rows = rows;
  std::vector<unsigned char> header(header_.data_offset);
  read_exact(0, header.data(), header.size(), 0, 0);
  fp.header_fnv1a64 = fnv1a64(header.data(), header.size());

  // Blocks of `block` rows (at least one): all of [0, rows) when that is at
  // most kFingerprintBlocks blocks, else kFingerprintBlocks of them from
  // row 0 to row `rows`, evenly spaced.
  const std::size_t isz = header_.item_size;
  const std::int64_t block =
      std::max<std::int64_t>(1, std::int64_t(kFingerprintBlockBytes / std::max<std::size_t>(row_bytes(), 1)));
  const bool all = rows <= block * kFingerprintBlocks;
  fp.sampled = !all;
  const std::int64_t blocks = all ? (rows + block - 1) / block : kFingerprintBlocks;
  const std::int64_t span = rows - block;  // the first row of the last block, when sampling
  std::uint64_t h = kFnv1a64Offset;
  std::vector<unsigned char> buf;
  for (std::int64_t i = 0; i < blocks && cols_ > 0; ++i) {
    constexpr std::int64_t gaps = kFingerprintBlocks - 1;
    const std::int64_t start = all ? i * block : span / gaps * i + span % gaps * i / gaps;  // i * span / gaps
    const std::int64_t n = std::min(block, rows - start);
    buf.resize(std::size_t(n) * row_bytes());
    if (!header_.fortran_order) {
      read_exact(header_.data_offset + std::size_t(start) * row_bytes(), buf.data(), buf.size(), start, n);
    } else {
      const std::size_t column_bytes = std::size_t(n) * isz;
      for (int j = 0; j < cols_; ++j)
        read_exact(header_.data_offset + (std::size_t(j) * std::size_t(rows_) + std::size_t(start)) * isz,
                   buf.data() + std::size_t(j) * column_bytes, column_bytes, start, n);
    }
    h = fnv1a64(buf.data(), buf.size(), h);
    fp.hashed_bytes += buf.size();
  }
  fp.rows_fnv1a64 = h;
  check_unchanged();
  return fp;
}

template void NpyStreamReader::read_rows<float>(std::int64_t, std::int64_t, float*);
template void NpyStreamReader::read_rows<double>(std::int64_t, std::int64_t, double*);

// ------------------------------------------------------------------------
// Writing

std::string npy_preamble(const std::string& descr, const std::vector<std::int64_t>& shape, bool fortran_order) {
  // Exactly what numpy.lib.format writes (NumPy >= 1.23): sorted keys, a
  // trailing ", ", spare spaces for the growth axis, then padding to 64.
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': " + shape_repr(shape) + ", }";
  constexpr std::size_t kGrowthAxisMaxDigits = 21;
  if (!shape.empty()) {
    const std::size_t digits = std::to_string(shape[fortran_order ? shape.size() - 1 : 0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  auto wrap = [&](int major, std::size_t len_bytes) {
    const std::size_t hlen = dict.size() + 1;  // + '\n'
    const std::size_t padlen = 64 - ((6 + 2 + len_bytes + hlen) % 64);
    const std::size_t total = hlen + padlen;
    std::string out(reinterpret_cast<const char*>(kMagic), 6);
    out += char(major);
    out += char(0);
    for (std::size_t i = 0; i < len_bytes; ++i) out += char((total >> (8 * i)) & 0xff);
    out += dict;
    out.append(padlen, ' ');
    out += '\n';
    return out;
  };
  std::string v1 = wrap(1, 2);
  if (v1.size() - 10 <= 65535) return v1;
  return wrap(2, 4);
}

template <class T>
NpyWritten write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const T* data) {
  std::uint64_t elements = 1;
  for (std::int64_t n : shape) {
    if (n < 0) fail(path, "cannot write: negative dimension in shape " + shape_repr(shape));
    if (n != 0 && elements > std::numeric_limits<std::uint64_t>::max() / sizeof(T) / std::uint64_t(n))
      fail(path, "cannot write: shape " + shape_repr(shape) + " is too large");
    elements *= std::uint64_t(n);
  }
  if (elements > 0 && data == nullptr) fail(path, "cannot write: no data for shape " + shape_repr(shape));
  const std::string preamble = npy_preamble(descr_of<T>(), shape);

  std::string tmp;
  const int fd = create_locked_temp(path, tmp);
  if (fd < 0)
    fail(path,
         "cannot write: cannot create a temporary file in " + directory_of(path) + " (" + std::strerror(errno) + ")");
  const std::size_t data_bytes = std::size_t(elements) * sizeof(T);
  write_all(fd, preamble.data(), preamble.size(), path, tmp);
  write_all(fd, data, data_bytes, path, tmp);
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, std::string("cannot write: flush failed (") + std::strerror(e) + ")");
  }
  test_hooks_before_rename(path);
  // The descriptor (and its lock: atomic_file.hpp) stays open until the
  // rename is done, so no other writer's cleanup removes the file first.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    ::close(fd);
    fail(path, std::string("cannot write: rename failed (") + std::strerror(e) + ")");
  }
  ::close(fd);                          // the data are durable (fsync above): closing releases the lock only
  fsync_directory(directory_of(path));  // the rename itself durable
  remove_stale_temps(path);
  return {preamble.size() + data_bytes, crc32(data, data_bytes, crc32(preamble.data(), preamble.size()))};
}

std::uint32_t crc32(const void* data, std::size_t n, std::uint32_t crc) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const unsigned char* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

template NpyWritten write_npy<float>(const std::string&, const std::vector<std::int64_t>&, const float*);
template NpyWritten write_npy<double>(const std::string&, const std::vector<std::int64_t>&, const double*);
template NpyWritten write_npy<std::int64_t>(const std::string&, const std::vector<std::int64_t>&, const std::int64_t*);
template NpyWritten write_npy<std::uint64_t>(const std::string&, const std::vector<std::int64_t>&,
                                             const std::uint64_t*);

}  // namespace mosaic
