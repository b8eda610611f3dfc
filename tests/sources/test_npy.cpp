// mosaic/npy.hpp: the .npy header parser on files written by NumPy (the
// fixtures of tests/make_npy_fixtures.py) and on every malformed case (and
// on files that are not regular), the stream reader (values, conversion,
// Fortran order, non-finite rows, bounded resident memory, a file that
// changes while it is read, fingerprints) and the atomic writer (read back
// by our parser and by the system NumPy).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "file_test_support.hpp"

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "mosaic/sources/npy.hpp"
#include "mosaic/util/atomic_file.hpp"

namespace {

using mosaic::NpyDtype;
using mosaic::NpyError;
using mosaic::NpyStreamReader;

std::string fixture(const std::string& name) { return std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/npy/" + name; }

// The values of every "good" fixture: good[i, j] = (3i + j - 7) / 3.
double good_value(int i, int j) { return double(3 * i + j - 7) / 3.0; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Temporary directories named after this suite.
struct TempDir : mosaic_test::TempDir {
  TempDir() : mosaic_test::TempDir("mosaic_npy") {}
};

// A .npy file written byte by byte: magic, version, header length (2 bytes
// for 1.x, 4 otherwise), the header text as given, then `data`.
std::string raw_npy(int major, int minor, const std::string& header, const std::string& data = "") {
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(minor);
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < len_bytes; ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string doubles_bytes(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

// Runs `f`, which must throw an NpyError whose message starts with "<path>: "
// and contains every one of `parts`.
::testing::AssertionResult throws_npy_error(const std::function<void()>& f, const std::string& path,
                                            const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const NpyError& e) {
    const std::string msg = e.what();
    if (msg.rfind(path + ": ", 0) != 0)
      return ::testing::AssertionFailure() << "message does not start with '" << path << ": ': " << msg;
    for (const auto& p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << p << "': " << msg;
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-NpyError: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

::testing::AssertionResult header_rejected(const std::string& path, const std::vector<std::string>& parts) {
  return throws_npy_error([&] { mosaic::parse_npy_header(path); }, path, parts);
}

::testing::AssertionResult reader_rejected(const std::string& path, int d, const std::vector<std::string>& parts) {
  return throws_npy_error([&] { NpyStreamReader r(path, d); }, path, parts);
}

// ---------------------------------------------------------------- fixtures

struct GoodFixture {
  const char* name;
  int major;
  NpyDtype dtype;
};

class NpyGoodFixture : public ::testing::TestWithParam<GoodFixture> {};

TEST_P(NpyGoodFixture, HeaderMatchesWhatNumPyWrote) {
  const auto& p = GetParam();
  const auto h = mosaic::parse_npy_header(fixture(p.name));
  EXPECT_EQ(h.major, p.major);
  EXPECT_EQ(h.minor, 0);
  EXPECT_EQ(h.dtype, p.dtype);
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{5, 3}));
  const std::size_t isz = p.dtype == NpyDtype::f4 ? 4 : 8;
  EXPECT_EQ(h.item_size, isz);
  EXPECT_EQ(h.data_offset % 64, 0u);  // NumPy aligns the data to 64 bytes
  EXPECT_EQ(h.data_bytes, 15 * isz);
  EXPECT_EQ(h.file_bytes, h.data_offset + h.data_bytes);
  EXPECT_EQ(std::uint64_t(std::filesystem::file_size(fixture(p.name))), h.file_bytes);
}

TEST_P(NpyGoodFixture, ReadRowsReturnsExactlyTheValuesInBothPrecisions) {
  const auto& p = GetParam();
  NpyStreamReader r(fixture(p.name), 3);
  ASSERT_EQ(r.rows(), 5);
  ASSERT_EQ(r.cols(), 3);
  std::vector<double> d(15, -1);
  std::vector<float> f(15, -1);
  r.read_rows(0, 5, d.data());
  r.read_rows(0, 5, f.data());
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double expect = p.dtype == NpyDtype::f8 ? good_value(i, j) : double(float(good_value(i, j)));
      EXPECT_EQ(d[std::size_t(i * 3 + j)], expect) << i << "," << j;                   // f4 -> double: exact widening
      EXPECT_EQ(f[std::size_t(i * 3 + j)], float(good_value(i, j))) << i << "," << j;  // f8 -> float: rounded
    }
  }
  // A range in the middle lands at the start of dst.
  std::vector<double> mid(6, -1);
  r.read_rows(2, 2, mid.data());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(mid[std::size_t(i * 3 + j)], d[std::size_t((i + 2) * 3 + j)]);
  EXPECT_EQ(r.bytes_read(), (15 + 15 + 6) * r.header().item_size);
}

INSTANTIATE_TEST_SUITE_P(
    NpyFixtures, NpyGoodFixture,
    ::testing::Values(GoodFixture{"v1_f8.npy", 1, NpyDtype::f8}, GoodFixture{"v2_f8.npy", 2, NpyDtype::f8},
                      GoodFixture{"v3_f8.npy", 3, NpyDtype::f8}, GoodFixture{"v1_f4.npy", 1, NpyDtype::f4},
                      GoodFixture{"v2_f4.npy", 2, NpyDtype::f4}, GoodFixture{"v3_f4.npy", 3, NpyDtype::f4}),
    [](const auto& info) {
      std::string n = info.param.name;
      return n.substr(0, n.find('.'));
    });

TEST(NpyReader, FortranOrderIsReadAsTheSameRows) {
  NpyStreamReader r(fixture("fortran_f8.npy"), 3);
  EXPECT_TRUE(r.header().fortran_order);
  std::vector<double> all(15);
  r.read_rows(0, 5, all.data());
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(all[std::size_t(i * 3 + j)], good_value(i, j)) << i << "," << j;
  std::vector<float> part(6);
  r.read_rows(3, 2, part.data());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(part[std::size_t(i * 3 + j)], float(good_value(i + 3, j)));
}

TEST(NpyReader, ZeroRowsAndTheInitSamplesCheck) {
  NpyStreamReader empty(fixture("empty_rows_f8.npy"), 3);
  EXPECT_EQ(empty.rows(), 0);
  empty.read_rows<double>(0, 0, nullptr);
  EXPECT_TRUE(throws_npy_error([&] { empty.require_rows(1); }, fixture("empty_rows_f8.npy"),
                               {"has 0 rows", "fewer than the 1 required by init_samples"}));

  NpyStreamReader r(fixture("v1_f8.npy"), 3);
  r.require_rows(5);
  EXPECT_TRUE(throws_npy_error([&] { r.require_rows(6, "problem.init_samples"); }, fixture("v1_f8.npy"),
                               {"has 5 rows", "fewer than the 6 required by problem.init_samples"}));
}

TEST(NpyReader, RangeOutsideTheFileIsAnError) {
  const std::string path = fixture("v1_f8.npy");
  NpyStreamReader r(path, 3);
  std::vector<double> buf(30);
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(4, 3, buf.data()); }, path,
                               {"rows [4, 7) requested, but the file has 5 rows"}));
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(-1, 1, buf.data()); }, path, {"requested"}));
  r.read_rows(5, 0, buf.data());  // empty range at the end is fine
  r.prefetch_rows(3, 100);        // clamped, no error
  r.prefetch_rows(-5, 2);
}

