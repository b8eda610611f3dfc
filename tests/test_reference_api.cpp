// The public API of the host reference: bad options and bad data are
// rejected with a clear std::invalid_argument naming the offender (and a
// rejected step leaves the state as it was), and the two initializations of
// ALGORITHM.md section 3.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_reference_helpers.hpp"

namespace {
using namespace mosaic;
using namespace mosaic::test;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// n0 generic samples of dimension d (full rank), sample k at X[k*d..].
std::vector<double> generic_samples(int n0, int d, std::uint64_t seed) {
  TestRng rng(seed);
  return rng.normals(std::size_t(n0) * d);
}

// Every entry point that validates options: MosaicParams::validate, both
// initializations. Each must throw std::invalid_argument mentioning `needles`.
void expect_rejected(const MosaicParams& p, int d, int r,
                     std::initializer_list<std::string> needles) {
  expect_throw_with<std::invalid_argument>([&] { p.validate(d, r); }, needles);
  // init: data with enough generic samples that only the option is wrong.
  const int n0 = std::max(p.init_samples > 0 ? p.init_samples : 2 * std::max(r, 1), 2);
  const int dd = std::max(d, 1);
  const std::vector<double> X = generic_samples(n0, dd, 5);
  expect_throw_with<std::invalid_argument>(
      [&] { (void)reference_init_data(X.data(), n0, d, r, p); }, needles);
  expect_throw_with<std::invalid_argument>(
      [&] { (void)reference_init_random<double>(d, r, p, 1, 0); }, needles);
}

TEST(ReferenceApi, RejectsBadRank) {
  const MosaicParams p;
  expect_rejected(p, 8, 8, {"rank r must be < d", "r=8", "d=8"});
  expect_rejected(p, 8, 9, {"rank r must be < d", "r=9"});
  expect_rejected(p, 8, 0, {"rank r must be >= 1", "got 0"});
  expect_rejected(p, 8, -2, {"rank r must be >= 1", "got -2"});
}

TEST(ReferenceApi, RejectsRatesOutsideOpenUnitInterval) {
  const std::pair<const char*, double MosaicParams::*> rates[] = {
      {"eta_mu", &MosaicParams::eta_mu},
      {"eta_S", &MosaicParams::eta_S},
      {"eta_U", &MosaicParams::eta_U},
      {"eta_s", &MosaicParams::eta_s}};
  for (const auto& [name, member] : rates)
    for (double bad : {0.0, -0.1, 1.0, 1.5, kNaN, kInf}) {
      SCOPED_TRACE(std::string(name) + " = " + std::to_string(bad));
      MosaicParams p;
      p.*member = bad;
      expect_rejected(p, 16, 3, {std::string(name) + " must be in (0,1)"});
    }
  // Just inside the interval is accepted.
  for (const auto& [name, member] : rates)
    for (double ok : {1e-9, 0.999}) {
      MosaicParams p;
      p.*member = ok;
      EXPECT_NO_THROW(p.validate(16, 3)) << name << " = " << ok;
    }
}

TEST(ReferenceApi, RejectsBadGammaMaxStepAndOtherOptions) {
  for (double bad : {-1.0, -1e-12, kNaN, kInf}) {
    SCOPED_TRACE("bad value " + std::to_string(bad));
    MosaicParams p;
    p.gamma = bad;
    expect_rejected(p, 16, 3, {"gamma"});
    p = MosaicParams{};
    p.max_step = bad;
    expect_rejected(p, 16, 3, {"max_step"});
    p = MosaicParams{};
    p.init_scale = bad;
    expect_rejected(p, 16, 3, {"init_scale"});
  }
  MosaicParams p;
  p.max_step = 0.0;
  expect_rejected(p, 16, 3, {"max_step"});
  p = MosaicParams{};
  p.init_scale = 0.0;
  expect_rejected(p, 16, 3, {"init_scale"});
  p = MosaicParams{};
  p.reorthonormalize_every = -1;
  expect_rejected(p, 16, 3, {"reorthonormalize_every"});
  // gamma = 0 is allowed (it reuses w = S^{-1} z).
  p = MosaicParams{};
  p.gamma = 0.0;
  EXPECT_NO_THROW(p.validate(16, 3));
}

TEST(ReferenceApi, RejectsTooFewInitSamples) {
  const int d = 16, r = 3;
  for (int bad : {1, 2, 3}) {  // fewer than r + 1 = 4
    SCOPED_TRACE("init_samples = " + std::to_string(bad));
    MosaicParams p;
    p.init_samples = bad;
    expect_throw_with<std::invalid_argument>([&] { p.validate(d, r); },
                                             {"init_samples", "r+1 = 4"});
  }
  // A negative count is not a silent "use the default".
  MosaicParams neg;
  neg.init_samples = -3;
  expect_throw_with<std::invalid_argument>([&] { neg.validate(d, r); }, {"init_samples"});
  // r + 1 is the minimum; 0 means the default 2r.
  MosaicParams ok;
  ok.init_samples = r + 1;
  EXPECT_NO_THROW(ok.validate(d, r));
  ok.init_samples = 0;
  EXPECT_NO_THROW(ok.validate(d, r));
  EXPECT_EQ(ok.resolved_init_samples(r), 2 * r);
  // The data itself must hold r + 1 samples.
  const std::vector<double> X = generic_samples(r, d, 6);
  expect_throw_with<std::invalid_argument>(
      [&] { (void)reference_init_data(X.data(), r, d, r, MosaicParams{}); },
      {"r+1 = 4", "samples"});
  // init: random does not consume samples, so init_samples does not matter to it.
  MosaicParams rnd;
  rnd.init = InitMode::random;
  rnd.init_samples = 2;
  EXPECT_NO_THROW(rnd.validate(d, r));
}

template <class T>
void expect_same_state(const ReferenceState<T>& a, const ReferenceState<T>& b) {
  EXPECT_EQ(a.mu, b.mu);
  EXPECT_EQ(a.U, b.U);
  EXPECT_EQ(a.S, b.S);
  EXPECT_EQ(a.s2, b.s2);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.clamped_steps, b.clamped_steps);
  EXPECT_EQ(a.reorthonormalizations, b.reorthonormalizations);
}

