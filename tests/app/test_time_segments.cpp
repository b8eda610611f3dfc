// The mini-app's time segments (app/time_segments.hpp, ALGORITHM.md section
// 9) against the host reference of section 9 (reference_run_segments) on
// the same synthetic stream, and against the engine's own sequential run:
// the passes, the certificate and its record, the cold starts, the final
// state (basis-free and, with the gauge carried, U itself), one segment and
// a chain of exact restarts bitwise the sequential run; the layout of the
// slots over ranks, the packed state a segment hands to the next rank, and
// where a pass's blocks end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/reference_segments.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "mosaic/app/decomposition.hpp"
#include "mosaic/app/time_segments.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/npy_source.hpp"
#include "mosaic/sources/synthetic_source.hpp"

namespace {

using mosaic::MosaicParams;
using mosaic::ReferenceState;
using mosaic::SegmentedRun;
using mosaic::SegmentParams;
using Exec = Kokkos::DefaultExecutionSpace;
using Batch = mosaic::StreamBatch<double, Exec>;
using Source = mosaic::SyntheticDriftSource<double, Exec>;

// One synthetic stream (id 3) with a clear eigengap, d = 32, r = 4.
struct SegmentCase {
  int d = 32, r = 4;
  std::int64_t steps = 16000;
  std::uint64_t id = 3, seed = 7;
  MosaicParams p;
  SegmentParams sp;
  SegmentCase() {
    p.init = mosaic::InitMode::data;
    p.block_size = 1;
    sp.segments = 4;
  }
  mosaic::SyntheticSpec spec() const {
    mosaic::SyntheticSpec s;
    s.d = d;
    s.r = r;
    s.drift = 1e-4;
    s.seed = 11;
    return s;
  }
  int n0() const { return p.resolved_init_samples(r); }
};

// The stream's own start, as the run makes it: init: data on its first
// init_samples rows, by the engine.
template <class StreamSource>
Batch started_stream(const SegmentCase& c, StreamSource& source) {
  Batch streams(1, c.d, c.r, {c.id});
  mosaic::MosaicEngine<double, Exec> engine(c.p, 1, c.d, c.r);
  Kokkos::View<double***, Kokkos::LayoutRight, Exec::memory_space> X0("X0", 1, c.n0(), c.d);
  source.read_init(c.n0(), X0);
  EXPECT_FALSE(engine.init_data_streams(streams, X0).front().failed());
  return streams;
}

struct EngineRun {
  SegmentedRun<double> rec;
  mosaic::SegmentedStreamEnd end;
  ReferenceState<double> final_state;
};

EngineRun engine_segments(const SegmentCase& c) {
  Source stream_source(c.spec(), {c.id});
  Batch streams = started_stream(c, stream_source);
  const mosaic::ResolvedSegments rs = mosaic::resolve_segments<double>(c.sp, c.p);
  mosaic::TimeSegments<double, Exec> segments(c.p, rs, c.d, c.r, {{c.id, c.steps, c.n0()}}, c.seed, MPI_COMM_SELF);
  Source slots(c.spec(), segments.slot_ids());
  mosaic::TimerSet timers;
  std::vector<mosaic::SegmentedStreamEnd> ends;
  EngineRun out;
  out.rec = segments.run(streams, slots, timers, ends).front();
  out.end = ends.front();
  out.final_state = streams.to_host(0);
  EXPECT_EQ(streams.stream_status(0), mosaic::breakdown_none);
  return out;
}

// The engine's sequential run of the stream: blocks of block_length from
// step 0, nothing else cut.
ReferenceState<double> engine_sequential(const SegmentCase& c) {
  Source source(c.spec(), {c.id});
  Batch streams = started_stream(c, source);
  mosaic::MosaicEngine<double, Exec> engine(c.p, 1, c.d, c.r);
  source.set_row_offsets({c.n0()});
  for (std::int64_t j = 0; j < c.steps;) {
    const auto X = source.next_block(j, int(std::min<std::int64_t>(c.steps - j, engine.block_length(j))));
    engine.advance(streams, X);
    j += std::int64_t(X.extent(1));
  }
  return streams.to_host(0);
}

SegmentedRun<double> reference_segments(const SegmentCase& c) {
  Source source(c.spec(), {c.id});
  const std::int64_t available = c.n0() + c.steps;
  std::vector<double> rows(std::size_t(available) * c.d);
  source.read_stream_rows(0, 0, int(available), rows.data());
  const auto read = [&](std::int64_t first, std::int64_t m, double* out) {
    std::copy(rows.begin() + first * c.d, rows.begin() + (first + m) * c.d, out);
  };
  return mosaic::reference_run_segments<double>(read, available, c.steps, c.d, c.r, c.p, c.sp, c.seed, c.id);
}

// The largest of 9.4's four basis-free distances (mu in spread units, s2,
// the modelled covariance, the subspace angle).
double basis_free_distance(const ReferenceState<double>& a, const ReferenceState<double>& b) {
  return mosaic::boundary_mismatch(a, b).delta();
}

double frame_distance(const ReferenceState<double>& a, const ReferenceState<double>& b) {
  double s = 0;
  for (std::size_t e = 0; e < a.U.size(); ++e) s += (a.U[e] - b.U[e]) * (a.U[e] - b.U[e]);
  return std::sqrt(s);
}

bool same_bits(const ReferenceState<double>& a, const ReferenceState<double>& b) {
  return mosaic::same_state_bits(a, b);
}

// The record's shape and what the reference's says about the same stream.
void expect_same_record(const SegmentedRun<double>& engine, const SegmentedRun<double>& reference) {
  EXPECT_EQ(engine.passes, reference.passes);
  EXPECT_EQ(engine.certified, reference.certified);
  EXPECT_EQ(engine.first_uncertified, reference.first_uncertified);
  EXPECT_EQ(engine.segments_certified, reference.segments_certified);
  EXPECT_EQ(engine.trivial_boundaries, reference.trivial_boundaries);
  EXPECT_EQ(engine.cold_data_starts, reference.cold_data_starts);
  EXPECT_EQ(engine.cold_random_starts, reference.cold_random_starts);
  EXPECT_EQ(engine.cold_init_samples, reference.cold_init_samples);
  EXPECT_EQ(engine.worker_steps_per_pass, reference.worker_steps_per_pass);
  EXPECT_DOUBLE_EQ(engine.modelled_speedup, reference.modelled_speedup);
  EXPECT_EQ(engine.counters.clamped_steps, reference.counters.clamped_steps);
  EXPECT_EQ(engine.warmup_counters.clamped_steps, reference.warmup_counters.clamped_steps);
  // Each pass's delta_q: 0 exactly where the reference's is (an exact
  // restart, or a boundary left alone), and close to it where it is far
  // above the two kernels' floor (the same states were compared).
  ASSERT_EQ(engine.boundary_mismatch.size(), reference.boundary_mismatch.size());
  for (std::size_t k = 0; k < reference.boundary_mismatch.size(); ++k)
    for (std::size_t q = 0; q < reference.boundary_mismatch[k].size(); ++q) {
      const double e = engine.boundary_mismatch[k][q], ref = reference.boundary_mismatch[k][q];
      if (ref == 0.0) EXPECT_EQ(e, 0.0) << "pass " << k + 1 << ", boundary " << q + 1;
      if (ref > 1e-8) EXPECT_NEAR(e, ref, 1e-6 * ref) << "pass " << k + 1 << ", boundary " << q + 1;
    }
}

}  // namespace