TEST(NpyReader, MovedReaderKeepsTheFile) {
  NpyStreamReader a(fixture("v2_f8.npy"), 3);
  NpyStreamReader b(std::move(a));
  std::vector<double> row(3);
  b.read_rows(4, 1, row.data());
  EXPECT_EQ(row[2], good_value(4, 2));
  EXPECT_TRUE(throws_npy_error([&] { a.read_rows(0, 1, row.data()); }, fixture("v2_f8.npy"), {"moved-from"}));
  NpyStreamReader c(fixture("v1_f4.npy"), 3);
  c = std::move(b);
  c.read_rows(1, 1, row.data());
  EXPECT_EQ(row[0], good_value(1, 0));
}

// ---------------------------------------------------------------- a file that changes under the reader

// A file of `rows` x 4 float64 values i + j / 8, last modified an hour ago
// (so a write now is sure to change the modification time).
void write_rows_file(const std::string& path, std::int64_t rows) {
  std::vector<double> v(std::size_t(rows) * 4);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = double(k / 4) + double(k % 4) / 8.0;
  write_file(path, mosaic::npy_preamble("<f8", {rows, 4}) + doubles_bytes(v));
  struct timespec past[2];
  ::clock_gettime(CLOCK_REALTIME, &past[0]);
  past[0].tv_sec -= 3600;
  past[1] = past[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), past, 0), 0);
}

// (Checked: with the reader's former mmap, the read after the truncation
// killed the test with SIGBUS.)
TEST(NpyReaderChanges, FileThatShrinksIsAnErrorNamingSizesNotASignal) {
  TempDir dir;
  const std::string path = dir / "s.npy";
  write_rows_file(path, 4096);
  NpyStreamReader r(path, 4);
  std::vector<double> buf(256 * 4);
  r.read_rows(0, 256, buf.data());
  EXPECT_EQ(buf[4 * 255 + 1], 255.125);
  ASSERT_EQ(::truncate(path.c_str(), 128), 0);
  const std::string bytes = std::to_string(128 + 4096 * 4 * 8);
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(256, 256, buf.data()); }, path,
                               {"the file changed while the run was reading it",
                                "when it was opened it had " + bytes + " bytes (shape (4096, 4) of '<f8')",
                                "now it has 128 bytes", "rows [256, 512) are no longer in it"}));
  std::vector<float> fbuf(256 * 4);  // through the conversion buffer
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(0, 1, fbuf.data()); }, path, {"now it has 128 bytes"}));
  EXPECT_TRUE(throws_npy_error([&] { r.fingerprint(10); }, path, {"now it has 128 bytes"}));
}

// (Checked: without the size and modification time check after each read,
// the reader hands out the new values.)
TEST(NpyReaderChanges, FileWrittenInPlaceIsAnErrorEvenAtTheSameSize) {
  TempDir dir;
  const std::string path = dir / "w.npy";
  write_rows_file(path, 64);
  NpyStreamReader r(path, 4);
  std::vector<double> buf(8 * 4);
  r.read_rows(0, 8, buf.data());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(r.header().data_offset + 8 * 4 * 8));
    const double other = -1;
    f.write(reinterpret_cast<const char*>(&other), sizeof other);
  }
  EXPECT_TRUE(
      throws_npy_error([&] { r.read_rows(8, 8, buf.data()); }, path,
                       {"the file changed while the run was reading it", "and was last modified at",
                        "now it has " + std::to_string(r.header().file_bytes) + " bytes and was last modified at"}));
}

TEST(NpyReaderChanges, FileReplacedByARenameIsReadAsOpened) {
  TempDir dir;
  const std::string path = dir / "r.npy";
  write_rows_file(path, 64);
  NpyStreamReader r(path, 4);
  write_file(dir / "new.npy", mosaic::npy_preamble("<f8", {2, 4}) + doubles_bytes(std::vector<double>(8, -5.0)));
  ASSERT_EQ(std::rename((dir / "new.npy").c_str(), path.c_str()), 0);
  std::vector<double> buf(4);
  r.read_rows(63, 1, buf.data());
  EXPECT_EQ(buf[3], 63.375);
}

