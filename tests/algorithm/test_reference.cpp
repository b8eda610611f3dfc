// One MOSAIC step of the host reference against an independent computation of
// ALGORITHM.md section 2: the affine-invariant exponential through
// eigendecompositions, the trust-radius clamp, the first-order ablation, and
// the frame rotation / transport through d x d products of the modelled
// covariance. All in double, to 1e-12 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_reference_helpers.hpp"

namespace {
using namespace mosaic;
using namespace mosaic::test;

// Everything the step should produce, computed without the closed forms of
// reference.hpp: matrix functions come from host::symmetric_eigen, the
// transported S from U_new^T Sigma U_new with Sigma formed densely (d x d).
struct Expected {
  Mat z, e;
  double rho = 0, q = 0, ell = 0, eta = 0, theta = 0;
  bool clamped = false;
  Mat S_prime;  // r x r, old frame
  Mat U_new;    // d x r
  Mat S_new;    // r x r, new frame
  double s2_new = 0;
  Mat mu_new;
};

Expected expected_step(const ReferenceState<double>& st, const std::vector<double>& x, const MosaicParams& p) {
  const int d = st.d, r = st.r;
  Expected ex;
  Mat y(d);
  for (int i = 0; i < d; ++i) y[i] = x[i] - st.mu[i];
  ex.z = matmul(transpose(st.U, d, r), y, r, d, 1);
  const Mat Uz = matmul(st.U, ex.z, d, r, 1);
  ex.e.resize(d);
  for (int i = 0; i < d; ++i) ex.e[i] = y[i] - Uz[i];
  ex.rho = frob(ex.e);

  const Mat& S = st.S;
  const Mat Sh = sym_function(S, r, [](double l) { return std::sqrt(l); });
  const Mat Sih = sym_function(S, r, [](double l) { return 1.0 / std::sqrt(l); });
  const Mat zzT = matmul(ex.z, ex.z, r, 1, r);
  // The tangent direction zz^T - S, whitened: S^{-1/2} (zz^T - S) S^{-1/2}.
  Mat V(std::size_t(r) * r);
  for (std::size_t k = 0; k < V.size(); ++k) V[k] = zzT[k] - S[k];
  Mat W = matmul(matmul(Sih, V, r, r, r), Sih, r, r, r);
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < a; ++b) W[a * r + b] = W[b * r + a] = (W[a * r + b] + W[b * r + a]) / 2;
  // Affine-invariant length = Frobenius norm of the whitened step; q from
  // the whitened z.
  const Mat w = matmul(Sih, ex.z, r, r, 1);
  ex.q = frob(w) * frob(w);
  ex.ell = p.eta_S * frob(W);
  ex.eta = p.eta_S;
  if (ex.ell > p.max_step) {
    ex.eta = p.eta_S * p.max_step / ex.ell;
    ex.clamped = true;
  }
  if (p.covariance_update == CovarianceUpdate::exact) {
    // Exp_S(eta V) = S^{1/2} expm(eta W) S^{1/2}.
    const double eta = ex.eta;
    const Mat E = sym_function(W, r, [eta](double l) { return std::exp(eta * l); });
    ex.S_prime = matmul(matmul(Sh, E, r, r, r), Sh, r, r, r);
  } else {
    ex.S_prime.resize(std::size_t(r) * r);
    for (std::size_t k = 0; k < S.size(); ++k) ex.S_prime[k] = (1 - ex.eta) * S[k] + ex.eta * zzT[k];
  }

