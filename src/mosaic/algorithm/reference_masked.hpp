// The host reference of ../shared/ALGORITHM.md sections 7 (missing data) and
// 8 (heterogeneous noise): the masked step of 7.3 with its skipped-step rules
// (7.5), the `seen` rule and the masked init: data (7.6), the ablations and
// baselines of 7.9 (`project`, `geodesic`, `drop`, `zero_fill`), and the
// whitened diagonal-noise model with its re-whitening (8.2-8.4). Like
// reference.hpp it is the oracle, written to be checked, not to be fast; it
// takes section 2's shared parts from there (detail::clamped_rate,
// covariance_update, subspace_direction, rotation_angle, transport), so that
// with nothing missing a masked step is section 2 bit for bit (7.2).
//
// A missing entry is a NaN of the sample; +-Inf stays an input error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"

namespace mosaic {

// A stream's state with what sections 7 and 8 add to section 1's.
template <class T>
struct MaskedReferenceState : ReferenceState<T> {
  // 7.6: seen[j] == 0 while coordinate j has never been observed; empty once
  // every coordinate has been (and from a start without missing entries).
  std::vector<std::uint8_t> seen;
  std::int64_t skipped_steps = 0;    // 7.5 (n <= r, C not positive definite, the tr(C^-1) guard)
  std::int64_t dropped_samples = 0;  // missing: drop
  std::int64_t missing_entries = 0;  // NaN entries of the samples stepped
  std::int64_t total_entries = 0;    // entries of the samples stepped
  // Section 8 (noise: diagonal; all empty for isotropic noise).
  std::vector<T> psi;                // d: the noise profile (geometric mean 1 over re-whitened coordinates)
  std::vector<T> leverage;           // d: l_j = ||U_j||^2 of the frame at the last re-whitening
  std::vector<double> residuals;     // d: the accumulators a_j of 8.3 part 3
  std::vector<std::int64_t> counts;  // d: cnt_j
  std::int64_t rewhitenings = 0;

  MaskedReferenceState() = default;
  MaskedReferenceState(ReferenceState<T>&& base, const MosaicParams& p) : ReferenceState<T>(std::move(base)) {
    if (p.noise == NoiseModel::diagonal) {
      const int d = this->d, r = this->r;
      psi.assign(std::size_t(d), T(1));
      leverage.assign(std::size_t(d), T(0));
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < r; ++j) leverage[i] += this->u(i, j) * this->u(i, j);
      residuals.assign(std::size_t(d), 0.0);
      counts.assign(std::size_t(d), 0);
    }
  }
  bool diagonal_noise() const { return !psi.empty(); }
  // Coordinates not yet observed (7.10).
  int unseen() const { return int(std::count(seen.begin(), seen.end(), std::uint8_t(0))); }
};

// What one masked step did.
struct MaskedStepInfo : StepInfo {
  int observed = 0;       // n = |O| after the seen rule
  bool skipped = false;   // 7.5: parts 1-8 not performed (the mean moved)
  bool dropped = false;   // missing: drop: nothing changed
  double trace_cinv = 0;  // tr(C^-1) (r without missing entries)
};

