// The batched Kokkos engine (batched_engine.hpp) against the host reference
// (reference.hpp) on identical samples, across options, precisions,
// backends and team sizes; breakdown handling, clamping and diagnostics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/sources/synthetic_source.hpp"
#include "test_reference_helpers.hpp"

namespace {

using namespace mosaic;

// Test samples: anisotropic Gaussian with a slowly rotating pair of leading
// axes and a per-stream mean, a pure function of (stream, step, i). Works for
// any r < d (unlike the synthetic source, which needs 2 r <= d).
double sample_value(std::uint64_t stream, std::int64_t step, int i, int d) {
  const double scale = 2.0 / (1.0 + 0.5 * i);  // decaying spectrum
  const double n = counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), i);
  const double mean = 0.3 * counter_normal(77, RngDomain::mean, stream, 0, i);
  double x = mean + scale * n;
  if (i < 2 && d > 2) {  // rotate the two leading axes slowly
    const double a = 0.002 * double(step);
    const double n0 = counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), 0);
    const double n1 = counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), 1);
    x = mean + 2.0 * (i == 0 ? std::cos(a) * n0 - std::sin(a) * n1 : std::sin(a) * n0 + std::cos(a) * n1);
  }
  return x;
}

template <class T>
void fill_samples(std::vector<T>& h, const std::vector<std::uint64_t>& ids, std::int64_t step, int d) {
  for (std::size_t b = 0; b < ids.size(); ++b)
    for (int i = 0; i < d; ++i) h[b * d + i] = T(sample_value(ids[b], step, i, d));
}

// Precise basis-free comparison for small d: explicit d x d projectors and
// modelled covariances (reference_distance's trace form loses half the digits
// to cancellation, so it cannot certify 1e-10).
struct Gap {
  double mu_rel = 0, s2_rel = 0, projector = 0, cov_rel = 0;
  double ref_projector = 0, ref_cov_rel = 0;  // reference_distance's projector and covariance
};
template <class TA, class TB>
Gap compare(const ReferenceState<TA>& a, const ReferenceState<TB>& b) {
  const int d = a.d, r = a.r;
  Gap g;
  double mu_scale = 0;
  for (int i = 0; i < d; ++i) {
    g.mu_rel = std::max(g.mu_rel, std::fabs(double(a.mu[i]) - double(b.mu[i])));
    mu_scale = std::max(mu_scale, std::fabs(double(b.mu[i])));
  }
  g.mu_rel /= std::max(mu_scale, 1e-300);
  g.s2_rel = std::fabs(double(a.s2) - double(b.s2)) / std::fabs(double(b.s2));
  double dp = 0, dc = 0, nc = 0;
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < d; ++k) {
      double pa = 0, pb = 0, ca = 0, cb = 0;
      for (int x = 0; x < r; ++x) {
        pa += double(a.u(i, x)) * double(a.u(k, x));
        pb += double(b.u(i, x)) * double(b.u(k, x));
        for (int y = 0; y < r; ++y) {
          ca += double(a.u(i, x)) * double(a.S[x * r + y]) * double(a.u(k, y));
          cb += double(b.u(i, x)) * double(b.S[x * r + y]) * double(b.u(k, y));
        }
      }
      dp += (pa - pb) * (pa - pb);
      dc += (ca - cb) * (ca - cb);
      nc += cb * cb;
    }
  g.projector = std::sqrt(dp);
  g.cov_rel = std::sqrt(dc / nc);
  const StateDistance rd = reference_distance(a, b);
  g.ref_projector = std::fabs(rd.projector);
  g.ref_cov_rel = rd.covariance / std::sqrt(nc);
  return g;
}

