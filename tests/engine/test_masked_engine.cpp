// The engine's masked sequential kernel (impl/masked_step.hpp) against the
// host reference of ALGORITHM.md section 7 (reference_masked.hpp) on the
// same masked samples: every missing mode and both rotations, float and
// double, the Serial and the default backend, the counters, the seen rule,
// and the section-2 kernel bit for bit where nothing is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/algorithm/synthetic.hpp"
#include "mosaic/algorithm/synthetic_missing.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/transfer.hpp"

namespace {

using namespace mosaic;

// Basis-free distance between two states: max relative of mu and s2, the
// projector distance r - ||Ua^T Ub||^2 and the covariance distance
// relative to ||S||.
template <class T>
double state_gap(const ReferenceState<T>& a, const ReferenceState<T>& b) {
  const StateDistance dist = reference_distance(a, b);
  double mu_scale = 1e-300, s_scale = 0;
  for (const T v : b.mu) mu_scale = std::max(mu_scale, std::fabs(double(v)));
  for (const T v : b.S) s_scale += double(v) * double(v);
  return std::max(
      {dist.mu / mu_scale, dist.s2 / double(b.s2), std::fabs(dist.projector), dist.covariance / std::sqrt(s_scale)});
}

struct Case {
  MissingMode mode = MissingMode::posterior;
  MissingRotation rotation = MissingRotation::observed;
  CovarianceUpdate update = CovarianceUpdate::exact;
  double gamma = 1.0;
  int reorth = 0;
};

std::string name(const Case& c) {
  return std::string(to_string(c.mode)) + "/" + to_string(c.rotation) + "/" + to_string(c.update) +
         "/gamma=" + std::to_string(c.gamma) + "/reorth=" + std::to_string(c.reorth);
}

// B streams of the synthetic drifting stream with MCAR, an outage and
// missing-at-random tiles; the masked init on the host (7.6, the
// reference's), then `steps` steps of engine and reference on the same
// samples. Returns the largest state gap and checks the counters; with
// team_size > 0 the engine runs teams of that size, and `states` receives
// the engine's final states.
template <class T, class Exec>
double run_masked(const Case& c, int d, int r, int steps, const std::string& what, int team_size = 0,
                  std::vector<MaskedReferenceState<T>>* states = nullptr) {
  MosaicParams p;
  p.missing = c.mode;
  p.missing_rotation = c.rotation;
  p.covariance_update = c.update;
  p.gamma = c.gamma;
  p.reorthonormalize_every = c.reorth;
  p.block_size = 0;
  SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.lambda_max = 10;
  spec.lambda_min = 1;
  spec.noise = 0.3;
  spec.drift = 1e-3;
  spec.mean_scale = 2.0;
  spec.seed = 5;
  MissingSpec miss;
  miss.mcar_rate = 0.15;
  miss.outage_first = 2;
  miss.outage_count = d / 5;
  miss.outage_start = 100;
  miss.outage_steps = 300;
  miss.block_rate = 0.05;
  miss.block_coords = 4;
  miss.block_steps = 20;
  const std::vector<std::uint64_t> ids = {0, 1, 2};
  const int B = int(ids.size()), n0 = p.resolved_init_samples(r);
  std::vector<SyntheticTruth> truths;
  for (const auto id : ids) truths.push_back(make_synthetic_truth(spec, id));
  auto sample = [&](int b, std::uint64_t t, T* x) {
    synthetic_sample(spec, truths[std::size_t(b)], ids[std::size_t(b)], t, x);
    apply_synthetic_missing(miss, spec.seed, ids[std::size_t(b)], t, x, d);
  };
  StreamBatch<T, Exec> sb(B, d, r, ids);
  MosaicEngine<T, Exec> eng(p, B, d, r);
  EXPECT_FALSE(eng.blocked());
  if (team_size > 0) eng.set_team_size(team_size);
  std::vector<MaskedReferenceState<T>> ref;
  for (int b = 0; b < B; ++b) {
    std::vector<T> X(std::size_t(n0) * d);
    for (int t = 0; t < n0; ++t) sample(b, std::uint64_t(t), X.data() + std::size_t(t) * d);
    // Coordinate d - 1 of stream 1 is never observed in the init window: unseen.
    if (b == 1)
      for (int t = 0; t < n0; ++t) X[std::size_t(t) * d + d - 1] = std::numeric_limits<T>::quiet_NaN();
    ref.push_back(reference_init_data_masked(X.data(), n0, d, r, p));
    sb.from_host(b, ref.back());
  }
  EXPECT_EQ(ref[1].unseen(), 1) << what;
  Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> X("X", B, d);
  auto hX = transfer::host_buffer(X);
  std::vector<T> x(static_cast<std::size_t>(d));
  for (int s = 0; s < steps; ++s) {
    const std::uint64_t t = std::uint64_t(n0 + s);
    for (int b = 0; b < B; ++b) {
      sample(b, t, x.data());
      for (int i = 0; i < d; ++i) hX(b, i) = x[std::size_t(i)];
      (void)reference_masked_step(ref[std::size_t(b)], x.data(), p);
    }
    transfer::copy_from_host(X, hX);
    eng.step(sb, X);
  }
  const auto status = transfer::to_host(sb.status);
  double worst = 0;
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(status(b), 0) << what << " stream " << b;
    const MaskedReferenceState<T> st = sb.to_host_masked(b);
    const MaskedReferenceState<T>& rf = ref[std::size_t(b)];
    EXPECT_EQ(st.steps, rf.steps) << what;
    EXPECT_EQ(st.skipped_steps, rf.skipped_steps) << what;
    EXPECT_EQ(st.dropped_samples, rf.dropped_samples) << what;
    EXPECT_EQ(st.missing_entries, rf.missing_entries) << what;
    EXPECT_EQ(st.clamped_steps, rf.clamped_steps) << what;
    EXPECT_EQ(st.reorthonormalizations, rf.reorthonormalizations) << what;
    EXPECT_EQ(st.seen, rf.seen) << what;
    worst = std::max(worst, state_gap<T>(st, rf));
    if (states) states->push_back(st);
  }
  if (std::getenv("MOSAIC_TEST_GAPS")) std::printf("%s: gap %.2e\n", what.c_str(), worst);  // the margins
  return worst;
}

