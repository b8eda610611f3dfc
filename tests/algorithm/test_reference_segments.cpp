// ALGORITHM.md section 3's growing init window and section 9's segments on the
// host reference: 9.12's checks (P = 1 unchanged, a clear-gap stream certified
// at pass 1 with its gauge carried, forced fallbacks bitwise sequential and an
// uncertified run, gauge equivariance, counters), 9.4's certificate against
// dense formulas, and 9.3's cold-state fallbacks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/algorithm/reference_segments.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "test_reference_helpers.hpp"

namespace {
using namespace mosaic;
using namespace mosaic::test;

// A synthetic stream (section 5) as reference_run_segments reads it: sample
// k is synthetic_sample's step k; rows before `silent_until` are replaced by
// the stream's mean (a start that spans no direction), those in
// [flat_from, flat_to) too.
struct SyntheticRows {
  SyntheticSpec spec;
  SyntheticTruth truth;
  std::uint64_t stream = 0;
  std::int64_t silent_until = 0, flat_from = 0, flat_to = 0;

  SyntheticRows(const SyntheticSpec& s, std::uint64_t id) : spec(s), truth(make_synthetic_truth(s, id)), stream(id) {}
  void operator()(std::int64_t first, std::int64_t m, double* out) const {
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t row = first + k;
      double* x = out + std::size_t(k) * spec.d;
      if (row < silent_until || (row >= flat_from && row < flat_to)) {
        for (int i = 0; i < spec.d; ++i) x[i] = truth.mean[i];
      } else {
        synthetic_sample(spec, truth, stream, std::uint64_t(row), x);
      }
    }
  }
};

// A clear eigengap: signal 4 .. 1 above noise variance 0.01, so the subspace
// contracts at about eta_U (1.01 - 0.01) / (1.01 + 0.02), near the other rates, and
// W12 (9.10) stays below segment_warmup: auto.
SyntheticSpec clear_gap_spec(int d, int r) {
  SyntheticSpec s;
  s.d = d;
  s.r = r;
  s.lambda_max = 4.0;
  s.lambda_min = 1.0;
  s.noise = 0.1;
  s.seed = 909;
  return s;
}

// No gap at r: a source of rank 2r with equal eigenvalues, modelled at rank r.
SyntheticSpec no_gap_spec(int d, int r) {
  SyntheticSpec s = clear_gap_spec(d, 2 * r);
  s.lambda_min = s.lambda_max = 1.0;
  return s;
}

template <class T>
bool same_bits(const ReferenceState<T>& a, const ReferenceState<T>& b) {
  return a.mu == b.mu && a.U == b.U && a.S == b.S && std::memcmp(&a.s2, &b.s2, sizeof(T)) == 0;
}

double frame_gap(const ReferenceState<double>& a, const ReferenceState<double>& b) { return frob_diff(a.U, b.U); }

SegmentParams segments(int P) {
  SegmentParams sp;
  sp.segments = P;
  return sp;
}

// The sequential run (time_segments: 1) of `steps` steps.
SegmentedRun<double> sequential(const SyntheticRows& rows, std::int64_t steps, int r, const MosaicParams& p) {
  return reference_run_segments<double>(rows, steps + 64 * r, steps, rows.spec.d, r, p, segments(1), 7, rows.stream);
}

// ---------------------------------------------------------------- section 3

// Informative from the start: the window is init_samples, the start is
// reference_init_data's bitwise.
TEST(InitWindow, InformativeStartKeepsInitSamples) {
  const SyntheticRows rows(clear_gap_spec(32, 4), 3);
  const MosaicParams p;
  std::vector<double> X(std::size_t(64 * 8) * 32);
  rows(0, 64 * 8, X.data());
  const GrownInit<ReferenceState<double>> g =
      reference_init_data_grown<double>([&](int) { return X.data(); }, 64 * 8, 32, 4, p);
  EXPECT_EQ(g.samples_used, 8);
  EXPECT_TRUE(same_bits(g.state, reference_init_data(X.data(), 8, 32, 4, p)));
}

