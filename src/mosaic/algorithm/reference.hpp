// The host reference implementation of one MOSAIC stream: ../shared/ALGORITHM.md
// sections 1-4 written out line by line, templated on the scalar type. It is
// the project's oracle: the Kokkos engine is tested against it, so it favours
// being obviously right over being fast.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mosaic/algorithm/counter_rng.hpp"
#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/prequential.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"

namespace mosaic {

// Raised when a step cannot be completed with finite numbers (S no longer
// positive definite, non-finite state). The stream's state is left as it was
// before the step.
struct NumericalBreakdown : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Raised by init: data when the n0 centred samples span fewer than r
// directions (ALGORITHM.md section 3: a rank-deficient start is an error, not
// a NaN). The message says what was found (the sample count, r, the r-th Gram
// eigenvalue and the tolerance it failed) but names no stream: the caller
// knows which stream (and file) the samples came from and adds it.
// `directions`: how many Gram eigenvalues passed the tolerance (< r).
struct InitRankDeficient : std::invalid_argument {
  InitRankDeficient(const std::string& what, int directions_) : std::invalid_argument(what), directions(directions_) {}
  int directions = 0;
};

template <class T>
struct ReferenceState {
  int d = 0, r = 0;
  std::vector<T> mu;  // d
  std::vector<T> U;   // d x r, row-major: U[i*r + j]
  std::vector<T> S;   // r x r, row-major
  T s2 = 0;
  std::int64_t steps = 0;          // MOSAIC steps taken (init samples excluded)
  std::int64_t clamped_steps = 0;  // steps whose covariance step hit max_step
  std::int64_t reorthonormalizations = 0;
  // Running sums of section 4's prequential accuracy (prequential.hpp).
  std::array<double, preq_columns> prequential{};