// ---------------------------------------------------------------- fingerprints

void overwrite_double(const std::string& path, std::size_t offset, double v) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(std::streamoff(offset));
  f.write(reinterpret_cast<const char*>(&v), sizeof v);
}

// A small prefix is hashed whole: any change in rows [0, rows) changes the
// hash, a change after them or of the modification time alone does not.
TEST(NpyFingerprint, CoversEveryRowOfASmallPrefixAndOnlyThose) {
  TempDir dir;
  const std::string path = dir / "f.npy";
  write_rows_file(path, 100);
  auto fp = [&](std::int64_t rows) { return NpyStreamReader(path, 4).fingerprint(rows); };
  const auto a = fp(50);
  EXPECT_FALSE(a.sampled);
  EXPECT_EQ(a.rows, 50);
  EXPECT_EQ(a.hashed_bytes, 50u * 4 * 8);
  EXPECT_EQ(a.file_bytes, std::filesystem::file_size(path));
  EXPECT_EQ(a.path, path);
  EXPECT_NE(a.rows_fnv1a64, fp(49).rows_fnv1a64);
  const std::size_t data = NpyStreamReader(path, 4).header().data_offset;
  overwrite_double(path, data + 50 * 32, 1e9);  // row 50: after the prefix
  const auto b = fp(50);
  EXPECT_EQ(b.rows_fnv1a64, a.rows_fnv1a64);
  EXPECT_EQ(b.header_fnv1a64, a.header_fnv1a64);
  EXPECT_NE(b.mtime_ns, a.mtime_ns);
  overwrite_double(path, data + 37 * 32 + 16, 1e9);  // row 37, column 2
  EXPECT_NE(fp(50).rows_fnv1a64, a.rows_fnv1a64);
}

// A long prefix is sampled: kFingerprintBlocks blocks of 64 KiB, the first
// at row 0, the last ending at the prefix's last row.
TEST(NpyFingerprint, SamplesALongPrefixIncludingItsFirstAndLastRows) {
  TempDir dir;
  const std::string path = dir / "big.npy";
  const std::int64_t rows = 512 * 200;  // 3.2 MiB of rows of 32 bytes
  mosaic_test::write_f8_npy_streamed(path, rows, 4, [](std::int64_t i, int j) { return double(i) + j / 8.0; });
  const std::int64_t prefix = rows - 1000;
  const auto a = NpyStreamReader(path, 4).fingerprint(prefix);
  EXPECT_TRUE(a.sampled);
  EXPECT_EQ(a.hashed_bytes, std::uint64_t(mosaic::kFingerprintBlocks) * mosaic::kFingerprintBlockBytes);
  const std::size_t data = NpyStreamReader(path, 4).header().data_offset;
  for (const std::int64_t row : {std::int64_t(0), prefix - 1}) {
    overwrite_double(path, data + std::size_t(row) * 32, -1);
    EXPECT_NE(NpyStreamReader(path, 4).fingerprint(prefix).rows_fnv1a64, a.rows_fnv1a64) << "row " << row;
    overwrite_double(path, data + std::size_t(row) * 32, double(row));
    EXPECT_EQ(NpyStreamReader(path, 4).fingerprint(prefix).rows_fnv1a64, a.rows_fnv1a64) << "row " << row;
  }
}

TEST(NpyFingerprint, FortranOrderAndTheHeaderAreHashed) {
  TempDir dir;
  const std::string c = dir / "c.npy", f = dir / "f.npy";
  write_file(c, mosaic::npy_preamble("<f8", {4, 2}) + doubles_bytes({0, 4, 1, 5, 2, 6, 3, 7}));
  write_file(f, mosaic::npy_preamble("<f8", {4, 2}, true) + doubles_bytes({0, 1, 2, 3, 4, 5, 6, 7}));
  const auto fc = NpyStreamReader(c, 2).fingerprint(4), ff = NpyStreamReader(f, 2).fingerprint(4);
  EXPECT_NE(fc.header_fnv1a64, ff.header_fnv1a64);
  EXPECT_EQ(ff.hashed_bytes, 64u);
  overwrite_double(f, NpyStreamReader(f, 2).header().data_offset + 5 * 8, -5);  // row 1, column 1
  EXPECT_NE(NpyStreamReader(f, 2).fingerprint(4).rows_fnv1a64, ff.rows_fnv1a64);
  EXPECT_EQ(NpyStreamReader(f, 2).fingerprint(1).hashed_bytes, 16u);  // row 0 of both columns
}

// ---------------------------------------------------------------- non-finite values

TEST(NpyReader, NonFiniteValueNamesFileRowAndColumn) {
  const std::string nan_path = fixture("nan_row3_f8.npy");
  NpyStreamReader r(nan_path, 3);
  std::vector<double> buf(15);
  r.read_rows(0, 3, buf.data());  // rows before it are fine
  EXPECT_TRUE(
      throws_npy_error([&] { r.read_rows(0, 5, buf.data()); }, nan_path, {"non-finite value NaN at row 3, column 1"}));
  std::vector<float> fbuf(15);
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(2, 3, fbuf.data()); }, nan_path, {"NaN at row 3, column 1"}));

  const std::string inf_path = fixture("inf_row2_f4.npy");
  NpyStreamReader r4(inf_path, 3);
  EXPECT_TRUE(throws_npy_error([&] { r4.read_rows(1, 4, buf.data()); }, inf_path,
                               {"non-finite value -inf at row 2, column 2"}));
}