namespace detail {

// The observed and missing coordinates of one sample (ascending).
struct Mask {
  std::vector<int> observed, missing;
};

// 7.3 part 1 on the centred (and, with diagonal noise, whitened) sample y:
// entries outside `observed` are not read.
template <class T>
struct ObservedFit {
  bool ok = false;      // false: the step is skipped (C not positive definite, or the tr(C^-1) guard)
  std::vector<T> K;     // r x r: C^-1 - I (exactly 0 when nothing is missing)
  T trace_cinv = 0;     // r + tr(K)
  std::vector<T> z_ls;  // r: C^-1 U_O^T y_O
  std::vector<T> e;     // d: the least-squares residual e_O, 0 on the missing rows
  T rho2 = 0;           // ||e_O||^2
  T yy = 0;             // ||y_O||^2
  double logdet_c = 0;  // log det C (section 4's likelihood on the observed rows)
};

template <class T>
ObservedFit<T> observed_fit(const ReferenceState<T>& st, const std::vector<T>& y, const Mask& mk,
                            const MosaicParams& p) {
  const int d = st.d, r = st.r;
  const std::size_t n = mk.observed.size(), m = mk.missing.size();
  ObservedFit<T> f;
  std::vector<T> b(r, T(0));
  for (const int i : mk.observed)
    for (int j = 0; j < r; ++j) b[j] += st.u(i, j) * y[i];
  // The observed Gram C = U_O^T U_O and N = I - C by the cheaper SYRK.
  std::vector<T> N(std::size_t(r) * r, T(0)), C(std::size_t(r) * r, T(0));
  const bool from_missing = m <= n;
  for (const int i : (from_missing ? mk.missing : mk.observed))
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) (from_missing ? N : C)[a * r + c] += st.u(i, a) * st.u(i, c);
  for (int a = 0; a < r; ++a)
    for (int c = 0; c < r; ++c) {
      const T id = a == c ? T(1) : T(0);
      if (from_missing) C[a * r + c] = id - N[a * r + c];
      else N[a * r + c] = id - C[a * r + c];
    }
  std::vector<T> LC;
  if (!host::cholesky(C, r, LC)) return f;
  f.logdet_c = logdet_from_factor(r, LC.data(), r);
  // Z = L_C^-1 N (forward substitution, column by column), K = N + Z^T Z.
  std::vector<T> Z(std::size_t(r) * r);
  for (int c = 0; c < r; ++c)
    for (int i = 0; i < r; ++i) {
      T v = N[i * r + c];
      for (int k = 0; k < i; ++k) v -= LC[i * r + k] * Z[k * r + c];
      Z[i * r + c] = v / LC[i * r + i];
    }
  f.K.assign(std::size_t(r) * r, T(0));
  for (int a = 0; a < r; ++a)
    for (int c = 0; c < r; ++c) {
      T v = 0;
      for (int k = 0; k < r; ++k) v += Z[k * r + a] * Z[k * r + c];
      f.K[a * r + c] = N[a * r + c] + v;
    }
  symmetrize(f.K, r);
  T trK = 0;
  for (int j = 0; j < r; ++j) trK += f.K[j * r + j];
  f.trace_cinv = T(r) + trK;
  // The guard protects C^-1's arithmetic where rows are missing (7.5); with
  // none, tr(C^-1) = r and the step is section 2's whatever the guard.
  if (m > 0 && !(f.trace_cinv <= T(p.missing_cond_max))) return f;
  f.z_ls.assign(std::size_t(r), T(0));
  for (int j = 0; j < r; ++j) {
    T kb = 0;
    for (int k = 0; k < r; ++k) kb += f.K[j * r + k] * b[k];
    f.z_ls[j] = b[j] + kb;
  }
  f.e.assign(std::size_t(d), T(0));
  for (const int i : mk.observed) {
    T uz = 0;
    for (int j = 0; j < r; ++j) uz += st.u(i, j) * f.z_ls[j];
    f.e[i] = y[i] - uz;
    f.rho2 += f.e[i] * f.e[i];
  }
  for (const int i : mk.observed) f.yy += y[i] * y[i];
  f.ok = true;
  return f;
}

// 7.3 part 2: the posterior of the frame coordinate given the observed rows
// (missing: posterior), or 7.9's least-squares coordinate (missing: project).
template <class T>
struct FramePosterior {
  std::vector<T> z;  // r: E[U^T y | y_O] (project: z_ls)
  std::vector<T> w;  // r: S^-1 z
  std::vector<T> P;  // r x r: Cov[U^T y | y_O] (project: 0)
  T q = 0;           // z^T w
  // Section 4: log det of the factored matrix (S + Delta; project: S) and
  // z_ls^T w (= z_ls^T (S + Delta)^-1 z_ls for the posterior).
  double logdet_sd = 0, zls_w = 0;
};