// 9.12.2: a clear-gap stream certifies at pass 1 (default warm-up: one
// trivial boundary, two cold starts), every delta within tol, the final
// state within 1e-13 of the engine's sequential run basis-free and, with
// the gauge carried, in U itself; the reference says the same of the
// stream and reaches the same state.
TEST(TimeSegments, ClearGapCertifiesAtPassOneLikeTheReference) {
  const SegmentCase c;
  const EngineRun e = engine_segments(c);
  const SegmentedRun<double> ref = reference_segments(c);
  expect_same_record(e.rec, ref);
  EXPECT_EQ(e.rec.passes, 1);
  EXPECT_TRUE(e.rec.certified);
  EXPECT_EQ(e.rec.trivial_boundaries, 1);
  EXPECT_EQ(e.rec.cold_data_starts, 2);
  for (double delta : e.rec.boundary_mismatch.front()) EXPECT_LE(delta, 1e-12);
  EXPECT_EQ(e.rec.boundary_mismatch.front().front(), 0.0);  // the trivial boundary: the same steps, bit for bit
  const ReferenceState<double> seq = engine_sequential(c);
  EXPECT_LE(basis_free_distance(e.final_state, seq), 1e-13);
  EXPECT_LE(frame_distance(e.final_state, seq), 1e-13);
  EXPECT_LE(basis_free_distance(e.final_state, ref.final_state), 1e-12);
  EXPECT_EQ(e.final_state.steps, c.steps);
  EXPECT_EQ(e.end.segment, -1);
}