template <class T>
void expect_close(const ReferenceState<T>& eng, const ReferenceState<T>& ref, double tol, const std::string& what) {
  const Gap g = compare(eng, ref);
  if (std::getenv("MOSAIC_TEST_GAPS"))  // print the margins
    std::printf("%s: mu %.2e s2 %.2e P %.2e refP %.2e C %.2e refC %.2e\n", what.c_str(), g.mu_rel, g.s2_rel,
                g.projector, g.ref_projector, g.cov_rel, g.ref_cov_rel);
  EXPECT_LE(g.mu_rel, tol) << what;
  EXPECT_LE(g.s2_rel, tol) << what;
  EXPECT_LE(g.projector, tol) << what;
  EXPECT_LE(g.ref_projector, tol) << what;
  EXPECT_LE(g.cov_rel, tol) << what;
  EXPECT_LE(g.ref_cov_rel, tol) << what;
  EXPECT_EQ(eng.steps, ref.steps) << what;
  EXPECT_EQ(eng.clamped_steps, ref.clamped_steps) << what;
  EXPECT_EQ(eng.reorthonormalizations, ref.reorthonormalizations) << what;
  const double preq = test::prequential_gap(eng, ref, std::is_same_v<T, double>, eng.steps > 0, what);
  if (std::getenv("MOSAIC_TEST_GAPS")) std::printf("%s: prequential %.2e\n", what.c_str(), preq);
  EXPECT_LE(preq, tol) << what << ": prequential sums";
}

// Runs `steps` steps of engine and reference on the same samples (after init
// data/random) and compares every stream.
template <class T, class Exec = Kokkos::DefaultExecutionSpace>
void run_against_reference(const MosaicParams& p, int d, int r, int steps, double tol, const std::string& what,
                           int team_size = -1) {
  const std::vector<std::uint64_t> ids = {3, 11};
  const int B = int(ids.size());
  StreamBatch<T, Exec> sb(B, d, r, ids);
  MosaicEngine<T, Exec> eng(p, B, d, r);
  if (team_size >= 0) eng.set_team_size(team_size);
  std::vector<ReferenceState<T>> ref;
  std::int64_t t = 0;
  if (p.init == InitMode::data) {
    const int n0 = p.resolved_init_samples(r);
    Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space> X0("X0", B, n0, d);
    auto h0 = Kokkos::create_mirror_view(X0);
    std::vector<T> xs(std::size_t(n0) * d);
    for (int b = 0; b < B; ++b) {
      for (int k = 0; k < n0; ++k)
        for (int i = 0; i < d; ++i) h0(b, k, i) = xs[std::size_t(k) * d + i] = T(sample_value(ids[b], k, i, d));
      ref.push_back(reference_init_data<T>(xs.data(), n0, d, r, p));
    }
    Kokkos::deep_copy(X0, h0);
    eng.init_data(sb, X0);
    t = n0;
  } else {
    eng.init_random(sb, 4242);
    for (int b = 0; b < B; ++b) ref.push_back(reference_init_random<T>(d, r, p, 4242, ids[b]));
  }
  for (int b = 0; b < B; ++b) {
    const auto st = sb.to_host(b);
    if (p.init == InitMode::data) {
      // init_data.hpp, the fast twin: the reference's mu bitwise (the same
      // sums in the same order), the rest to rounding.
      ASSERT_EQ(st.mu, ref[b].mu) << what;
      expect_close(st, ref[b], std::is_same_v<T, float> ? 1e-5 : 1e-11, what + " (init: data)");
    } else {  // init: random is the reference's own code: exact
      ASSERT_EQ(st.U, ref[b].U) << what;
      ASSERT_EQ(st.S, ref[b].S) << what;
      ASSERT_EQ(st.mu, ref[b].mu) << what;
    }
  }
  Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> X("X", B, d);
  auto hX = Kokkos::create_mirror_view(X);
  std::vector<T> h(std::size_t(B) * d);
  for (int s = 0; s < steps; ++s, ++t) {
    fill_samples(h, ids, t, d);
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < d; ++i) hX(b, i) = h[std::size_t(b) * d + i];
    Kokkos::deep_copy(X, hX);
    eng.step(sb, X);
    for (int b = 0; b < B; ++b) reference_step(ref[b], &h[std::size_t(b) * d], p);
  }
  auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.status);
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(status(b), 0) << what;
    expect_close(sb.to_host(b), ref[b], tol, what + " stream " + std::to_string(b));
  }
}

// ---- every option combination, double, 1000 steps ----------------------------

using Combo = std::tuple<CovarianceUpdate, SubspaceDirection, double /*gamma*/, int /*reorth*/, InitMode>;

class EngineOptions : public ::testing::TestWithParam<Combo> {};