template <class T>
FramePosterior<T> frame_posterior(const std::vector<T>& S, T s2, const ObservedFit<T>& fit, int r,
                                  const MosaicParams& p, std::int64_t step) {
  FramePosterior<T> post;
  post.P.assign(std::size_t(r) * r, T(0));
  std::vector<T> L;
  if (p.missing == MissingMode::project) {
    if (!host::cholesky(S, r, L))
      throw NumericalBreakdown("reference_masked_step: S is not positive definite at step " + std::to_string(step));
    post.z = fit.z_ls;
    post.w = host::cholesky_solve(L, r, post.z);
  } else {
    std::vector<T> Delta(std::size_t(r) * r), SD(std::size_t(r) * r);
    for (std::size_t k = 0; k < Delta.size(); ++k) {
      Delta[k] = s2 * fit.K[k];
      SD[k] = S[k] + Delta[k];
    }
    if (!host::cholesky(SD, r, L))
      throw NumericalBreakdown("reference_masked_step: S + s2 K is not positive definite at step " +
                               std::to_string(step));
    post.w = host::cholesky_solve(L, r, fit.z_ls);
    post.z.resize(std::size_t(r));
    for (int j = 0; j < r; ++j) {
      T dw = 0;
      for (int k = 0; k < r; ++k) dw += Delta[j * r + k] * post.w[k];
      post.z[j] = fit.z_ls[j] - dw;
    }
    // P = Delta - Y^T Y, Y = L^-1 Delta.
    std::vector<T> Y(std::size_t(r) * r);
    for (int c = 0; c < r; ++c)
      for (int i = 0; i < r; ++i) {
        T v = Delta[i * r + c];
        for (int k = 0; k < i; ++k) v -= L[i * r + k] * Y[k * r + c];
        Y[i * r + c] = v / L[i * r + i];
      }
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) {
        T v = 0;
        for (int k = 0; k < r; ++k) v += Y[k * r + a] * Y[k * r + c];
        post.P[a * r + c] = Delta[a * r + c] - v;
      }
    symmetrize(post.P, r);
  }
  for (int j = 0; j < r; ++j) post.q += post.z[j] * post.w[j];
  post.logdet_sd = logdet_from_factor(r, L.data(), r);
  for (int j = 0; j < r; ++j) post.zls_w += double(fit.z_ls[j]) * double(post.w[j]);
  return post;
}

// Which coordinates of x are observed (finite and seen); throws for +-Inf,
// and for a NaN under missing: error (section 1's input error).
template <class T>
Mask sample_mask(const MaskedReferenceState<T>& st, const T* x, const MosaicParams& p, const char* what,
                 std::int64_t& nan_entries) {
  if (p.missing == MissingMode::error) require_finite(x, st.d, what);
  Mask mk;
  nan_entries = 0;
  for (int i = 0; i < st.d; ++i) {
    if (std::isinf(x[i]))
      throw std::invalid_argument(std::string(what) + ": infinite value at index " + std::to_string(i) +
                                  " (a missing entry is a NaN)");
    const bool nan = std::isnan(x[i]);
    nan_entries += nan ? 1 : 0;
    const bool seen = st.seen.empty() || st.seen[std::size_t(i)] != 0;
    (nan || !seen ? mk.missing : mk.observed).push_back(i);
  }
  return mk;
}

// 7.6's seen rule after a step: an unseen coordinate observed in x takes
// x_j as its mean; `seen` is dropped once every coordinate has been observed.
template <class T>
void mark_seen(MaskedReferenceState<T>& st, const T* x) {
  if (st.seen.empty()) return;
  for (int i = 0; i < st.d; ++i)
    if (st.seen[std::size_t(i)] == 0 && !std::isnan(x[i])) {
      st.mu[i] = x[i];
      st.seen[std::size_t(i)] = 1;
    }
  if (st.unseen() == 0) st.seen.clear();
}

}  // namespace detail