TEST(MaskedEngine, DoubleMatchesTheReferenceInEveryMode) {
  std::vector<Case> cases;
  for (const MissingMode mode :
       {MissingMode::posterior, MissingMode::project, MissingMode::drop, MissingMode::zero_fill}) {
    Case c;
    c.mode = mode;
    cases.push_back(c);
  }
  Case c;
  c.rotation = MissingRotation::geodesic;
  cases.push_back(c);
  c = Case{};
  c.update = CovarianceUpdate::first_order;
  c.gamma = 0.0;
  c.reorth = 50;
  cases.push_back(c);
  for (const Case& k : cases) {
    const double gap = run_masked<double, Kokkos::DefaultExecutionSpace>(k, 40, 4, 600, name(k));
    EXPECT_LT(gap, 1e-10) << name(k);
  }
}

TEST(MaskedEngine, FloatMatchesTheReference) {
  Case c;
  const double gap = run_masked<float, Kokkos::DefaultExecutionSpace>(c, 40, 4, 600, "float");
  EXPECT_LT(gap, 1e-4);  // measured 3.5e-7
}

TEST(MaskedEngine, SerialBackendMatchesTheReference) {
  Case c;
  const double gap = run_masked<double, Kokkos::Serial>(c, 40, 4, 300, "serial");
  EXPECT_LT(gap, 1e-10);
}

// The host form of the missing rows' Gram splits the rows of N among a
// team's threads: the same sums in the same order whatever the team size.
TEST(MaskedEngine, ResultsIndependentOfTeamSize) {
  using Exec = Kokkos::DefaultExecutionSpace;
  if (Exec().concurrency() < 2) GTEST_SKIP() << "a team of 2 needs concurrency >= 2, have " << Exec().concurrency();
  std::vector<MaskedReferenceState<double>> one, two;
  run_masked<double, Exec>(Case{}, 40, 4, 300, "team 1", 1, &one);
  run_masked<double, Exec>(Case{}, 40, 4, 300, "team 2", 2, &two);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t b = 0; b < one.size(); ++b) {
    EXPECT_EQ(one[b].U, two[b].U) << "stream " << b;
    EXPECT_EQ(one[b].S, two[b].S) << "stream " << b;
    EXPECT_EQ(one[b].mu, two[b].mu) << "stream " << b;
    EXPECT_EQ(one[b].s2, two[b].s2) << "stream " << b;
  }
}