TEST_P(EngineOptions, DoubleMatchesReferenceAfter1000Steps) {
  MosaicParams p;
  std::tie(p.covariance_update, p.subspace_direction, p.gamma, p.reorthonormalize_every, p.init) = GetParam();
  const std::string what = std::string(to_string(p.covariance_update)) + "/" + to_string(p.subspace_direction) +
                           "/gamma=" + std::to_string(p.gamma) + "/reorth=" + std::to_string(p.reorthonormalize_every) +
                           "/" + to_string(p.init);
  run_against_reference<double>(p, 24, 4, 1000, 1e-10, what);
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, EngineOptions,
                         ::testing::Combine(::testing::Values(CovarianceUpdate::exact, CovarianceUpdate::first_order),
                                            ::testing::Values(SubspaceDirection::precision, SubspaceDirection::oja),
                                            ::testing::Values(0.0, 1.0), ::testing::Values(0, 7),
                                            ::testing::Values(InitMode::data, InitMode::random)));

// ---- shapes, including r = 1 and r close to d ----------------------------------

TEST(Engine, RankOneDouble) {
  MosaicParams p;
  run_against_reference<double>(p, 32, 1, 1000, 1e-10, "d=32 r=1");
}

TEST(Engine, RankNearDimensionDouble) {
  MosaicParams p;
  p.init_samples = 14;
  run_against_reference<double>(p, 12, 10, 1000, 1e-10, "d=12 r=10 data");
  p.init = InitMode::random;
  p.reorthonormalize_every = 10;
  run_against_reference<double>(p, 12, 11, 1000, 1e-10, "d=12 r=11 random reorth");
}

TEST(Engine, LargerShapeDouble) {
  MosaicParams p;
  p.reorthonormalize_every = 50;
  run_against_reference<double>(p, 64, 8, 1000, 1e-10, "d=64 r=8");
}

TEST(Engine, FloatMatchesReference) {
  MosaicParams p;
  run_against_reference<float>(p, 32, 4, 1000, 1e-3, "float d=32 r=4");
  p.covariance_update = CovarianceUpdate::first_order;
  p.subspace_direction = SubspaceDirection::oja;
  p.init = InitMode::random;
  p.reorthonormalize_every = 10;
  run_against_reference<float>(p, 12, 10, 1000, 1e-3, "float d=12 r=10 first_order oja random");
  MosaicParams q;
  run_against_reference<float>(q, 32, 1, 1000, 1e-3, "float d=32 r=1");
}

TEST(Engine, ResultsIndependentOfTeamSize) {
  // Same engine config on 1 and 2 threads per team (OpenMP pool of 2 when
  // the default space is OpenMP): bitwise-equal states.
  MosaicParams p;
  p.reorthonormalize_every = 5;
  const int B = 2, d = 40, r = 5;
  const std::vector<std::uint64_t> ids = {0, 1};
  using Exec = Kokkos::DefaultExecutionSpace;
  std::vector<ReferenceState<double>> out[2];
  for (int v = 0; v < 2; ++v) {
    StreamBatch<double, Exec> sb(B, d, r, ids);
    MosaicEngine<double, Exec> eng(p, B, d, r);
    const int ts = std::min(v + 1, Exec().concurrency());
    eng.set_team_size(ts);
    eng.init_random(sb, 9);
    Kokkos::View<double**, Kokkos::LayoutRight, Exec::memory_space> X("X", B, d);
    auto hX = Kokkos::create_mirror_view(X);
    std::vector<double> h(std::size_t(B) * d);
    for (int t = 0; t < 300; ++t) {
      fill_samples(h, ids, t, d);
      for (int b = 0; b < B; ++b)
        for (int i = 0; i < d; ++i) hX(b, i) = h[std::size_t(b) * d + i];
      Kokkos::deep_copy(X, hX);
      eng.step(sb, X);
    }
    for (int b = 0; b < B; ++b) out[v].push_back(sb.to_host(b));
  }
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(out[0][b].U, out[1][b].U);
    EXPECT_EQ(out[0][b].S, out[1][b].S);
    EXPECT_EQ(out[0][b].mu, out[1][b].mu);
    EXPECT_EQ(out[0][b].s2, out[1][b].s2);
  }
}