// 8.3 part 4: re-whiten (psi <- psi f, U <- diag(f)^-1/2 U orthonormalized
// by Cholesky-QR with S rotated consistently, leverages refreshed,
// accumulators cleared). The modelled signal covariance
// Psi^1/2 U S U^T Psi^1/2 does not change.
template <class T>
void reference_rewhiten(MaskedReferenceState<T>& st, const MosaicParams& p) {
  const int d = st.d, r = st.r;
  std::vector<double> f(std::size_t(d), 1.0);
  double log_sum = 0;
  int updated = 0;
  for (int i = 0; i < d; ++i)
    if (st.counts[i] >= p.rewhiten_min_count) {
      const double v = st.residuals[i] / double(st.counts[i]);
      f[i] = std::clamp(v, 1.0 / p.rewhiten_fmax, p.rewhiten_fmax);
      log_sum += std::log(f[i]);
      ++updated;
    }
  if (updated > 0) {
    const double gmean = std::exp(log_sum / updated);
    for (int i = 0; i < d; ++i)
      if (st.counts[i] >= p.rewhiten_min_count) f[i] /= gmean;
  }
  ReferenceState<T> scaled = st;
  for (int i = 0; i < d; ++i) {
    const T inv = T(1.0 / std::sqrt(f[i]));
    for (int j = 0; j < r; ++j) scaled.u(i, j) *= inv;
  }
  if (!detail::cholesky_qr(scaled))
    throw NumericalBreakdown("reference_rewhiten: the re-whitened frame U^T U is not positive definite");
  static_cast<ReferenceState<T>&>(st) = std::move(scaled);
  for (int i = 0; i < d; ++i) {
    st.psi[i] = T(double(st.psi[i]) * f[i]);
    T l = 0;
    for (int j = 0; j < r; ++j) l += st.u(i, j) * st.u(i, j);
    st.leverage[i] = l;
  }
  std::fill(st.residuals.begin(), st.residuals.end(), 0.0);
  std::fill(st.counts.begin(), st.counts.end(), std::int64_t(0));
  st.rewhitenings += 1;
}

// One step of sections 7-8 with sample x (length d, NaN = missing):
// section 2 when nothing is missing (bit for bit: 7.2), 7.3 otherwise
// (7.9's options by p.missing and p.missing_rotation), in whitened
// coordinates with noise: diagonal (8.3). Every call is a step of the
// stream (st.steps counts it, skipped or dropped). Throws
// std::invalid_argument for an infinite entry (or a NaN under missing:
// error) and NumericalBreakdown when the step cannot be completed with
// finite numbers; in both cases the state is unchanged.
namespace detail {
// Section 4 on the observed rows O = mk.observed after part 1, the parts
// every mode shares: n = |O|, ||y_O||^2, rho2 and log det C of the fit, the
// noise variance s2 before the step, the profile's log-determinant on O
// (the engine's MaskedStepFunctor::observed_sample).
template <class T>
PrequentialSample observed_sample(const MaskedReferenceState<T>& st, const Mask& mk, const ObservedFit<T>& fit, T s2) {
  PrequentialSample preq;
  preq.n = int(mk.observed.size());
  preq.r = st.r;
  preq.yy = double(fit.yy);
  preq.rho2 = double(fit.rho2);
  preq.s2 = double(s2);
  preq.logdet_c = fit.logdet_c;
  if (st.diagonal_noise())
    for (const int i : mk.observed) preq.logdet_psi += std::log(double(st.psi[i]));
  return preq;
}

// Section 4 on the observed rows of a sample with missing entries for a
// mode whose step does not factor S + s2 K (project, zero_fill, drop): the
// state before the step scored on the samples the posterior scores (n >= r
// + 1 and a fit), from a factor of S + s2 K of its own. `y`: centred on O
// (whitened with diagonal noise), 0 on M. n = 0 (not evaluated) otherwise.
template <class T>
PrequentialSample gapped_evaluation(const MaskedReferenceState<T>& st, const std::vector<T>& y, const Mask& mk,
                                    const MosaicParams& p) {
  const int r = st.r, n = int(mk.observed.size());
  if (n < r + 1) return {};
  const ObservedFit<T> fit = observed_fit(st, y, mk, p);
  if (!fit.ok) return {};
  std::vector<T> SD(st.S), L;
  for (std::size_t k = 0; k < SD.size(); ++k) SD[k] += st.s2 * fit.K[k];
  if (!host::cholesky(SD, r, L)) return {};
  const std::vector<T> w = host::cholesky_solve(L, r, fit.z_ls);
  PrequentialSample preq = observed_sample(st, mk, fit, st.s2);
  for (int j = 0; j < r; ++j) preq.quad += double(fit.z_ls[j]) * double(w[j]);
  preq.logdet_sd = logdet_from_factor(r, L.data(), r);
  return preq;
}
}  // namespace detail

