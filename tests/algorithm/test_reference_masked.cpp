// The host reference of ALGORITHM.md sections 7-8 (reference_masked.hpp)
// against the spec's stated properties: section 2 bit for bit on
// all-observed masks (7.2), U^T U = I to rounding over 10^4 masked steps,
// the posterior against brute-force conditioning of the d x d Gaussian
// (7.4), the unbiased noise update and Fisher's identity by Monte Carlo, the
// skipped-step and seen rules (7.5, 7.6), the masked init, the baselines, and
// the diagonal-noise model's re-whitening and recovery (section 8).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/algorithm/synthetic_missing.hpp"
#include "test_reference_helpers.hpp"

namespace {
using namespace mosaic;
using namespace mosaic::test;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A synthetic stream of section 5 with a missingness pattern, stepped by the
// masked reference from a masked init: data.
template <class T>
struct MaskedRun {
  SyntheticSpec spec;
  SyntheticTruth truth;
  MissingSpec missing;
  MosaicParams params;
  MaskedReferenceState<T> state;
  std::uint64_t next_step = 0;
  std::vector<T> x;

  MaskedRun(const SyntheticSpec& s, const MissingSpec& m, const MosaicParams& p)
      : spec(s), truth(make_synthetic_truth(s, 0)), missing(m), params(p), x(std::size_t(s.d)) {
    const int n0 = p.resolved_init_samples(s.r);
    std::vector<T> X(std::size_t(n0) * s.d);
    for (int t = 0; t < n0; ++t) sample(std::uint64_t(t), X.data() + std::size_t(t) * s.d);
    state = reference_init_data_masked(X.data(), n0, s.d, s.r, p);
    next_step = std::uint64_t(n0);
  }
  void sample(std::uint64_t t, T* out) const {
    synthetic_sample(spec, truth, 0, t, out);
    apply_synthetic_missing(missing, spec.seed, 0, t, out, spec.d);
  }
  MaskedStepInfo step() {
    sample(next_step++, x.data());
    return reference_masked_step(state, x.data(), params);
  }
  // Normalized projector distance of the data-coordinate subspace to the truth.
  double distance() const {
    const std::vector<double> B = reference_data_basis(state);
    return basis_projector_distance(B, truth.basis_at(spec, next_step - 1), spec.d, spec.r);
  }
};

SyntheticSpec drifting(int d, int r, double noise) {
  SyntheticSpec s;
  s.d = d;
  s.r = r;
  s.lambda_max = 10.0;
  s.lambda_min = 1.0;
  s.noise = noise;
  s.drift = 1e-4;
  s.seed = 11;
  return s;
}

template <class T>
double orthonormality(const ReferenceState<T>& st) {
  return reference_invariants(st).orthonormality_error;
}

template <class T>
void expect_states_equal(const ReferenceState<T>& a, const ReferenceState<T>& b, const std::string& what) {
  ASSERT_EQ(a.U, b.U) << what;
  ASSERT_EQ(a.S, b.S) << what;
  ASSERT_EQ(a.s2, b.s2) << what;
  ASSERT_EQ(a.mu, b.mu) << what;
}

// 7.2: with nothing missing the masked path is section 2 bit for bit, for the
// default and each ablation, through the general code (not a branch).
template <class T>
void all_observed_is_section_two(MosaicParams p, const std::string& what) {
  SyntheticSpec s = drifting(32, 4, 0.3);
  s.mean_scale = 3.0;
  StreamRun<T> plain(s, p);
  MaskedReferenceState<T> masked(ReferenceState<T>(plain.state), p);
  for (int t = 0; t < 2000; ++t) {
    const T* x = plain.draw();
    const StepInfo a = reference_step(plain.state, x, p);
    const MaskedStepInfo b = reference_masked_step(masked, x, p);
    ASSERT_FALSE(b.skipped);
    ASSERT_EQ(a.q, b.q) << what << " step " << t;
    ASSERT_EQ(a.theta, b.theta) << what << " step " << t;
    expect_states_equal<T>(plain.state, masked, what + " step " + std::to_string(t));
  }
  EXPECT_EQ(plain.state.clamped_steps, masked.clamped_steps);
  EXPECT_EQ(masked.skipped_steps, 0);
}

TEST(ReferenceMasked, AllObservedIsSectionTwoBitwise) {
  MosaicParams p;
  p.missing = MissingMode::posterior;
  all_observed_is_section_two<double>(p, "posterior");
  all_observed_is_section_two<float>(p, "posterior float");
  MosaicParams a = p;
  a.covariance_update = CovarianceUpdate::first_order;
  all_observed_is_section_two<double>(a, "first_order");
  a = p;
  a.subspace_direction = SubspaceDirection::oja;
  all_observed_is_section_two<double>(a, "oja");
  a = p;
  a.gamma = 0.0;
  all_observed_is_section_two<double>(a, "gamma 0");
  a = p;
  a.missing_rotation = MissingRotation::geodesic;
  all_observed_is_section_two<double>(a, "geodesic");
  a = p;
  a.missing = MissingMode::project;
  all_observed_is_section_two<double>(a, "project");
  a = p;
  a.missing = MissingMode::zero_fill;
  all_observed_is_section_two<double>(a, "zero_fill");
  a = p;
  a.max_step = 0.02;  // clamps taken
  all_observed_is_section_two<double>(a, "clamped");
  // Diagonal noise before its first re-whitening: psi = 1 whitens by 1.
  a = p;
  a.noise = NoiseModel::diagonal;
  a.rewhiten_every = 1 << 30;
  all_observed_is_section_two<double>(a, "diagonal, psi = 1");
}

// 7.10: ||U^T U - I|| stays at rounding level over 10^4 masked steps (MCAR
// and an outage together), in double, both rotations.
TEST(ReferenceMasked, OrthonormalOverTenThousandMaskedSteps) {
  for (const MissingRotation rot : {MissingRotation::observed, MissingRotation::geodesic}) {
    MosaicParams p;
    p.missing = MissingMode::posterior;
    p.missing_rotation = rot;
    MissingSpec m;
    m.mcar_rate = 0.2;
    m.outage_first = 10;
    m.outage_count = 12;
    m.outage_start = 3000;
    m.outage_steps = 4000;
    MaskedRun<double> run(drifting(64, 6, 0.3), m, p);
    double worst = 0;
    for (int t = 0; t < 10000; ++t) {
      run.step();
      if (t % 500 == 499) worst = std::max(worst, orthonormality(run.state));
    }
    EXPECT_LT(worst, 1e-12) << to_string(rot);
    EXPECT_GT(run.state.missing_entries, 0);
    const double fraction = double(run.state.missing_entries) / double(run.state.total_entries);
    EXPECT_NEAR(fraction, 0.2 + 0.8 * 12.0 / 64.0 * 0.4, 0.01);
  }
}

// The dense d x d Gaussian of the state, conditioned on y_O by plain
// linear algebra: E[U^T y | y_O] and Cov[U^T y | y_O].
struct Conditioned {
  Mat mean, cov;
};
Conditioned brute_force(const ReferenceState<double>& st, const Mat& y, const std::vector<int>& obs,
                        const std::vector<int>& mis) {
  const int d = st.d, r = st.r;
  const Mat US = matmul(st.U, st.S, d, r, r);
  const Mat UUt = matmul(st.U, transpose(st.U, d, r), d, r, d);
  const Mat USUt = matmul(US, transpose(st.U, d, r), d, r, d);
  Mat Sigma(std::size_t(d) * d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) Sigma[i * d + j] = USUt[i * d + j] + st.s2 * ((i == j ? 1.0 : 0.0) - UUt[i * d + j]);
  const int n = int(obs.size()), m = int(mis.size());
  auto block = [&](const std::vector<int>& a, const std::vector<int>& b) {
    Mat B(a.size() * b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < b.size(); ++j) B[i * b.size() + j] = Sigma[a[i] * d + b[j]];
    return B;
  };
  const Mat Soo = block(obs, obs), Smo = block(mis, obs), Smm = block(mis, mis);
  std::vector<double> L;
  EXPECT_TRUE(host::cholesky(Soo, n, L));
  Mat yo(n);
  for (int k = 0; k < n; ++k) yo[k] = y[obs[k]];
  const Mat a = host::cholesky_solve(L, n, yo);  // Soo^-1 y_O
  const Mat ym = matmul(Smo, a, m, n, 1);        // E[y_M | y_O]
  Mat cm(std::size_t(m) * m);                    // Cov[y_M | y_O]
  for (int j = 0; j < m; ++j) {
    Mat col(n);
    for (int k = 0; k < n; ++k) col[k] = Smo[j * n + k];
    const Mat sc = host::cholesky_solve(L, n, col);
    for (int i = 0; i < m; ++i) {
      double v = 0;
      for (int k = 0; k < n; ++k) v += Smo[i * n + k] * sc[k];
      cm[i * m + j] = Smm[i * m + j] - v;
    }
  }
  Conditioned c;
  c.mean.assign(std::size_t(r), 0.0);
  for (int j = 0; j < r; ++j) {
    for (int k = 0; k < n; ++k) c.mean[j] += st.u(obs[k], j) * y[obs[k]];
    for (int k = 0; k < m; ++k) c.mean[j] += st.u(mis[k], j) * ym[k];
  }
  Mat UM(std::size_t(m) * r);
  for (int k = 0; k < m; ++k)
    for (int j = 0; j < r; ++j) UM[k * r + j] = st.u(mis[k], j);
  c.cov = matmul(matmul(transpose(UM, m, r), cm, r, m, m), UM, r, m, r);
  return c;
}

// 7.4: z and P of part 2 are the posterior mean and covariance of the frame
// coordinate (both Gram branches: m <= n and m > n).
TEST(ReferenceMasked, PosteriorEqualsBruteForceConditioning) {
  TestRng rng(5);
  const int d = 14, r = 3;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  for (const int m : {1, 4, 7, 9}) {
    const ReferenceState<double> st = random_state<double>(d, r, rng, 0.4);
    const Mat y = rng.normals(std::size_t(d));
    detail::Mask mk;  // i -> 5 i mod 14 is a permutation: m rows missing, spread over the range
    for (int i = 0; i < d; ++i) (i * 5 % d < m ? mk.missing : mk.observed).push_back(i);
    const detail::ObservedFit<double> fit = detail::observed_fit(st, y, mk, p);
    ASSERT_TRUE(fit.ok) << "m = " << m;
    const detail::FramePosterior<double> post = detail::frame_posterior(st.S, st.s2, fit, r, p, 0);
    const Conditioned c = brute_force(st, y, mk.observed, mk.missing);
    EXPECT_LT(frob_diff(post.z, c.mean), 1e-12 * frob(c.mean)) << "m = " << m;
    EXPECT_LT(frob_diff(post.P, c.cov), 1e-12 * frob(c.cov)) << "m = " << m;
    // w = S^-1 z, and the residual is orthogonal to the whole frame (normal equations).
    EXPECT_LT(frob_diff(matmul(st.S, post.w, r, r, 1), post.z), 1e-12 * frob(post.z));
    EXPECT_LT(frob(matmul(transpose(st.U, d, r), fit.e, r, d, 1)), 1e-12 * frob(y));
  }
}

// One whole masked step against the spec's formulas evaluated densely and
// independently: the posterior by conditioning the d x d Gaussian, C^-1 by a
// dense solve, the new frame by 7.3 part 6, and the new S as
// U_new^T Sigma' U_new (7.3 part 7's defining identity) instead of the
// O(r^2) transport.
void masked_step_against_dense(const MosaicParams& p, const std::string& what) {
  TestRng rng(31);
  const int d = 14, r = 3;
  MaskedReferenceState<double> st(random_state<double>(d, r, rng, 0.3), p);
  Mat x = rng.normals(std::size_t(d));
  for (double& v : x) v *= 2.0;
  detail::Mask mk;
  for (int i = 0; i < d; ++i) (i * 5 % d < 5 ? mk.missing : mk.observed).push_back(i);
  for (const int i : mk.missing) x[i] = kNaN;
  const int n = int(mk.observed.size()), m = int(mk.missing.size());
  Mat y(d, 0.0);
  for (const int i : mk.observed) y[i] = x[i] - st.mu[i];
  const Conditioned post = brute_force(st, y, mk.observed, mk.missing);
  // C = U_O^T U_O, z_ls = C^-1 U_O^T y_O, e_O = y_O - U_O z_ls.
  Mat C(std::size_t(r) * r, 0.0), b(r, 0.0);
  for (const int i : mk.observed)
    for (int a = 0; a < r; ++a) {
      b[a] += st.u(i, a) * y[i];
      for (int c = 0; c < r; ++c) C[a * r + c] += st.u(i, a) * st.u(i, c);
    }
  std::vector<double> LC;
  ASSERT_TRUE(host::cholesky(C, r, LC));
  const Mat z_ls = host::cholesky_solve(LC, r, b);
  Mat e(d, 0.0);
  double rho2 = 0;
  for (const int i : mk.observed) {
    double uz = 0;
    for (int j = 0; j < r; ++j) uz += st.u(i, j) * z_ls[j];
    e[i] = y[i] - uz;
    rho2 += e[i] * e[i];
  }
  const double rho = std::sqrt(rho2);
  std::vector<double> LS;
  ASSERT_TRUE(host::cholesky(st.S, r, LS));
  const Mat& z = post.mean;
  const Mat w = host::cholesky_solve(LS, r, z);
  double q = 0;
  for (int j = 0; j < r; ++j) q += z[j] * w[j];
  double eta = p.eta_S;
  const double ell = p.eta_S * std::sqrt((q - 1) * (q - 1) + (r - 1));
  if (ell > p.max_step) eta = p.eta_S * p.max_step / ell;
  Mat Sp(std::size_t(r) * r);
  for (int a = 0; a < r; ++a)
    for (int c = 0; c < r; ++c)
      Sp[a * r + c] = p.covariance_update == CovarianceUpdate::exact
                          ? std::exp(-eta) * (st.S[a * r + c] + std::expm1(eta * q) / q * z[a] * z[c]) +
                                (1 - std::exp(-eta)) * post.cov[a * r + c]
                          : (1 - eta) * st.S[a * r + c] + eta * (z[a] * z[c] + post.cov[a * r + c]);
  Mat Sg = st.S;
  for (int j = 0; j < r; ++j) Sg[j * r + j] += p.gamma * st.s2;
  std::vector<double> LG;
  ASSERT_TRUE(host::cholesky(Sg, r, LG));
  const Mat g = host::cholesky_solve(LG, r, z);
  const bool observed = p.missing_rotation == MissingRotation::observed;
  const Mat v = observed ? host::cholesky_solve(LC, r, g) : g;
  double beta2 = 0;
  for (int j = 0; j < r; ++j) beta2 += g[j] * v[j];
  const double beta = std::sqrt(beta2), theta = std::atan(p.eta_U * rho * beta);
  Mat Unew = st.U;
  for (int i = 0; i < d; ++i) {
    const bool obs = !std::isnan(x[i]);
    if (observed && !obs) continue;
    double uv = 0;
    for (int j = 0; j < r; ++j) uv += st.u(i, j) * v[j] / beta;
    const double coef = (std::cos(theta) - 1) * uv + std::sin(theta) * e[i] / rho;
    for (int j = 0; j < r; ++j) Unew[std::size_t(i) * r + j] += coef * g[j] / beta;
  }
  // Sigma' = U S' U^T + s2 (I - U U^T), S_new = U_new^T Sigma' U_new.
  const Mat Ut = transpose(st.U, d, r);
  const Mat UtUn = matmul(Ut, Unew, r, d, r);
  const Mat UnUn = matmul(transpose(Unew, d, r), Unew, r, d, r);
  const Mat A = matmul(matmul(transpose(UtUn, r, r), Sp, r, r, r), UtUn, r, r, r);
  const Mat B = matmul(transpose(UtUn, r, r), UtUn, r, r, r);
  Mat Snew(std::size_t(r) * r);
  for (int k = 0; k < r * r; ++k) Snew[k] = A[k] + st.s2 * (UnUn[k] - B[k]);
  const double s2new = (1 - p.eta_s) * st.s2 + p.eta_s * rho2 / (n - r);
  Mat munew = st.mu;
  for (const int i : mk.observed) munew[i] += p.eta_mu * (x[i] - st.mu[i]);

  const MaskedStepInfo info = reference_masked_step(st, x.data(), p);
  ASSERT_FALSE(info.skipped) << what;
  EXPECT_EQ(info.observed, n);
  EXPECT_EQ(m, 5);
  EXPECT_NEAR(info.q, q, 1e-12 * q) << what;
  EXPECT_NEAR(info.theta, theta, 1e-12 * theta) << what;
  EXPECT_LT(frob_diff(st.U, Unew), 1e-12) << what;
  EXPECT_LT(frob_diff(st.S, Snew), 1e-12 * frob(Snew)) << what;
  EXPECT_NEAR(st.s2, s2new, 1e-12 * s2new) << what;
  EXPECT_LT(frob_diff(st.mu, munew), 1e-15 * frob(munew)) << what;
}

TEST(ReferenceMasked, OneMaskedStepAgainstDenseFormulas) {
  MosaicParams p;
  p.missing = MissingMode::posterior;
  masked_step_against_dense(p, "posterior, observed");
  MosaicParams a = p;
  a.missing_rotation = MissingRotation::geodesic;
  masked_step_against_dense(a, "posterior, geodesic");
  a = p;
  a.covariance_update = CovarianceUpdate::first_order;
  masked_step_against_dense(a, "first_order");
  a = p;
  a.max_step = 0.005;
  masked_step_against_dense(a, "clamped");
}

// 7.4 by Monte Carlo at a fixed state: rho^2 / (n - r) is unbiased for s2
// under any mask, E[z z^T + P] = S (Fisher's identity), while the
// GROUSE target z_ls z_ls^T is biased up by Delta and z z^T alone down by P.
TEST(ReferenceMasked, NoiseUpdateUnbiasedAndFisherIdentityMonteCarlo) {
  TestRng rng(17);
  const int d = 24, r = 3, draws = 40000;
  ReferenceState<double> st = random_state<double>(d, r, rng, 0.5);
  st.S = random_spd(r, rng, 1.0, 4.0);
  const Mat Sh = sym_function(st.S, r, [](double v) { return std::sqrt(v); });
  MosaicParams p;
  p.missing = MissingMode::posterior;
  double noise_ratio = 0, noise_ratio2 = 0;
  Mat zzP(std::size_t(r) * r, 0.0), zz(std::size_t(r) * r, 0.0), zls(std::size_t(r) * r, 0.0),
      P(std::size_t(r) * r, 0.0);
  for (int k = 0; k < draws; ++k) {
    // y = U S^1/2 a + sqrt(s2) (I - U U^T) nu
    const Mat a = matmul(Sh, rng.normals(std::size_t(r)), r, r, 1);
    const Mat nu = rng.normals(std::size_t(d));
    const Mat Utnu = matmul(transpose(st.U, d, r), nu, r, d, 1);
    const Mat Ua = matmul(st.U, a, d, r, 1), UUtnu = matmul(st.U, Utnu, d, r, 1);
    Mat y(d);
    for (int i = 0; i < d; ++i) y[i] = Ua[i] + std::sqrt(st.s2) * (nu[i] - UUtnu[i]);
    detail::Mask mk;
    for (int i = 0; i < d; ++i) (rng.uniform() < 0.4 ? mk.missing : mk.observed).push_back(i);
    if (int(mk.observed.size()) < r + 1) continue;
    const detail::ObservedFit<double> fit = detail::observed_fit(st, y, mk, p);
    if (!fit.ok) continue;
    const detail::FramePosterior<double> post = detail::frame_posterior(st.S, st.s2, fit, r, p, 0);
    const double ratio = fit.rho2 / (double(mk.observed.size()) - r) / st.s2;
    noise_ratio += ratio;
    noise_ratio2 += ratio * ratio;
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < r; ++j) {
        zz[i * r + j] += post.z[i] * post.z[j] / draws;
        zzP[i * r + j] += (post.z[i] * post.z[j] + post.P[i * r + j]) / draws;
        zls[i * r + j] += fit.z_ls[i] * fit.z_ls[j] / draws;
        P[i * r + j] += post.P[i * r + j] / draws;
      }
  }
  const double mean = noise_ratio / draws, sd = std::sqrt(noise_ratio2 / draws - mean * mean);
  EXPECT_LT(std::fabs(mean - 1.0), 4.0 * sd / std::sqrt(double(draws))) << "E[rho^2/(n-r)]/s2 = " << mean;
  const double err = frob_diff(zzP, st.S) / frob(st.S);
  EXPECT_LT(err, 0.02) << "E[z z^T + P] against S";
  // The two biased targets are measurably off, by about what 7.4 predicts.
  EXPECT_GT(frob_diff(zls, st.S) / frob(st.S), 3 * err);
  EXPECT_GT(frob_diff(zz, st.S) / frob(st.S), 3 * err);
  EXPECT_LT(frob_diff(zz, st.S), 1.2 * frob(P));
}