#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
// Serial and OpenMP (2 threads; 1 team of 2 threads per stream, and 1 thread
// per stream) on the same synthetic batch: bitwise-identical states.
template <class Exec>
std::vector<ReferenceState<double>> run_backend(int team_size) {
  MosaicParams p;
  p.reorthonormalize_every = 20;
  SyntheticSpec spec;
  spec.d = 48;
  spec.r = 4;
  spec.drift = 1e-3;
  spec.seed = 5;
  const std::vector<std::uint64_t> ids = {0, 1, 2};
  const int B = 3, r = 4, n0 = p.resolved_init_samples(r);
  SyntheticDriftSource<double, Exec> src(spec, ids);
  StreamBatch<double, Exec> sb(B, spec.d, r, ids);
  MosaicEngine<double, Exec> eng(p, B, spec.d, r);
  if (team_size > 0) eng.set_team_size(team_size);
  Kokkos::View<double***, Kokkos::LayoutRight, typename Exec::memory_space> X0("X0", B, n0, spec.d);
  src.generate_block(0, n0, X0);
  eng.init_data(sb, X0);
  Kokkos::View<double**, Kokkos::LayoutRight, typename Exec::memory_space> X("X", B, spec.d);
  for (int t = n0; t < n0 + 500; ++t) {
    src.generate(t, X);
    eng.step(sb, X);
  }
  std::vector<ReferenceState<double>> out;
  for (int b = 0; b < B; ++b) out.push_back(sb.to_host(b));
  return out;
}

TEST(Engine, SerialAndOpenMPBitwiseIdentical) {
  const auto serial = run_backend<Kokkos::Serial>(1);
  const int conc = Kokkos::OpenMP().concurrency();
  const auto omp_team = run_backend<Kokkos::OpenMP>(conc);  // all threads in one team
  const auto omp_one = run_backend<Kokkos::OpenMP>(1);      // one thread per stream
  for (std::size_t b = 0; b < serial.size(); ++b) {
    for (const auto* other : {&omp_team, &omp_one}) {
      EXPECT_EQ(serial[b].U, (*other)[b].U) << "stream " << b;
      EXPECT_EQ(serial[b].S, (*other)[b].S) << "stream " << b;
      EXPECT_EQ(serial[b].mu, (*other)[b].mu) << "stream " << b;
      EXPECT_EQ(serial[b].s2, (*other)[b].s2) << "stream " << b;
      EXPECT_EQ(serial[b].steps, (*other)[b].steps);
    }
  }
}
#endif

// ---- breakdown, clamp, validation ---------------------------------------------

TEST(Engine, NaNSampleFreezesOnlyThatStream) {
  MosaicParams p;
  const int d = 20, r = 3, B = 3;
  const std::vector<std::uint64_t> ids = {100, 101, 102};
  StreamBatch<double> sb(B, d, r, ids);
  MosaicEngine<double> eng(p, B, d, r);
  eng.init_random(sb, 1);
  std::vector<ReferenceState<double>> ref;
  for (int b = 0; b < B; ++b) ref.push_back(reference_init_random<double>(d, r, p, 1, ids[b]));
  Kokkos::View<double**, Kokkos::LayoutRight> X("X", B, d);
  auto hX = Kokkos::create_mirror_view(X);
  std::vector<double> h(std::size_t(B) * d);
  for (int t = 0; t < 120; ++t) {
    fill_samples(h, ids, t, d);
    if (t == 50) h[1 * d + 7] = std::numeric_limits<double>::quiet_NaN();
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < d; ++i) hX(b, i) = h[std::size_t(b) * d + i];
    Kokkos::deep_copy(X, hX);
    eng.step(sb, X);
    for (int b = 0; b < B; ++b) {
      if (b == 1 && t >= 50) {
        if (t == 50) EXPECT_THROW(reference_step(ref[b], &h[std::size_t(b) * d], p), std::invalid_argument);
        continue;  // the reference stream stays at its pre-NaN state
      }
      reference_step(ref[b], &h[std::size_t(b) * d], p);
    }
  }
  const BatchDiagnostics diag = compute_diagnostics(sb);
  EXPECT_EQ(diag.breakdown_streams, 1);
  ASSERT_EQ(diag.breakdowns.size(), 1u);
  EXPECT_EQ(diag.breakdowns[0].stream_id, 101u);
  EXPECT_EQ(diag.breakdowns[0].step, 50);
  EXPECT_EQ(diag.breakdowns[0].code, int(breakdown_nonfinite_sample));
  EXPECT_EQ(diag.nonfinite_count, 0);  // the NaN never entered a state
  for (int b = 0; b < B; ++b) expect_close(sb.to_host(b), ref[b], 1e-10, "stream " + std::to_string(b));
  EXPECT_EQ(sb.to_host(1).steps, 50);
}