  // Direction g.
  Mat g;
  if (p.subspace_direction == SubspaceDirection::precision) {
    Mat R = S;
    for (int a = 0; a < r; ++a) R[a * r + a] += p.gamma * st.s2;
    g = matmul(sym_function(R, r, [](double l) { return 1.0 / l; }), ex.z, r, r, 1);
  } else {
    double tr = 0;
    for (int a = 0; a < r; ++a) tr += S[a * r + a];
    g = ex.z;
    for (auto& v : g) v /= tr / r;
  }
  const double gn = frob(g);
  // Grassmann geodesic of the rank-one direction e g^T = (rho |g|) eh gh^T:
  // U(theta) = U (I - gh gh^T) + (U gh cos(theta) + eh sin(theta)) gh^T.
  ex.U_new = st.U;
  if (ex.rho * gn > 0) {
    ex.theta = std::atan(p.eta_U * ex.rho * gn);
    Mat gh = g;
    for (auto& v : gh) v /= gn;
    const Mat Ugh = matmul(st.U, gh, d, r, 1);
    Mat P = identity(r);
    const Mat ggT = matmul(gh, gh, r, 1, r);
    for (std::size_t k = 0; k < P.size(); ++k) P[k] -= ggT[k];
    const Mat UP = matmul(st.U, P, d, r, r);
    Mat col(d);
    for (int i = 0; i < d; ++i) col[i] = Ugh[i] * std::cos(ex.theta) + ex.e[i] / ex.rho * std::sin(ex.theta);
    const Mat colg = matmul(col, gh, d, 1, r);
    for (std::size_t k = 0; k < UP.size(); ++k) ex.U_new[k] = UP[k] + colg[k];
  }
  // Modelled covariance with S' in the old frame and the old s2, restricted to
  // the new frame.
  Mat Sigma = matmul(matmul(st.U, ex.S_prime, d, r, r), transpose(st.U, d, r), d, r, d);
  const Mat UUT = matmul(st.U, transpose(st.U, d, r), d, r, d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) Sigma[i * d + j] += st.s2 * ((i == j ? 1.0 : 0.0) - UUT[i * d + j]);
  ex.S_new = matmul(matmul(transpose(ex.U_new, d, r), Sigma, r, d, d), ex.U_new, r, d, r);
  ex.s2_new = (1 - p.eta_s) * st.s2 + p.eta_s * ex.rho * ex.rho / (d - r);
  ex.mu_new.resize(d);
  for (int i = 0; i < d; ++i) ex.mu_new[i] = st.mu[i] + p.eta_mu * (x[i] - st.mu[i]);
  return ex;
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

// Section 2 step 4: with a sample in the span of U (e = 0, so no rotation and
// S_new = S'), the exact update is the affine-invariant exponential
// Exp_S(eta (zz^T - S)) computed by eigendecompositions, for r = 2..5, over
// unclamped and clamped steps.
TEST(ReferenceCovarianceUpdate, ExactEqualsAffineInvariantExponential) {
  struct Case {
    double eta_S, max_step, z_scale;
    bool expect_clamped;
  };
  const Case cases[] = {
      {0.01, 1.0, 1.0, false}, {0.2, 100.0, 1.0, false}, {0.7, 100.0, 1.0, false},
      {0.1, 1.0, 40.0, true},  {0.5, 0.05, 2.0, true},   {0.05, 1.0, 0.0, false},  // z = 0: q = 0
  };
  int trial = 0;
  for (int r = 2; r <= 5; ++r)
    for (const Case& c : cases)
      for (int rep = 0; rep < 3; ++rep, ++trial) {
        SCOPED_TRACE("r=" + std::to_string(r) + " eta_S=" + std::to_string(c.eta_S) +
                     " max_step=" + std::to_string(c.max_step) + " z_scale=" + std::to_string(c.z_scale) +
                     " rep=" + std::to_string(rep));
        TestRng rng(1000 + trial);
        const int d = r + 4;
        ReferenceState<double> st = random_state<double>(d, r, rng);
        // z ~ c.z_scale * N(0, S): x = mu + U z lies in the affine span of U.
        const Mat L = sym_function(st.S, r, [](double l) { return std::sqrt(l); });
        Mat z0 = matmul(L, rng.normals(std::size_t(r)), r, r, 1);
        for (auto& v : z0) v *= c.z_scale;
        const Mat Uz = matmul(st.U, z0, d, r, 1);
        std::vector<double> x(d);
        for (int i = 0; i < d; ++i) x[i] = st.mu[i] + Uz[i];

        MosaicParams p;
        p.eta_S = c.eta_S;
        p.max_step = c.max_step;
        const Expected ex = expected_step(st, x, p);
        ASSERT_EQ(ex.clamped, c.expect_clamped) << "test case does not exercise what it says";
        const ReferenceState<double> before = st;
        const StepInfo info = reference_step(st, x.data(), p);

        EXPECT_EQ(info.clamped, ex.clamped);
        EXPECT_EQ(st.clamped_steps, ex.clamped ? 1 : 0);
        EXPECT_LE(std::fabs(info.q - ex.q), 1e-12 * std::max(ex.q, 1.0));
        EXPECT_LE(rel(info.ell, ex.ell), 1e-12);
        EXPECT_LE(rel(info.eta, ex.eta), 1e-12);
        if (ex.clamped) EXPECT_NEAR(info.eta * info.ell / c.eta_S, c.max_step, 1e-12 * c.max_step);
        // The sample lies in span(U) up to rounding, so rho is rounding noise
        // and theta = atan(eta_U rho |g|) is too: its effect on S is
        // O(theta^2), far below the tolerance.
        EXPECT_LE(info.rho, 1e-14 * (1 + frob(x)));
        EXPECT_LE(info.theta, 1e-12);
        EXPECT_LE(frob_diff(st.U, before.U), 1e-12);
        EXPECT_LE(frob_diff(st.S, ex.S_prime), 1e-12 * frob(ex.S_prime));
      }
}

// Section 2 step 4, ablation `first_order`: S' = (1 - eta) S + eta zz^T with
// the same (possibly clamped) eta.
TEST(ReferenceCovarianceUpdate, FirstOrderIsLinearBlend) {
  int trial = 0;
  for (int r = 2; r <= 5; ++r)
    for (double z_scale : {0.3, 40.0})
      for (int rep = 0; rep < 3; ++rep, ++trial) {
        SCOPED_TRACE("r=" + std::to_string(r) + " z_scale=" + std::to_string(z_scale));
        TestRng rng(5000 + trial);
        const int d = r + 4;
        ReferenceState<double> st = random_state<double>(d, r, rng);
        Mat z = rng.normals(std::size_t(r));
        for (auto& v : z) v *= z_scale;
        const Mat Uz = matmul(st.U, z, d, r, 1);
        std::vector<double> x(d);
        for (int i = 0; i < d; ++i) x[i] = st.mu[i] + Uz[i];
        MosaicParams p;
        p.eta_S = 0.1;
        p.covariance_update = CovarianceUpdate::first_order;
        const Expected ex = expected_step(st, x, p);
        ASSERT_EQ(ex.clamped, z_scale > 10);
        // The blend, written out with the expected eta.
        Mat blend(std::size_t(r) * r);
        for (int a = 0; a < r; ++a)
          for (int b = 0; b < r; ++b) blend[a * r + b] = (1 - ex.eta) * st.S[a * r + b] + ex.eta * ex.z[a] * ex.z[b];
        const StepInfo info = reference_step(st, x.data(), p);
        EXPECT_EQ(info.clamped, ex.clamped);
        EXPECT_LE(rel(info.eta, ex.eta), 1e-12);
        EXPECT_LE(info.theta, 1e-12);
        EXPECT_LE(frob_diff(st.S, blend), 1e-12 * frob(blend));
      }
}

// The exact update is not the first-order one: a regression guard that the
// `covariance_update` option is honoured at all.
TEST(ReferenceCovarianceUpdate, ExactAndFirstOrderDiffer) {
  TestRng rng(77);
  const int d = 8, r = 3;
  const ReferenceState<double> st0 = random_state<double>(d, r, rng);
  Mat z = rng.normals(std::size_t(r));
  for (auto& v : z) v *= 3;
  const Mat Uz = matmul(st0.U, z, d, r, 1);
  std::vector<double> x(d);
  for (int i = 0; i < d; ++i) x[i] = st0.mu[i] + Uz[i];
  MosaicParams pe, pf;
  pe.eta_S = pf.eta_S = 0.3;
  pf.covariance_update = CovarianceUpdate::first_order;
  ReferenceState<double> a = st0, b = st0;
  reference_step(a, x.data(), pe);
  reference_step(b, x.data(), pf);
  EXPECT_GT(frob_diff(a.S, b.S), 1e-3 * frob(a.S));
}

// A full step with a residual (rotation and transport active) against the
// dense derivation: U_new on the Grassmann geodesic of e g^T, S_new = U_new^T
// Sigma U_new with Sigma = U S' U^T + s2 (I - U U^T), s2 and mu recurrences,
// for every combination of the ablations and several gamma.
TEST(ReferenceStep, FullStepMatchesDenseDerivation) {
  struct Variant {
    CovarianceUpdate cov;
    SubspaceDirection dir;
    double gamma;
  };
  const Variant variants[] = {
      {CovarianceUpdate::exact, SubspaceDirection::precision, 1.0},
      {CovarianceUpdate::exact, SubspaceDirection::precision, 0.0},
      {CovarianceUpdate::exact, SubspaceDirection::precision, 3.5},
      {CovarianceUpdate::exact, SubspaceDirection::oja, 1.0},
      {CovarianceUpdate::first_order, SubspaceDirection::precision, 1.0},
      {CovarianceUpdate::first_order, SubspaceDirection::oja, 1.0},
  };
  int trial = 0;
  for (const Variant& v : variants)
    for (double eta_U : {0.005, 0.3})
      for (double resid : {0.1, 3.0})
        for (int rep = 0; rep < 2; ++rep, ++trial) {
          SCOPED_TRACE(std::string(to_string(v.cov)) + "/" + to_string(v.dir) + " gamma=" + std::to_string(v.gamma) +
                       " eta_U=" + std::to_string(eta_U) + " resid=" + std::to_string(resid) +
                       " rep=" + std::to_string(rep));
          TestRng rng(9000 + trial);
          const int d = 12, r = 3 + rep;
          ReferenceState<double> st = random_state<double>(d, r, rng, 0.2);
          std::vector<double> x = rng.normals(std::size_t(d));
          for (int i = 0; i < d; ++i) x[i] = st.mu[i] + resid * x[i];
          MosaicParams p;
          p.eta_mu = 0.05;
          p.eta_S = 0.2;
          p.eta_U = eta_U;
          p.eta_s = 0.07;
          p.gamma = v.gamma;
          p.covariance_update = v.cov;
          p.subspace_direction = v.dir;
          const Expected ex = expected_step(st, x, p);
          const StepInfo info = reference_step(st, x.data(), p);

          EXPECT_LE(rel(info.rho, ex.rho), 1e-12);
          EXPECT_LE(rel(info.theta, ex.theta), 1e-12);
          EXPECT_GT(info.theta, 0.0);
          EXPECT_EQ(info.clamped, ex.clamped);
          EXPECT_LE(frob_diff(st.U, ex.U_new), 1e-12 * std::sqrt(double(r)));
          EXPECT_LE(frob_diff(st.S, ex.S_new), 1e-12 * frob(ex.S_new));
          EXPECT_LE(rel(st.s2, ex.s2_new), 1e-12);
          EXPECT_LE(frob_diff(st.mu, ex.mu_new), 1e-14 * frob(ex.mu_new));
          // One step keeps the frame orthonormal and S exactly symmetric.
          const Invariants inv = reference_invariants(st);
          EXPECT_LE(inv.orthonormality_error, 1e-14);
          EXPECT_EQ(inv.symmetry_error, 0.0);
          EXPECT_EQ(st.steps, 1);
        }
}

}  // namespace