TEST(NpyReader, Float64BeyondFloat32RangeIsReportedForAFloatRun) {
  const std::string path = fixture("overflow_row4_f8.npy");
  NpyStreamReader r(path, 3);
  std::vector<double> d(15);
  r.read_rows(0, 5, d.data());  // fine in double
  EXPECT_EQ(d[12], 1e300);
  std::vector<float> f(15);
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(0, 5, f.data()); }, path,
                               {"value 1e+300 at row 4, column 0", "does not fit in float32"}));
}

TEST(NpyReader, NonFiniteInFortranOrderReportsTheFirstRow) {
  TempDir dir;
  const std::string path = dir / "f.npy";
  // shape (4, 2), column-major: column 0 = {0, 1, NaN, 3}, column 1 = {4, inf, 6, 7}.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  write_file(path, mosaic::npy_preamble("<f8", {4, 2}, true) + doubles_bytes({0, 1, nan, 3, 4, inf, 6, 7}));
  NpyStreamReader r(path, 2);
  std::vector<double> buf(8);
  r.read_rows(0, 1, buf.data());
  EXPECT_EQ(buf[1], 4.0);
  EXPECT_TRUE(
      throws_npy_error([&] { r.read_rows(0, 4, buf.data()); }, path, {"non-finite value inf at row 1, column 1"}));
  EXPECT_TRUE(throws_npy_error([&] { r.read_rows(2, 2, buf.data()); }, path, {"NaN at row 2, column 0"}));
}

// algorithm.missing other than error: a NaN is a missing entry and passes
// (float and double runs, C and Fortran order); +-inf and a float64 beyond
// float32 are still refused, named as before.
TEST(NpyReader, NanIsMissingPassesNanAndRefusesInfinity) {
  TempDir dir;
  const std::string path = dir / "f.npy";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // shape (4, 2), column-major: column 0 = {0, 1, NaN, 3}, column 1 = {4, inf, 6, 7}.
  write_file(path, mosaic::npy_preamble("<f8", {4, 2}, true) + doubles_bytes({0, 1, nan, 3, 4, inf, 6, 7}));
  NpyStreamReader r(path, 2);
  r.set_nan_is_missing(true);
  std::vector<double> buf(8);
  r.read_rows(2, 2, buf.data());
  EXPECT_TRUE(std::isnan(buf[0]));
  EXPECT_EQ(buf[1], 6.0);
  std::vector<float> fbuf(8);
  r.read_rows(2, 2, fbuf.data());
  EXPECT_TRUE(std::isnan(fbuf[0]));
  EXPECT_TRUE(
      throws_npy_error([&] { r.read_rows(0, 4, buf.data()); }, path, {"non-finite value inf at row 1, column 1"}));
  const std::string nan_path = fixture("nan_row3_f8.npy");
  NpyStreamReader rn(nan_path, 3);
  rn.set_nan_is_missing(true);
  std::vector<double> b5(15);
  rn.read_rows(0, 5, b5.data());
  EXPECT_TRUE(std::isnan(b5[10]));
  const std::string inf_path = fixture("inf_row2_f4.npy");
  NpyStreamReader ri(inf_path, 3);
  ri.set_nan_is_missing(true);
  EXPECT_TRUE(
      throws_npy_error([&] { ri.read_rows(1, 4, b5.data()); }, inf_path, {"non-finite value -inf at row 2, column 2"}));
  const std::string big = fixture("overflow_row4_f8.npy");
  NpyStreamReader ro(big, 3);
  ro.set_nan_is_missing(true);
  std::vector<float> f(15);
  EXPECT_TRUE(throws_npy_error([&] { ro.read_rows(0, 5, f.data()); }, big, {"does not fit in float32"}));
}

// ---------------------------------------------------------------- rejected files

TEST(NpyRejects, MissingFileAndDirectory) {
  TempDir dir;
  EXPECT_TRUE(header_rejected(dir / "nope.npy", {"file not found"}));
  EXPECT_TRUE(reader_rejected(dir / "nope.npy", 3, {"file not found"}));
  EXPECT_TRUE(header_rejected(dir.path(), {"is a directory"}));
}

// Opening a FIFO for reading blocks until a writer appears: the reader is
// run in a child process that must finish within 10 s. (Checked: with a
// plain blocking open() the child hangs and is killed here.)
TEST(NpyRejects, FifoAndDeviceAreRefusedNamingTheirTypeWithoutWaiting) {
  TempDir dir;
  const std::string fifo = dir / "pipe.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool ok = reader_rejected(fifo, 3, {"is a FIFO (named pipe), not a .npy file"}) &&
                    header_rejected(fifo, {"is a FIFO (named pipe)"});
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && (done = ::waitpid(child, &status, WNOHANG)) == 0; ++i) ::usleep(10000);
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "opening the FIFO " << fifo << " did not return within 10 s";
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the FIFO was not refused naming its type";
  EXPECT_TRUE(header_rejected("/dev/null", {"is a character device, not a .npy file"}));
}