// 7.5: n = 0 changes nothing; 1 <= n <= r and the tr(C^-1) guard move only
// the observed means; every such step is counted.
TEST(ReferenceMasked, SkippedStepsMoveOnlyTheObservedMean) {
  TestRng rng(3);
  const int d = 10, r = 3;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  MaskedReferenceState<double> st(random_state<double>(d, r, rng), p);
  const MaskedReferenceState<double> before = st;
  std::vector<double> x(d, kNaN);
  MaskedStepInfo info = reference_masked_step(st, x.data(), p);
  EXPECT_TRUE(info.skipped);
  EXPECT_EQ(info.observed, 0);
  expect_states_equal<double>(st, before, "n = 0");
  x[2] = 4.0;
  x[7] = -1.0;
  x[8] = 2.0;  // n = 3 = r
  info = reference_masked_step(st, x.data(), p);
  EXPECT_TRUE(info.skipped);
  EXPECT_EQ(st.U, before.U);
  EXPECT_EQ(st.S, before.S);
  EXPECT_EQ(st.s2, before.s2);
  for (int i = 0; i < d; ++i) {
    const double want = std::isnan(x[i]) ? before.mu[i] : before.mu[i] + p.eta_mu * (x[i] - before.mu[i]);
    EXPECT_EQ(st.mu[i], want) << i;
  }
  EXPECT_EQ(st.skipped_steps, 2);
  EXPECT_EQ(st.steps, 2);
  // The guard: tr(C^-1) > missing_cond_max skips a step that would otherwise run.
  std::vector<double> y = rng.normals(std::size_t(d));
  y[0] = kNaN;
  MaskedReferenceState<double> a = st, b = st;
  MosaicParams tight = p;
  tight.missing_cond_max = double(r);  // any missing row makes tr(C^-1) > r
  EXPECT_FALSE(reference_masked_step(a, y.data(), p).skipped);
  info = reference_masked_step(b, y.data(), tight);
  EXPECT_TRUE(info.skipped);
  EXPECT_GT(info.trace_cinv, double(r));
  EXPECT_EQ(b.U, st.U);
  EXPECT_EQ(b.skipped_steps, st.skipped_steps + 1);
}