// A stream that starts with 20 silent samples: the windows of 8 and 16 span
// no direction, 32 does; the start is reference_init_data on the first 32.
TEST(InitWindow, SilentStartGrowsTheWindow) {
  SyntheticRows rows(clear_gap_spec(32, 4), 3);
  rows.silent_until = 20;
  const MosaicParams p;
  std::vector<double> X(std::size_t(512) * 32);
  rows(0, 512, X.data());
  const GrownInit<ReferenceState<double>> g =
      reference_init_data_grown<double>([&](int) { return X.data(); }, 512, 32, 4, p);
  EXPECT_EQ(g.samples_used, 32);
  EXPECT_TRUE(same_bits(g.state, reference_init_data(X.data(), 32, 32, 4, p)));
  // The first 16 are all silent.
  EXPECT_THROW((void)reference_init_data(X.data(), 16, 32, 4, p), InitRankDeficient);
}

// 7.6 with section 3's window: the same silent start with missing entries
// (missing: posterior) grows to the same 32 samples; the start is
// reference_init_data_masked's on them, bitwise.
TEST(InitWindow, MaskedSilentStartGrowsTheWindow) {
  SyntheticRows rows(clear_gap_spec(32, 4), 3);
  rows.silent_until = 20;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  std::vector<double> X(std::size_t(512) * 32);
  rows(0, 512, X.data());
  for (int k = 20; k < 512; k += 3) X[std::size_t(k) * 32 + std::size_t(k % 32)] = std::nan("");
  const GrownInit<MaskedReferenceState<double>> g =
      reference_init_data_masked_grown<double>([&](int) { return X.data(); }, 512, 32, 4, p);
  EXPECT_EQ(g.samples_used, 32);
  const MaskedReferenceState<double> direct = reference_init_data_masked(X.data(), 32, 32, 4, p);
  EXPECT_TRUE(same_bits(g.state, direct));
  EXPECT_EQ(g.state.seen, direct.seen);
}

// A stream silent for longer than init_max_samples: the error of the largest
// window, naming its size, the directions it spanned and the limit; a
// shorter stream: the end of the stream instead.
TEST(InitWindow, WindowBeyondTheLimitIsTheRankError) {
  SyntheticRows rows(clear_gap_spec(32, 4), 3);
  rows.silent_until = 100;
  MosaicParams p;
  p.init_max_samples = 64;
  std::vector<double> X(std::size_t(512) * 32);
  rows(0, 512, X.data());
  auto message = [&](std::int64_t available) {
    try {
      (void)reference_init_data_grown<double>([&](int) { return X.data(); }, available, 32, 4, p);
    } catch (const InitRankDeficient& e) {
      EXPECT_EQ(e.directions, 0);
      return std::string(e.what());
    }
    ADD_FAILURE() << "no InitRankDeficient";
    return std::string();
  };
  const std::string limit = message(512);
  for (const char* needle : {"rank-deficient", "the 64 centred samples", "0 above the tolerance",
                             "grew from 8 to 64 samples", "init_max_samples = 64"})
    EXPECT_NE(limit.find(needle), std::string::npos) << needle << " in: " << limit;
  const std::string end = message(40);
  for (const char* needle : {"grew from 8 to 32 samples", "the end of the stream (40 samples)"})
    EXPECT_NE(end.find(needle), std::string::npos) << needle << " in: " << end;
  p.init_max_samples = 4;
  EXPECT_THROW(p.validate(32, 4), std::invalid_argument);
}

// ---------------------------------------------------------------- 9.4 and 9.6

