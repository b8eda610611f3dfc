// Invariants of the host reference over long runs, typed over double and
// float (ALGORITHM.md sections 2 and 4): orthonormality of U without
// re-orthonormalization, S symmetric positive definite, equivariance under a
// change of basis of the frame, the trust-radius clamp on outliers, and the
// Cholesky-QR re-orthonormalization.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "test_reference_helpers.hpp"

namespace {
using namespace mosaic;
using namespace mosaic::test;

// Tolerances per scalar type. The float ones are the measured values (printed
// by each test) with a margin of ~10x; the double ones are the targets
// (measured values are ~1e-15).
template <class T>
struct Tol;
template <>
struct Tol<double> {
  static constexpr double orthonormality_long = 1e-12;  // ||U^T U - I||_F after 1e4 steps
  static constexpr double equivariance = 1e-10;         // relative, after hundreds of steps
  static constexpr double reorth_orthonormality = 1e-13;
  static constexpr double reorth_covariance = 1e-12;  // relative
};
template <>
struct Tol<float> {
  static constexpr double orthonormality_long = 1e-5;    // measured 8e-7
  static constexpr double equivariance = 2e-5;           // measured 2e-6
  static constexpr double reorth_orthonormality = 3e-6;  // measured 3e-7
  static constexpr double reorth_covariance = 1e-6;      // measured 7e-8
};

template <class T>
class ReferenceInvariants : public ::testing::Test {};
using Scalars = ::testing::Types<double, float>;
TYPED_TEST_SUITE(ReferenceInvariants, Scalars);

SyntheticSpec invariants_spec() {
  SyntheticSpec spec;
  spec.d = 64;
  spec.r = 4;
  spec.lambda_max = 1.0;
  spec.lambda_min = 0.1;
  spec.noise = 0.1;
  spec.drift = 1e-3;
  spec.seed = 11;
  return spec;
}

// 1e4 steps without re-orthonormalization: U^T U = I, S symmetric and SPD,
// s2 > 0 and everything finite, checked after every step.
TYPED_TEST(ReferenceInvariants, LongRunKeepsInvariantsWithoutReorthonormalization) {
  using T = TypeParam;
  struct Config {
    const char* name;
    MosaicParams p;
  };
  MosaicParams aggressive;
  aggressive.eta_S = 0.1;
  aggressive.eta_U = 0.05;
  aggressive.eta_s = 0.05;
  aggressive.eta_mu = 0.05;
  MosaicParams oja_first_order;
  oja_first_order.subspace_direction = SubspaceDirection::oja;
  oja_first_order.covariance_update = CovarianceUpdate::first_order;
  const Config configs[] = {
      {"defaults", MosaicParams{}}, {"aggressive rates", aggressive}, {"oja + first_order", oja_first_order}};
  for (const Config& c : configs) {
    SCOPED_TRACE(c.name);
    StreamRun<T> run(invariants_spec(), c.p);
    double max_orth = 0, max_sym = 0, min_eig = INFINITY, min_s2 = INFINITY;
    bool finite = true;
    for (int t = 0; t < 10000; ++t) {
      run.step();
      const Invariants inv = reference_invariants(run.state);
      max_orth = std::max(max_orth, inv.orthonormality_error);
      max_sym = std::max(max_sym, inv.symmetry_error);
      min_eig = std::min(min_eig, inv.s_min_eig);
      min_s2 = std::min(min_s2, inv.s2);
      finite = finite && inv.all_finite;
    }
    std::printf("[%s, %s] max ||U^T U - I||_F = %.3g, max asym = %.3g, min eig(S) = %.3g\n",
                sizeof(T) == 8 ? "double" : "float", c.name, max_orth, max_sym, min_eig);
    EXPECT_EQ(run.state.steps, 10000);
    EXPECT_EQ(run.state.reorthonormalizations, 0);
    EXPECT_TRUE(finite);
    EXPECT_LT(max_orth, Tol<T>::orthonormality_long);
    EXPECT_EQ(max_sym, 0.0) << "S is symmetrized every step";
    EXPECT_GT(min_eig, 0.0);
    EXPECT_GT(min_s2, 0.0);
  }
}

// The update is equivariant under U -> U R, S -> R^T S R: fed the same
// samples, the rotated start stays the same modelled covariance.
TYPED_TEST(ReferenceInvariants, RotationEquivariance) {
  using T = TypeParam;
  MosaicParams oja;
  oja.subspace_direction = SubspaceDirection::oja;
  MosaicParams fast;
  fast.eta_S = 0.1;
  fast.eta_U = 0.05;
  fast.gamma = 0.0;
  fast.covariance_update = CovarianceUpdate::first_order;
  const MosaicParams configs[] = {MosaicParams{}, oja, fast};
  int k = 0;
  for (const MosaicParams& p : configs) {
    SCOPED_TRACE("config " + std::to_string(k));
    TestRng rng(300 + k++);
    StreamRun<T> a(invariants_spec(), p);
    ReferenceState<T> b = a.state;
    const int d = b.d, r = b.r;
    const Mat R = random_orthonormal(r, r, rng);
    const Mat Ua = to_double(a.state.U), Sa = to_double(a.state.S);
    b.U = cast<T>(matmul(Ua, R, d, r, r));
    b.S = cast<T>(matmul(matmul(transpose(R, r, r), Sa, r, r, r), R, r, r, r));
    const StateDistance d0 = reference_distance(a.state, b);
    ASSERT_LT(d0.covariance, 10 * Tol<T>::reorth_covariance * s_norm(a.state));
    ASSERT_GT(frob_diff(to_double(b.U), Ua), 0.1) << "R should be far from the identity";
    for (int t = 0; t < 400; ++t) {
      const T* x = a.draw();
      reference_step(a.state, x, p);
      reference_step(b, x, p);
    }
    const StateDistance dist = reference_distance(a.state, b);
    std::printf("[%s] equivariance: mu %.3g s2 %.3g projector %.3g covariance %.3g (|S| %.3g)\n",
                sizeof(T) == 8 ? "double" : "float", dist.mu, dist.s2 / double(a.state.s2), dist.projector,
                dist.covariance, s_norm(a.state));
    EXPECT_EQ(dist.mu, 0.0) << "the mean recurrence does not involve the frame";
    EXPECT_LT(dist.s2, Tol<T>::equivariance * double(a.state.s2));
    EXPECT_LT(std::fabs(dist.projector), Tol<T>::equivariance);
    EXPECT_LT(dist.covariance, Tol<T>::equivariance * s_norm(a.state));
    // The frames themselves do differ (by R): the comparison is basis-free.
    EXPECT_GT(frob_diff(to_double(a.state.U), to_double(b.U)), 0.1);
  }
}

// An outlier with a huge Mahalanobis form is clamped to the trust radius,
// counted, and leaves S finite and SPD; the run then carries on.
//
// Measured side effect, not a tolerance to loosen: an outlier (nearly) inside
// the retained subspace costs orthonormality. Its residual e = y - U z is a
// small difference of large vectors, so U^T e ~ eps |y| instead of 0, and the
// rotation (sin(theta) ~ eta_U rho |g|) injects ~ eta_U |g| eps |y| of it into
// U^T U - I. For the 1e3-sigma outlier below that is ~2e-12 (double) and
// ~6e-4 (float) in one step; the bounds are those values with a ~8x margin.
// Re-orthonormalization (reorthonormalize_every) restores it.
template <class T>
struct OutlierTol;
template <>
struct OutlierTol<double> {
  static constexpr double in_subspace_orth = 2e-11;
  static constexpr double generic_orth = 1e-14;
};
template <>
struct OutlierTol<float> {
  static constexpr double in_subspace_orth = 5e-3;
  static constexpr double generic_orth = 5e-6;
};

TYPED_TEST(ReferenceInvariants, OutlierIsClampedAndStateStaysSPD) {
  using T = TypeParam;
  const MosaicParams defaults;
  for (const auto cov : {CovarianceUpdate::exact, CovarianceUpdate::first_order}) {
    SCOPED_TRACE(to_string(cov));
    MosaicParams p;
    p.covariance_update = cov;
    StreamRun<T> run(invariants_spec(), p);
    for (int t = 0; t < 200; ++t) run.step();
    const ReferenceState<T> base = run.state;
    const int d = base.d;
    ASSERT_LT(reference_invariants(base).orthonormality_error, 1e-5);

    // (a) in the retained subspace: x = mu + 1e3 U_0, q ~ 1e6 / S_00.
    {
      ReferenceState<T> st = base;
      std::vector<T> x(d);
      for (int i = 0; i < d; ++i) x[i] = st.mu[i] + T(1e3) * st.u(i, 0);
      const StepInfo info = reference_step(st, x.data(), p);
      EXPECT_TRUE(info.clamped);
      EXPECT_GT(info.q, 1e5);
      EXPECT_EQ(st.clamped_steps, base.clamped_steps + 1);
      EXPECT_NEAR(info.eta, defaults.eta_S * defaults.max_step / info.ell, 1e-5 * info.eta);
      const Invariants inv = reference_invariants(st);
      std::printf("[%s, %s] in-subspace 1e3 outlier: q %.3g, ||U^T U - I|| %.3g, eig(S) in [%.3g, %.3g]\n",
                  sizeof(T) == 8 ? "double" : "float", to_string(cov), info.q, inv.orthonormality_error, inv.s_min_eig,
                  inv.s_max_eig);
      EXPECT_TRUE(inv.all_finite);
      EXPECT_GT(inv.s_min_eig, 0.0);
      // The clamp bounds the affine-invariant step: S grows at most by e^max_step.
      EXPECT_LT(inv.s_max_eig, std::exp(defaults.max_step) * reference_invariants(base).s_max_eig * 1.01);
      EXPECT_LT(inv.orthonormality_error, OutlierTol<T>::in_subspace_orth);
      reference_reorthonormalize(st);
      EXPECT_LT(reference_invariants(st).orthonormality_error, 1e-5);
    }

    // (b) a generic outlier of norm 1e4 (both in and out of the subspace).
    ReferenceState<T>& st = run.state;
    TestRng rng(17);
    const std::vector<double> dir = rng.normals(std::size_t(d));
    const double n = frob(dir);
    std::vector<T> x(d);
    for (int i = 0; i < d; ++i) x[i] = st.mu[i] + T(1e4 * dir[i] / n);
    const StepInfo info = reference_step(st, x.data(), p);
    EXPECT_TRUE(info.clamped);
    EXPECT_EQ(st.clamped_steps, base.clamped_steps + 1);
    Invariants inv = reference_invariants(st);
    EXPECT_TRUE(inv.all_finite);
    EXPECT_GT(inv.s_min_eig, 0.0);
    EXPECT_LT(inv.orthonormality_error, OutlierTol<T>::generic_orth);

    // The run continues on ordinary samples without breaking down.
    for (int t = 0; t < 300; ++t) ASSERT_NO_THROW(run.step());
    inv = reference_invariants(st);
    EXPECT_TRUE(inv.all_finite);
    EXPECT_GT(inv.s_min_eig, 0.0);
    EXPECT_EQ(st.steps, 200 + 1 + 300);
  }
}

// An ordinary sample is not clamped at the defaults.
TYPED_TEST(ReferenceInvariants, OrdinarySamplesAreNotClamped) {
  using T = TypeParam;
  StreamRun<T> run(invariants_spec(), MosaicParams{});
  for (int t = 0; t < 500; ++t) {
    const StepInfo info = run.step();
    EXPECT_FALSE(info.clamped);
    EXPECT_LE(info.ell, 1.0);
  }
  EXPECT_EQ(run.state.clamped_steps, 0);
}

// Cholesky-QR re-orthonormalization: after a small non-orthogonal
// perturbation of U, it restores U^T U = I and leaves U S U^T, mu, s2 as they
// were.
TYPED_TEST(ReferenceInvariants, ReorthonormalizeKeepsModelledCovariance) {
  using T = TypeParam;
  StreamRun<T> run(invariants_spec(), MosaicParams{});
  for (int t = 0; t < 100; ++t) run.step();
  TestRng rng(23);
  for (double eps : {1e-6, 1e-3, 3e-2}) {
    SCOPED_TRACE("perturbation " + std::to_string(eps));
    ReferenceState<T> st = run.state;
    for (auto& u : st.U) u += T(eps * rng.normal());
    const double orth_before = reference_invariants(st).orthonormality_error;
    ASSERT_GT(orth_before, eps);
    const ReferenceState<T> before = st;
    reference_reorthonormalize(st);
    const StateDistance dist = reference_distance(before, st);
    const Invariants inv = reference_invariants(st);
    std::printf("[%s] reorth eps=%g: orth %.3g -> %.3g, covariance change %.3g (|S| %.3g)\n",
                sizeof(T) == 8 ? "double" : "float", eps, orth_before, inv.orthonormality_error, dist.covariance,
                s_norm(st));
    EXPECT_LT(inv.orthonormality_error, Tol<T>::reorth_orthonormality);
    EXPECT_LT(dist.covariance, Tol<T>::reorth_covariance * s_norm(st));
    EXPECT_EQ(dist.mu, 0.0);
    EXPECT_EQ(dist.s2, 0.0);
    EXPECT_EQ(inv.symmetry_error, 0.0);
    EXPECT_GT(inv.s_min_eig, 0.0);
    EXPECT_EQ(st.reorthonormalizations, before.reorthonormalizations + 1);
    // U spans the same subspace as the perturbed one did.
    const Mat Ub = to_double(before.U), Ua = to_double(st.U);
    // Residual of projecting the old columns onto the new orthonormal span.
    const int d = st.d, r = st.r;
    const Mat C = matmul(transpose(Ua, d, r), Ub, r, d, r);
    const Mat P = matmul(Ua, C, d, r, r);
    EXPECT_LT(frob_diff(P, Ub), 10 * Tol<T>::reorth_covariance * frob(Ub));
  }
}

// reorthonormalize_every = K runs the same Cholesky-QR every K steps.
TYPED_TEST(ReferenceInvariants, PeriodicReorthonormalizationMatchesManual) {
  using T = TypeParam;
  MosaicParams periodic;
  periodic.reorthonormalize_every = 7;
  StreamRun<T> a(invariants_spec(), periodic);
  ReferenceState<T> b = a.state;
  const MosaicParams plain;
  for (int t = 1; t <= 100; ++t) {
    const T* x = a.draw();
    reference_step(a.state, x, periodic);
    reference_step(b, x, plain);
    if (t % 7 == 0) reference_reorthonormalize(b);
  }
  EXPECT_EQ(a.state.reorthonormalizations, 14);
  EXPECT_EQ(b.reorthonormalizations, 14);
  EXPECT_EQ(a.state.U, b.U);
  EXPECT_EQ(a.state.S, b.S);
  EXPECT_EQ(a.state.s2, b.s2);
}

// reference_distance resolves small differences: a perturbation delta E of S
// in the same frame reads as delta ||E||_F, and a small rotation of the frame
// matches the dense d x d computation, far below sqrt(eps).
TYPED_TEST(ReferenceInvariants, DistanceResolvesSmallDifferences) {
  using T = TypeParam;
  const double delta = sizeof(T) == 8 ? 1e-11 : 1e-4;
  TestRng rng(91);
  const int d = 20, r = 3;
  const ReferenceState<T> a = random_state<T>(d, r, rng);
  ReferenceState<T> b = a;
  const Mat E = random_spd(r, rng, 0.5, 2.0);
  for (int k = 0; k < r * r; ++k) b.S[k] = T(double(a.S[k]) + delta * E[k]);
  Mat diff(std::size_t(r) * r);  // what b.S - a.S actually is after rounding to T
  for (int k = 0; k < r * r; ++k) diff[k] = double(b.S[k]) - double(a.S[k]);
  StateDistance dist = reference_distance(a, b);
  EXPECT_NEAR(dist.covariance, frob(diff), 1e-3 * frob(diff));
  EXPECT_NEAR(frob(diff), delta * frob(E), 0.01 * delta * frob(E));
  EXPECT_LT(std::fabs(dist.projector), 10 * std::numeric_limits<T>::epsilon());
  // Identical states are at distance zero (no NaN from a rank-deficient [U U]).
  dist = reference_distance(a, a);
  EXPECT_LT(dist.covariance, 10 * std::numeric_limits<double>::epsilon() * s_norm(a));
  // A small rotation of the frame, against the dense difference.
  ReferenceState<T> c = a;
  const Mat Ua = to_double(a.U);
  Mat Uc = Ua;
  for (auto& v : Uc) v += delta * rng.normal();
  host::orthonormalize_columns(Uc, d, r);
  c.U = cast<T>(Uc);
  const Mat Ud = to_double(c.U), Sa = to_double(a.S);
  const Mat A = matmul(matmul(Ua, Sa, d, r, r), transpose(Ua, d, r), d, r, d);
  const Mat C = matmul(matmul(Ud, Sa, d, r, r), transpose(Ud, d, r), d, r, d);
  dist = reference_distance(a, c);
  EXPECT_GT(frob_diff(A, C), 0.1 * delta);
  EXPECT_NEAR(dist.covariance, frob_diff(A, C), 1e-3 * frob_diff(A, C));
}

// host::orthonormalize_columns: orthonormal to working precision and
// spanning the input's leading columns, for well-conditioned Gaussian
// columns (one projection suffices) and for nearly dependent ones (column
// j = column j-1 + 1e-9 noise: the second projection is needed), at sizes
// that are and are not multiples of its four-column groups.
TEST(HostLinalg, OrthonormalizeColumnsIsOrthonormalAndKeepsTheSpan) {
  for (const bool nearly_dependent : {false, true})
    for (const int k : {1, 3, 4, 9}) {
      const int d = 40;
      TestRng rng(17 + k);
      std::vector<double> Q = rng.normals(std::size_t(d) * k);
      if (nearly_dependent)
        for (int a = 0; a < d; ++a)
          for (int j = 1; j < k; ++j) Q[a * k + j] = Q[a * k + j - 1] + 1e-9 * Q[a * k + j];
      const std::vector<double> Q0 = Q;
      host::orthonormalize_columns(Q, d, k);
      double orth = 0;
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) {
          double g = 0;
          for (int a = 0; a < d; ++a) g += Q[a * k + i] * Q[a * k + j];
          orth += (g - (i == j ? 1.0 : 0.0)) * (g - (i == j ? 1.0 : 0.0));
        }
      EXPECT_LE(std::sqrt(orth), 1e-14) << "k=" << k << (nearly_dependent ? " nearly dependent" : "");
      // Column 0 is the input's, normalized (same direction).
      double n0 = 0, dot = 0;
      for (int a = 0; a < d; ++a) {
        n0 += Q0[a * k] * Q0[a * k];
        dot += Q0[a * k] * Q[a * k];
      }
      EXPECT_NEAR(dot / std::sqrt(n0), 1.0, 1e-14);
    }
}

}  // namespace
