// The .npy stream source (npy_source.hpp): the same samples through the
// synthetic source and through .npy files give the same final states (double
// and float, any chunk size, chunk boundaries not dividing the step count),
// host memory stays within a few chunks for a file many chunks long, and a
// non-finite row freezes only its stream, reported with its row.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>
#include "file_test_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/npy_source.hpp"
#include "mosaic/sources/synthetic_source.hpp"

namespace {

using namespace mosaic;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

// On host backends the device synthetic source is bitwise the host
// generator, so the two runs must agree bitwise; on a GPU the device
// log/sin/cos may differ in the last bits.
constexpr bool kHostBackend = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;

// Temporary directories named after this suite.
struct TempDir : mosaic_test::TempDir {
  TempDir() : mosaic_test::TempDir("mosaic_npy_source") {}
};

SyntheticSpec test_spec() {
  SyntheticSpec s;
  s.d = 24;
  s.r = 3;
  s.lambda_max = 2.0;
  s.lambda_min = 0.3;
  s.noise = 0.1;
  s.drift = 0.005;
  s.mean_scale = 0.5;
  s.seed = 99;
  return s;
}

// The synthetic samples [0, rows) of stream `id` with the truth `truth`
// (the synthetic source's, copied to the host), written as a float64 file.
std::string write_synthetic_file(const TempDir& dir, const SyntheticSpec& spec, const SyntheticTruth& truth,
                                 std::uint64_t id, std::int64_t rows) {
  std::vector<double> data(std::size_t(rows) * spec.d);
  for (std::int64_t t = 0; t < rows; ++t)
    synthetic_sample(spec, truth, id, std::uint64_t(t), data.data() + std::size_t(t) * spec.d);
  const std::string path = dir / ("stream_" + std::to_string(id) + ".npy");
  write_npy<double>(path, {rows, spec.d}, data.data());
  return path;
}

// init: data from rows [0, n0), then `steps` steps on rows n0, n0 + 1, ...
template <class Scalar, class Source>
StreamBatch<Scalar, Exec> run_engine(Source& source, const std::vector<std::uint64_t>& ids, int d, int r,
                                     const MosaicParams& p, std::int64_t steps) {
  const int B = int(ids.size());
  StreamBatch<Scalar, Exec> batch(B, d, r, ids);
  MosaicEngine<Scalar, Exec> engine(p, B, d, r);
  const int n0 = p.resolved_init_samples(r);
  Kokkos::View<Scalar***, Kokkos::LayoutRight, Mem> X0("X0", B, n0, d);
  source.read_init(n0, X0);
  engine.init_data(batch, X0);
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Mem> X("X", B, d);
  for (std::int64_t k = 0; k < steps; ++k) {
    source.generate(n0 + k, X);
    engine.step(batch, X);
  }
  Kokkos::fence();
  return batch;
}

template <class Scalar>
void expect_same_state(const ReferenceState<Scalar>& a, const ReferenceState<Scalar>& b, double tol,
                       const std::string& what) {
  ASSERT_EQ(a.steps, b.steps) << what;
  auto near = [&](double x, double y, const char* name, std::size_t i) {
    if (tol == 0) ASSERT_EQ(x, y) << what << ": " << name << "[" << i << "]";
    else ASSERT_NEAR(x, y, tol * (1 + std::fabs(x))) << what << ": " << name << "[" << i << "]";
  };
  for (std::size_t i = 0; i < a.mu.size(); ++i) near(a.mu[i], b.mu[i], "mu", i);
  for (std::size_t i = 0; i < a.U.size(); ++i) near(a.U[i], b.U[i], "U", i);
  for (std::size_t i = 0; i < a.S.size(); ++i) near(a.S[i], b.S[i], "S", i);
  near(a.s2, b.s2, "s2", 0);
}

MosaicParams test_params() {
  MosaicParams p;
  p.init = InitMode::data;
  p.reorthonormalize_every = 100;
  return p;
}

// ---------------------------------------------------------------- equivalence

template <class Scalar>
void check_equivalence(int chunk_rows, double gpu_tol) {
  TempDir dir;
  const SyntheticSpec spec = test_spec();
  const int r = 3;
  const MosaicParams p = test_params();
  const std::int64_t steps = 500;
  const std::int64_t rows = p.resolved_init_samples(r) + steps;
  const std::vector<std::uint64_t> ids = {0, 3, 7};
  SyntheticDriftSource<Scalar, Exec> synth(spec, ids);
  const std::vector<SyntheticTruth> truths = synth.truths_on_host();
  std::vector<std::string> paths;
  for (std::size_t b = 0; b < ids.size(); ++b)
    paths.push_back(write_synthetic_file(dir, spec, truths[b], ids[b], rows));

  const auto a = run_engine<Scalar>(synth, ids, spec.d, r, p, steps);
  NpyStreamSource<Scalar, Exec> npy(paths, ids, spec.d, chunk_rows);
  EXPECT_EQ(npy.end_row(), rows);
  const auto b = run_engine<Scalar>(npy, ids, spec.d, r, p, steps);

  for (int s = 0; s < int(ids.size()); ++s)
    expect_same_state(a.to_host(s), b.to_host(s), kHostBackend ? 0.0 : gpu_tol,
                      "stream " + std::to_string(ids[s]) + ", chunk_rows " + std::to_string(chunk_rows));
  const SourceIoStats io = npy.io_stats();
  EXPECT_EQ(io.bytes_read, std::uint64_t(rows) * ids.size() * spec.d * sizeof(double));
  EXPECT_EQ(io.chunks, (steps + chunk_rows - 1) / chunk_rows);
  EXPECT_EQ(io.chunk_rows, chunk_rows);
  EXPECT_TRUE(io.data_errors.empty());
  EXPECT_GE(io.read_seconds, 0.0);
}

TEST(NpySource, SameFinalStatesAsTheSyntheticSourceDouble) {
  // 37 does not divide 500; 1 is a chunk per step; 4096 is one chunk for all.
  for (int chunk : {37, 1, 4096}) check_equivalence<double>(chunk, 1e-12);
}

TEST(NpySource, FloatRunFromFloat64FilesMatchesFloatSynthetic) {
  // read_rows<float> rounds the file's doubles exactly as the float
  // synthetic source rounds its double samples.
  check_equivalence<float>(64, 1e-4);
}

// generate() copies exactly row t, across chunk boundaries.
TEST(NpySource, RowsAcrossChunkBoundaries) {
  TempDir dir;
  const int d = 5;
  const std::int64_t rows = 103;
  auto value = [](std::uint64_t s, std::int64_t t, int i) { return double(s) * 1000 + double(t) + i / 8.0; };
  std::vector<std::string> paths;
  for (std::uint64_t s = 0; s < 2; ++s) {
    std::vector<double> data(std::size_t(rows) * d);
    for (std::int64_t t = 0; t < rows; ++t)
      for (int i = 0; i < d; ++i) data[std::size_t(t) * d + i] = value(s, t, i);
    paths.push_back(dir / ("f" + std::to_string(s) + ".npy"));
    write_npy<double>(paths.back(), {rows, d}, data.data());
  }
  NpyStreamSource<double, Exec> src(paths, {10, 11}, d, 10, 101);
  Kokkos::View<double***, Kokkos::LayoutRight, Mem> X0("X0", 2, 3, d);
  src.read_init(3, X0);
  auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X0);
  EXPECT_EQ(h0(1, 2, 4), value(1, 2, 4));
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> X("X", 2, d);
  for (std::int64_t t = 3; t < 101; ++t) {
    src.generate(t, X);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < d; ++i) ASSERT_EQ(h(s, i), value(std::uint64_t(s), t, i)) << "t=" << t;
  }
  // Rows are consumed in order and not beyond the run's end.
  EXPECT_THROW(src.generate(101, X), std::out_of_range);
  NpyStreamSource<double, Exec> src2(paths, {0, 1}, d, 10);
  EXPECT_EQ(src2.end_row(), rows);
  EXPECT_THROW(src2.generate(5, X), std::invalid_argument);
  src2.generate(0, X);
  EXPECT_THROW(src2.generate(0, X), std::invalid_argument);
  // end_row beyond the shortest file names it.
  try {
    NpyStreamSource<double, Exec> src3(paths, {0, 1}, d, 10, rows + 1);
    FAIL() << "no error";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("f0.npy"), std::string::npos) << e.what();
  }
}