// The certificate's four distances against their dense definitions (d x d
// covariances, a projector), on states that differ in every component.
TEST(SegmentCertificate, DistancesMatchDenseDefinitions) {
  TestRng rng(11);
  const int d = 12, r = 3;
  const ReferenceState<double> E = random_state<double>(d, r, rng, 0.2);
  ReferenceState<double> Z = random_state<double>(d, r, rng, 0.3);
  const BoundaryMismatch m = boundary_mismatch(Z, E);
  auto cov = [&](const ReferenceState<double>& s) {
    return matmul(matmul(s.U, s.S, d, r, r), transpose(s.U, d, r), d, r, d);
  };
  double trace_SE = 0, mu_gap = 0;
  for (int j = 0; j < r; ++j) trace_SE += E.S[j * r + j];
  for (int i = 0; i < d; ++i) mu_gap = std::max(mu_gap, std::fabs(Z.mu[i] - E.mu[i]));
  EXPECT_NEAR(m.mu, mu_gap / std::sqrt((trace_SE + (d - r) * E.s2) / d), 1e-15);
  EXPECT_NEAR(m.s2, 0.5, 1e-15);
  EXPECT_NEAR(m.cov, frob_diff(cov(Z), cov(E)) / frob(E.S), 1e-13);
  const Mat proj = matmul(E.U, transpose(E.U, d, r), d, r, d);  // E.U orthonormal
  Mat outside = Z.U;
  const Mat inside = matmul(proj, Z.U, d, d, r);
  for (std::size_t e = 0; e < outside.size(); ++e) outside[e] -= inside[e];
  EXPECT_NEAR(m.ang, frob(outside), 1e-13);
  EXPECT_EQ(m.delta(), std::max(std::max(m.mu, m.s2), std::max(m.cov, m.ang)));
  Z.s2 = NAN;
  EXPECT_FALSE(boundary_mismatch(Z, E).within(0.5));
  // A frame that is not orthonormal (U_E = U0 B, B upper triangular): Q R =
  // U_E with R = B, so the certificate must use R S_E R^T, not S_E.
  ReferenceState<double> Eb = E;
  Mat B(std::size_t(r) * r, 0.0);
  for (int i = 0; i < r; ++i)
    for (int j = i; j < r; ++j) B[i * r + j] = i == j ? 1.0 + 0.3 * i : 0.2 * (j - i);
  Eb.U = matmul(E.U, B, d, r, r);
  Z = random_state<double>(d, r, rng, 0.3);
  EXPECT_NEAR(boundary_mismatch(Z, Eb).cov, frob_diff(cov(Z), cov(Eb)) / frob(Eb.S), 1e-13);
  Eb.U[5] = NAN;
  EXPECT_FALSE(boundary_mismatch(Z, Eb).within(0.5));
}

// The modelled covariance of a frame rotated by 1e-13 and of S changed by
// 1e-13 relative: cov resolves both at their size, where the trace form
// tr Sa^2 + tr S_Z^2 - 2 tr(...) stops at sqrt(eps) ~ 1e-8. And a frame
// rotated in the gauge (U R, R^T S R) is at distance 0 to rounding.
TEST(SegmentCertificate, CovarianceWithoutCancellationAndGaugeFree) {
  TestRng rng(12);
  const int d = 40, r = 4;
  const ReferenceState<double> E = random_state<double>(d, r, rng);
  ReferenceState<double> Z = E;
  for (double& v : Z.S) v *= 1.0 + 1e-13;
  const BoundaryMismatch scaled = boundary_mismatch(Z, E);
  EXPECT_NEAR(scaled.cov, 1e-13, 1e-14);
  EXPECT_LT(scaled.ang, 1e-15);
  // A rotation by a small angle a of column 0 toward a direction outside
  // span(U): ang = |sin a|.
  Z = E;
  Mat out = rng.normals(std::size_t(d));
  for (int j = 0; j < r; ++j) {
    double dot = 0;
    for (int i = 0; i < d; ++i) dot += out[i] * E.u(i, j);
    for (int i = 0; i < d; ++i) out[i] -= dot * E.u(i, j);
  }
  const double n = std::sqrt(std::inner_product(out.begin(), out.end(), out.begin(), 0.0));
  const double a = 1e-13;
  for (int i = 0; i < d; ++i) Z.u(i, 0) = std::cos(a) * E.u(i, 0) + std::sin(a) * out[i] / n;
  const BoundaryMismatch turned = boundary_mismatch(Z, E);
  EXPECT_NEAR(turned.ang, a, 1e-15);
  EXPECT_GT(turned.cov, 1e-14);
  EXPECT_LT(turned.cov, 1e-12);
  // The gauge: (U R, R^T S R) against (U, S); the Procrustes rotation finds R.
  const Mat R = random_orthonormal(r, r, rng);
  ReferenceState<double> G = E;
  apply_gauge(G, R);
  const BoundaryMismatch gauge = boundary_mismatch(G, E);
  EXPECT_LT(gauge.delta(), 1e-14);
  EXPECT_LT(frob_diff(procrustes_rotation(E, G), R), 1e-14);
}