TEST(Engine, IndefiniteCovarianceIsABreakdown) {
  MosaicParams p;
  const int d = 10, r = 3, B = 2;
  StreamBatch<double> sb(B, d, r, {0, 1});
  MosaicEngine<double> eng(p, B, d, r);
  eng.init_random(sb, 3);
  ReferenceState<double> bad = sb.to_host(1);
  bad.S[1 * r + 1] = -0.5;  // S indefinite
  sb.from_host(1, bad);
  ReferenceState<double> ref = bad;
  Kokkos::View<double**, Kokkos::LayoutRight> X("X", B, d);
  auto hX = Kokkos::create_mirror_view(X);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < d; ++i) hX(b, i) = sample_value(b, 0, i, d);
  Kokkos::deep_copy(X, hX);
  eng.step(sb, X);
  EXPECT_THROW(reference_step(ref, &hX(1, 0), p), NumericalBreakdown);
  const BatchDiagnostics diag = compute_diagnostics(sb);
  ASSERT_EQ(diag.breakdowns.size(), 1u);
  EXPECT_EQ(diag.breakdowns[0].stream_id, 1u);
  EXPECT_EQ(diag.breakdowns[0].step, 0);
  EXPECT_EQ(diag.breakdowns[0].code, int(breakdown_s_not_spd));
  const auto frozen = sb.to_host(1);
  EXPECT_EQ(frozen.S, bad.S);  // unchanged
  EXPECT_EQ(frozen.U, bad.U);
  EXPECT_EQ(sb.to_host(0).steps, 1);
}

TEST(Engine, OutlierIsClampedAndKeepsSPD) {
  MosaicParams p;
  const int d = 16, r = 3, B = 2;
  const std::vector<std::uint64_t> ids = {0, 1};
  StreamBatch<double> sb(B, d, r, ids);
  MosaicEngine<double> eng(p, B, d, r);
  eng.init_random(sb, 2);
  std::vector<ReferenceState<double>> ref;
  for (int b = 0; b < B; ++b) ref.push_back(reference_init_random<double>(d, r, p, 2, ids[b]));
  Kokkos::View<double**, Kokkos::LayoutRight> X("X", B, d);
  auto hX = Kokkos::create_mirror_view(X);
  std::vector<double> h(std::size_t(B) * d);
  std::int64_t clamped_before = 0;
  for (int t = 0; t < 60; ++t) {
    fill_samples(h, ids, t, d);
    if (t == 40)
      for (int i = 0; i < d; ++i) h[i] *= 1e4;  // outlier on stream 0 only
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < d; ++i) hX(b, i) = h[std::size_t(b) * d + i];
    Kokkos::deep_copy(X, hX);
    eng.step(sb, X);
    for (int b = 0; b < B; ++b) reference_step(ref[b], &h[std::size_t(b) * d], p);
    if (t == 39) clamped_before = sb.to_host(0).clamped_steps;
  }
  const auto st0 = sb.to_host(0);
  EXPECT_GE(st0.clamped_steps, clamped_before + 1);
  EXPECT_EQ(st0.clamped_steps, ref[0].clamped_steps);
  const BatchDiagnostics diag = compute_diagnostics(sb);
  EXPECT_EQ(diag.nonfinite_count, 0);
  EXPECT_EQ(diag.breakdown_streams, 0);
  EXPECT_GT(diag.s_min_eig_min, 0.0);
  EXPECT_GE(diag.clamped_steps, 1);
  EXPECT_LT(diag.symmetry_error_max, 1e-15);
  for (int b = 0; b < B; ++b) expect_close(sb.to_host(b), ref[b], 1e-10, "clamp stream " + std::to_string(b));
}

TEST(Engine, RejectsBadParametersAndShapes) {
  MosaicParams p;
  p.eta_U = 1.5;
  EXPECT_THROW((MosaicEngine<double>(p, 2, 10, 3)), std::invalid_argument);
  MosaicParams q;
  EXPECT_THROW((MosaicEngine<double>(q, 2, 10, 10)), std::invalid_argument);
  MosaicEngine<double> eng(q, 2, 10, 3);
  StreamBatch<double> wrong(3, 10, 3, {0, 1, 2});
  EXPECT_THROW(eng.init_random(wrong, 1), std::invalid_argument);
  StreamBatch<double> sb(2, 10, 3, {0, 1});
  Kokkos::View<double**, Kokkos::LayoutRight> X("X", 2, 9);
  EXPECT_THROW(eng.step(sb, X), std::invalid_argument);
}