// Entry (t, i) of stream s's counting file: its row and column readable
// from the value.
double counting_value(std::uint64_t s, std::int64_t t, int i) { return 1 + double(s) * 1000 + double(t) + i / 8.0; }

// One float64 file per stream s, rows[s] rows of counting_value, named
// <prefix><s>.npy; `nan_at` (stream, row) gets a NaN in column 1.
std::vector<std::string> write_counting_files(const TempDir& dir, const std::vector<std::int64_t>& rows, int d,
                                              const std::string& prefix,
                                              std::pair<std::uint64_t, std::int64_t> nan_at = {~0ull, -1}) {
  std::vector<std::string> paths;
  for (std::uint64_t s = 0; s < rows.size(); ++s) {
    std::vector<double> data(std::size_t(rows[s]) * d);
    for (std::int64_t t = 0; t < rows[s]; ++t)
      for (int i = 0; i < d; ++i) data[std::size_t(t) * d + i] = counting_value(s, t, i);
    if (nan_at.first == s) data[std::size_t(nan_at.second) * d + 1] = std::numeric_limits<double>::quiet_NaN();
    paths.push_back(dir / (prefix + std::to_string(s) + ".npy"));
    write_npy<double>(paths.back(), {rows[s], d}, data.data());
  }
  return paths;
}