// 7.5: a frame whose column lives on the missing rows makes C singular: skipped.
TEST(ReferenceMasked, SingularObservedGramSkips) {
  const int d = 8, r = 2;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  ReferenceState<double> base(d, r);
  base.u(0, 0) = 1.0;  // column 0 is e_0
  for (int i = 1; i < d; ++i) base.u(i, 1) = 1.0 / std::sqrt(double(d - 1));
  base.S = {2.0, 0.0, 0.0, 1.0};
  base.s2 = 0.1;
  MaskedReferenceState<double> st(std::move(base), p);
  std::vector<double> x(d, 0.5);
  x[0] = kNaN;
  const MaskedStepInfo info = reference_masked_step(st, x.data(), p);
  EXPECT_TRUE(info.skipped);
  EXPECT_EQ(st.skipped_steps, 1);
}

// 7.6: a coordinate never observed in the init window is unseen: mean 0,
// zero row of U, missing in every step until it is observed; then its mean
// takes the observed value, and `seen` is dropped once all are seen.
TEST(ReferenceMasked, UnseenCoordinateTakesItsFirstValue) {
  const int d = 12, r = 2, n0 = 6;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.init_samples = n0;
  TestRng rng(8);
  std::vector<double> X = rng.normals(std::size_t(n0) * d);
  for (int k = 0; k < n0; ++k) X[std::size_t(k) * d + 5] = kNaN;
  MaskedReferenceState<double> st = reference_init_data_masked(X.data(), n0, d, r, p);
  ASSERT_EQ(st.unseen(), 1);
  EXPECT_EQ(st.mu[5], 0.0);
  for (int j = 0; j < r; ++j) EXPECT_EQ(st.u(5, j), 0.0);
  std::vector<double> x = rng.normals(std::size_t(d));
  x[5] = 100.0;
  const MaskedStepInfo info = reference_masked_step(st, x.data(), p);
  EXPECT_FALSE(info.skipped);
  EXPECT_EQ(info.observed, d - 1);  // treated as missing in this step
  for (int j = 0; j < r; ++j) EXPECT_EQ(st.u(5, j), 0.0);
  EXPECT_EQ(st.mu[5], 100.0);
  EXPECT_TRUE(st.seen.empty());
}