template <class T>
MaskedStepInfo reference_masked_step(MaskedReferenceState<T>& st, const T* x, const MosaicParams& p) {
  const int d = st.d, r = st.r;
  const char* what = "reference_masked_step: sample";
  std::int64_t nan_entries = 0;
  detail::Mask mk = detail::sample_mask(st, x, p, what, nan_entries);
  MaskedStepInfo info;
  auto count_step = [&]() {
    st.missing_entries += nan_entries;
    st.total_entries += d;
    st.steps += 1;
  };
  // 8.3 part 4 every rewhiten_every steps, skipped and dropped ones included.
  auto rewhiten_when_due = [&]() {
    if (st.diagonal_noise() && st.steps % p.rewhiten_every == 0) reference_rewhiten(st, p);
  };
  // Centred (data units), 0 on M.
  std::vector<T> y(std::size_t(d), T(0));
  for (const int i : mk.observed) y[i] = x[i] - st.mu[i];
  const bool complete = mk.missing.empty();
  // A gapped sample scored apart from the step (added once the step is done).
  PrequentialSample gapped;
  if (!complete && p.missing != MissingMode::posterior && p.missing != MissingMode::error) {
    std::vector<T> yw(y);
    if (st.diagonal_noise())
      for (const int i : mk.observed) yw[i] /= std::sqrt(st.psi[i]);
    gapped = detail::gapped_evaluation(st, yw, mk, p);
  }
  if (p.missing == MissingMode::drop && !complete) {
    if (gapped.n > 0) gapped.add_to(st.prequential.data());
    info.dropped = true;
    info.observed = int(mk.observed.size());
    detail::mark_seen(st, x);  // the seen rule still records what the sample observes
    st.dropped_samples += 1;
    count_step();
    rewhiten_when_due();
    return info;
  }
  // zero_fill puts x_M := mu_M, i.e. y_M = 0, and steps as if everything
  // were observed.
  if (p.missing == MissingMode::zero_fill) {
    mk.observed.resize(std::size_t(d));
    for (int i = 0; i < d; ++i) mk.observed[i] = i;
    mk.missing.clear();
  }
  const int n = int(mk.observed.size());
  info.observed = n;
  std::vector<T> munew(st.mu);  // part 9: the observed rows' mean (data units)
  for (const int i : mk.observed)
    if (!std::isnan(x[i])) munew[i] = st.mu[i] + T(p.eta_mu) * (x[i] - st.mu[i]);

  auto skip = [&]() {
    if (!detail::all_finite(T(0), {&munew}))
      throw NumericalBreakdown("reference_masked_step: the mean overflows at step " + std::to_string(st.steps));
    st.mu.swap(munew);
    detail::mark_seen(st, x);
    st.skipped_steps += 1;
    info.skipped = true;
    count_step();
    rewhiten_when_due();
    return info;
  };
  if (n < r + 1) return skip();
  if (st.diagonal_noise())  // 8.3 part 1: whitened coordinates
    for (const int i : mk.observed) y[i] /= std::sqrt(st.psi[i]);

  // Part 1.
  const detail::ObservedFit<T> fit = detail::observed_fit(st, y, mk, p);
  info.trace_cinv = double(fit.trace_cinv);
  if (!fit.ok) return skip();
  const T rho = std::sqrt(fit.rho2);

  // Part 2.
  const detail::FramePosterior<T> post = detail::frame_posterior(st.S, st.s2, fit, r, p, st.steps);

  // Parts 3-5: section 2's, with P added to the covariance target.
  T ell = 0;
  const T eta = detail::clamped_rate(post.q, r, p, ell, info.clamped);
  std::vector<T> Snew = detail::covariance_update(st.S, post.z, post.q, eta, r, p);
  const T p_weight = p.covariance_update == CovarianceUpdate::exact ? -std::expm1(-eta) : eta;
  for (std::size_t k = 0; k < Snew.size(); ++k) Snew[k] += p_weight * post.P[k];
  const std::vector<T> g = detail::subspace_direction(st.S, st.s2, post.z, post.w, r, p);

  // Parts 6-7.
  std::vector<T> Unew(st.U);
  T theta = 0;
  const bool observed_rotation = p.missing_rotation == MissingRotation::observed;
  std::vector<T> v(g);  // observed: C^-1 g = g + K g
  T beta2 = detail::squared_norm(g);
  if (observed_rotation) {
    T gKg = 0;
    for (int a = 0; a < r; ++a) {
      T kg = 0;
      for (int c = 0; c < r; ++c) kg += fit.K[a * r + c] * g[c];
      v[a] = g[a] + kg;
      gKg += g[a] * kg;
    }
    beta2 = beta2 + gKg;
  }
  const T beta = std::sqrt(beta2);
  if (rho * beta > detail::rotation_tiny<T>()) {
    const detail::RotationAngle<T> a = detail::rotation_angle(T(p.eta_U), rho, beta);
    theta = a.theta;
    std::vector<T> gh(r), vh(r);
    for (int j = 0; j < r; ++j) {
      gh[j] = g[j] / beta;
      vh[j] = v[j] / beta;
    }
    // observed: the rows of O only; geodesic: every row, with e_M = 0.
    auto rotate_row = [&](int i) {
      T uvh = 0;
      for (int j = 0; j < r; ++j) uvh += st.u(i, j) * vh[j];
      const T coef = a.cm1 * uvh + a.sn * fit.e[i] / rho;
      for (int j = 0; j < r; ++j) Unew[std::size_t(i) * r + j] += coef * gh[j];
    };
    for (const int i : mk.observed) rotate_row(i);
    if (!observed_rotation)
      for (const int i : mk.missing) rotate_row(i);
    T extra = 0;  // observed: s2 (1 - cos)^2 gh^T K gh
    if (observed_rotation) {
      T ghKgh = 0;
      for (int c = 0; c < r; ++c) {
        T kgh = 0;
        for (int k = 0; k < r; ++k) kgh += fit.K[c * r + k] * gh[k];
        ghKgh += gh[c] * kgh;
      }
      extra = st.s2 * a.cm1 * a.cm1 * ghKgh;
    }
    detail::transport(Snew, gh, a, st.s2, extra, r);
  }
  detail::symmetrize(Snew, r);

  // Part 8 (n - r degrees of freedom).
  const T s2_old = st.s2;
  const T s2new = (1 - T(p.eta_s)) * st.s2 + T(p.eta_s) * fit.rho2 / T(n - r);

  if (!detail::all_finite(s2new, {&Snew, &Unew, &munew}))
    throw NumericalBreakdown("reference_masked_step: the step from sample " + std::to_string(st.steps) +
                             " overflows to a non-finite state (q = " + std::to_string(double(post.q)) +
                             ", rho = " + std::to_string(double(rho)) + ")");
  st.U.swap(Unew);
  st.S.swap(Snew);
  st.s2 = s2new;
  st.mu.swap(munew);
  detail::mark_seen(st, x);

  // 8.3 part 3: the whitened residuals, weighted by the frozen leverages.
  if (st.diagonal_noise()) {
    double trN = 0;  // tr N = sum over the missing rows of l_j (0 when nothing is missing)
    for (const int i : mk.missing) trN += double(st.leverage[i]);
    const double dof = double(n - r), kappa = dof / (dof + trN);
    for (const int i : mk.observed) {
      const double h = 1.0 - double(st.leverage[i]);
      if (!(h >= p.leverage_floor)) continue;
      st.residuals[i] += double(fit.e[i]) * double(fit.e[i]) / (h * kappa * double(s2_old));
      st.counts[i] += 1;
    }
  }
  // Section 4's prequential accuracy on the observed rows: for complete
  // samples and the posterior from the step's own factor (that of S +
  // Delta), for the other modes' gapped samples from gapped_evaluation;
  // with diagonal noise in data units (the profile's log-determinant on
  // those rows; the whitened residual fraction).
  if (gapped.n > 0) {
    gapped.add_to(st.prequential.data());
  } else if (complete || p.missing == MissingMode::posterior) {
    PrequentialSample preq = detail::observed_sample(st, mk, fit, s2_old);
    preq.quad = post.zls_w;
    preq.logdet_sd = post.logdet_sd;
    preq.add_to(st.prequential.data());
  }
  count_step();
  detail::finish_step(st, p, info, post.q, ell, eta, rho, theta);
  rewhiten_when_due();
  return info;
}