// Files of unequal length (run.steps: all): the run reads to the end of the
// longest, and a shorter file's stream gets its own rows to its end, zeros
// after it (mid-chunk and in whole chunks past it); without
// unequal_lengths the shorter file is an error naming it.
TEST(NpySource, FilesOfUnequalLengthStageZerosPastTheirEnd) {
  TempDir dir;
  const int d = 3;
  const std::vector<std::int64_t> rows = {14, 23};
  const auto value = counting_value;
  const std::vector<std::string> paths = write_counting_files(dir, rows, d, "u");
  NpyStreamSource<double, Exec> src(paths, {0, 1}, d, 5, -1, false, true);
  EXPECT_EQ(src.end_row(), 23);
  Kokkos::View<double***, Kokkos::LayoutRight, Mem> X0("X0", 2, 3, d);
  src.read_init(3, X0);
  for (std::int64_t t = 3; t < 23;) {
    const auto block = src.next_block(t, 4);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), block);
    for (int j = 0; j < int(h.extent(1)); ++j, ++t)
      for (int s = 0; s < 2; ++s)
        for (int i = 0; i < d; ++i)
          ASSERT_EQ(h(s, j, i), t < rows[s] ? value(std::uint64_t(s), t, i) : 0.0) << "stream " << s << " t=" << t;
  }
  EXPECT_TRUE(src.io_stats().data_errors.empty());
  // Each file is read to its end, not beyond.
  EXPECT_EQ(src.io_stats().bytes_read, std::uint64_t(14 + 23) * d * sizeof(double));
  try {
    NpyStreamSource<double, Exec> strict(paths, {0, 1}, d, 5, 23);
    FAIL() << "no error";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("u0.npy"), std::string::npos) << e.what();
  }
}