TEST(NpyRejects, BadMagic) {
  TempDir dir;
  write_file(dir / "text.npy", "hello, world\n");
  EXPECT_TRUE(header_rejected(dir / "text.npy", {"not a .npy file", "bad magic", "\"hello,\""}));
  write_file(dir / "empty.npy", "");
  EXPECT_TRUE(header_rejected(dir / "empty.npy", {"not a .npy file", "empty"}));
  write_file(dir / "zip.npy", std::string("PK\x03\x04\x14\x00\x00\x00", 8));
  EXPECT_TRUE(header_rejected(dir / "zip.npy", {"bad magic", ".npz"}));
  write_file(dir / "short.npy", "\x93NUM");
  EXPECT_TRUE(header_rejected(dir / "short.npy", {"bad magic"}));
}

TEST(NpyRejects, UnsupportedVersion) {
  TempDir dir;
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }\n";
  write_file(dir / "v4.npy", raw_npy(4, 0, dict, doubles_bytes({1})));
  EXPECT_TRUE(header_rejected(dir / "v4.npy", {"unsupported .npy format version 4.0", "1.0, 2.0, 3.0"}));
  write_file(dir / "v11.npy", raw_npy(1, 1, dict, doubles_bytes({1})));
  EXPECT_TRUE(header_rejected(dir / "v11.npy", {"unsupported .npy format version 1.1"}));
  write_file(dir / "v0.npy", raw_npy(0, 0, dict, doubles_bytes({1})));
  EXPECT_TRUE(header_rejected(dir / "v0.npy", {"version 0.0"}));
}

TEST(NpyRejects, DtypesOtherThanLittleEndianF4F8) {
  EXPECT_TRUE(header_rejected(fixture("big_endian_f8.npy"),
                              {"unsupported dtype '>f8' (big-endian float64); expected '<f4' or '<f8'"}));
  EXPECT_TRUE(header_rejected(fixture("i4.npy"), {"unsupported dtype '<i4' (int32)", "expected '<f4' or '<f8'"}));
  EXPECT_TRUE(header_rejected(fixture("c16.npy"), {"unsupported dtype '<c16' (complex128)"}));
  EXPECT_TRUE(header_rejected(fixture("f2.npy"), {"unsupported dtype '<f2' (float16)"}));
  EXPECT_TRUE(header_rejected(fixture("object.npy"), {"unsupported dtype '|O' (Python objects)"}));
  EXPECT_TRUE(header_rejected(fixture("structured.npy"), {"unsupported dtype: a structured dtype", "('x', '<f8')"}));
  EXPECT_TRUE(reader_rejected(fixture("big_endian_f8.npy"), 3, {"big-endian"}));
}

TEST(NpyRejects, WrongNumberOfDimensions) {
  // parse_npy_header accepts any shape; the stream reader needs 2-D.
  EXPECT_EQ(mosaic::parse_npy_header(fixture("one_d_f8.npy")).shape, (std::vector<std::int64_t>{7}));
  EXPECT_TRUE(reader_rejected(fixture("one_d_f8.npy"), 7, {"expected a 2-D array", "1-D array of shape (7,)"}));
  EXPECT_TRUE(reader_rejected(fixture("three_d_f8.npy"), 3, {"3-D array of shape (2, 3, 4)"}));
  EXPECT_TRUE(reader_rejected(fixture("scalar_f8.npy"), 1, {"0-D array of shape ()"}));
}

TEST(NpyRejects, FeatureCountDifferentFromD) {
  EXPECT_TRUE(
      reader_rejected(fixture("v1_f8.npy"), 4, {"has 3 features per sample (shape (5, 3)) but problem.d is 4"}));
  NpyStreamReader any(fixture("v1_f8.npy"), 0);  // d <= 0: no check
  EXPECT_EQ(any.cols(), 3);
}

TEST(NpyRejects, TruncatedData) {
  TempDir dir;
  const std::string whole = read_file(fixture("v1_f8.npy"));
  ASSERT_EQ(whole.size(), 248u);
  write_file(dir / "cut.npy", whole.substr(0, whole.size() - 20));
  EXPECT_TRUE(header_rejected(dir / "cut.npy", {"truncated data", "shape (5, 3)", "120 data bytes", "248 bytes in all",
                                                "the file has 228 bytes (20 missing)"}));
  EXPECT_TRUE(reader_rejected(dir / "cut.npy", 3, {"truncated data"}));
  write_file(dir / "header_only.npy", whole.substr(0, 128));
  EXPECT_TRUE(header_rejected(dir / "header_only.npy", {"truncated data", "120 missing"}));
  // Cut inside the header.
  write_file(dir / "cut_header.npy", whole.substr(0, 60));
  EXPECT_TRUE(header_rejected(dir / "cut_header.npy", {"truncated header", "118 bytes"}));
  write_file(dir / "cut_len.npy", whole.substr(0, 9));
  EXPECT_TRUE(header_rejected(dir / "cut_len.npy", {"truncated header"}));
  // Bytes after the data are tolerated, as by NumPy.
  write_file(dir / "long.npy", whole + "extra");
  NpyStreamReader r(dir / "long.npy", 3);
  EXPECT_EQ(r.rows(), 5);
}

TEST(NpyRejects, ImplausibleHeaderLength) {
  TempDir dir;
  std::string bytes = "\x93NUMPY";
  bytes += char(2);
  bytes += char(0);
  bytes += std::string("\xff\xff\xff\x7f", 4);
  write_file(dir / "huge.npy", bytes + "{}");
  EXPECT_TRUE(header_rejected(dir / "huge.npy", {"header length 2147483647 is implausibly large"}));
}

struct MalformedCase {
  const char* header;
  const char* expect;
};