// 7.6 on a block without missing entries is section 3 to rounding (s2 from
// the residuals, the same sum as the trailing eigenvalues).
TEST(ReferenceMasked, MaskedInitOnAFullBlockIsSectionThree) {
  SyntheticSpec s = drifting(40, 4, 0.3);
  s.mean_scale = 2.0;
  const SyntheticTruth truth = make_synthetic_truth(s, 0);
  const int n0 = 16;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.init_samples = n0;
  std::vector<double> X(std::size_t(n0) * s.d);
  for (int t = 0; t < n0; ++t) synthetic_sample(s, truth, 0, std::uint64_t(t), X.data() + std::size_t(t) * s.d);
  const ReferenceState<double> a = reference_init_data(X.data(), n0, s.d, s.r, p);
  const MaskedReferenceState<double> b = detail::init_data_masked(X.data(), n0, s.d, s.r, p);
  const StateDistance dist = reference_distance(a, b);
  EXPECT_EQ(dist.mu, 0.0);
  // (measured at this commit: 5e-15, 9e-17 and 3e-15 relative)
  EXPECT_LT(std::fabs(dist.projector), 1e-13);
  EXPECT_LT(dist.covariance, 1e-14 * s_norm(a));
  EXPECT_LT(std::fabs(a.s2 - b.s2), 3e-14 * a.s2);
  EXPECT_TRUE(b.seen.empty());
}