// Row offsets (set_row_offsets): stream b's row t is row t + offset_b of
// its file, across chunk boundaries (the grid stays on the common rows); a
// non-finite row is reported with its row in the file and freezes the
// stream from there; one that read_init's prefetch met at the old offsets
// (row 5 of stream 1, which its offset of 9 skips) leaves no trace; position_at counts
// the offset; read_stream_rows reads any rows of one file, whatever its
// offset. Without unequal lengths, a file that fits its offset exactly is
// accepted and one row shorter is an error naming it.
TEST(NpySource, RowOffsetsShiftEachFile) {
  TempDir dir;
  const int d = 3;
  const auto value = counting_value;
  std::vector<std::string> paths = write_counting_files(dir, {40, 40}, d, "o", {1, 33});
  {  // stream 1 also has a NaN at file row 5: staged by read_init's prefetch, then skipped by the offset
    std::vector<double> data(std::size_t(40) * d);
    for (std::int64_t t = 0; t < 40; ++t)
      for (int i = 0; i < d; ++i) data[std::size_t(t) * d + i] = counting_value(1, t, i);
    data[std::size_t(5) * d] = std::numeric_limits<double>::quiet_NaN();
    data[std::size_t(33) * d + 1] = std::numeric_limits<double>::quiet_NaN();
    write_npy<double>(paths[1], {40, d}, data.data());
  }
  const std::int64_t end = 30, shift = 9;
  Kokkos::View<double***, Kokkos::LayoutRight, Mem> X0("X0", 2, 3, d);
  // The blocks after the init, the offsets set; then the one data error.
  const auto expect_shifted_rows = [&](NpyStreamSource<double, Exec>& source, const std::string& what) {
    for (std::int64_t t = 3; t < end;) {
      const auto block = source.next_block(t, 5);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), block);
      for (int j = 0; j < int(h.extent(1)); ++j, ++t) {
        for (int i = 0; i < d; ++i) ASSERT_EQ(h(0, j, i), value(0, t, i)) << what << ": t=" << t;
        const std::int64_t file_row = t + shift;
        for (int i = 0; i < d; ++i) {
          const double expected = file_row >= 33 ? std::numeric_limits<double>::infinity() : value(1, file_row, i);
          ASSERT_EQ(h(1, j, i), expected) << what << ": t=" << t;
        }
      }
    }
    const SourceIoStats io = source.io_stats();
    ASSERT_EQ(io.data_errors.size(), 1u) << what;
    EXPECT_EQ(io.data_errors[0].row, 33) << what;
  };
  // The driver's order with a grown init window (init_windows.hpp): a
  // window read (read_stream_rows waits for read_init's prefetch) before
  // the offsets are set; the prefetch's NaN at row 5 still leaves no trace.
  {
    NpyStreamSource<double, Exec> grown(paths, {0, 1}, d, 7, end, false, true);
    grown.read_init(3, X0);
    std::vector<double> window(std::size_t(6) * d);
    grown.read_stream_rows(0, 0, 6, window.data());
    grown.set_row_offsets({0, shift});
    expect_shifted_rows(grown, "a window read first");
  }
  NpyStreamSource<double, Exec> src(paths, {0, 1}, d, 7, end, false, true);
  src.read_init(3, X0);
  src.set_row_offsets({0, shift});
  expect_shifted_rows(src, "offsets after read_init");
  EXPECT_EQ(src.position_at(33 - shift).frozen, (std::vector<unsigned char>{0, 0}));
  EXPECT_EQ(src.position_at(34 - shift).frozen, (std::vector<unsigned char>{0, 1}));
  std::vector<double> got(std::size_t(4) * d);
  src.read_stream_rows(1, 10, 4, got.data());  // absolute rows: the offset of 9 is not added
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < d; ++i) EXPECT_EQ(got[std::size_t(k) * d + i], value(1, 10 + k, i));
  EXPECT_THROW(src.read_stream_rows(2, 0, 1, got.data()), std::invalid_argument);   // no stream 2
  EXPECT_THROW(src.read_stream_rows(1, -1, 1, got.data()), std::invalid_argument);  // a negative row
  EXPECT_THROW(src.read_stream_rows(1, 0, 0, got.data()), std::invalid_argument);   // no rows
  NpyStreamSource<double, Exec> strict(paths, {0, 1}, d, 7, end);
  EXPECT_THROW(strict.set_row_offsets({0}), std::invalid_argument);      // one offset for two streams
  EXPECT_THROW(strict.set_row_offsets({0, -1}), std::invalid_argument);  // a negative offset
  strict.set_row_offsets({0, 10});                                       // rows up to 40: the file's end
  try {
    strict.set_row_offsets({0, 11});
    FAIL() << "no error";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("o1.npy"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- non-finite data

TEST(NpySource, NonFiniteRowFreezesOnlyItsStreamAndReportsTheRow) {
  TempDir dir;
  const SyntheticSpec spec = test_spec();
  const int r = 3;
  const MosaicParams p = test_params();
  const int n0 = p.resolved_init_samples(r);
  const std::int64_t steps = 300, bad_step = 123, rows = n0 + steps;
  const std::vector<std::uint64_t> ids = {0, 1, 2};
  SyntheticDriftSource<double, Exec> synth(spec, ids);
  const std::vector<SyntheticTruth> truths = synth.truths_on_host();
  std::vector<std::string> paths;
  for (std::size_t b = 0; b < ids.size(); ++b)
    paths.push_back(write_synthetic_file(dir, spec, truths[b], ids[b], rows));
  {  // stream 1: a NaN at row n0 + bad_step, column 5
    const SyntheticTruth& truth = truths[1];
    std::vector<double> data(std::size_t(rows) * spec.d);
    for (std::int64_t t = 0; t < rows; ++t)
      synthetic_sample(spec, truth, 1, std::uint64_t(t), data.data() + std::size_t(t) * spec.d);
    data[std::size_t(n0 + bad_step) * spec.d + 5] = std::numeric_limits<double>::quiet_NaN();
    write_npy<double>(paths[1], {rows, spec.d}, data.data());
  }
  const auto a = run_engine<double>(synth, ids, spec.d, r, p, steps);
  NpyStreamSource<double, Exec> npy(paths, ids, spec.d, 50);
  const auto b = run_engine<double>(npy, ids, spec.d, r, p, steps);

  auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.status);
  auto at = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.breakdown_step);
  EXPECT_EQ(status(0), 0);
  EXPECT_EQ(status(1), breakdown_nonfinite_sample);
  EXPECT_EQ(at(1), bad_step);
  EXPECT_EQ(status(2), 0);
  // The healthy streams are untouched by their neighbour's bad data.
  expect_same_state(a.to_host(0), b.to_host(0), kHostBackend ? 0.0 : 1e-12, "stream 0");
  expect_same_state(a.to_host(2), b.to_host(2), kHostBackend ? 0.0 : 1e-12, "stream 2");
  EXPECT_EQ(b.to_host(1).steps, bad_step);  // frozen before the bad step

  const SourceIoStats io = npy.io_stats();
  ASSERT_EQ(io.data_errors.size(), 1u);
  const SourceDataError& e = io.data_errors[0];
  EXPECT_EQ(e.stream_id, 1u);
  EXPECT_EQ(e.row, n0 + bad_step);
  EXPECT_EQ(e.path, paths[1]);
  for (const std::string& s :
       std::vector<std::string>{paths[1], "row " + std::to_string(n0 + bad_step), "column 5", "non-finite"})
    EXPECT_NE(e.message.find(s), std::string::npos) << s << " in: " << e.message;
}