namespace detail {

// 7.6 on n0 samples with missing entries (computed in double, as section 3):
// the observed means, the zero-filled centred block through section 3's
// frame, S = diag(lambda) / pbar^2 and s2 from the least-squares residuals of
// the init samples that pass 7.5 with this frame. Called on a block without
// missing entries it is section 3 to rounding (s2 then comes from the
// residuals instead of the trailing eigenvalues: the same sum in exact
// arithmetic).
template <class T>
MaskedReferenceState<T> init_data_masked(const T* X, int n0, int d, int r, const MosaicParams& p) {
  auto x = [&](int k, int i) { return double(X[std::size_t(k) * d + i]); };
  ReferenceState<double> st(d, r);
  std::vector<int> nj(std::size_t(d), 0);
  double observed_total = 0, raw2 = 0;
  for (int k = 0; k < n0; ++k)
    for (int i = 0; i < d; ++i)
      if (!std::isnan(x(k, i))) {
        st.mu[i] += x(k, i);
        nj[std::size_t(i)] += 1;
        observed_total += 1;
        raw2 += x(k, i) * x(k, i);
      }
  raw2 /= double(n0);
  for (int i = 0; i < d; ++i) st.mu[i] = nj[std::size_t(i)] > 0 ? st.mu[i] / double(nj[std::size_t(i)]) : 0.0;
  std::vector<double> Y(std::size_t(n0) * d, 0.0);
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < n0; ++k)
      if (!std::isnan(x(k, i))) Y[std::size_t(i) * n0 + k] = x(k, i) - st.mu[i];
  const std::vector<double> lambda = init_frame<T>(Y, n0, d, r, raw2, st);
  const double pbar = observed_total / (double(n0) * double(d));
  for (int j = 0; j < r; ++j) st.S[j * r + j] = lambda[j] / (pbar * pbar);
  // s2 from the residuals of the samples that pass 7.5 with this frame.
  double e2 = 0, dof = 0;
  for (int k = 0; k < n0; ++k) {
    Mask mk;
    std::vector<double> y(std::size_t(d), 0.0);
    for (int i = 0; i < d; ++i) {
      const bool obs = !std::isnan(x(k, i));
      (obs ? mk.observed : mk.missing).push_back(i);
      if (obs) y[i] = x(k, i) - st.mu[i];
    }
    if (int(mk.observed.size()) < r + 1) continue;
    const ObservedFit<double> fit = observed_fit(st, y, mk, p);
    if (!fit.ok) continue;
    e2 += fit.rho2;
    dof += double(mk.observed.size()) - r;
  }
  double lambda_sum = 0, tail = 0;
  for (int j = 0; j < r; ++j) lambda_sum += lambda[j];
  for (int j = r; j < n0; ++j) tail += std::max(lambda[j], 0.0);
  const double s2 = dof > 0 ? e2 / dof : tail / (pbar * double(d - r));
  st.s2 = std::max(s2, 1e-6 * lambda_sum / double(r) / (pbar * pbar));
  MaskedReferenceState<T> out(round_start<T>(std::move(st), lambda), p);
  if (std::find(nj.begin(), nj.end(), 0) != nj.end()) {
    out.seen.resize(std::size_t(d));
    for (int i = 0; i < d; ++i) out.seen[std::size_t(i)] = nj[std::size_t(i)] > 0 ? 1 : 0;
  }
  return out;
}

}  // namespace detail