// 7.6's scale correction: with 30% MCAR in a long init window, S / pbar^2
// puts the retained spectrum at the full-data level, where the raw
// zero-filled Gram would be about pbar^2 = 0.49 of it.
TEST(ReferenceMasked, MaskedInitCorrectsTheScale) {
  SyntheticSpec s = drifting(64, 3, 0.2);
  const SyntheticTruth truth = make_synthetic_truth(s, 0);
  const int n0 = 400;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.init_samples = n0;
  MissingSpec m;
  m.mcar_rate = 0.3;
  std::vector<double> X(std::size_t(n0) * s.d), Xm;
  for (int t = 0; t < n0; ++t) synthetic_sample(s, truth, 0, std::uint64_t(t), X.data() + std::size_t(t) * s.d);
  Xm = X;
  for (int t = 0; t < n0; ++t)
    apply_synthetic_missing(m, s.seed, 0, std::uint64_t(t), Xm.data() + std::size_t(t) * s.d, s.d);
  const ReferenceState<double> full = reference_init_data(X.data(), n0, s.d, s.r, p);
  const MaskedReferenceState<double> masked = reference_init_data_masked(Xm.data(), n0, s.d, s.r, p);
  double tf = 0, tm = 0;
  for (int j = 0; j < s.r; ++j) {
    tf += full.S[j * s.r + j];
    tm += masked.S[j * s.r + j];
  }
  EXPECT_NEAR(tm / tf, 1.0, 0.15);
  EXPECT_NEAR(masked.s2 / full.s2, 1.0, 0.25);
}