  ReferenceState() = default;
  ReferenceState(int d_, int r_)
      : d(d_), r(r_), mu(std::size_t(d_), T(0)), U(std::size_t(d_) * r_, T(0)), S(std::size_t(r_) * r_, T(0)) {}
  T& u(int i, int j) { return U[std::size_t(i) * r + j]; }
  T u(int i, int j) const { return U[std::size_t(i) * r + j]; }
};

// What one step did, for diagnostics and tests.
struct StepInfo {
  double q = 0;      // Mahalanobis form z^T S^{-1} z
  double ell = 0;    // affine-invariant length of the unclamped covariance step
  double eta = 0;    // covariance rate actually used
  double rho = 0;    // residual norm ||e||
  double theta = 0;  // rotation angle of the frame
  bool clamped = false;
};

namespace detail {
// Below this, rho * ||g|| is treated as zero and the frame is not rotated
// (the direction e g^T is undefined).
template <class T>
constexpr T rotation_tiny() {
  return std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
}

template <class T>
void require_finite(const T* x, int d, const char* what) {
  for (int i = 0; i < d; ++i)
    if (!std::isfinite(x[i]))
      throw std::invalid_argument(std::string(what) + ": non-finite value at index " + std::to_string(i));
}
}  // namespace detail

template <class T>
void reference_reorthonormalize(ReferenceState<T>& st);

// The parts of section 2 that the masked step of section 7 (reference_masked.hpp)
// takes unchanged, written once: with nothing missing, 7.3 is section 2 bit
// for bit (7.2) because it goes through these same expressions.
namespace detail {

// Part 3: the affine-invariant length `ell` of the unclamped covariance step
// and the rate actually used.
template <class T>
T clamped_rate(T q, int r, const MosaicParams& p, T& ell, bool& clamped) {
  const T eta_S = T(p.eta_S);
  ell = eta_S * std::sqrt((q - 1) * (q - 1) + T(r - 1));
  clamped = ell > T(p.max_step);
  return clamped ? eta_S * T(p.max_step) / ell : eta_S;
}

// Part 4: S' in the old frame from the rank-one target z z^T.
template <class T>
std::vector<T> covariance_update(const std::vector<T>& S, const std::vector<T>& z, T q, T eta, int r,
                                 const MosaicParams& p) {
  std::vector<T> Sp(std::size_t(r) * r);
  if (p.covariance_update == CovarianceUpdate::exact) {
    const T c = q > T(0) ? std::expm1(eta * q) / q : eta;
    const T decay = std::exp(-eta);
    for (int a = 0; a < r; ++a)
      for (int b = 0; b < r; ++b) Sp[a * r + b] = decay * (S[a * r + b] + c * z[a] * z[b]);
  } else {
    for (int a = 0; a < r; ++a)
      for (int b = 0; b < r; ++b) Sp[a * r + b] = (1 - eta) * S[a * r + b] + eta * z[a] * z[b];
  }
  return Sp;
}

// Part 5: the direction g from the old S and s2 (w = S^{-1} z).
template <class T>
std::vector<T> subspace_direction(const std::vector<T>& S, T s2, const std::vector<T>& z, const std::vector<T>& w,
                                  int r, const MosaicParams& p) {
  if (p.subspace_direction == SubspaceDirection::precision) {
    if (p.gamma == 0.0) return w;
    std::vector<T> R(S);
    for (int j = 0; j < r; ++j) R[j * r + j] += T(p.gamma) * s2;
    std::vector<T> LR;
    if (!host::cholesky(R, r, LR)) throw NumericalBreakdown("reference_step: S + gamma s2 I is not positive definite");
    return host::cholesky_solve(LR, r, z);
  }
  T trace = 0;
  for (int j = 0; j < r; ++j) trace += S[j * r + j];
  std::vector<T> g(r);
  for (int j = 0; j < r; ++j) g[j] = z[j] / (trace / T(r));
  return g;
}

// sum_j g_j^2 in increasing j (||g||^2 of part 6; 7.3's beta^2 starts from it).
template <class T>
T squared_norm(const std::vector<T>& g) {
  T s = 0;
  for (const T v : g) s += v * v;
  return s;
}

// Part 6's angle: theta = atan(eta_U * rho * norm), its sine and cos(theta) - 1
// (without cancellation for small theta).
template <class T>
struct RotationAngle {
  T theta = 0, sn = 0, cm1 = 0;
};
template <class T>
RotationAngle<T> rotation_angle(T eta_U, T rho, T norm) {
  RotationAngle<T> a;
  a.theta = std::atan(eta_U * rho * norm);
  a.sn = std::sin(a.theta);
  a.cm1 = -2 * std::sin(a.theta / 2) * std::sin(a.theta / 2);
  return a;
}

// Part 7 in place: S' <- M^T S' M + (s2 sin^2 + extra) gh gh^T with
// M = I + (cos - 1) gh gh^T, in O(r^2) through u = S' gh, b = gh^T u.
// `extra` is 7.3's noise term of the observed rotation (0 in section 2).
template <class T>
void transport(std::vector<T>& Sp, const std::vector<T>& gh, const RotationAngle<T>& a, T s2, T extra, int r) {
  std::vector<T> u(r, T(0));
  T b = 0;
  for (int i = 0; i < r; ++i) {
    for (int c = 0; c < r; ++c) u[i] += Sp[i * r + c] * gh[c];
    b += gh[i] * u[i];
  }
  const T cm1 = a.cm1, sn = a.sn;
  for (int i = 0; i < r; ++i)
    for (int c = 0; c < r; ++c)
      Sp[i * r + c] += cm1 * (u[i] * gh[c] + gh[i] * u[c]) + (cm1 * cm1 * b + s2 * sn * sn + extra) * gh[i] * gh[c];
}

// S <- (S + S^T) / 2, the diagonal untouched.
template <class T>
void symmetrize(std::vector<T>& S, int r) {
  for (int a = 0; a < r; ++a)
    for (int c = 0; c < a; ++c) {
      const T avg = (S[a * r + c] + S[c * r + a]) / 2;
      S[a * r + c] = S[c * r + a] = avg;
    }
}

// The end of a step that both references share, after `steps` counted it:
// the clamp counter, the re-orthonormalization when due, the StepInfo.
template <class T>
void finish_step(ReferenceState<T>& st, const MosaicParams& p, StepInfo& info, T q, T ell, T eta, T rho, T theta);

// True when s2 and every entry of the vectors are finite.
template <class T>
bool all_finite(T s2, std::initializer_list<const std::vector<T>*> vs) {
  bool finite = std::isfinite(s2);
  for (const auto* v : vs)
    for (const T x : *v) finite = finite && std::isfinite(x);
  return finite;
}

}  // namespace detail

// One MOSAIC step (ALGORITHM.md section 2) with sample x (length d).
// Throws std::invalid_argument for a non-finite sample and NumericalBreakdown
// when S cannot be factored; in both cases the state is unchanged.
template <class T>
StepInfo reference_step(ReferenceState<T>& st, const T* x, const MosaicParams& p) {
  const int d = st.d, r = st.r;
  detail::require_finite(x, d, "reference_step: sample");
  StepInfo info;

  // 1. Centre and project with the old mean.
  std::vector<T> y(d), z(r, T(0)), e(d);
  for (int i = 0; i < d; ++i) y[i] = x[i] - st.mu[i];
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < r; ++j) z[j] += st.u(i, j) * y[i];
  T rho2 = 0, yy = 0;
  for (int i = 0; i < d; ++i) {
    T uz = 0;
    for (int j = 0; j < r; ++j) uz += st.u(i, j) * z[j];
    e[i] = y[i] - uz;
    rho2 += e[i] * e[i];
  }
  for (int i = 0; i < d; ++i) yy += y[i] * y[i];
  const T rho = std::sqrt(rho2);