TEST(NpyRejects, MalformedHeaderDicts) {
  TempDir dir;
  const std::string data = doubles_bytes({1, 2, 3, 4, 5, 6});
  const MalformedCase cases[] = {
      {"{'descr': '<f8', 'fortran_order': False, }", "missing key 'shape'"},
      {"{'fortran_order': False, 'shape': (2, 3), }", "missing key 'descr'"},
      {"{'descr': '<f8', 'shape': (2, 3), }", "missing key 'fortran_order'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'foo': 1}", "unexpected key 'foo'"},
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}", "duplicate key 'descr'"},
      {"descr=<f8 fortran_order=False shape=2,3", "unexpected name 'descr'"},
      {"garbage", "unexpected name 'garbage'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)", "expected ',' or '}', found the end"},
      {"{'descr' '<f8', 'fortran_order': False, 'shape': (2, 3)}", "expected ':' after key 'descr'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)} 'shape': (9,)", "unexpected text after the dict"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3]}",
       "'shape' must be a tuple of integers, found [2, 3]"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (6)}", "'shape' must be a tuple of integers, found 6"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2, -3)}", "non-negative integers, found (-2, -3)"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2.0, 3)}", "only plain integers"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': ('2', 3)}", "non-negative integers, found ('2', 3)"},
      {"{'descr': '<f8', 'fortran_order': 'no', 'shape': (2, 3)}", "'fortran_order' must be True or False"},
      {"{'descr': '<f8', 'fortran_order': 0, 'shape': (2, 3)}", "'fortran_order' must be True or False, found 0"},
      {"{'descr': 8, 'fortran_order': False, 'shape': (2, 3)}", "'descr' must be a dtype string"},
      {"{'descr': 'float64', 'fortran_order': False, 'shape': (2, 3)}", "unsupported dtype 'float64'"},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (2, 3)}", "expected ',' or '}', found 'f'"},
      {"{'descr': '<f8", "unterminated string"},
      {"{5: '<f8'}", "expected a string key"},
      {"[1, 2]", "not a dict but [1, 2]"},
      {"   \n", "the header is empty"},
      {"", "the header is empty"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 3)}", "integer too large"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}\x01", "unexpected text after the dict"},
      {"{'descr': '<f8', 'fortran_order': Falsey, 'shape': (2, 3)}", "unexpected name 'Falsey'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904)}", "too large"},
  };
  int k = 0;
  for (const auto& c : cases) {
    const std::string path = dir / ("bad" + std::to_string(k++) + ".npy");
    write_file(path, raw_npy(1, 0, c.header, data));
    EXPECT_TRUE(header_rejected(path, {c.expect})) << "header: " << c.header;
    if (std::string(c.expect).find("unsupported") == std::string::npos && std::string(c.expect) != "too large") {
      EXPECT_TRUE(header_rejected(path, {"malformed header"})) << "header: " << c.header;
    }
  }
  // Deep nesting is refused rather than recursed into.
  std::string deep = "{'descr': '<f8', 'fortran_order': False, 'shape': " + std::string(100, '(') + "2";
  for (int i = 0; i < 100; ++i) deep += ",)";
  write_file(dir / "deep.npy", raw_npy(1, 0, deep + "}", data));
  EXPECT_TRUE(header_rejected(dir / "deep.npy", {"malformed header: nesting too deep"}));
  // The same parser serves version 2.0 and 3.0 headers.
  write_file(dir / "v3bad.npy", raw_npy(3, 0, "{'descr': '<f8', 'shape': (2, 3)}", data));
  EXPECT_TRUE(header_rejected(dir / "v3bad.npy", {"malformed header: missing key 'fortran_order'"}));
}

TEST(NpyParser, AcceptsEveryPythonLiteralSpellingOfAValidHeader) {
  TempDir dir;
  const std::string data = doubles_bytes({1, 2, 3, 4, 5, 6});
  const char* headers[] = {
      "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
      "{\"shape\": (2, 3), \"descr\": \"<f8\", \"fortran_order\": False}",               // any order, double quotes
      "  {'descr':'<f8','fortran_order':False,'shape':(2,3,)}  \n",                      // tight, trailing comma
      "{\n 'descr' : '<f8' ,\n 'fortran_order' : False ,\n 'shape' : ( 2 , 3 ) ,\n}\n",  // newlines
      "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }",                   // Python 2 longs
      "{'descr': '<f8', 'fortran_order': False, 'shape': ((2), +3), }",                  // parenthesized values
  };
  int k = 0;
  for (const char* h : headers) {
    const std::string path = dir / ("ok" + std::to_string(k++) + ".npy");
    write_file(path, raw_npy(2, 0, h, data));
    try {
      const auto hd = mosaic::parse_npy_header(path);
      EXPECT_EQ(hd.shape, (std::vector<std::int64_t>{2, 3})) << h;
      EXPECT_EQ(hd.dtype, NpyDtype::f8) << h;
      NpyStreamReader r(path, 3);
      std::vector<double> v(6);
      r.read_rows(0, 2, v.data());
      EXPECT_EQ(v, (std::vector<double>{1, 2, 3, 4, 5, 6})) << h;
    } catch (const NpyError& e) {
      ADD_FAILURE() << h << ": " << e.what();
    }
  }
}

// ---------------------------------------------------------------- writing

std::vector<double> good_f8() {
  std::vector<double> v;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) v.push_back(good_value(i, j));
  return v;
}