// One segment is the sequential run, bit for bit, with the blocked kernel
// too (its blocks are cut where the sequential run's are).
TEST(TimeSegments, OneSegmentIsTheSequentialRunBitwise) {
  SegmentCase c;
  c.steps = 3000;
  c.sp.segments = 1;
  for (int k : {1, 8}) {
    c.p.block_size = k;
    const EngineRun e = engine_segments(c);
    EXPECT_EQ(e.rec.passes, 1);
    EXPECT_TRUE(e.rec.certified);
    const ReferenceState<double> seq = engine_sequential(c);
    EXPECT_TRUE(same_bits(e.final_state, seq)) << "block_size " << k;
    EXPECT_EQ(e.final_state.clamped_steps, seq.clamped_steps);
    for (std::size_t col = 0; col < seq.prequential.size(); ++col)
      EXPECT_EQ(e.final_state.prequential[col], seq.prequential[col]);
  }
}

// 9.12.3: a tolerance nothing but an exact restart meets forces P passes,
// each certifying one more boundary, and the result is the sequential run
// bit for bit (sequential kernel); with segment_max_passes: 1 the run ends
// uncertified at segment 1, as the reference's does.
TEST(TimeSegments, ExactRestartsAreTheSequentialRunAndFewerPassesSaySo) {
  SegmentCase c;
  c.steps = 6000;
  c.sp.warmup = 100;
  c.sp.tolerance = 1e-300;
  const EngineRun e = engine_segments(c);
  const SegmentedRun<double> ref = reference_segments(c);
  expect_same_record(e.rec, ref);
  EXPECT_EQ(e.rec.passes, 4);
  EXPECT_EQ(e.rec.segments_certified, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(same_bits(e.final_state, engine_sequential(c)));

  c.sp.max_passes = 1;
  const EngineRun u = engine_segments(c);
  const SegmentedRun<double> uref = reference_segments(c);
  expect_same_record(u.rec, uref);
  EXPECT_FALSE(u.rec.certified);
  EXPECT_EQ(u.rec.first_uncertified, 1);
}

// No warm-up: cold starts right at the boundaries, more passes, certified,
// the same passes and certificates as the reference, and a final state
// within the certificate's reach of the sequential run.
TEST(TimeSegments, NoWarmupFallsBackToMorePassesLikeTheReference) {
  SegmentCase c;
  c.steps = 8000;
  c.sp.warmup = 0;
  const EngineRun e = engine_segments(c);
  const SegmentedRun<double> ref = reference_segments(c);
  expect_same_record(e.rec, ref);
  EXPECT_GT(e.rec.passes, 1);
  EXPECT_TRUE(e.rec.certified);
  EXPECT_LE(basis_free_distance(e.final_state, engine_sequential(c)), 1e-12);
}

// segment_warmup_init: random: every cold start is init: random (never
// the stream's error), the certificate still holds; with segment_gauge:
// free the state is the sequential one basis-free only.
TEST(TimeSegments, RandomColdStartsAndTheFreeGauge) {
  SegmentCase c;
  c.steps = 16000;
  c.sp.warmup_init = mosaic::InitMode::random;
  c.sp.gauge_carry = false;
  const EngineRun e = engine_segments(c);
  const SegmentedRun<double> ref = reference_segments(c);
  expect_same_record(e.rec, ref);
  EXPECT_EQ(e.rec.cold_random_starts, 2);
  EXPECT_TRUE(e.rec.certified);
  const ReferenceState<double> seq = engine_sequential(c);
  EXPECT_LE(basis_free_distance(e.final_state, seq), 1e-13);
}

// A bad row (an infinite value, as an .npy file may hold) in segment 2 of a
// clear-gap stream: pass 1 certifies boundary 2 on a mismatch, but the
// cold run of segment 2 froze at the row, so it is run again from E_1
// exactly (pass 2), freezes at the same step as the sequential run, and the
// stream ends there: certified, stopped at segment 2, its state and
// breakdown bitwise the engine's sequential run over the same file.
TEST(TimeSegments, ABadRowEndsTheStreamWhereTheSequentialRunFreezes) {
  using Npy = mosaic::NpyStreamSource<double, Exec>;
  const SegmentCase c;
  const std::int64_t bad_step = 10000, rows_n = c.n0() + c.steps;
  std::vector<double> rows(std::size_t(rows_n) * c.d);
  Source(c.spec(), {c.id}).read_stream_rows(0, 0, int(rows_n), rows.data());
  rows[std::size_t(c.n0() + bad_step - 1) * c.d + 3] = std::numeric_limits<double>::infinity();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("mosaic_time_segments_" + std::to_string(::getpid()) + ".npy"))
          .string();
  mosaic::write_npy<double>(path, {rows_n, c.d}, rows.data());
  const mosaic::ResolvedSegments rs = mosaic::resolve_segments<double>(c.sp, c.p);
  mosaic::TimeSegments<double, Exec> segments(c.p, rs, c.d, c.r, {{c.id, c.steps, c.n0()}}, c.seed, MPI_COMM_SELF);
  Npy stream_source({path}, {c.id}, c.d, 512, rows_n);
  Batch streams = started_stream(c, stream_source);
  Npy slots(std::vector<std::string>(4, path), segments.slot_ids(), c.d, 512, c.steps, false, true);
  mosaic::TimerSet timers;
  std::vector<mosaic::SegmentedStreamEnd> ends;
  const SegmentedRun<double> rec = segments.run(streams, slots, timers, ends).front();
  EXPECT_EQ(rec.passes, 2);
  EXPECT_TRUE(rec.certified);
  EXPECT_EQ(ends.front().segment, 2);
  EXPECT_GE(rec.broken_runs, 1);
  EXPECT_EQ(streams.stream_status(0), mosaic::breakdown_nonfinite_sample);
  EXPECT_EQ(streams.breakdown_at(0), bad_step - 1);

  Npy seq_source({path}, {c.id}, c.d, 512, rows_n);
  Batch seq = started_stream(c, seq_source);
  mosaic::MosaicEngine<double, Exec> engine(c.p, 1, c.d, c.r);
  for (std::int64_t j = c.n0(); j < rows_n;) {
    const auto X = seq_source.next_block(j, int(std::min<std::int64_t>(rows_n - j, 64)));
    engine.advance(seq, X);
    j += std::int64_t(X.extent(1));
  }
  EXPECT_EQ(seq.breakdown_at(0), bad_step - 1);
  EXPECT_TRUE(same_bits(streams.to_host(0), seq.to_host(0)));
  std::filesystem::remove(path);
}