// 9.1's resolution: W auto = 7,185 at the default rates and tol 1e-12;
// float has no tolerance by default; max_passes auto = P; the partition.
TEST(SegmentOptions, ResolveAndPartition) {
  const MosaicParams p;
  SegmentParams sp = segments(4);
  const ResolvedSegments rs = resolve_segments<double>(sp, p);
  EXPECT_EQ(rs.warmup, 7185);
  EXPECT_EQ(rs.tolerance, 1e-12);
  EXPECT_EQ(rs.max_passes, 4);
  EXPECT_THROW((void)resolve_segments<float>(sp, p), std::invalid_argument);
  sp.tolerance = 1e-5;
  EXPECT_EQ(resolve_segments<float>(sp, p).warmup, std::int64_t(std::ceil(1.3 * std::log(1e5) / 0.005)));
  EXPECT_EQ(resolve_segments<float>(segments(1), p).segments, 1);  // P = 1 needs no tolerance
  for (auto bad : {[] {
                     SegmentParams s;
                     s.segments = 0;
                     return s;
                   }(),
                   [] {
                     SegmentParams s;
                     s.warmup = -2;
                     return s;
                   }(),
                   [] {
                     SegmentParams s;
                     s.max_passes = 0;
                     return s;
                   }(),
                   [] {
                     SegmentParams s;
                     s.tolerance = 0.0;
                     return s;
                   }()})
    EXPECT_THROW((void)resolve_segments<double>(bad, p), std::invalid_argument);
  for (std::int64_t T : {7, 16, 32000, 1000003})
    for (int P : {1, 2, 3, 16}) {
      EXPECT_EQ(segment_begin(0, T, P), 0);
      EXPECT_EQ(segment_begin(P, T, P), T);
      for (int q = 0; q <= P; ++q) EXPECT_EQ(segment_begin(q, T, P), (q * T) / P) << T << " " << P << " " << q;
    }
}

// ---------------------------------------------------------------- 9.12

// 9.12.1: time_segments: 1 is the sequential run, bit for bit, counters too.
TEST(Segments, OneSegmentIsTheSequentialRun) {
  const SyntheticRows rows(clear_gap_spec(64, 4), 1);
  MosaicParams p;
  p.max_step = 0.05;  // some clamped steps to count
  p.reorthonormalize_every = 100;
  const SegmentedRun<double> run = sequential(rows, 3000, 4, p);
  StreamRun<double> seq(rows.spec, p, rows.stream);
  for (int t = 0; t < 3000; ++t) seq.step();
  EXPECT_TRUE(same_bits(run.final_state, seq.state));
  EXPECT_EQ(run.final_state.clamped_steps, seq.state.clamped_steps);
  EXPECT_GT(seq.state.clamped_steps, 0);
  EXPECT_EQ(run.final_state.reorthonormalizations, 30);
  EXPECT_EQ(run.final_state.prequential, seq.state.prequential);
  EXPECT_EQ(run.final_state.steps, 3000);
  EXPECT_EQ(run.passes, 1);
  EXPECT_TRUE(run.certified);
  EXPECT_EQ(run.init_samples_used, 8);
  EXPECT_TRUE(run.boundary_mismatch.at(0).empty());
  EXPECT_EQ(run.modelled_speedup, 1.0);
}

