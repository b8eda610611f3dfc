// The public API of the host reference: bad options and bad data are
// rejected with a clear std::invalid_argument naming the offender (and a
// rejected step leaves the state as it was), and the two initializations of
// ALGORITHM.md section 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
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
void expect_rejected(const MosaicParams& p, int d, int r, std::initializer_list<std::string> needles) {
  expect_throw_with<std::invalid_argument>([&] { p.validate(d, r); }, needles);
  // init: data with enough generic samples that only the option is wrong.
  const int n0 = std::max(p.init_samples > 0 ? p.init_samples : 2 * std::max(r, 1), 2);
  const int dd = std::max(d, 1);
  const std::vector<double> X = generic_samples(n0, dd, 5);
  expect_throw_with<std::invalid_argument>([&] { (void)reference_init_data(X.data(), n0, d, r, p); }, needles);
  expect_throw_with<std::invalid_argument>([&] { (void)reference_init_random<double>(d, r, p, 1, 0); }, needles);
}

TEST(ReferenceApi, RejectsBadRank) {
  const MosaicParams p;
  expect_rejected(p, 8, 8, {"rank r must be < d", "r=8", "d=8"});
  expect_rejected(p, 8, 9, {"rank r must be < d", "r=9"});
  expect_rejected(p, 8, 0, {"rank r must be >= 1", "got 0"});
  expect_rejected(p, 8, -2, {"rank r must be >= 1", "got -2"});
}