  // 2. Precision solve.
  std::vector<T> L;
  if (!host::cholesky(st.S, r, L))
    throw NumericalBreakdown("reference_step: S is not positive definite at step " + std::to_string(st.steps));
  const std::vector<T> w = host::cholesky_solve(L, r, z);
  T q = 0;
  for (int j = 0; j < r; ++j) q += z[j] * w[j];
  // Section 4's prequential accuracy of the state before the step.
  PrequentialSample preq;
  preq.n = d;
  preq.r = r;
  preq.yy = double(yy);
  preq.rho2 = double(rho2);
  preq.s2 = double(st.s2);
  preq.quad = double(q);
  preq.logdet_sd = logdet_from_factor(r, L.data(), r);

  // 3-5. Step length and clamp, covariance update in the old frame, direction (old S).
  T ell = 0;
  const T eta = detail::clamped_rate(q, r, p, ell, info.clamped);
  std::vector<T> Snew = detail::covariance_update(st.S, z, q, eta, r, p);
  const std::vector<T> g = detail::subspace_direction(st.S, st.s2, z, w, r, p);
  const T gnorm = std::sqrt(detail::squared_norm(g));

  // 6-7. Rotate the frame along the geodesic of e g^T and transport S'.
  // The new frame is built aside and committed with the rest of the state
  // only if the whole step is finite (see the check before step 8).
  std::vector<T> Unew(st.U);
  T theta = 0;
  if (rho * gnorm > detail::rotation_tiny<T>()) {
    const detail::RotationAngle<T> a = detail::rotation_angle(T(p.eta_U), rho, gnorm);
    theta = a.theta;
    std::vector<T> gh(r);
    for (int j = 0; j < r; ++j) gh[j] = g[j] / gnorm;
    for (int i = 0; i < d; ++i) {
      T ugh = 0;
      for (int j = 0; j < r; ++j) ugh += st.u(i, j) * gh[j];
      const T coef = a.cm1 * ugh + a.sn * e[i] / rho;
      for (int j = 0; j < r; ++j) Unew[std::size_t(i) * r + j] += coef * gh[j];
    }
    detail::transport(Snew, gh, a, st.s2, T(0), r);
  }
  detail::symmetrize(Snew, r);

  // 8. Noise of the complement.
  const T s2new = (1 - T(p.eta_s)) * st.s2 + T(p.eta_s) * rho2 / T(d - r);

  // 9. Mean.
  std::vector<T> munew(d);
  for (int i = 0; i < d; ++i) munew[i] = st.mu[i] + T(p.eta_mu) * (x[i] - st.mu[i]);

  // A finite sample can still overflow (|x| near the top of the range of T):
  // refuse the step rather than commit a non-finite state.
  if (!detail::all_finite(s2new, {&Snew, &Unew, &munew}))
    throw NumericalBreakdown("reference_step: the step from sample " + std::to_string(st.steps) +
                             " overflows to a non-finite state (q = " + std::to_string(double(q)) +
                             ", rho = " + std::to_string(double(rho)) + ")");
  st.U.swap(Unew);
  st.S.swap(Snew);
  st.s2 = s2new;
  st.mu.swap(munew);
  preq.add_to(st.prequential.data());

  st.steps += 1;
  detail::finish_step(st, p, info, q, ell, eta, rho, theta);
  return info;
}