template <class T>
class ReferenceApiTyped : public ::testing::Test {};
using Scalars = ::testing::Types<double, float>;
TYPED_TEST_SUITE(ReferenceApiTyped, Scalars);

// A non-finite sample throws std::invalid_argument and changes nothing.
TYPED_TEST(ReferenceApiTyped, NonFiniteSampleIsRejectedAndStateUnchanged) {
  using T = TypeParam;
  SyntheticSpec spec;
  spec.d = 32;
  spec.r = 3;
  StreamRun<T> run(spec, MosaicParams{});
  for (int t = 0; t < 20; ++t) run.step();
  const int d = spec.d;
  for (T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                -std::numeric_limits<T>::infinity()})
    for (int at : {0, d / 2, d - 1}) {
      SCOPED_TRACE("value " + std::to_string(double(bad)) + " at " + std::to_string(at));
      std::vector<T> x(static_cast<std::size_t>(d));
      synthetic_sample(spec, run.truth, 0, run.next_step, x.data());
      x[at] = bad;
      const ReferenceState<T> before = run.state;
      expect_throw_with<std::invalid_argument>(
          [&] { reference_step(run.state, x.data(), run.params); },
          {"non-finite", "sample", "index " + std::to_string(at)});
      expect_same_state(run.state, before);
    }
  // The state is still usable.
  EXPECT_NO_THROW(run.step());
}

// A finite sample so large that the step overflows is refused with
// NumericalBreakdown, and the state is left as it was.
TYPED_TEST(ReferenceApiTyped, OverflowingSampleIsRefusedAndStateUnchanged) {
  using T = TypeParam;
  SyntheticSpec spec;
  spec.d = 32;
  spec.r = 3;
  StreamRun<T> run(spec, MosaicParams{});
  for (int t = 0; t < 20; ++t) run.step();
  const T huge = std::numeric_limits<T>::max() / T(4);
  for (int where : {0, 1}) {  // along U_0 (huge q) or off the subspace (huge rho)
    SCOPED_TRACE(where == 0 ? "in subspace" : "in the complement");
    std::vector<T> x(run.state.mu);
    if (where == 0)
      for (int i = 0; i < spec.d; ++i) x[i] += huge * run.state.u(i, 0);
    else
      x[5] = huge;
    const ReferenceState<T> before = run.state;
    expect_throw_with<NumericalBreakdown>([&] { reference_step(run.state, x.data(), run.params); },
                                          {"non-finite"});
    expect_same_state(run.state, before);
  }
  EXPECT_NO_THROW(run.step());
  EXPECT_TRUE(reference_invariants(run.state).all_finite);
}

// Non-finite init: data samples are rejected as well.
TEST(ReferenceApi, NonFiniteInitSampleIsRejected) {
  const int d = 16, r = 3, n0 = 6;
  std::vector<double> X = generic_samples(n0, d, 8);
  X[2 * d + 5] = kNaN;
  expect_throw_with<std::invalid_argument>(
      [&] { (void)reference_init_data(X.data(), n0, d, r, MosaicParams{}); }, {"non-finite"});
}