// 9.12.2: a clear-gap stream, default rates, d = 256, r = 8, T = 32,000,
// W = auto: pass 1 certifies every boundary, and the final state is within
// 1e-13 of the sequential one basis-free and, with the gauge carried, in U.
TEST(Segments, ClearGapCertifiesAtPassOne) {
  const int r = 8;
  const std::int64_t T = 32000;
  const SyntheticRows rows(clear_gap_spec(256, r), 2);
  const MosaicParams p;
  const SegmentedRun<double> seq = sequential(rows, T, r, p);
  for (int P : {2, 4, 8, 16}) {
    SCOPED_TRACE("P = " + std::to_string(P));
    const SegmentedRun<double> run =
        reference_run_segments<double>(rows, T + 64 * r, T, 256, r, p, segments(P), 7, rows.stream);
    EXPECT_EQ(run.passes, 1);
    EXPECT_TRUE(run.certified);
    EXPECT_EQ(run.first_uncertified, -1);
    ASSERT_EQ(run.boundary_mismatch.at(0).size(), std::size_t(P - 1));
    for (double delta : run.boundary_mismatch[0]) EXPECT_LE(delta, 1e-12);
    EXPECT_LE(boundary_mismatch(run.final_state, seq.final_state).delta(), 1e-13);
    EXPECT_LE(frame_gap(run.final_state, seq.final_state), 1e-13);
    EXPECT_EQ(run.cold_data_starts + run.trivial_boundaries, P - 1);
    // Modelled speedup T / (W + L) (9.10) with L = T / P: every worker steps
    // at most W + ceil(T / P).
    const std::int64_t W = 7185, L = (T + P - 1) / P;
    EXPECT_EQ(run.worker_steps_per_pass.at(0), std::min(W + L, T));
    EXPECT_NEAR(run.modelled_speedup, double(T) / double(std::min(W + L, T)), 1e-12);
  }
}

// 9.12.3: W = 0 (every cold state starts at its segment): more passes, still
// certified; on a no-gap stream the certificate holds only for exact
// restarts, so the result is the sequential one bitwise; with
// segment_max_passes: 1 the run is uncertified and says where.
TEST(Segments, ForcedFallbackIsCertifiedOrSaysItIsNot) {
  const int r = 4;
  const std::int64_t T = 6000;
  MosaicParams p;
  {
    const SyntheticRows rows(clear_gap_spec(64, r), 4);
    const SegmentedRun<double> seq = sequential(rows, T, r, p);
    SegmentParams sp = segments(4);
    sp.warmup = 0;
    const SegmentedRun<double> run = reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, sp, 7, rows.stream);
    EXPECT_GT(run.passes, 1);
    EXPECT_TRUE(run.certified);
    EXPECT_LE(boundary_mismatch(run.final_state, seq.final_state).delta(), 1e-13);
  }
  const SyntheticRows rows(no_gap_spec(64, r), 5);
  const SegmentedRun<double> seq = sequential(rows, T, r, p);
  SegmentParams sp = segments(4);
  sp.warmup = 500;
  const SegmentedRun<double> run = reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, sp, 7, rows.stream);
  EXPECT_TRUE(run.certified);
  EXPECT_EQ(run.passes, 4);
  EXPECT_EQ(run.segments_certified, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(same_bits(run.final_state, seq.final_state));
  EXPECT_EQ(run.final_state.clamped_steps, seq.final_state.clamped_steps);
  // The prequential sums: four partial sums added, against one running sum.
  for (std::size_t c = 0; c < seq.final_state.prequential.size(); ++c)
    EXPECT_NEAR(run.final_state.prequential[c], seq.final_state.prequential[c],
                1e-12 * std::fabs(seq.final_state.prequential[c]));
  // Later passes re-run only uncertified segments, from exact restarts.
  EXPECT_EQ(run.worker_steps_per_pass, (std::vector<std::int64_t>{500 + 1500, 1500, 1500, 1500}));
  for (std::size_t pass = 1; pass < run.boundary_mismatch.size(); ++pass)
    EXPECT_EQ(run.boundary_mismatch[pass][pass - 1], 0.0) << "pass " << pass + 1;
  sp.max_passes = 1;
  const SegmentedRun<double> cut = reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, sp, 7, rows.stream);
  EXPECT_FALSE(cut.certified);
  EXPECT_EQ(cut.passes, 1);
  EXPECT_EQ(cut.first_uncertified, 1);
  EXPECT_GT(cut.boundary_mismatch[0][0], 1e-12);
}