namespace detail {
// Cholesky-QR of U with S rotated consistently: U^T U = R^T R, U <- U R^{-1},
// S <- R S R^T, so that U S U^T (the modelled covariance) is unchanged.
// False (nothing changed) if U^T U does not factor.
template <class T>
bool cholesky_qr(ReferenceState<T>& st) {
  const int d = st.d, r = st.r;
  std::vector<T> G(std::size_t(r) * r, T(0));
  for (int i = 0; i < d; ++i)
    for (int a = 0; a < r; ++a)
      for (int b = 0; b < r; ++b) G[a * r + b] += st.u(i, a) * st.u(i, b);
  std::vector<T> L;  // G = L L^T, R = L^T
  if (!host::cholesky(G, r, L)) return false;
  // U <- U L^{-T}: solve each row u_i^T = x^T L^T, i.e. L x = u_i.
  for (int i = 0; i < d; ++i)
    for (int a = 0; a < r; ++a) {
      T v = st.u(i, a);
      for (int k = 0; k < a; ++k) v -= L[a * r + k] * st.u(i, k);
      st.u(i, a) = v / L[a * r + a];
    }
  // S <- L^T S L.
  std::vector<T> SL(std::size_t(r) * r, T(0)), out(std::size_t(r) * r, T(0));
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b)
      for (int k = b; k < r; ++k) SL[a * r + b] += st.S[a * r + k] * L[k * r + b];
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b)
      for (int k = a; k < r; ++k) out[a * r + b] += L[k * r + a] * SL[k * r + b];
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < a; ++b) out[a * r + b] = out[b * r + a] = (out[a * r + b] + out[b * r + a]) / 2;
  st.S.swap(out);
  return true;
}
}  // namespace detail

// The re-orthonormalization of section 4 (detail::cholesky_qr), counted.
template <class T>
void reference_reorthonormalize(ReferenceState<T>& st) {
  if (!detail::cholesky_qr(st)) throw NumericalBreakdown("reorthonormalize: U^T U is not positive definite");
  st.reorthonormalizations += 1;
}

template <class T>
void detail::finish_step(ReferenceState<T>& st, const MosaicParams& p, StepInfo& info, T q, T ell, T eta, T rho,
                         T theta) {
  if (info.clamped) st.clamped_steps += 1;
  if (p.reorthonormalize_every > 0 && st.steps % p.reorthonormalize_every == 0) reference_reorthonormalize(st);
  info.q = double(q);
  info.ell = double(ell);
  info.eta = double(eta);
  info.rho = double(rho);
  info.theta = double(theta);
}