// A start whose centred samples span fewer than r directions is a clear error
// mentioning the rank, not a NaN state.
TYPED_TEST(ReferenceApiTyped, RankDeficientInitDataIsRejected) {
  using T = TypeParam;
  const int d = 24;
  TestRng rng(31);
  for (int r : {1, 3, 5}) {
    SCOPED_TRACE("r = " + std::to_string(r));
    const int n0 = 2 * r + 1;
    const MosaicParams p;
    // (a) all samples identical.
    const std::vector<double> x0 = rng.normals(std::size_t(d));
    std::vector<T> X(std::size_t(n0) * d);
    for (int k = 0; k < n0; ++k)
      for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = T(x0[i]);
    expect_throw_with<std::invalid_argument>(
        [&] { (void)reference_init_data(X.data(), n0, d, r, p); }, {"rank", "r=" + std::to_string(r)});
    if (r == 1) continue;
    // (b) samples on an (r-1)-dimensional affine subspace: m + V a, V d x (r-1).
    const Mat V = random_orthonormal(d, r - 1, rng);
    for (int k = 0; k < n0; ++k) {
      const Mat a = rng.normals(std::size_t(r - 1));
      const Mat Va = matmul(V, a, d, r - 1, 1);
      for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = T(x0[i] + 2.0 * Va[i]);
    }
    expect_throw_with<std::invalid_argument>(
        [&] { (void)reference_init_data(X.data(), n0, d, r, p); }, {"rank"});
    // (c) the same with one more direction is accepted (rank exactly r).
    const Mat V2 = random_orthonormal(d, r, rng);
    for (int k = 0; k < n0; ++k) {
      const Mat a = rng.normals(std::size_t(r));
      const Mat Va = matmul(V2, a, d, r, 1);
      for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = T(x0[i] + 2.0 * Va[i]);
    }
    EXPECT_NO_THROW((void)reference_init_data(X.data(), n0, d, r, p));
  }
}

// init: data on samples lying exactly in an r-dimensional affine subspace:
// U spans it, mu is the sample mean, U S U^T is the sample covariance, S is
// diagonal and descending, s2 sits at its floor.
TEST(ReferenceInit, DataRecoversExactLowRankSubspace) {
  const int d = 32, r = 4, n0 = 8;
  TestRng rng(41);
  const Mat V = random_orthonormal(d, r, rng);
  const Mat m = rng.normals(std::size_t(d));
  const double lam[r] = {4.0, 2.0, 1.0, 0.5};
  std::vector<double> X(std::size_t(n0) * d);
  for (int k = 0; k < n0; ++k) {
    Mat a = rng.normals(std::size_t(r));
    for (int j = 0; j < r; ++j) a[j] *= std::sqrt(lam[j]);
    const Mat Va = matmul(V, a, d, r, 1);
    for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = m[i] + Va[i];
  }
  const ReferenceState<double> st = reference_init_data(X.data(), n0, d, r, MosaicParams{});
  // Sample mean and covariance, written out.
  Mat mean(d, 0.0), C(std::size_t(d) * d, 0.0);
  for (int k = 0; k < n0; ++k)
    for (int i = 0; i < d; ++i) mean[i] += X[std::size_t(k) * d + i] / n0;
  for (int k = 0; k < n0; ++k)
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j)
        C[i * d + j] += (X[std::size_t(k) * d + i] - mean[i]) * (X[std::size_t(k) * d + j] - mean[j]) / n0;
  EXPECT_LT(frob_diff(st.mu, mean), 1e-14 * frob(mean));
  EXPECT_LT(projector_distance(st, V), 1e-13);
  const Invariants inv = reference_invariants(st);
  EXPECT_LT(inv.orthonormality_error, 1e-13);
  const Mat USUt = matmul(matmul(st.U, st.S, d, r, r), transpose(st.U, d, r), d, r, d);
  EXPECT_LT(frob_diff(USUt, C), 1e-12 * frob(C));
  double trace = 0;
  for (int a = 0; a < r; ++a) {
    trace += st.S[a * r + a];
    if (a > 0) EXPECT_GE(st.S[(a - 1) * r + a - 1], st.S[a * r + a]);
    for (int b = 0; b < r; ++b)
      if (a != b) EXPECT_EQ(st.S[a * r + b], 0.0);
  }
  EXPECT_GT(inv.s_min_eig, 0.0);
  EXPECT_NEAR(st.s2, 1e-6 * trace / r, 1e-12 * trace);
  EXPECT_EQ(st.steps, 0);
}