// init: data with missing entries (7.6): section 3 verbatim when the n0
// samples have none, 7.6 otherwise. Throws as reference_init_data does (an
// infinite entry, or a NaN under missing: error, is an input error).
template <class T>
MaskedReferenceState<T> reference_init_data_masked(const T* X, int n0, int d, int r, const MosaicParams& p) {
  p.validate(d, r);
  detail::require_init_samples(n0, r);
  bool any_nan = false;
  for (std::size_t k = 0; k < std::size_t(n0) * d; ++k) {
    if (std::isinf(X[k]))
      throw std::invalid_argument("init: data samples: infinite value at index " + std::to_string(k) +
                                  " (a missing entry is a NaN)");
    any_nan = any_nan || std::isnan(X[k]);
  }
  if (!any_nan || p.missing == MissingMode::error)
    return MaskedReferenceState<T>(reference_init_data(X, n0, d, r, p), p);
  return detail::init_data_masked(X, n0, d, r, p);
}

// Section 3's growing window over 7.6's start (the same rule on the
// zero-filled block): reference_init_data_grown's window and limits.
template <class T, class Window>
GrownInit<MaskedReferenceState<T>> reference_init_data_masked_grown(const Window& window, std::int64_t available, int d,
                                                                    int r, const MosaicParams& p) {
  p.validate(d, r);
  return detail::grow_init_window(
      [&](int m) { return reference_init_data_masked(static_cast<const T*>(window(m)), m, d, r, p); }, available, r, p);
}