// 7.9: drop changes nothing and counts; zero_fill is section 2 on x_M := mu_M.
TEST(ReferenceMasked, DropAndZeroFillBaselines) {
  TestRng rng(21);
  const int d = 16, r = 3;
  MosaicParams p;
  p.missing = MissingMode::drop;
  MaskedReferenceState<double> st(random_state<double>(d, r, rng), p);
  const MaskedReferenceState<double> before = st;
  std::vector<double> x = rng.normals(std::size_t(d));
  x[4] = kNaN;
  const MaskedStepInfo info = reference_masked_step(st, x.data(), p);
  EXPECT_TRUE(info.dropped);
  EXPECT_EQ(st.dropped_samples, 1);
  expect_states_equal<double>(st, before, "drop");
  MosaicParams z = p;
  z.missing = MissingMode::zero_fill;
  MaskedReferenceState<double> a = before;
  ReferenceState<double> b = before;
  (void)reference_masked_step(a, x.data(), z);
  std::vector<double> filled = x;
  filled[4] = before.mu[4];
  (void)reference_step(b, filled.data(), z);
  expect_states_equal<double>(a, b, "zero_fill");
}

// An infinite entry is an input error in every mode, a NaN under missing:
// error too; the state is unchanged.
TEST(ReferenceMasked, InfiniteEntriesAndErrorModeRefuseTheSample) {
  TestRng rng(2);
  const int d = 8, r = 2;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  MaskedReferenceState<double> st(random_state<double>(d, r, rng), p);
  const MaskedReferenceState<double> before = st;
  std::vector<double> x = rng.normals(std::size_t(d));
  x[6] = std::numeric_limits<double>::infinity();
  expect_throw_with<std::invalid_argument>([&] { (void)reference_masked_step(st, x.data(), p); },
                                           {"infinite value at index 6", "a missing entry is a NaN"});
  x[6] = kNaN;
  MosaicParams e = p;
  e.missing = MissingMode::error;
  expect_throw_with<std::invalid_argument>([&] { (void)reference_masked_step(st, x.data(), e); },
                                           {"non-finite value at index 6"});
  expect_states_equal<double>(st, before, "refused");
  EXPECT_EQ(st.steps, 0);
}