// init: data on (many) low-rank-plus-noise samples recovers the subspace, the
// spectrum and the noise level.
TEST(ReferenceInit, DataRecoversLowRankPlusNoise) {
  const int d = 32, r = 3, n0 = 100;
  const double sigma = 0.02;
  TestRng rng(43);
  const Mat V = random_orthonormal(d, r, rng);
  const Mat m = rng.normals(std::size_t(d));
  const double lam[r] = {4.0, 2.0, 1.0};
  std::vector<double> X(std::size_t(n0) * d);
  Mat A(std::size_t(n0) * r);  // latent coordinates, to know the sample spectrum
  for (int k = 0; k < n0; ++k) {
    Mat a = rng.normals(std::size_t(r));
    for (int j = 0; j < r; ++j) A[std::size_t(k) * r + j] = a[j] *= std::sqrt(lam[j]);
    const Mat Va = matmul(V, a, d, r, 1);
    for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = m[i] + Va[i] + sigma * rng.normal();
  }
  // Eigenvalues of the latent sample covariance: what S should hold, up to
  // O(sigma^2 + 2 sigma sqrt(lambda / n0)) (~1% here).
  Mat abar(r, 0.0), Ca(std::size_t(r) * r, 0.0);
  for (int k = 0; k < n0; ++k)
    for (int j = 0; j < r; ++j) abar[j] += A[std::size_t(k) * r + j] / n0;
  for (int k = 0; k < n0; ++k)
    for (int x = 0; x < r; ++x)
      for (int y = 0; y < r; ++y)
        Ca[x * r + y] += (A[std::size_t(k) * r + x] - abar[x]) * (A[std::size_t(k) * r + y] - abar[y]) / n0;
  std::vector<double> sample_lam, vecs;
  host::symmetric_eigen(Ca, r, sample_lam, vecs);
  MosaicParams p;
  p.init_samples = n0;
  const ReferenceState<double> st = reference_init_data(X.data(), n0, d, r, p);
  const double dist = projector_distance(st, V);
  std::printf("low rank + noise: projector distance %.3g, s2/sigma^2 = %.3f, S diag / sample "
              "spectrum - 1 = %.2e %.2e %.2e\n",
              dist, st.s2 / (sigma * sigma), st.S[0] / sample_lam[0] - 1, st.S[4] / sample_lam[1] - 1,
              st.S[8] / sample_lam[2] - 1);
  EXPECT_LT(dist, 1e-3);
  EXPECT_LT(reference_invariants(st).orthonormality_error, 1e-13);
  EXPECT_NEAR(st.s2, sigma * sigma, 0.1 * sigma * sigma);
  for (int j = 0; j < r; ++j) EXPECT_NEAR(st.S[j * r + j], sample_lam[j], 0.03 * sample_lam[j]);
  for (int i = 0; i < d; ++i) EXPECT_NEAR(st.mu[i], m[i], 0.3);
}

// init: random: orthonormal U, S = s0 I, s2 = s0, mu = 0, and a pure function
// of (seed, stream id).
TEST(ReferenceInit, RandomIsOrthonormalIsotropicAndPure) {
  const int d = 40, r = 5;
  MosaicParams p;
  p.init = InitMode::random;
  p.init_scale = 2.5;
  const auto st = reference_init_random<double>(d, r, p, 7, 3);
  const Invariants inv = reference_invariants(st);
  EXPECT_LT(inv.orthonormality_error, 1e-14);
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) EXPECT_EQ(st.S[a * r + b], a == b ? 2.5 : 0.0);
  EXPECT_EQ(st.s2, 2.5);
  for (double v : st.mu) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(st.steps, 0);
  EXPECT_EQ(st.clamped_steps, 0);

  // Pure: the same (seed, stream) gives the same state, whatever else was
  // drawn in between and whatever the other options are.
  (void)reference_init_random<double>(d, r, p, 7, 4);
  (void)reference_init_random<double>(d, r, p, 8, 3);
  MosaicParams other = p;
  other.eta_U = 0.3;
  other.gamma = 0;
  EXPECT_EQ(reference_init_random<double>(d, r, p, 7, 3).U, st.U);
  EXPECT_EQ(reference_init_random<double>(d, r, other, 7, 3).U, st.U);
  // Float sees the same basis up to the final rounding.
  const auto stf = reference_init_random<float>(d, r, p, 7, 3);
  EXPECT_EQ(stf.U, cast<float>(st.U));
  EXPECT_LT(reference_invariants(stf).orthonormality_error, 1e-5);

  // ... and a different seed or stream (low or high word) gives a different
  // subspace.
  const std::uint64_t hi = std::uint64_t(1) << 32;
  for (const auto& [seed, stream] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {8, 3}, {7, 4}, {7 + hi, 3}, {7, 3 + hi}}) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " stream " + std::to_string(stream));
    const auto o = reference_init_random<double>(d, r, p, seed, stream);
    EXPECT_GT(reference_distance(st, o).projector, 0.5);
  }
}

}  // namespace
