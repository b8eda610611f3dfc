// Section 4's prequential accuracy (algorithm/prequential.hpp) in the host
// reference against a dense evaluation: the Gaussian log-density of the
// centred sample under the d x d (or observed n x n) covariance
// Sigma = U S U^T + s2 (I - U U^T), by a dense Cholesky, and the residual
// fraction by the dense projector, for complete and masked samples; the
// Wilson-Hilferty quantile against tabulated chi-square quantiles.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/prequential.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/reference_masked.hpp"
#include "test_reference_helpers.hpp"

namespace {

using namespace mosaic;
using namespace mosaic::test;

struct Dense {
  double nll = 0, m2 = 0, residual_fraction = 0;
};

// The sample's NLL per coordinate, Mahalanobis form and residual fraction
// on the coordinates `rows`, from the state before the step, densely. With
// a noise profile psi (8.2) the state's U, S, s2 are in whitened units:
// Sigma = Psi^1/2 (U S U^T + s2 (I - U U^T)) Psi^1/2 in data units, and the
// residual fraction is that of the whitened sample.
Dense dense_prequential(const ReferenceState<double>& st, const std::vector<double>& x, const std::vector<int>& rows,
                        const std::vector<double>& psi = {}) {
  const int n = int(rows.size()), r = st.r;
  const auto root = [&](int i) { return psi.empty() ? 1.0 : std::sqrt(psi[std::size_t(i)]); };
  std::vector<double> Sigma(std::size_t(n) * n), y(n);
  for (int a = 0; a < n; ++a) {
    y[a] = x[rows[a]] - st.mu[rows[a]];
    for (int c = 0; c < n; ++c) {
      double v = a == c ? st.s2 : 0.0;
      for (int j = 0; j < r; ++j)
        for (int k = 0; k < r; ++k)
          v += st.u(rows[a], j) * (st.S[j * r + k] - (j == k ? st.s2 : 0.0)) * st.u(rows[c], k);
      Sigma[std::size_t(a) * n + c] = root(rows[a]) * v * root(rows[c]);
    }
  }
  std::vector<double> L;
  EXPECT_TRUE(host::cholesky(Sigma, n, L));
  const std::vector<double> s = host::cholesky_solve(L, n, y);
  Dense out;
  double logdet = 0, yy = 0;
  for (int a = 0; a < n; ++a) {
    logdet += 2.0 * std::log(L[std::size_t(a) * n + a]);
    out.m2 += y[a] * s[a];
    yy += y[a] * y[a];
  }
  out.nll = 0.5 * (n * std::log(2.0 * M_PI) + logdet + out.m2) / n;
  for (int a = 0; a < n; ++a) y[a] /= root(rows[a]);  // the residual fraction's (whitened) sample
  yy = 0;
  for (int a = 0; a < n; ++a) yy += y[a] * y[a];
  // Residual of the least-squares fit of y on U's rows (U_O^T U_O z = U_O^T y).
  std::vector<double> C(std::size_t(r) * r, 0.0), b(r, 0.0);
  for (int a = 0; a < n; ++a)
    for (int j = 0; j < r; ++j) {
      b[j] += st.u(rows[a], j) * y[a];
      for (int k = 0; k < r; ++k) C[j * r + k] += st.u(rows[a], j) * st.u(rows[a], k);
    }
  std::vector<double> LC;
  EXPECT_TRUE(host::cholesky(C, r, LC));
  const std::vector<double> z = host::cholesky_solve(LC, r, b);
  double rho2 = 0;
  for (int a = 0; a < n; ++a) {
    double e = y[a];
    for (int j = 0; j < r; ++j) e -= st.u(rows[a], j) * z[j];
    rho2 += e * e;
  }
  out.residual_fraction = rho2 / yy;
  return out;
}

TEST(Prequential, CompleteSampleEqualsTheDenseGaussian) {
  TestRng rng(7);
  const int d = 12, r = 3;
  MosaicParams p;
  for (const double scale : {0.5, 3.0, 30.0}) {  // ordinary samples, then surprising ones
    ReferenceState<double> st = random_state<double>(d, r, rng, 0.2);
    std::vector<double> x = rng.normals(std::size_t(d));
    for (double& v : x) v *= scale;
    std::vector<int> rows(d);
    for (int i = 0; i < d; ++i) rows[i] = i;
    const Dense dense = dense_prequential(st, x, rows);
    reference_step(st, x.data(), p);
    const auto& s = st.prequential;
    EXPECT_EQ(s[preq_samples], 1.0);
    EXPECT_EQ(s[preq_zero_norm], 0.0);
    EXPECT_NEAR(s[preq_nll], dense.nll, 1e-12 * std::fabs(dense.nll) + 1e-13) << scale;
    EXPECT_NEAR(s[preq_residual_fraction], dense.residual_fraction, 1e-12) << scale;
    EXPECT_EQ(s[preq_surprises], dense.m2 > chi2_quantile_0999(d) ? 1.0 : 0.0) << scale;
    if (scale > 10) EXPECT_EQ(s[preq_surprises], 1.0);
  }
}

// 7.3's likelihood on the observed rows: log det Sigma_OO = log det C +
// log det(S + Delta) + (n - r) log s2, y_O^T Sigma_OO^-1 y_O = z_ls^T
// (S + Delta)^-1 z_ls + rho^2 / s2, against the dense n x n Gaussian, with
// few and with many (more than r) missing rows, in every missing mode: the
// state before the step is scored whatever the step does with the sample.
TEST(Prequential, MaskedSampleEqualsTheDenseGaussianOnTheObservedRows) {
  for (const MissingMode mode :
       {MissingMode::posterior, MissingMode::project, MissingMode::zero_fill, MissingMode::drop})
    for (const int missing : {2, 6}) {
      TestRng rng(11 + missing);
      const int d = 14, r = 3;
      MosaicParams p;
      p.missing = mode;
      const std::string what = std::string(to_string(mode)) + ", " + std::to_string(missing) + " missing";
      MaskedReferenceState<double> st(random_state<double>(d, r, rng, 0.3), p);
      std::vector<double> x = rng.normals(std::size_t(d));
      std::vector<int> rows;
      for (int i = 0; i < d; ++i) {
        if (i * 5 % d < missing) x[i] = std::numeric_limits<double>::quiet_NaN();
        else rows.push_back(i);
      }
      ASSERT_EQ(int(rows.size()), d - missing);
      const Dense dense = dense_prequential(st, x, rows);
      reference_masked_step(st, x.data(), p);
      const auto& s = st.prequential;
      EXPECT_EQ(s[preq_samples], 1.0) << what;
      EXPECT_NEAR(s[preq_nll], dense.nll, 1e-12 * std::fabs(dense.nll) + 1e-13) << what;
      EXPECT_NEAR(s[preq_residual_fraction], dense.residual_fraction, 1e-12) << what;
      EXPECT_EQ(s[preq_surprises], dense.m2 > chi2_quantile_0999(double(rows.size())) ? 1.0 : 0.0) << what;
    }
}

// noise: diagonal (8.2): the step sees the whitened sample; its likelihood
// is the data-unit Gaussian (log det Sigma gains sum log psi over the rows),
// complete and with missing rows.
TEST(Prequential, DiagonalNoiseSampleEqualsTheDenseGaussianInDataUnits) {
  TestRng rng(13);
  const int d = 14, r = 3;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.noise = NoiseModel::diagonal;
  for (const int missing : {0, 4}) {
    MaskedReferenceState<double> st(random_state<double>(d, r, rng, 0.3), p);
    ASSERT_TRUE(st.diagonal_noise());
    for (int i = 0; i < d; ++i) st.psi[std::size_t(i)] = std::exp(1.5 * std::sin(1.7 * i));  // 0.22 to 4.5
    std::vector<double> x = rng.normals(std::size_t(d));
    std::vector<int> rows;
    for (int i = 0; i < d; ++i) {
      x[i] *= std::sqrt(st.psi[std::size_t(i)]);
      if (i * 5 % d < missing) x[i] = std::numeric_limits<double>::quiet_NaN();
      else rows.push_back(i);
    }
    const Dense dense = dense_prequential(st, x, rows, st.psi);
    const Dense isotropic = dense_prequential(st, x, rows);
    reference_masked_step(st, x.data(), p);
    const auto& s = st.prequential;
    EXPECT_EQ(s[preq_samples], 1.0) << missing;
    EXPECT_NEAR(s[preq_nll], dense.nll, 1e-12 * std::fabs(dense.nll) + 1e-13) << missing;
    EXPECT_GT(std::fabs(dense.nll - isotropic.nll), 1e-3) << missing;  // the profile matters here
    EXPECT_NEAR(s[preq_residual_fraction], dense.residual_fraction, 1e-12) << missing;
    EXPECT_EQ(s[preq_surprises], dense.m2 > chi2_quantile_0999(double(rows.size())) ? 1.0 : 0.0) << missing;
  }
}

// A sample equal to the mean: counted apart (no residual fraction), its NLL
// still counted; and in float the sums follow the double ones.
TEST(Prequential, ZeroNormSampleAndFloat) {
  TestRng rng(3);
  const int d = 10, r = 2;
  MosaicParams p;
  ReferenceState<double> st = random_state<double>(d, r, rng, 0.2);
  ReferenceState<float> sf(d, r);
  sf.mu.assign(st.mu.begin(), st.mu.end());
  sf.U.assign(st.U.begin(), st.U.end());
  sf.S.assign(st.S.begin(), st.S.end());
  sf.s2 = float(st.s2);
  ReferenceState<double> at_mean = st;
  const std::vector<double> x = st.mu;
  reference_step(at_mean, x.data(), p);
  EXPECT_EQ(at_mean.prequential[preq_samples], 1.0);
  EXPECT_EQ(at_mean.prequential[preq_zero_norm], 1.0);
  EXPECT_EQ(at_mean.prequential[preq_residual_fraction], 0.0);
  EXPECT_TRUE(std::isfinite(at_mean.prequential[preq_nll]));
  for (int t = 0; t < 50; ++t) {
    std::vector<double> xd = rng.normals(std::size_t(d));
    const std::vector<float> xf(xd.begin(), xd.end());
    xd.assign(xf.begin(), xf.end());
    reference_step(st, xd.data(), p);
    reference_step(sf, xf.data(), p);
  }
  EXPECT_EQ(sf.prequential[preq_samples], 50.0);
  EXPECT_NEAR(sf.prequential[preq_residual_fraction], st.prequential[preq_residual_fraction],
              1e-4 * st.prequential[preq_residual_fraction]);
  EXPECT_NEAR(sf.prequential[preq_nll], st.prequential[preq_nll], 1e-4 * std::fabs(st.prequential[preq_nll]) + 1e-4);
}

// Wilson-Hilferty against the chi-square 0.999 quantiles (tables: 13.816 at
// k = 2, 29.588 at 10, 59.703 at 30, 149.449 at 100, 1,143.917 at 1,000):
// above each, by the relative errors prequential.hpp states.
TEST(Prequential, ChiSquareQuantile) {
  const double table[][3] = {
      {2, 13.816, 0.025}, {10, 29.588, 0.007}, {30, 59.703, 0.002}, {100, 149.449, 5e-4}, {1000, 1143.917, 2e-5}};
  for (const auto& row : table) {
    const double q = chi2_quantile_0999(row[0]);
    EXPECT_GT(q, row[1]) << row[0];
    EXPECT_LT((q - row[1]) / row[1], row[2]) << row[0];
  }
}

}  // namespace