namespace detail {

inline void require_init_samples(int n0, int r) {
  if (n0 < r + 1)
    throw std::invalid_argument("init: data needs at least r+1 = " + std::to_string(r + 1) + " samples, got " +
                                std::to_string(n0));
}

// The checks of init: data on the Gram eigenvalues `lambda` (all n0,
// descending) given raw2, the mean ||x_k||^2 of the uncentred samples;
// shared by the reference and the engine (batched_engine.hpp).
// An eigenvalue at rounding level relative to the largest means the
// centred samples span fewer than r directions: the first term, section 3's
// `lambda_r > 1e3 n eps(double) lambda_1`, the precision of this computation. So does one at the
// level of the rounding of the samples themselves (entries of Y are
// uncertain by ~eps |x|, Gram eigenvalues by ~eps^2 mean ||x||^2): the second
// term. It takes the eps of T, not of double: the samples are T values,
// usually rounded to T from the source's data, so a direction whose energy
// is at the level of that rounding is not resolved by the data (samples on
// an (r-1)-dimensional subspace, rounded to float, span an r-th direction
// made of rounding only). With the eps of double the verdict on such a start
// would depend on the offset (a larger |x| rounds to more noise and would
// pass), and the float run that follows could not resolve the direction
// either. (Identical samples do not need it: for float the double sum of n0
// identical values and its division by n0 are exact, so Y = 0 and lambda_1
// = 0 fails `lambda_1 > 0`; identical doubles leave centring noise of
// ~eps_double |x|, which this term also covers.) Accepted starts are the
// double start of the same samples, rounded; only a start whose r-th
// direction is within ~10 sqrt(n0) ulps of T of the samples' norm is refused
// in float and accepted in double.
template <class T>
void require_init_spectrum(const std::vector<double>& lambda, int n0, int r, double raw2) {
  const double eps = std::numeric_limits<double>::epsilon();
  const double eps_T = double(std::numeric_limits<T>::epsilon());
  const double tol = std::max(double(n0) * eps * std::fabs(lambda[0]) * 1e3, double(n0) * eps_T * eps_T * raw2 * 100);
  if (!std::isfinite(raw2) || !std::isfinite(lambda[0]))
    throw std::invalid_argument("init: data: the samples' second moments overflow double");
  if (!(lambda[0] > 0.0) || !(lambda[r - 1] > tol)) {
    int directions = 0;
    while (directions < r && lambda[directions] > 0.0 && lambda[directions] > tol) ++directions;
    char num[96];
    std::snprintf(num, sizeof num, "eigenvalue lambda_%d = %.6g <= tolerance %.6g", r, lambda[r - 1], tol);
    throw InitRankDeficient("init: data: the " + std::to_string(n0) + " centred samples span fewer than r=" +
                                std::to_string(r) + " directions (rank-deficient start: " + std::to_string(directions) +
                                " above the tolerance; Gram " + num + ")",
                            directions);
  }
}

// s2 of init: data from the Gram eigenvalues (all n0, descending).
inline double init_noise_variance(const std::vector<double>& lambda, int n0, int d, int r) {
  double lambda_sum = 0;
  for (int j = 0; j < r; ++j) lambda_sum += lambda[j];
  // s2 from the Gram eigenvalues beyond the first r (all n0 are at hand):
  // equal in exact arithmetic to (||Y||_F^2/n0 - sum_{i<=r} lambda_i)/(d-r),
  // without its cancellation. Each is clamped at 0 first: the trailing ones
  // include the exact zero of the centring (and more when n0 > d), which
  // rounding can leave slightly negative, and such noise must not pull s2
  // below the true sum (or negative).
  double tail = 0;
  for (int j = r; j < n0; ++j) tail += std::max(lambda[j], 0.0);
  // The floor keeps s2 > 0 for samples lying exactly in an r-dimensional
  // affine subspace: 1e-6 * mean(lambda_1..r), the same for every T.
  const double floor = 1e-6 * lambda_sum / double(r);
  return std::max(tail / double(d - r), floor);
}

// A start representable in double need not be in T (lambda or s2 beyond
// the range of float, or below its smallest normal value); `mu_in_range`:
// every mu_i rounded to T is finite.
template <class T>
void require_start_in_range(const std::vector<double>& lambda, int r, double s2, bool mu_in_range) {
  auto normal = [](double v) {
    const T t = T(v);
    return std::isfinite(t) && t >= std::numeric_limits<T>::min();
  };
  bool ok = mu_in_range && normal(s2);
  for (int j = 0; j < r; ++j) ok = ok && normal(lambda[j]);
  if (!ok) {
    char num[128];
    std::snprintf(num, sizeof num, "lambda_1 = %.6g, lambda_%d = %.6g, s2 = %.6g", lambda[0], r, lambda[r - 1], s2);
    throw std::invalid_argument(std::string("init: data: the start (") + num +
                                ") is outside the range of the run's dtype");
  }
}

}  // namespace detail

namespace detail {

// What init: data does after centring, the same for section 3 and for 7.6's
// zero-filled block: the n0 x n0 Gram matrix Y^T Y / n0 of the centred
// Y (d x n0, row-major, double), its eigen-decomposition (descending), the
// rank check on it (raw2: the mean squared norm of the uncentred samples)
// and U = Y v_i / sqrt(n0 lambda_i) into st. Returns the n0 eigenvalues.
template <class T>
std::vector<double> init_frame(const std::vector<double>& Y, int n0, int d, int r, double raw2,
                               ReferenceState<double>& st) {
  // The upper triangle, each entry summed over i in increasing order, then
  // mirrored: the products commute exactly, so this is the full loop's K at
  // half the cost.
  std::vector<double> K(std::size_t(n0) * n0, 0.0);
  for (int i = 0; i < d; ++i) {
    const double* y = Y.data() + std::size_t(i) * n0;
    for (int a = 0; a < n0; ++a)
      for (int b = a; b < n0; ++b) K[a * n0 + b] += y[a] * y[b];
  }
  double amax = 0;
  for (int a = 0; a < n0; ++a)
    for (int b = a; b < n0; ++b) {
      K[b * n0 + a] = K[a * n0 + b] /= double(n0);
      amax = std::max(amax, std::fabs(K[a * n0 + b]));
    }
  // Solved at a power-of-two scale (balancing_exponent): the same in any
  // units of the data.
  const int e = balancing_exponent(amax);
  for (double& v : K) v = std::ldexp(v, -e);
  std::vector<double> lambda, V;  // descending
  host::symmetric_eigen(K, n0, lambda, V);
  for (double& l : lambda) l = std::ldexp(l, e);
  require_init_spectrum<T>(lambda, n0, r, raw2);
  std::vector<double> vj(static_cast<std::size_t>(n0));  // eigenvector j, at unit stride
  for (int j = 0; j < r; ++j) {
    const double scale = 1.0 / std::sqrt(double(n0) * lambda[j]);
    for (int k = 0; k < n0; ++k) vj[std::size_t(k)] = V[k * n0 + j];
    for (int i = 0; i < d; ++i) {
      double v = 0;
      for (int k = 0; k < n0; ++k) v += Y[std::size_t(i) * n0 + k] * vj[std::size_t(k)];
      st.u(i, j) = v * scale;
    }
  }
  return lambda;
}

// The start computed in double, rounded to T (checked to be in T's range).
template <class T>
ReferenceState<T> round_start(ReferenceState<double>&& st, const std::vector<double>& lambda) {
  if constexpr (std::is_same_v<T, double>) {
    return std::move(st);
  } else {
    const int d = st.d, r = st.r;
    ReferenceState<T> out(d, r);
    for (int i = 0; i < d; ++i) out.mu[i] = T(st.mu[i]);
    for (std::size_t k = 0; k < st.U.size(); ++k) out.U[k] = T(st.U[k]);
    for (std::size_t k = 0; k < st.S.size(); ++k) out.S[k] = T(st.S[k]);
    out.s2 = T(st.s2);
    bool mu_in_range = true;
    for (const T v : out.mu) mu_in_range = mu_in_range && std::isfinite(v);
    require_start_in_range<T>(lambda, r, st.s2, mu_in_range);
    return out;
  }
}

}  // namespace detail