// 8.4 reporting, in data coordinates.
// The noise variance of each coordinate, s2 psi_j (s2 with isotropic noise).
template <class T>
std::vector<double> reference_noise_variances(const MaskedReferenceState<T>& st) {
  std::vector<double> v(std::size_t(st.d), double(st.s2));
  if (st.diagonal_noise())
    for (int i = 0; i < st.d; ++i) v[i] *= double(st.psi[i]);
  return v;
}

// The normalized projector distance 1 - ||B^T V||_F^2 / r of two
// orthonormal d x r bases (row-major): 0 for the same subspace.
inline double basis_projector_distance(const std::vector<double>& B, const std::vector<double>& V, int d, int r) {
  double f = 0;
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) {
      double v = 0;
      for (int i = 0; i < d; ++i) v += B[std::size_t(i) * r + a] * V[std::size_t(i) * r + b];
      f += v * v;
    }
  return 1.0 - f / r;
}

// An orthonormal basis of span(Psi^1/2 U) (d x r, row-major, double).
template <class T>
std::vector<double> reference_data_basis(const MaskedReferenceState<T>& st) {
  const int d = st.d, r = st.r;
  std::vector<double> B(std::size_t(d) * r);
  for (int i = 0; i < d; ++i) {
    const double s = st.diagonal_noise() ? std::sqrt(double(st.psi[i])) : 1.0;
    for (int j = 0; j < r; ++j) B[std::size_t(i) * r + j] = s * double(st.u(i, j));
  }
  host::orthonormalize_columns(B, d, r);
  return B;
}

// The debiased signal spectrum (descending): the eigenvalues of
// Psi^1/2 U (S - s2 I)_+ U^T Psi^1/2, i.e. of B^T B with
// B = Psi^1/2 U Q_S (Lambda_S - s2)_+^1/2 (section 4's max(eig(S) - s2, 0)
// when psi = 1 and U is orthonormal).
template <class T>
std::vector<double> reference_debiased_spectrum(const MaskedReferenceState<T>& st) {
  const int d = st.d, r = st.r;
  std::vector<double> S(st.S.begin(), st.S.end()), ls, Q;
  host::symmetric_eigen(S, r, ls, Q);
  std::vector<double> B(std::size_t(d) * r, 0.0);
  for (int i = 0; i < d; ++i) {
    const double s = st.diagonal_noise() ? std::sqrt(double(st.psi[i])) : 1.0;
    for (int c = 0; c < r; ++c) {
      double v = 0;
      for (int k = 0; k < r; ++k) v += double(st.u(i, k)) * Q[k * r + c];
      B[std::size_t(i) * r + c] = s * v * std::sqrt(std::max(ls[c] - double(st.s2), 0.0));
    }
  }
  std::vector<double> G(std::size_t(r) * r, 0.0), ev, vec;
  for (int i = 0; i < d; ++i)
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) G[a * r + c] += B[std::size_t(i) * r + a] * B[std::size_t(i) * r + c];
  host::symmetric_eigen(G, r, ev, vec);
  return ev;
}

}  // namespace mosaic