// Too few steps for the segments is refused with the stream named.
TEST(TimeSegments, FewerStepsThanSegmentsIsRefused) {
  SegmentCase c;
  const mosaic::ResolvedSegments rs = mosaic::resolve_segments<double>(c.sp, c.p);
  try {
    mosaic::TimeSegments<double, Exec> segments(c.p, rs, c.d, c.r, {{c.id, 3, c.n0()}}, c.seed, MPI_COMM_SELF);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("stream 3 has 3 steps, fewer than algorithm.time_segments = 4"),
              std::string::npos)
        << e.what();
  }
}

// SegmentLayout (app/decomposition.hpp): the slots of streams x segments
// cut into contiguous ranges of sizes that differ by at most one, every
// rank with a slot, a stream owned by the rank of its segment 0, and
// decompose_streams' owners the layout's (each stream owned once).
TEST(SegmentLayout, ContiguousBalancedRangesAndOwners) {
  for (const auto& [streams, P, ranks] : std::vector<std::tuple<std::int64_t, int, int>>{
           {1, 4, 1}, {1, 4, 2}, {1, 4, 3}, {1, 4, 4}, {3, 4, 2}, {2, 4, 3}, {5, 3, 7}, {8, 2, 3}}) {
    const mosaic::SegmentLayout layout(streams, P, ranks);
    const std::string what = std::to_string(streams) + " x " + std::to_string(P) + " on " + std::to_string(ranks);
    EXPECT_EQ(layout.first_slot(0), 0) << what;
    EXPECT_EQ(layout.first_slot(ranks), streams * P) << what;
    for (int k = 0; k < ranks; ++k) {
      EXPECT_GE(layout.slots_on(k), streams * P / ranks) << what;
      EXPECT_LE(layout.slots_on(k), streams * P / ranks + 1) << what;
      for (std::int64_t g = layout.first_slot(k); g < layout.first_slot(k + 1); ++g)
        EXPECT_EQ(layout.rank_of_slot(g), k) << what << ", slot " << g;
    }
    mosaic::StreamsConfig cfg;
    cfg.mode = mosaic::StreamMode::strong;
    cfg.total = int(streams);
    std::vector<int> owners(std::size_t(streams), 0);
    for (int k = 0; k < ranks; ++k)
      for (const std::uint64_t id : mosaic::decompose_streams(cfg, k, ranks, P).local_ids) {
        EXPECT_EQ(layout.owner(std::int64_t(id)), k) << what;
        owners[id] += 1;
      }
    EXPECT_EQ(owners, std::vector<int>(std::size_t(streams), 1)) << what;
  }
  EXPECT_THROW(mosaic::SegmentLayout(1, 2, 3), std::invalid_argument);
}