TEST(NpyWrite, BytesIdenticalToNumPy) {
  TempDir dir;
  const auto v = good_f8();
  mosaic::write_npy(dir / "f8.npy", {5, 3}, v.data());
  EXPECT_EQ(read_file(dir / "f8.npy"), read_file(fixture("v1_f8.npy")));
  std::vector<float> f(v.begin(), v.end());
  mosaic::write_npy(dir / "f4.npy", {5, 3}, f.data());
  EXPECT_EQ(read_file(dir / "f4.npy"), read_file(fixture("v1_f4.npy")));
  EXPECT_EQ(mosaic::npy_preamble("<f8", {}).size() % 64, 0u);
  EXPECT_EQ(read_file(fixture("scalar_f8.npy")).substr(0, 128), mosaic::npy_preamble("<f8", {}));
  EXPECT_EQ(read_file(fixture("one_d_f8.npy")).substr(0, 128), mosaic::npy_preamble("<f8", {7}));
  EXPECT_EQ(read_file(fixture("fortran_f8.npy")).substr(0, 128), mosaic::npy_preamble("<f8", {5, 3}, true));
}

TEST(NpyWrite, RoundTripThroughOurReaderAndAtomicReplace) {
  TempDir dir;
  const std::string path = dir / "state_mu.npy";
  std::vector<double> a(4 * 7);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::ldexp(double(i) - 11.0, -3) + 1e-9 * double(i);
  mosaic::write_npy(path, {4, 7}, a.data());
  std::vector<double> b(a.size());
  {
    NpyStreamReader r(path, 7);
    r.read_rows(0, 4, b.data());
  }
  EXPECT_EQ(a, b);
  // Overwrite with a different shape: the new file replaces the old one and
  // no temporary file is left behind.
  std::vector<float> c = {1.5f, -2.0f};
  mosaic::write_npy(path, {2, 1}, c.data());
  NpyStreamReader r(path, 1);
  EXPECT_EQ(r.rows(), 2);
  std::vector<float> back(2);
  r.read_rows(0, 2, back.data());
  EXPECT_EQ(back, c);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "state_mu.npy");
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::owner_read,
            std::filesystem::perms::owner_read);
}

TEST(NpyWrite, ErrorsNameThePath) {
  TempDir dir;
  const double x = 1;
  const std::string nodir = dir / "no/such/dir/s2.npy";
  EXPECT_TRUE(throws_npy_error([&] { mosaic::write_npy(nodir, {1}, &x); }, nodir,
                               {"cannot create a temporary file in", "No such file or directory"}));
  EXPECT_TRUE(
      throws_npy_error([&] { mosaic::write_npy(dir / "neg.npy", {-1}, &x); }, dir / "neg.npy", {"negative dimension"}));
  EXPECT_TRUE(throws_npy_error([&] { mosaic::write_npy<double>(dir / "null.npy", {2}, nullptr); }, dir / "null.npy",
                               {"no data"}));
  mosaic::write_npy<double>(dir / "empty.npy", {0, 3}, nullptr);  // nothing to write is fine
  EXPECT_EQ(mosaic::parse_npy_header(dir / "empty.npy").shape, (std::vector<std::int64_t>{0, 3}));
}

TEST(NpyWrite, ReturnsTheSizeAndCrc32OfTheFile) {
  const std::string check = "123456789";
  EXPECT_EQ(mosaic::crc32(check.data(), check.size()), 0xCBF43926u);  // the CRC-32 check value (zlib.crc32)
  EXPECT_EQ(mosaic::crc32(check.data() + 4, 5, mosaic::crc32(check.data(), 4)), 0xCBF43926u);
  TempDir dir;
  const auto v = good_f8();
  const mosaic::NpyWritten w = mosaic::write_npy(dir / "f8.npy", {5, 3}, v.data());
  const std::string bytes = read_file(dir / "f8.npy");
  EXPECT_EQ(w.bytes, bytes.size());
  EXPECT_EQ(w.crc32, mosaic::crc32(bytes.data(), bytes.size()));
}

// The cleanup after a write removes the temporaries of writers that died
// (nobody holds their lock), never the one a live writer holds
// (atomic_file.hpp). flock locks belong to the open file, so a temporary
// held open here is "live" for the cleanup in this same process.
TEST(AtomicFile, CleanupRemovesDeadWritersTemporariesOnly) {
  TempDir dir;
  const std::string target = dir / "mu.npy";
  std::string live, dead;
  const int live_fd = mosaic::create_locked_temp(target, live);
  ASSERT_GE(live_fd, 0);
  const int dead_fd = mosaic::create_locked_temp(target, dead);
  ASSERT_GE(dead_fd, 0);
  ::close(dead_fd);  // its writer ended before the rename
  const double x = 1.0;
  mosaic::write_npy(target, {1}, &x);
  EXPECT_TRUE(std::filesystem::exists(live)) << "the live writer's temporary was removed";
  EXPECT_FALSE(std::filesystem::exists(dead)) << "the dead writer's temporary was left";
  ::close(live_fd);
}

bool system_numpy_available() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