// ---- diagnostics ----------------------------------------------------------------

double host_checksum(const ReferenceState<double>& st) {
  double mu = 0, tr = 0, fro = 0;
  for (double v : st.mu) mu += v;
  for (int a = 0; a < st.r; ++a) {
    tr += st.S[a * st.r + a];
    for (int c = 0; c < st.r; ++c) fro += st.S[a * st.r + c] * st.S[a * st.r + c];
  }
  return mu + 3.0 * st.s2 + tr + 0.5 * fro;
}

TEST(Diagnostics, MatchReferenceInvariants) {
  MosaicParams p;
  const int d = 30, r = 5, B = 3;
  const std::vector<std::uint64_t> ids = {7, 8, 9};
  StreamBatch<double> sb(B, d, r, ids);
  MosaicEngine<double> eng(p, B, d, r);
  eng.init_random(sb, 6);
  Kokkos::View<double**, Kokkos::LayoutRight> X("X", B, d);
  auto hX = Kokkos::create_mirror_view(X);
  std::vector<double> h(std::size_t(B) * d);
  for (int t = 0; t < 200; ++t) {
    fill_samples(h, ids, t, d);
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < d; ++i) hX(b, i) = h[std::size_t(b) * d + i];
    Kokkos::deep_copy(X, hX);
    eng.step(sb, X);
  }
  // Perturb stream 2 so the invariants are far from ideal: U not orthonormal,
  // S not symmetric.
  ReferenceState<double> st2 = sb.to_host(2);
  for (auto& v : st2.U) v *= 1.05;
  st2.S[0 * r + 1] += 0.01;
  sb.from_host(2, st2);
  const BatchDiagnostics diag = compute_diagnostics(sb);
  double orth_max = 0, sym_max = 0, lo = 1e300, hi = -1e300, cond = 0, s2min = 1e300;
  std::int64_t clamped = 0;
  for (int b = 0; b < B; ++b) {
    const auto st = sb.to_host(b);
    const Invariants inv = reference_invariants(st);
    EXPECT_NEAR(diag.per_stream_orthonormality_error[b], inv.orthonormality_error, 1e-12);
    EXPECT_NEAR(diag.per_stream_s_min_eig[b], inv.s_min_eig, 1e-12 * inv.s_max_eig);
    EXPECT_NEAR(diag.per_stream_s_max_eig[b], inv.s_max_eig, 1e-12 * inv.s_max_eig);
    EXPECT_NEAR(diag.per_stream_checksum[b], host_checksum(st), 1e-12 * std::fabs(host_checksum(st)));
    orth_max = std::max(orth_max, inv.orthonormality_error);
    sym_max = std::max(sym_max, inv.symmetry_error);
    lo = std::min(lo, inv.s_min_eig);
    hi = std::max(hi, inv.s_max_eig);
    cond = std::max(cond, inv.s_condition);
    s2min = std::min(s2min, inv.s2);
    clamped += st.clamped_steps;
  }
  EXPECT_GT(orth_max, 0.05);  // the perturbation is visible
  EXPECT_GT(sym_max, 1e-4);
  EXPECT_NEAR(diag.orthonormality_error_max, orth_max, 1e-12);
  EXPECT_NEAR(diag.symmetry_error_max, sym_max, 1e-12);
  EXPECT_NEAR(diag.s_min_eig_min, lo, 1e-12 * hi);
  EXPECT_NEAR(diag.s_max_eig_max, hi, 1e-12 * hi);
  EXPECT_NEAR(diag.s_condition_max, cond, 1e-9 * cond);
  EXPECT_DOUBLE_EQ(diag.s2_min, s2min);
  EXPECT_EQ(diag.clamped_steps, clamped);
  EXPECT_EQ(diag.nonfinite_count, 0);
  EXPECT_EQ(diag.breakdown_streams, 0);
}