// init: data (ALGORITHM.md section 3). `X` holds n0 samples of length d,
// sample k at X[k*d .. k*d+d). Whatever T is, everything is computed in
// double from the samples widened to double (exact: they are T values) -- the
// mean, the centred Y, the n0 x n0 Gram matrix Y^T Y / n0, its
// eigen-decomposition, U = Y v_i / sqrt(n0 lambda_i), S = diag(lambda_i) and
// s2 -- and only the final state is rounded to T. So a float start equals
// the double start of the same samples, rounded (the rank tolerance alone
// depends on T, see below).
// Throws std::invalid_argument for too few or non-finite samples (and for a
// start whose rounding to T is not finite and positive), InitRankDeficient
// (an std::invalid_argument) for a rank-deficient start.
template <class T>
ReferenceState<T> reference_init_data(const T* X, int n0, int d, int r, const MosaicParams& p) {
  static_assert(std::numeric_limits<T>::digits <= std::numeric_limits<double>::digits,
                "init: data computes in double: T must widen to double exactly");
  p.validate(d, r);
  detail::require_init_samples(n0, r);
  detail::require_finite(X, n0 * d, "init: data samples");
  const std::size_t nd = std::size_t(n0) * d;
  auto x = [&](int k, int i) { return double(X[std::size_t(k) * d + i]); };
  // Mean: the sum first, then one division. For identical samples of a T
  // narrower than double (float; n0 < 2^29) both are exact in double, so Y is
  // exactly 0.
  ReferenceState<double> st(d, r);
  for (int k = 0; k < n0; ++k)
    for (int i = 0; i < d; ++i) st.mu[i] += x(k, i);
  for (int i = 0; i < d; ++i) st.mu[i] /= double(n0);
  // Y (d x n0) centred; the Gram matrix Y^T Y / n0 is n0 x n0, small since n0 ~ 2r << d.
  std::vector<double> Y(nd);
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < n0; ++k) Y[std::size_t(i) * n0 + k] = x(k, i) - st.mu[i];
  double raw2 = 0;  // mean ||x_k||^2 of the uncentred samples
  for (std::size_t k = 0; k < nd; ++k) raw2 += double(X[k]) * double(X[k]);
  raw2 /= double(n0);
  const std::vector<double> lambda = detail::init_frame<T>(Y, n0, d, r, raw2, st);
  for (int j = 0; j < r; ++j) st.S[j * r + j] = lambda[j];
  st.s2 = detail::init_noise_variance(lambda, n0, d, r);
  return detail::round_start<T>(std::move(st), lambda);
}

// What section 3's growing window consumed: the start (a ReferenceState, or
// a MaskedReferenceState for 7.6) and the samples it used (init_samples_used).
template <class State>
struct GrownInit {
  State state;
  int samples_used = 0;
};