// 7.4, measured in 7.11: during an outage the observed rotation leaves the
// dropped channels' rows alone, the geodesic one shrinks them every step.
TEST(ReferenceMasked, OutageKeepsTheDroppedChannelsLoadings) {
  MissingSpec m;
  m.outage_first = 0;
  m.outage_count = 6;  // about 10% of d = 64
  m.outage_start = 500;
  m.outage_steps = 2000;
  double kept[2] = {0, 0};
  int k = 0;
  for (const MissingRotation rot : {MissingRotation::observed, MissingRotation::geodesic}) {
    MosaicParams p;
    p.missing = MissingMode::posterior;
    p.missing_rotation = rot;
    MaskedRun<double> run(drifting(64, 4, 0.3), m, p);
    while (run.next_step < m.outage_start) run.step();
    double before = 0;
    for (int i = 0; i < m.outage_count; ++i)
      for (int j = 0; j < 4; ++j) before += run.state.u(i, j) * run.state.u(i, j);
    while (run.next_step < m.outage_start + m.outage_steps) run.step();
    double after = 0;
    for (int i = 0; i < m.outage_count; ++i)
      for (int j = 0; j < 4; ++j) after += run.state.u(i, j) * run.state.u(i, j);
    kept[k++] = after / before;
    EXPECT_LT(run.distance(), 0.1) << to_string(rot);
  }
  EXPECT_NEAR(kept[0], 1.0, 1e-9) << "observed rotation: the rows are not touched";
  EXPECT_LT(kept[1], 0.95) << "geodesic: the rows shrink";  // measured 0.888
}