// 9.12.4: a state and its gauge-rotated twin (U R, R^T S R) stepped 5,000
// steps on the same samples stay within 1e-14 basis-free, and the Procrustes
// rotation of the two still finds R to 1e-14.
TEST(Segments, StepIsGaugeEquivariant) {
  const int r = 8;
  const SyntheticRows rows(clear_gap_spec(256, r), 6);
  TestRng rng(13);
  const Mat R = random_orthonormal(r, r, rng);
  for (const char* option : {"default", "first_order", "oja", "gamma0", "clamped"}) {
    SCOPED_TRACE(option);
    MosaicParams p;
    const std::string o = option;
    if (o == "first_order") p.covariance_update = CovarianceUpdate::first_order;
    if (o == "oja") p.subspace_direction = SubspaceDirection::oja;
    if (o == "gamma0") p.gamma = 0.0;
    if (o == "clamped") p.max_step = 0.05;
    StreamRun<double> a(rows.spec, p, rows.stream);
    ReferenceState<double> b = a.state;
    apply_gauge(b, R);
    for (int t = 0; t < 5000; ++t) {
      const double* x = a.draw();
      reference_step(a.state, x, p);
      reference_step(b, x, p);
    }
    EXPECT_LE(boundary_mismatch(b, a.state).delta(), 1e-14);
    EXPECT_LE(frob_diff(procrustes_rotation(a.state, b), R), 1e-14);
  }
}

// 9.12.5: the clamp count of a certified run equals the sequential run's,
// but for steps whose length is within tol of max_step (the reference has no
// recoveries: a breakdown throws).
TEST(Segments, CountersOfACertifiedRunAreTheSequentialOnes) {
  const int r = 4;
  const std::int64_t T = 16000;
  const SyntheticRows rows(clear_gap_spec(64, r), 8);
  MosaicParams p;
  p.max_step = 0.05;
  p.reorthonormalize_every = 1000;
  StreamRun<double> seq(rows.spec, p, rows.stream);
  std::int64_t border = 0;
  for (std::int64_t t = 0; t < T; ++t)
    if (std::fabs(seq.step().ell - p.max_step) <= 1e-12 * p.max_step) ++border;
  const SegmentedRun<double> run =
      reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, segments(4), 7, rows.stream);
  ASSERT_TRUE(run.certified);
  EXPECT_EQ(run.passes, 1);
  EXPECT_GT(seq.state.clamped_steps, 100);
  EXPECT_LE(std::llabs(run.final_state.clamped_steps - seq.state.clamped_steps), border);
  EXPECT_EQ(run.final_state.reorthonormalizations, 16);
  EXPECT_GT(run.warmup_counters.clamped_steps, 0);
  // Warm-ups: worker 1 from step 0 (w_1 < 0) to 4,000, worker 2 from 815 to
  // 8,000, worker 3 from 4,815 to 12,000: 4 + 8 + 8 multiples of 1,000.
  EXPECT_EQ(run.warmup_counters.reorthonormalizations, 20);
}