namespace detail {
// Section 3's growing window: start(m) for m = n0 = init_samples, then 2 n0,
// 4 n0, ... while start throws InitRankDeficient and the window stays within
// min(init_max_samples, available). `start(m)`: the start from the window's m
// samples. Every other failure (non-finite samples, a start outside the
// dtype's range) is raised at once; a window that would pass the limit is the
// rank-deficient error of the largest one tried, naming its size, the
// directions it spanned and the limit.
template <class Start>
auto grow_init_window(const Start& start, std::int64_t available, int r, const MosaicParams& p)
    -> GrownInit<decltype(start(0))> {
  const int n0 = p.resolved_init_samples(r);
  // (A window is an int count of samples: the limit stays below 2^30.)
  const std::int64_t limit =
      std::min<std::int64_t>(std::min<std::int64_t>(p.resolved_init_max_samples(r), available), 1 << 30);
  if (available < n0)
    throw std::invalid_argument("init: data needs init_samples = " + std::to_string(n0) + " samples, the stream has " +
                                std::to_string(available));
  for (int m = n0;; m *= 2) {
    try {
      return {start(m), m};
    } catch (const InitRankDeficient& e) {
      if (std::int64_t(m) * 2 > limit) {
        const bool by_stream = available < p.resolved_init_max_samples(r);
        const std::string grown =
            m == n0 ? "the window of " + std::to_string(n0) + " samples could not grow: "
                    : "the window grew from " + std::to_string(n0) + " to " + std::to_string(m) + " samples, and ";
        throw InitRankDeficient(std::string(e.what()) + "; " + grown + std::to_string(2 * std::int64_t(m)) +
                                    " would pass " +
                                    (by_stream ? "the end of the stream (" + std::to_string(available) + " samples)"
                                               : "init_max_samples = " + std::to_string(limit)),
                                e.directions);
      }
    }
  }
}
}  // namespace detail

// init: data with section 3's window that grows on an uninformative start
// (detail::grow_init_window). `window(m)` returns m samples in stream order
// (sample k at [k*d, k*d + d)): a stream's first m for its own init; the m
// before a cold worker's warm-up for section 9.3, which grows backwards.
// `available`: the most samples `window` can give.
template <class T, class Window>
GrownInit<ReferenceState<T>> reference_init_data_grown(const Window& window, std::int64_t available, int d, int r,
                                                       const MosaicParams& p) {
  p.validate(d, r);
  return detail::grow_init_window(
      [&](int m) { return reference_init_data(static_cast<const T*>(window(m)), m, d, r, p); }, available, r, p);
}

// init: random (ALGORITHM.md section 3): U an orthonormalized Gaussian drawn
// from (seed, stream id), S = s0 I, s2 = s0, mu = 0.
template <class T>
ReferenceState<T> reference_init_random(int d, int r, const MosaicParams& p, std::uint64_t seed,
                                        std::uint64_t stream_id) {
  p.validate(d, r);
  ReferenceState<T> st(d, r);
  std::vector<double> Q(std::size_t(d) * r);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < r; ++j)
      Q[std::size_t(i) * r + j] = counter_normal(seed, RngDomain::init_basis, stream_id, 0, std::uint64_t(i) * r + j);
  host::orthonormalize_columns(Q, d, r);
  for (std::size_t k = 0; k < Q.size(); ++k) st.U[k] = T(Q[k]);
  for (int j = 0; j < r; ++j) st.S[j * r + j] = T(p.init_scale);
  st.s2 = T(p.init_scale);
  return st;
}

// Section 4 invariants of one state.
struct Invariants {
  double orthonormality_error = 0;  // ||U^T U - I||_F
  double symmetry_error = 0;        // ||S - S^T||_F / ||S||_F
  double s_min_eig = 0, s_max_eig = 0, s_condition = 0;
  double s2 = 0;
  bool all_finite = true;
};