// 8.3 part 4: re-whitening changes the basis and the profile, not the
// modelled signal covariance Psi^1/2 U S U^T Psi^1/2; it clears the accumulators.
TEST(ReferenceMasked, RewhiteningKeepsTheModelledSignal) {
  SyntheticSpec s = drifting(48, 3, 0.0);
  s.noise_min = 0.05;
  s.noise_max = 0.5;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.noise = NoiseModel::diagonal;
  p.rewhiten_every = 1 << 30;
  p.rewhiten_min_count = 50;
  MissingSpec m;
  m.mcar_rate = 0.1;
  MaskedRun<double> run(s, m, p);
  for (int t = 0; t < 400; ++t) run.step();
  auto signal = [](const MaskedReferenceState<double>& st) {
    const int d = st.d, r = st.r;
    Mat A(std::size_t(d) * r);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < r; ++j) A[i * r + j] = std::sqrt(st.psi[i]) * st.u(i, j);
    return matmul(matmul(A, st.S, d, r, r), transpose(A, d, r), d, r, d);
  };
  const Mat before = signal(run.state);
  const std::vector<double> psi_before = run.state.psi;
  reference_rewhiten(run.state, p);
  EXPECT_LT(frob_diff(signal(run.state), before), 1e-12 * frob(before));
  EXPECT_NE(run.state.psi, psi_before);
  EXPECT_LT(orthonormality(run.state), 1e-13);
  EXPECT_EQ(run.state.rewhitenings, 1);
  for (int i = 0; i < s.d; ++i) EXPECT_EQ(run.state.counts[i], 0);
  double log_mean = 0;  // every coordinate was re-whitened: geometric mean 1
  for (const double v : run.state.psi) log_mean += std::log(v) / s.d;
  EXPECT_NEAR(log_mean, 0.0, 1e-12);
}

// 8.3 part 3: at the true state (rates so small that it does not move) the
// accumulated whitened residuals average to 1 under a 40% MCAR mask: kappa
// rescales the frozen leverages to the n - r residual degrees of freedom
// (without it the average would be about (n - r + tr N) / (n - r) = 1.1).
TEST(ReferenceMasked, DiagonalAccumulatorsAreCalibratedUnderMasks) {
  TestRng rng(41);
  const int d = 24, r = 3, draws = 20000;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.noise = NoiseModel::diagonal;
  p.eta_mu = p.eta_S = p.eta_U = p.eta_s = 1e-12;
  p.rewhiten_every = 1 << 30;
  MaskedReferenceState<double> st(random_state<double>(d, r, rng, 0.5), p);
  for (double& v : st.mu) v = 0.0;
  const Mat Sh = sym_function(st.S, r, [](double v) { return std::sqrt(v); });
  std::vector<double> x(d);
  for (int k = 0; k < draws; ++k) {
    const Mat a = matmul(Sh, rng.normals(std::size_t(r)), r, r, 1);
    const Mat nu = rng.normals(std::size_t(d));
    const Mat Utnu = matmul(transpose(st.U, d, r), nu, r, d, 1);
    const Mat Ua = matmul(st.U, a, d, r, 1), UUtnu = matmul(st.U, Utnu, d, r, 1);
    for (int i = 0; i < d; ++i) x[i] = rng.uniform() < 0.4 ? kNaN : Ua[i] + std::sqrt(st.s2) * (nu[i] - UUtnu[i]);
    (void)reference_masked_step(st, x.data(), p);
  }
  double mean = 0;
  int used = 0;
  for (int i = 0; i < d; ++i)
    if (st.counts[i] > 0) {
      mean += st.residuals[i] / double(st.counts[i]);
      ++used;
    }
  mean /= used;
  EXPECT_GT(used, d / 2);
  EXPECT_NEAR(mean, 1.0, 0.03);
}

// 8.1/8.6: on heterogeneous noise the diagonal model recovers the
// per-coordinate noise (rms of the log ratio) and a subspace no worse than
// the isotropic model's; the isotropic profile is flat.
TEST(ReferenceMasked, DiagonalNoiseRecoversTheProfile) {
  SyntheticSpec s = drifting(64, 4, 0.0);
  s.noise_min = 0.05;
  s.noise_max = 0.5;
  MissingSpec none;
  double rms[2] = {0, 0}, dist[2] = {0, 0};
  int k = 0;
  for (const NoiseModel model : {NoiseModel::isotropic, NoiseModel::diagonal}) {
    MosaicParams p;
    p.missing = MissingMode::posterior;
    p.noise = model;
    MaskedRun<double> run(s, none, p);
    double dsum = 0;
    int dn = 0;
    for (int t = 0; t < 8000; ++t) {
      run.step();
      if (t >= 4000 && t % 100 == 0) {
        dsum += run.distance();
        ++dn;
      }
    }
    const std::vector<double> nv = reference_noise_variances(run.state);
    double sq = 0;
    for (int i = 0; i < s.d; ++i) {
      const double lr = std::log(nv[i] / (run.truth.noise_std[i] * run.truth.noise_std[i]));
      sq += lr * lr;
    }
    rms[k] = std::sqrt(sq / s.d);
    dist[k] = dsum / dn;
    ++k;
  }
  EXPECT_GT(rms[0], 0.8) << "isotropic: one level for every coordinate";
  EXPECT_LT(rms[1], 0.25) << "diagonal: the profile is recovered";
  EXPECT_LT(dist[1], dist[0] * 1.02) << "diagonal " << dist[1] << " vs isotropic " << dist[0];
}

}  // namespace