// 9.3's fallbacks: a cold window inside a flat stretch grows backwards; one
// that cannot span r directions within init_max_samples takes init: random.
// Either changes the passes only, never the result.
TEST(Segments, ColdStartFallbacksChangeOnlyThePasses) {
  const int r = 4;
  const std::int64_t T = 16000;
  SyntheticRows rows(clear_gap_spec(64, r), 9);
  MosaicParams p;
  p.init_max_samples = 64;
  const SegmentParams sp = segments(2);  // W = 7,185: w_1 = 815, the cold window ends at sample n0 + 815 = 823
  rows.flat_from = 823 - 30;
  rows.flat_to = 823;
  const SegmentedRun<double> seq = sequential(rows, T, r, p);
  const SegmentedRun<double> grown = reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, sp, 7, rows.stream);
  EXPECT_EQ(grown.cold_data_starts, 1);
  EXPECT_EQ(grown.cold_init_samples.at(1), 64);  // 8, 16 and 32 samples back lie in the flat stretch
  EXPECT_EQ(grown.passes, 1);
  EXPECT_LE(grown.boundary_mismatch.at(0).at(0), 1e-12);
  EXPECT_LE(boundary_mismatch(grown.final_state, seq.final_state).delta(), 1e-13);
  rows.flat_from = 823 - 100;  // longer than init_max_samples
  const SegmentedRun<double> seq_flat = sequential(rows, T, r, p);
  const SegmentedRun<double> random = reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, sp, 7, rows.stream);
  EXPECT_EQ(random.cold_random_starts, 1);
  EXPECT_EQ(random.cold_init_samples.at(1), 0);
  EXPECT_TRUE(random.certified);
  EXPECT_LE(boundary_mismatch(random.final_state, seq_flat.final_state).delta(), 1e-13);
  SegmentParams asked = sp;
  asked.warmup_init = InitMode::random;
  asked.warmup = 3000;  // w_1 = 5,000
  rows.flat_from = rows.flat_to = 0;
  const SegmentedRun<double> chosen =
      reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, asked, 7, rows.stream);
  EXPECT_EQ(chosen.cold_random_starts, 1);
  EXPECT_TRUE(chosen.certified);
  // A cold start with too few samples before it (w_1 = 5 < init_samples)
  // under the stream's init: random: a random cold state, not an error.
  p.init = InitMode::random;
  SegmentParams early = sp;
  early.warmup = 8000 - 5;
  const SegmentedRun<double> few = reference_run_segments<double>(rows, T + 64 * r, T, 64, r, p, early, 7, rows.stream);
  EXPECT_EQ(few.init_samples_used, 0);
  EXPECT_EQ(few.cold_random_starts, 1);
  EXPECT_TRUE(few.certified);
}

// A stream whose own start is silent: its init grows, n0 = init_samples_used
// moves every segment's samples (9.2), and P = 1 equals a sequential run
// from the grown start.
TEST(Segments, GrownInitShiftsThePartition) {
  const int r = 4;
  SyntheticRows rows(clear_gap_spec(64, r), 10);
  rows.silent_until = 12;
  const MosaicParams p;
  const SegmentedRun<double> one = sequential(rows, 4000, r, p);
  EXPECT_EQ(one.init_samples_used, 16);
  std::vector<double> X(std::size_t(16 + 4000) * 64);
  rows(0, 16 + 4000, X.data());
  ReferenceState<double> st = reference_init_data(X.data(), 16, 64, r, p);
  for (int t = 0; t < 4000; ++t) reference_step(st, X.data() + std::size_t(16 + t) * 64, p);
  EXPECT_TRUE(same_bits(one.final_state, st));
  SegmentParams sp = segments(2);
  sp.warmup = 0;
  const SegmentedRun<double> two =
      reference_run_segments<double>(rows, 4000 + 64 * r, 4000, 64, r, p, sp, 7, rows.stream);
  EXPECT_EQ(two.init_samples_used, 16);
  EXPECT_TRUE(two.certified);
  EXPECT_LE(boundary_mismatch(two.final_state, st).delta(), 1e-13);
}

}  // namespace