TEST(ReferenceApi, RejectsRatesOutsideOpenUnitInterval) {
  const std::pair<const char*, double MosaicParams::*> rates[] = {{"eta_mu", &MosaicParams::eta_mu},
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
  p.reorthonormalize_every = -2;  // -1 is kAuto
  expect_rejected(p, 16, 3, {"reorthonormalize_every"});
  p = MosaicParams{};
  p.block_size = -2;
  expect_rejected(p, 16, 3, {"block_size"});
  // auto is accepted for both
  p = MosaicParams{};
  p.reorthonormalize_every = kAuto;
  p.block_size = kAuto;
  EXPECT_NO_THROW(p.validate(16, 3));
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
    expect_throw_with<std::invalid_argument>([&] { p.validate(d, r); }, {"init_samples", "r+1 = 4"});
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
  expect_throw_with<std::invalid_argument>([&] { (void)reference_init_data(X.data(), r, d, r, MosaicParams{}); },
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
  for (T bad :
       {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()})
    for (int at : {0, d / 2, d - 1}) {
      SCOPED_TRACE("value " + std::to_string(double(bad)) + " at " + std::to_string(at));
      std::vector<T> x(static_cast<std::size_t>(d));
      synthetic_sample(spec, run.truth, 0, run.next_step, x.data());
      x[at] = bad;
      const ReferenceState<T> before = run.state;
      expect_throw_with<std::invalid_argument>([&] { reference_step(run.state, x.data(), run.params); },
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
    else x[5] = huge;
    const ReferenceState<T> before = run.state;
    expect_throw_with<NumericalBreakdown>([&] { reference_step(run.state, x.data(), run.params); }, {"non-finite"});
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
  expect_throw_with<std::invalid_argument>([&] { (void)reference_init_data(X.data(), n0, d, r, MosaicParams{}); },
                                           {"non-finite"});
}

// The message of the InitRankDeficient that `stmt` must throw (a test
// failure, and "", if it throws nothing or something else).
template <class F>
std::string rank_deficient_message(F&& stmt) {
  try {
    stmt();
    ADD_FAILURE() << "expected InitRankDeficient, none was thrown";
  } catch (const InitRankDeficient& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InitRankDeficient, got another exception: " << e.what();
  }
  return "";
}

// A start whose centred samples span fewer than r directions is a clear error
// (the dedicated InitRankDeficient, an std::invalid_argument) saying what was
// found -- the sample count, r, the eigenvalue and the tolerance -- and naming
// no stream (the callers add the stream id and file), not a NaN state.
TYPED_TEST(ReferenceApiTyped, RankDeficientInitDataIsRejected) {
  using T = TypeParam;
  const int d = 24;
  TestRng rng(31);
  auto expect_rank_error = [&](const std::vector<T>& X, int n0, int r) {
    const std::string what =
        rank_deficient_message([&] { (void)reference_init_data(X.data(), n0, d, r, MosaicParams{}); });
    for (const std::string& needle :
         {std::string("rank-deficient"), "the " + std::to_string(n0) + " centred samples",
          "fewer than r=" + std::to_string(r), std::string("eigenvalue"), std::string("tolerance")})
      EXPECT_NE(what.find(needle), std::string::npos) << "\"" << what << "\" lacks \"" << needle << "\"";
    EXPECT_EQ(what.find("stream"), std::string::npos) << what;
    // It is still an std::invalid_argument for callers that catch those.
    EXPECT_THROW((void)reference_init_data(X.data(), n0, d, r, MosaicParams{}), std::invalid_argument);
  };
  for (int r : {1, 3, 5}) {
    SCOPED_TRACE("r = " + std::to_string(r));
    const int n0 = 2 * r + 1;
    const MosaicParams p;
    // (a) all samples identical: near the origin and at a large offset (the
    // double mean of identical doubles need not round back, leaving centring
    // noise that the tolerance must see through).
    const std::vector<double> x0 = rng.normals(std::size_t(d));
    std::vector<T> X(std::size_t(n0) * d);
    for (double offset : {0.0, 30.0, 1e6}) {
      SCOPED_TRACE("identical samples, offset " + std::to_string(offset));
      for (int k = 0; k < n0; ++k)
        for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = T(offset + x0[i] * (1 + offset / 3));
      expect_rank_error(X, n0, r);
    }
    if (r == 1) continue;
    // (b) samples on an (r-1)-dimensional affine subspace: m + V a, V d x (r-1).
    // Rounded to float they are off the subspace by ~eps_float |x|, which
    // spans an r-th direction of rounding only: still rank-deficient, also at
    // a large offset (more rounding noise).
    const Mat V = random_orthonormal(d, r - 1, rng);
    for (double offset : {0.0, 30.0}) {
      SCOPED_TRACE("(r-1)-dimensional samples, offset " + std::to_string(offset));
      for (int k = 0; k < n0; ++k) {
        const Mat a = rng.normals(std::size_t(r - 1));
        const Mat Va = matmul(V, a, d, r - 1, 1);
        for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = T(offset + x0[i] + 2.0 * Va[i]);
      }
      expect_rank_error(X, n0, r);
    }
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
  std::printf(
      "low rank + noise: projector distance %.3g, s2/sigma^2 = %.3f, S diag / sample "
      "spectrum - 1 = %.2e %.2e %.2e\n",
      dist, st.s2 / (sigma * sigma), st.S[0] / sample_lam[0] - 1, st.S[4] / sample_lam[1] - 1,
      st.S[8] / sample_lam[2] - 1);
  EXPECT_LT(dist, 1e-3);
  EXPECT_LT(reference_invariants(st).orthonormality_error, 1e-13);
  EXPECT_NEAR(st.s2, sigma * sigma, 0.1 * sigma * sigma);
  for (int j = 0; j < r; ++j) EXPECT_NEAR(st.S[j * r + j], sample_lam[j], 0.03 * sample_lam[j]);
  for (int i = 0; i < d; ++i) EXPECT_NEAR(st.mu[i], m[i], 0.3);
}

// --- init: data is computed in double for every dtype (ALGORITHM.md section 3) ---

// n0 samples offset + V diag(sqrt(lam)) a_k + sigma n_k (V d x r orthonormal,
// lam log-uniform in [1, 4], a_k and n_k standard normal), sample k at X[k*d..].
std::vector<double> offset_low_rank_samples(int n0, int d, int r, double offset, double sigma, std::uint64_t seed) {
  TestRng rng(seed);
  const Mat V = random_orthonormal(d, r, rng);
  std::vector<double> lam(r);
  for (auto& l : lam) l = std::pow(4.0, rng.uniform());
  std::vector<double> X(std::size_t(n0) * d);
  for (int k = 0; k < n0; ++k) {
    Mat a = rng.normals(std::size_t(r));
    for (int j = 0; j < r; ++j) a[j] *= std::sqrt(lam[j]);
    const Mat Va = matmul(V, a, d, r, 1);
    for (int i = 0; i < d; ++i) X[std::size_t(k) * d + i] = offset + Va[i] + sigma * rng.normal();
  }
  return X;
}

// An independent long-double computation of init: data's s2 before the floor,
// by the trace identity (||Y||_F^2/n0 - sum_{i<=r} lambda_i) / (d - r): the
// centring, the Gram matrix and its eigenvalues (host::symmetric_eigen in long
// double) all in long double, so its cancellation costs ~1e-19 relative times
// ||Y||_F^2 / (n0 sum_{i>r} lambda_i), far below what is measured here. Also
// returns mean(lambda_1..r) in `mean_top`.
template <class T>
long double ld_trace_s2(const std::vector<T>& X, int n0, int d, int r, long double* mean_top = nullptr) {
  using LD = long double;
  std::vector<LD> mu(std::size_t(d), 0.0L), Y(std::size_t(d) * n0), K(std::size_t(n0) * n0, 0.0L);
  for (int k = 0; k < n0; ++k)
    for (int i = 0; i < d; ++i) mu[i] += LD(X[std::size_t(k) * d + i]);
  for (auto& m : mu) m /= n0;
  LD frob2 = 0;
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < n0; ++k) {
      const LD y = LD(X[std::size_t(k) * d + i]) - mu[i];
      Y[std::size_t(i) * n0 + k] = y;
      frob2 += y * y;
    }
  for (int i = 0; i < d; ++i)
    for (int a = 0; a < n0; ++a)
      for (int b = 0; b < n0; ++b) K[a * n0 + b] += Y[std::size_t(i) * n0 + a] * Y[std::size_t(i) * n0 + b];
  for (auto& v : K) v /= n0;
  std::vector<LD> lam, vec;
  host::symmetric_eigen(K, n0, lam, vec);
  LD top = 0;
  for (int j = 0; j < r; ++j) top += lam[j];
  if (mean_top) *mean_top = top / r;
  return (frob2 / n0 - top) / (d - r);
}

// Largest |a_k - b_k| / |b_k| (a and b exactly 0 together count as 0; a
// nonzero a against b = 0 as infinity).
template <class TA>
double max_rel_diff(const std::vector<TA>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double diff = std::fabs(double(a[k]) - b[k]);
    if (diff == 0) continue;
    m = std::max(m, b[k] == 0 ? std::numeric_limits<double>::infinity() : diff / std::fabs(b[k]));
  }
  return m;
}

// The float start is the double start of the same (float-valued) samples,
// rounded to float: mu, S and s2 within 2 float ulps, U within rounding
// (projector distance). On the case of the bug report (d = 300, r = 31,
// n0 = 2r, an offset of 30 per coordinate and noise) the old all-float start
// had s2 off by 6.4e-4 relative; now its error against an independent
// long-double s2 is float rounding (< 1e-6).
TEST(ReferenceInit, FloatStartIsDoubleStartRounded) {
  struct Case {
    int d, r, n0;
    double offset, sigma;
  };
  for (const Case& c : {Case{300, 31, 62, 30.0, 0.1}, Case{64, 5, 10, 30.0, 0.05}, Case{40, 3, 7, 0.0, 0.2}}) {
    SCOPED_TRACE("d=" + std::to_string(c.d) + " r=" + std::to_string(c.r) + " n0=" + std::to_string(c.n0) +
                 " offset=" + std::to_string(c.offset));
    const std::vector<float> Xf = cast<float>(offset_low_rank_samples(c.n0, c.d, c.r, c.offset, c.sigma, 71));
    const std::vector<double> Xw = to_double(Xf);  // the same values, widened
    MosaicParams p;
    p.init_samples = c.n0;
    const ReferenceState<float> sf = reference_init_data(Xf.data(), c.n0, c.d, c.r, p);
    const ReferenceState<double> sd = reference_init_data(Xw.data(), c.n0, c.d, c.r, p);
    const double ulp = std::numeric_limits<float>::epsilon();
    const double mu_rel = max_rel_diff(sf.mu, sd.mu), S_rel = max_rel_diff(sf.S, sd.S);
    const double s2_rel = std::fabs(double(sf.s2) - sd.s2) / sd.s2;
    const double proj = std::fabs(reference_distance(sf, sd).projector);
    const long double s2_ld = ld_trace_s2(Xf, c.n0, c.d, c.r);
    const double f_err = double(std::fabs((long double)sf.s2 - s2_ld) / s2_ld);
    const double d_err = double(std::fabs((long double)sd.s2 - s2_ld) / s2_ld);
    std::printf(
        "float start vs double start (d=%d r=%d n0=%d offset %g): mu %.2g, S %.2g, s2 %.2g "
        "(relative; float eps %.2g), projector %.2g; s2 vs long double: float %.2g, double %.2g\n",
        c.d, c.r, c.n0, c.offset, mu_rel, S_rel, s2_rel, ulp, proj, f_err, d_err);
    EXPECT_LE(mu_rel, 2 * ulp);
    EXPECT_LE(S_rel, 2 * ulp);
    EXPECT_LE(s2_rel, 2 * ulp);
    EXPECT_LT(proj, 1e-6);
    EXPECT_GT(sd.s2, 1e-6 * sd.S[0]);  // the noise, not the floor, sets s2 here
    EXPECT_LT(f_err, 1e-6);
    EXPECT_LT(d_err, 1e-12);
  }
}

// s2 is the sum of the Gram eigenvalues beyond r over d - r (checked against
// the trace identity in long double), and at its floor 1e-6 mean(lambda_1..r)
// -- the same 1e-6 for every dtype -- when the samples lie exactly in an
// r-dimensional affine subspace.
TYPED_TEST(ReferenceApiTyped, InitNoiseIsTrailingGramEigenvaluesOrFloor) {
  using T = TypeParam;
  const double eps_T = std::numeric_limits<T>::epsilon();
  // (a) low rank plus noise at an offset: the computation in double leaves
  // s2 within the rounding of T (double: the Gram eigen-solve, ~1e-13).
  for (const auto& [d, r, n0, offset] :
       std::vector<std::tuple<int, int, int, double>>{{64, 5, 10, 30.0}, {300, 31, 62, 30.0}, {32, 3, 100, 1.0}}) {
    SCOPED_TRACE("d=" + std::to_string(d) + " r=" + std::to_string(r) + " n0=" + std::to_string(n0));
    const std::vector<T> X = cast<T>(offset_low_rank_samples(n0, d, r, offset, 0.05, 73));
    MosaicParams p;
    p.init_samples = n0;
    const ReferenceState<T> st = reference_init_data(X.data(), n0, d, r, p);
    const long double s2_ld = ld_trace_s2(X, n0, d, r);
    const double err = double(std::fabs((long double)st.s2 - s2_ld) / s2_ld);
    std::printf("s2 vs long-double trace identity (%s, d=%d r=%d n0=%d): %.2g relative\n",
                sizeof(T) == 4 ? "float" : "double", d, r, n0, err);
    EXPECT_LT(err, std::max(eps_T, 1e-12));
  }
  // (b) exactly r directions and no noise (exact in T: small integers times
  // exact orthogonal directions of +-1/2 entries), so the trailing Gram
  // eigenvalues are rounding only: s2 is the floor.
  const int d = 32, r = 4, n0 = 9;
  TestRng rng(79);
  std::vector<double> H(std::size_t(d) * r);  // columns of a Sylvester-Hadamard matrix / 2
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < r; ++j)
      H[std::size_t(i) * r + j] = (__builtin_popcount(unsigned(i & (j + 1))) % 2) ? -0.5 : 0.5;
  std::vector<T> X(std::size_t(n0) * d);
  for (int k = 0; k < n0; ++k) {
    double a[r];
    for (int j = 0; j < r; ++j) a[j] = double(int(8 * rng.normal()) * (r - j));
    for (int i = 0; i < d; ++i) {
      double v = 3.0 + 0.25 * i;  // offset
      for (int j = 0; j < r; ++j) v += a[j] * H[std::size_t(i) * r + j];
      X[std::size_t(k) * d + i] = T(v);
      ASSERT_EQ(double(X[std::size_t(k) * d + i]), v);  // exactly r directions in T too
    }
  }
  MosaicParams p;
  p.init_samples = n0;
  const ReferenceState<T> st = reference_init_data(X.data(), n0, d, r, p);
  long double mean_top = 0;
  const long double raw_ld = ld_trace_s2(X, n0, d, r, &mean_top);
  double mean_S = 0;  // from the state, in double
  for (int j = 0; j < r; ++j) mean_S += double(st.S[j * r + j]) / r;
  const double floor = 1e-6 * double(mean_top);
  std::printf("floor (%s): s2 = %.9g, 1e-6 mean(lambda) = %.9g, trailing eigenvalues / (d-r) = %.2g\n",
              sizeof(T) == 4 ? "float" : "double", double(st.s2), floor, double(raw_ld));
  EXPECT_LT(std::fabs(double(raw_ld)), 1e-9 * floor);  // the floor, not the noise, applies
  // Against the long-double eigenvalues: the rounding to T, and for double
  // the eigen-solve (~1e-15 measured).
  EXPECT_NEAR(double(st.s2), floor, (2 * eps_T + 1e-13) * floor);
  // Exactly 1e-6 times the mean of the S the state holds, for every T.
  EXPECT_NEAR(double(st.s2), 1e-6 * mean_S, 4 * eps_T * floor);
}

// A start that double represents but float does not (lambda beyond the range
// of float, or below its smallest normal number) is refused with a clear
// std::invalid_argument, not handed on as Inf or a singular S.
TEST(ReferenceInit, FloatStartOutsideFloatRangeIsRejected) {
  const int d = 16, r = 2, n0 = 5;
  for (double scale : {1e20, 1e-22}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    const std::vector<float> X = cast<float>(offset_low_rank_samples(n0, d, r, 0.0, 0.1, 83));
    std::vector<float> Xs(X.size());
    for (std::size_t k = 0; k < X.size(); ++k) Xs[k] = float(double(X[k]) * scale);
    MosaicParams p;
    p.init_samples = n0;
    // In double the same samples give a valid start.
    const std::vector<double> Xw = to_double(Xs);
    EXPECT_NO_THROW((void)reference_init_data(Xw.data(), n0, d, r, p));
    expect_throw_with<std::invalid_argument>([&] { (void)reference_init_data(Xs.data(), n0, d, r, p); },
                                             {"outside the range", "lambda_1"});
  }
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
  for (const auto& [seed, stream] :
       std::vector<std::pair<std::uint64_t, std::uint64_t>>{{8, 3}, {7, 4}, {7 + hi, 3}, {7, 3 + hi}}) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " stream " + std::to_string(stream));
    const auto o = reference_init_random<double>(d, r, p, seed, stream);
    EXPECT_GT(reference_distance(st, o).projector, 0.5);
  }
}

}  // namespace