TEST(Diagnostics, CountsNonFiniteEntries) {
  const int d = 8, r = 2;
  StreamBatch<float> sb(2, d, r, {0, 1});
  MosaicEngine<float> eng(MosaicParams{}, 2, d, r);
  eng.init_random(sb, 1);
  auto st = sb.to_host(0);
  st.U[3] = std::numeric_limits<float>::infinity();
  st.mu[0] = std::numeric_limits<float>::quiet_NaN();
  sb.from_host(0, st);
  const BatchDiagnostics diag = compute_diagnostics(sb);
  EXPECT_EQ(diag.nonfinite_count, 2);
  // A step on the poisoned stream must not proceed with NaN.
  Kokkos::View<float**, Kokkos::LayoutRight> X("X", 2, d);
  Kokkos::deep_copy(X, 0.5f);
  eng.step(sb, X);
  const BatchDiagnostics after = compute_diagnostics(sb);
  ASSERT_EQ(after.breakdowns.size(), 1u);
  EXPECT_EQ(after.breakdowns[0].stream_id, 0u);
  EXPECT_EQ(after.breakdowns[0].code, int(breakdown_nonfinite_update));
  EXPECT_EQ(sb.to_host(1).steps, 1);
}

TEST(Diagnostics, ChecksumIsBasisFree) {
  // Rotating the frame (U -> U R, S -> R^T S R) leaves the checksum unchanged.
  const int d = 12, r = 3;
  StreamBatch<double> sb(1, d, r, {0});
  MosaicEngine<double> eng(MosaicParams{}, 1, d, r);
  eng.init_random(sb, 4);
  auto st = sb.to_host(0);
  st.S = {2.0, 0.3, 0.1, 0.3, 1.0, 0.2, 0.1, 0.2, 0.5};
  sb.from_host(0, st);
  const double before = compute_diagnostics(sb).per_stream_checksum[0];
  const double c = std::cos(0.7), s = std::sin(0.7);
  const double R[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
  ReferenceState<double> rot = st;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < r; ++j) {
      double v = 0;
      for (int k = 0; k < r; ++k) v += st.u(i, k) * R[k * r + j];
      rot.u(i, j) = v;
    }
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) {
      double v = 0;
      for (int k = 0; k < r; ++k)
        for (int l = 0; l < r; ++l) v += R[k * r + a] * st.S[k * r + l] * R[l * r + b];
      rot.S[a * r + b] = v;
    }
  sb.from_host(0, rot);
  EXPECT_NEAR(compute_diagnostics(sb).per_stream_checksum[0], before, 1e-12 * std::fabs(before));
}

// init_data.hpp refuses what the reference refuses, with the reference's
// message, naming the batch index of the first stream that cannot start; it
// does not write that stream, and starts the others (a masked engine starts
// a stream whose init samples have gaps on the host beside them).
template <class T>
void expect_init_refusal_like_reference(const std::string& kind) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int B = 3, d = 16, r = 3, bad = 1;
  MosaicParams p;
  const int n0 = p.resolved_init_samples(r);
  Kokkos::View<T***, Kokkos::LayoutRight, Exec::memory_space> X0("X0", B, n0, d);
  auto h0 = Kokkos::create_mirror_view(X0);
  std::vector<T> xs(std::size_t(n0) * d);
  for (int b = 0; b < B; ++b)
    for (int k = 0; k < n0; ++k)
      for (int i = 0; i < d; ++i) {
        double v = sample_value(std::uint64_t(b), k, i, d);
        if (b == bad && kind == "rank-deficient") v = (i < 2 ? 1.0 : 0.0) * sample_value(std::uint64_t(b), k, 0, d);
        if (b == bad && kind == "non-finite" && k == 3 && i == 5) v = std::numeric_limits<double>::quiet_NaN();
        if (b == bad && kind == "outside float") v *= 1e30;
        h0(b, k, i) = T(v);
        if (b == bad) xs[std::size_t(k) * d + i] = T(v);
      }
  Kokkos::deep_copy(X0, h0);
  std::string expected;
  int directions = -1;
  try {
    (void)reference_init_data<T>(xs.data(), n0, d, r, p);
  } catch (const InitRankDeficient& e) {
    expected = e.what();
    directions = e.directions;
  } catch (const std::invalid_argument& e) {
    expected = e.what();
  }
  ASSERT_FALSE(expected.empty()) << kind << ": the reference accepted the start";
  StreamBatch<T, Exec> sb(B, d, r, {0, 1, 2});
  MosaicEngine<T, Exec> eng(p, B, d, r);
  try {
    eng.init_data(sb, X0);
    ADD_FAILURE() << kind << ": the engine accepted the start";
  } catch (const StreamInitError& e) {
    EXPECT_EQ(e.stream, bad) << kind;
    // The same words; the values (" = ...") are the two methods' own roundings.
    const auto words = [](const std::string& m) { return m.substr(0, m.find(" = ")); };
    EXPECT_EQ(words(e.what()), words(expected)) << kind << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(kind == "non-finite"       ? "non-finite"
                                         : kind == "rank-deficient" ? "rank-deficient"
                                                                    : "outside the range"),
              std::string::npos)
        << e.what();
  }
  for (int b = 0; b < B; ++b) {
    if (b == bad) EXPECT_EQ(sb.to_host(b).s2, T(0)) << kind << ": stream " << b << " was written";
    else EXPECT_GT(sb.to_host(b).s2, T(0)) << kind << ": stream " << b << " was not started";
  }
  // Per stream (what the driver grows section 3's windows from): only a
  // rank-deficient start is one, with the reference's count of directions.
  StreamBatch<T, Exec> each(B, d, r, {0, 1, 2});
  const std::vector<InitFailure> failures = eng.init_data_streams(each, X0);
  ASSERT_EQ(failures.size(), std::size_t(B));
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(failures[std::size_t(b)].failed(), b == bad) << kind << ": stream " << b;
    EXPECT_EQ(failures[std::size_t(b)].rank_deficient(), b == bad && kind == "rank-deficient") << kind;
  }
  EXPECT_EQ(failures[std::size_t(bad)].directions, directions) << kind;
}