TEST(NpySource, NonFiniteInitRowThrowsNamingTheFile) {
  TempDir dir;
  const int d = 4;
  std::vector<double> data(20 * d, 1.0);
  data[2 * d + 1] = std::numeric_limits<double>::infinity();
  const std::string path = dir / "inf.npy";
  write_npy<double>(path, {20, d}, data.data());
  NpyStreamSource<double, Exec> src({path}, {0}, d, 8);
  Kokkos::View<double***, Kokkos::LayoutRight, Mem> X0("X0", 1, 5, d);
  try {
    src.read_init(5, X0);
    FAIL() << "no error";
  } catch (const NpyError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("row 2"), std::string::npos) << m;
  }
  // The driver's preflight check says the same before any step.
  EXPECT_THROW(preflight_npy_file<double>(path, d, 10, "the run", 5), NpyError);
  EXPECT_EQ(preflight_npy_file<double>(path, d, 10, "the run", 2), 20);
  try {
    preflight_npy_file<double>(path, d, 21, "init_samples (5) + run.steps (16)", 0);
    FAIL() << "no error";
  } catch (const NpyError& e) {
    const std::string m = e.what();
    for (const char* s : {"inf.npy", "20 rows", "21", "init_samples (5) + run.steps (16)"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " in: " << m;
  }
  try {
    preflight_npy_file<double>(path, d + 1, 1, "x", 0);
    FAIL() << "no error";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("problem.d is 5"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- bounded memory

using mosaic_test::current_rss_bytes;
using mosaic_test::peak_rss_bytes;

// acc(j) += X(0, j) on the device.
struct Accumulate {
  Kokkos::View<double*, Kokkos::LayoutRight, Mem> acc;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> X;
  KOKKOS_INLINE_FUNCTION void operator()(const int j) const { acc(j) += X(0, j); }
};

// An NpyStreamSource consuming a file 40 chunks long, row by row, raises the
// peak RSS by less than a few chunks: its two staging buffers plus at most
// a chunk or two of mapped file pages in flight, whatever the file size.
TEST(NpySourceMemory, PeakRssStaysWithinAFewChunksForAFile40xTheChunk) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer the resident memory includes its redzones and the quarantine of freed "
                  "blocks, not the source's chunks alone";
#endif
  TempDir dir;
  const std::string path = dir / "big.npy";
  constexpr int d = 64;
  constexpr std::int64_t chunk_rows = 2048;       // 2048 * 64 * 8 B = 1 MiB
  constexpr std::int64_t rows = 40 * chunk_rows;  // 40 MiB of data
  const std::size_t chunk_bytes = std::size_t(chunk_rows) * d * sizeof(double);
  auto value = [](std::int64_t i, int j) { return double(i) * 0.5 + double(j) / 64.0; };
  // Streamed out in pieces: never the whole file in memory.
  mosaic_test::write_f8_npy_streamed(path, rows, d, value);
  const std::uint64_t data_bytes = std::uint64_t(rows) * d * sizeof(double);
  ASSERT_GE(data_bytes, 20 * chunk_bytes);

  Kokkos::View<double**, Kokkos::LayoutRight, Mem> X("X", 1, d);
  Kokkos::View<double*, Kokkos::LayoutRight, Mem> acc("acc", d);
  const long rss_before = current_rss_bytes();
  const long peak_before = peak_rss_bytes();
  long rss_max = rss_before;
  SourceIoStats io;
  {
    NpyStreamSource<double, Exec> src({path}, {0}, d, int(chunk_rows));
    for (std::int64_t t = 0; t < rows; ++t) {
      src.generate(t, X);
      // Touch the sample on the device (a running sum), like an engine would.
      Kokkos::parallel_for("acc", Kokkos::RangePolicy<Exec>(0, d), Accumulate{acc, X});
      if (t % 256 == 0) rss_max = std::max(rss_max, current_rss_bytes());
      if (t % 4099 == 0 || t == rows - 1) {
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
        ASSERT_EQ(h(0, 0), value(t, 0)) << t;
        ASSERT_EQ(h(0, d - 1), value(t, d - 1)) << t;
      }
    }
    io = src.io_stats();
  }
  const long peak_after = peak_rss_bytes();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), acc);
  double expect = 0;
  for (std::int64_t i = 0; i < rows; ++i) expect += value(i, 3);
  EXPECT_DOUBLE_EQ(h(3), expect);
  EXPECT_EQ(io.bytes_read, data_bytes);
  EXPECT_EQ(io.chunks, 40);

  // Resident set sampled during the run against the one before it, and the
  // peak (getrusage) against the larger of the RSS and the earlier peak (an
  // earlier test's peak would otherwise hide or fake growth when the whole
  // binary runs in one process).
  const long growth = rss_max - rss_before;
  const long peak_growth = peak_after - std::max(rss_before, peak_before);
  std::printf(
      "chunk %zu KiB, file %llu KiB, RSS before %ld KiB, max during %ld KiB, peak before %ld KiB, "
      "peak after %ld KiB; read %.3f s, stalled %.3f s\n",
      chunk_bytes / 1024, static_cast<unsigned long long>(data_bytes / 1024), rss_before / 1024, rss_max / 1024,
      peak_before / 1024, peak_after / 1024, io.read_seconds, io.stall_seconds);
  // Two staging buffers (on a GPU: pinned host memory; the device chunk is
  // elsewhere), up to a chunk or two of mapped pages, thread stacks: < 5 chunks.
  EXPECT_LT(growth, long(5 * chunk_bytes)) << "RSS grew by " << growth / 1024 << " KiB";
  EXPECT_LT(peak_growth, long(5 * chunk_bytes)) << "peak RSS grew by " << peak_growth / 1024 << " KiB";
}

}  // namespace