// Nothing missing: the masked engine runs the section-2 kernel (bit for bit
// the unmasked engine's state).
TEST(MaskedEngine, CompleteSamplesAreTheSectionTwoKernelBitwise) {
  using T = double;
  using Exec = Kokkos::DefaultExecutionSpace;
  const int d = 32, r = 3, B = 2;
  MosaicParams plain;
  plain.block_size = 0;
  MosaicParams masked = plain;
  masked.missing = MissingMode::posterior;
  StreamBatch<T, Exec> a(B, d, r, {0, 1}), b(B, d, r, {0, 1});
  MosaicEngine<T, Exec> ea(plain, B, d, r), eb(masked, B, d, r);
  ea.init_random(a, 9);
  eb.init_random(b, 9);
  SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.seed = 3;
  const SyntheticTruth truth = make_synthetic_truth(spec, 0);
  Kokkos::View<T**, Kokkos::LayoutRight, Exec::memory_space> X("X", B, d);
  auto hX = transfer::host_buffer(X);
  std::vector<T> x(static_cast<std::size_t>(d));
  for (int t = 0; t < 300; ++t) {
    synthetic_sample(spec, truth, 0, std::uint64_t(t), x.data());
    for (int s = 0; s < B; ++s)
      for (int i = 0; i < d; ++i) hX(s, i) = x[std::size_t(i)] * T(1 + s);
    transfer::copy_from_host(X, hX);
    ea.step(a, X);
    eb.step(b, X);
  }
  for (int s = 0; s < B; ++s) {
    const ReferenceState<T> sa = a.to_host(s), sm = b.to_host(s);
    EXPECT_EQ(sa.U, sm.U);
    EXPECT_EQ(sa.S, sm.S);
    EXPECT_EQ(sa.s2, sm.s2);
    EXPECT_EQ(sa.mu, sm.mu);
  }
}

// An infinite entry is an input error (the stream freezes, the others go on);
// the unsupported combinations are refused when the engine is built.
TEST(MaskedEngine, InfiniteEntryFreezesTheStreamAndUnsupportedOptionsAreRefused) {
  using T = double;
  using Exec = Kokkos::DefaultExecutionSpace;
  const int d = 16, r = 2, B = 2;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.block_size = 0;
  StreamBatch<T, Exec> sb(B, d, r, {0, 1});
  MosaicEngine<T, Exec> eng(p, B, d, r);
  eng.init_random(sb, 1);
  Kokkos::View<T**, Kokkos::LayoutRight, Exec::memory_space> X("X", B, d);
  auto hX = transfer::host_buffer(X);
  for (int s = 0; s < B; ++s)
    for (int i = 0; i < d; ++i) hX(s, i) = T(0.1 * i);
  hX(0, 3) = std::numeric_limits<T>::infinity();
  hX(1, 3) = std::numeric_limits<T>::quiet_NaN();
  transfer::copy_from_host(X, hX);
  eng.step(sb, X);
  const auto status = transfer::to_host(sb.status);
  EXPECT_EQ(status(0), int(breakdown_nonfinite_sample));
  EXPECT_EQ(status(1), 0);
  EXPECT_EQ(sb.to_host_masked(1).missing_entries, 1);
  MosaicParams q = p;
  q.noise = NoiseModel::diagonal;
  EXPECT_THROW((MosaicEngine<T, Exec>(q, B, d, r)), std::invalid_argument);
  q = p;
  q.precision_solve = PrecisionSolve::maintained;
  EXPECT_THROW((MosaicEngine<T, Exec>(q, B, d, r)), std::invalid_argument);
}

}  // namespace