TEST(EngineInit, RefusesWhatTheReferenceRefusesWithItsMessage) {
  expect_init_refusal_like_reference<double>("rank-deficient");
  expect_init_refusal_like_reference<double>("non-finite");
  expect_init_refusal_like_reference<float>("rank-deficient");
  expect_init_refusal_like_reference<float>("non-finite");
  expect_init_refusal_like_reference<float>("outside float");
}

// init: data in any units (issue 32 item 7: samples times 1e-100 or 1e100
// were refused as an overflow, the eigen-solve having failed to converge):
// the start from samples times 2^k, k = +-332 (about 1e+-100), is the
// start from the samples with mu times 2^k, S and s2 times 4^k, and U
// bitwise the same, in the engine and in the reference.
TEST(EngineInit, StartIsTheSameInAnyUnitsOfTheData) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int B = 2, d = 16, r = 3;
  MosaicParams p;
  const int n0 = p.resolved_init_samples(r);
  const auto start = [&](int k, std::vector<ReferenceState<double>>& ref) {
    Kokkos::View<double***, Kokkos::LayoutRight, Exec::memory_space> X0("X0", B, n0, d);
    auto h0 = Kokkos::create_mirror_view(X0);
    ref.clear();
    for (int b = 0; b < B; ++b) {
      std::vector<double> xs(std::size_t(n0) * d);
      for (int j = 0; j < n0; ++j)
        for (int i = 0; i < d; ++i)
          h0(b, j, i) = xs[std::size_t(j) * d + i] = std::ldexp(sample_value(std::uint64_t(b), j, i, d), k);
      ref.push_back(reference_init_data<double>(xs.data(), n0, d, r, p));
    }
    Kokkos::deep_copy(X0, h0);
    StreamBatch<double, Exec> sb(B, d, r, {0, 1});
    MosaicEngine<double, Exec> eng(p, B, d, r);
    eng.init_data(sb, X0);
    std::vector<ReferenceState<double>> out;
    for (int b = 0; b < B; ++b) out.push_back(sb.to_host(b));
    return out;
  };
  const auto same_in_units = [&](const ReferenceState<double>& a, const ReferenceState<double>& s, int k,
                                 const char* who) {
    EXPECT_EQ(s.U, a.U) << who << " k=" << k;
    for (int i = 0; i < d; ++i) ASSERT_EQ(s.mu[i], std::ldexp(a.mu[i], k)) << who << " k=" << k;
    for (std::size_t c = 0; c < a.S.size(); ++c) ASSERT_EQ(s.S[c], std::ldexp(a.S[c], 2 * k)) << who;
    EXPECT_EQ(s.s2, std::ldexp(a.s2, 2 * k)) << who << " k=" << k;
  };
  std::vector<ReferenceState<double>> ref1, refk;
  const auto one = start(0, ref1);
  for (const int k : {332, -332}) {
    const auto scaled = start(k, refk);
    for (int b = 0; b < B; ++b) {
      same_in_units(one[std::size_t(b)], scaled[std::size_t(b)], k, "engine");
      same_in_units(ref1[std::size_t(b)], refk[std::size_t(b)], k, "reference");
    }
  }
}

}  // namespace