namespace {
// Every per-stream value of stream b, bit for bit, as bytes.
std::vector<char> stream_bytes(const Batch& batch, int b) { return batch.pack_stream(b); }
}  // namespace

// StreamBatch::pack_stream / unpack_stream (the state a segment hands to
// the next rank): a stream that has stepped, with section 8's noise state,
// unpacked into another batch is what copy_stream makes of it, every view
// bit for bit; a buffer of another size is refused.
TEST(SegmentMessages, PackedStreamIsTheCopiedStream) {
  const SegmentCase c;
  MosaicParams p = c.p;
  p.noise = mosaic::NoiseModel::diagonal;
  Source source(c.spec(), {0, 1});
  Batch steps(2, c.d, c.r, {0, 1}, p.noise);
  mosaic::MosaicEngine<double, Exec> engine(p, 2, c.d, c.r);
  engine.init_random(steps, 5);
  for (std::int64_t j = 0; j < 300; j += 50) engine.advance(steps, source.next_block(j, 50));
  Batch copied(3, c.d, c.r, {7, 8, 9}, p.noise), unpacked(3, c.d, c.r, {7, 8, 9}, p.noise);
  copied.copy_stream(steps, 1, 2);
  unpacked.unpack_stream(2, steps.pack_stream(1));
  EXPECT_EQ(stream_bytes(unpacked, 2), stream_bytes(copied, 2));
  EXPECT_EQ(stream_bytes(unpacked, 2), stream_bytes(steps, 1));
  EXPECT_NE(stream_bytes(unpacked, 2), stream_bytes(steps, 0));
  EXPECT_TRUE(same_bits(unpacked.to_host(2), steps.to_host(1)));
  EXPECT_EQ(unpacked.to_host(2).steps, 300);
  std::vector<char> short_buffer = steps.pack_stream(0);
  short_buffer.pop_back();
  EXPECT_THROW(unpacked.unpack_stream(0, short_buffer), std::invalid_argument);
}

// PassBlocks (app/time_segments.hpp): the block after step j ends at the
// first event after j or the first step where some slot's count is a
// multiple of a period, at most block_size: the brute-force minimum over
// the slots of MosaicEngine::block_length's rule.
TEST(SegmentMessages, PassBlocksCutWhereAnySlotNeedsIt) {
  const std::vector<std::int64_t> events{0, 37, 37, 250, 251, 400}, starts{0, 13, 226, 1000, 13};
  const std::vector<std::int64_t> periods{50, 7};
  const int k = 32;
  const mosaic::PassBlocks blocks(events, starts, periods, k);
  for (std::int64_t j = 0; j < 450; ++j) {
    std::int64_t n = k;
    for (std::int64_t e : events)
      if (e > j) n = std::min(n, e - j);
    for (std::int64_t start : starts)
      for (std::int64_t every : periods) n = std::min(n, every - (start + j) % every);
    EXPECT_EQ(blocks.length(j), n) << "j = " << j;
  }
}