template <class T>
Invariants reference_invariants(const ReferenceState<T>& st) {
  const int d = st.d, r = st.r;
  Invariants inv;
  for (T v : st.mu) inv.all_finite = inv.all_finite && std::isfinite(v);
  for (T v : st.U) inv.all_finite = inv.all_finite && std::isfinite(v);
  for (T v : st.S) inv.all_finite = inv.all_finite && std::isfinite(v);
  inv.all_finite = inv.all_finite && std::isfinite(st.s2);
  double orth = 0;
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) {
      double g = 0;
      for (int i = 0; i < d; ++i) g += double(st.u(i, a)) * double(st.u(i, b));
      g -= (a == b) ? 1.0 : 0.0;
      orth += g * g;
    }
  inv.orthonormality_error = std::sqrt(orth);
  double asym = 0, norm = 0;
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) {
      const double diff = double(st.S[a * r + b]) - double(st.S[b * r + a]);
      asym += diff * diff;
      norm += double(st.S[a * r + b]) * double(st.S[a * r + b]);
    }
  inv.symmetry_error = norm > 0 ? std::sqrt(asym / norm) : 0.0;
  // The eigenvalues of S's symmetric part (S + S^T) / 2, the part its
  // quadratic form sees: S itself when it is symmetric, as it should be
  // (symmetry_error says how far it is).
  std::vector<double> Sd(st.S.size()), ev, vec;
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) Sd[a * r + b] = 0.5 * (double(st.S[a * r + b]) + double(st.S[b * r + a]));
  if (inv.all_finite) {
    host::symmetric_eigen(Sd, r, ev, vec);
    inv.s_max_eig = ev.front();
    inv.s_min_eig = ev.back();
    inv.s_condition = inv.s_min_eig > 0 ? inv.s_max_eig / inv.s_min_eig : std::numeric_limits<double>::infinity();
  }
  inv.s2 = double(st.s2);
  return inv;
}

// Basis-free comparison of two states (ALGORITHM.md section 3): the projector
// distance r - ||Ua^T Ub||_F^2 through r x r products, and
// ||Ua Sa Ua^T - Ub Sb Ub^T||_F through the R factor of [Ua Ub] (d x 2r,
// Householder): with [Ua Ub] = Q [Ra Rb], the difference is
// Q (Ra Sa Ra^T - Rb Sb Rb^T) Q^T, a 2r x 2r matrix formed entry by entry, so
// the distance is accurate to rounding of ||S|| (a difference of squared
// traces would only resolve sqrt(eps) ||S||). U need not be orthonormal.
struct StateDistance {
  double mu = 0;          // max |mu_a - mu_b|
  double s2 = 0;          // |s2_a - s2_b|
  double projector = 0;   // r - ||Ua^T Ub||_F^2
  double covariance = 0;  // ||Ua Sa Ua^T - Ub Sb Ub^T||_F
};

template <class TA, class TB>
StateDistance reference_distance(const ReferenceState<TA>& a, const ReferenceState<TB>& b) {
  const int d = a.d, r = a.r;
  StateDistance out;
  for (int i = 0; i < d; ++i) out.mu = std::max(out.mu, std::fabs(double(a.mu[i]) - double(b.mu[i])));
  out.s2 = std::fabs(double(a.s2) - double(b.s2));
  std::vector<double> P(std::size_t(r) * r, 0.0);  // Ua^T Ub
  for (int i = 0; i < d; ++i)
    for (int x = 0; x < r; ++x)
      for (int y = 0; y < r; ++y) P[x * r + y] += double(a.u(i, x)) * double(b.u(i, y));
  double pf = 0;
  for (double v : P) pf += v * v;
  out.projector = double(r) - pf;
  const int n = 2 * r;
  std::vector<double> W(std::size_t(d) * n);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < r; ++j) {
      W[std::size_t(i) * n + j] = double(a.u(i, j));
      W[std::size_t(i) * n + r + j] = double(b.u(i, j));
    }
  const int k = std::min(d, n);
  const std::vector<double> R = host::householder_r(W, d, n);  // k x n
  // C = Ra Sa Ra^T - Rb Sb Rb^T (k x k).
  auto rsr = [&](const auto& st, int col0) {
    std::vector<double> RS(std::size_t(k) * r, 0.0), out_m(std::size_t(k) * k, 0.0);
    for (int i = 0; i < k; ++i)
      for (int y = 0; y < r; ++y)
        for (int x = 0; x < r; ++x)
          RS[std::size_t(i) * r + y] += R[std::size_t(i) * n + col0 + x] * double(st.S[x * r + y]);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j)
        for (int y = 0; y < r; ++y)
          out_m[std::size_t(i) * k + j] += RS[std::size_t(i) * r + y] * R[std::size_t(j) * n + col0 + y];
    return out_m;
  };
  const std::vector<double> Ca = rsr(a, 0), Cb = rsr(b, r);
  double sq = 0;
  for (std::size_t e = 0; e < Ca.size(); ++e) sq += (Ca[e] - Cb[e]) * (Ca[e] - Cb[e]);
  out.covariance = std::sqrt(sq);
  return out;
}

}  // namespace mosaic