TEST(NpyWrite, SystemNumPyLoadsEveryWrittenType) {
  if (!system_numpy_available()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  const auto f8 = good_f8();
  mosaic::write_npy(dir / "f8.npy", {5, 3}, f8.data());
  const std::vector<float> f4 = {1.5f, -2.25f, 3.0f, 4.0f, 5.0f, 0.375f};
  mosaic::write_npy(dir / "f4.npy", {2, 3}, f4.data());
  const std::vector<std::int64_t> i8 = {-3, 0, 7, -(std::int64_t(1) << 62)};
  mosaic::write_npy(dir / "i8.npy", {4}, i8.data());
  const std::uint64_t u8 = (std::uint64_t(1) << 63) + 5;
  mosaic::write_npy(dir / "u8.npy", {}, &u8);
  mosaic::write_npy<double>(dir / "empty.npy", {0, 3}, nullptr);
  std::vector<double> t3(24);
  for (int i = 0; i < 24; ++i) t3[std::size_t(i)] = 0.5 * i;
  mosaic::write_npy(dir / "t3.npy", {2, 3, 4}, t3.data());

  write_file(dir / "check.py", R"PY(
import sys
import numpy as np
d = sys.argv[1]
a = np.load(d + "/f8.npy")
assert a.dtype == np.dtype("<f8") and a.shape == (5, 3), (a.dtype, a.shape)
assert (a == (np.arange(15, dtype=np.float64).reshape(5, 3) - 7.0) / 3.0).all(), a
b = np.load(d + "/f4.npy")
assert b.dtype == np.float32 and b.shape == (2, 3), (b.dtype, b.shape)
assert (b == np.array([[1.5, -2.25, 3], [4, 5, 0.375]], dtype=np.float32)).all(), b
c = np.load(d + "/i8.npy")
assert c.dtype == np.int64 and c.shape == (4,) and c.tolist() == [-3, 0, 7, -(2 ** 62)], c
u = np.load(d + "/u8.npy")
assert u.dtype == np.uint64 and u.shape == () and int(u) == 2 ** 63 + 5, u
e = np.load(d + "/empty.npy")
assert e.dtype == np.float64 and e.shape == (0, 3), e.shape
t = np.load(d + "/t3.npy", mmap_mode="r")
assert t.shape == (2, 3, 4) and (t == np.arange(24).reshape(2, 3, 4) * 0.5).all(), t
print("numpy", np.__version__, "read every file")
)PY");
  const std::string cmd = "/usr/bin/python3 '" + (dir / "check.py") + "' '" + dir.path() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 0) << cmd;
}

// ---------------------------------------------------------------- bounded memory

using mosaic_test::current_rss_bytes;
using mosaic_test::peak_rss_bytes;

// Reading a file 32x larger than the chunk, chunk by chunk into one reused
// buffer, raises the peak RSS (getrusage) by less than 4 chunks: the chunk
// buffer itself (the reader maps no file pages). The control at the end
// reads the same file through a plain mmap and shows that the measurement
// does see mapped file pages. (Checked, when the reader still mapped the
// file: without releasing the pages it touched, the first assertion failed
// with a growth of about the whole 64 MiB file.)
TEST(NpyMemory, PeakRssStaysWithinAFewChunksForAFile32xTheChunk) {
  TempDir dir;
  const std::string path = dir / "big.npy";
  constexpr int d = 64;
  constexpr std::int64_t chunk_rows = 4096;       // 4096 * 64 * 8 B = 2 MiB
  constexpr std::int64_t rows = 32 * chunk_rows;  // 64 MiB of data
  const std::size_t chunk_bytes = std::size_t(chunk_rows) * d * sizeof(double);
  auto value = [](std::int64_t i, int j) { return double(i) * 0.25 + double(j) / 64.0; };
  // Streamed out in pieces: never the whole file in memory.
  mosaic_test::write_f8_npy_streamed(path, rows, d, value);
  const std::uint64_t data_bytes = std::uint64_t(rows) * d * sizeof(double);
  ASSERT_GE(data_bytes, 20 * chunk_bytes);

  const long rss_before = current_rss_bytes();
  const long peak_before = peak_rss_bytes();
  double checksum = 0;
  std::uint64_t bytes_read = 0;
  {
    NpyStreamReader r(path, d);
    ASSERT_EQ(r.rows(), rows);
    std::vector<double> chunk(std::size_t(chunk_rows) * d);
    for (std::int64_t first = 0; first < rows; first += chunk_rows) {
      r.prefetch_rows(first + chunk_rows, chunk_rows);
      r.read_rows(first, chunk_rows, chunk.data());
      ASSERT_EQ(chunk[0], value(first, 0));
      ASSERT_EQ(chunk[chunk.size() - 1], value(first + chunk_rows - 1, d - 1));
      for (double x : chunk) checksum += x;
    }
    bytes_read = r.bytes_read();
  }
  const long peak_after = peak_rss_bytes();
  EXPECT_EQ(bytes_read, data_bytes);
  double expect = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < d; ++j) expect += value(i, j);
  EXPECT_EQ(checksum, expect);

  // Against the resident set before the read (not the earlier peak, which
  // could hide growth).
  const long growth = peak_after - rss_before;
  std::printf(
      "chunk %zu KiB, file %llu KiB, RSS before %ld KiB, peak before %ld KiB, peak after %ld KiB, "
      "growth %ld KiB\n",
      chunk_bytes / 1024, static_cast<unsigned long long>(data_bytes / 1024), rss_before / 1024, peak_before / 1024,
      peak_after / 1024, growth / 1024);
  EXPECT_LT(growth, long(4 * chunk_bytes)) << "peak RSS grew by " << growth / 1024 << " KiB";

  // Control: the same pages mapped and touched without being released do
  // show up in the peak RSS.
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const std::size_t file_bytes = std::size_t(std::filesystem::file_size(path));
  void* m = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(m, MAP_FAILED);
  const long rss_control = current_rss_bytes();
  volatile unsigned char sink = 0;
  for (std::size_t off = 0; off < file_bytes; off += 4096) sink = sink + static_cast<const unsigned char*>(m)[off];
  const long control_growth = peak_rss_bytes() - rss_control;
  ::munmap(m, file_bytes);
  EXPECT_GT(control_growth, long(16 * chunk_bytes)) << "the RSS measurement does not see mapped file pages";
}

}  // namespace
