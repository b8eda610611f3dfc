// ALGORITHM.md section 9 (../shared/ALGORITHM-9-segments.md): the parts of
// parallel-in-time segments that do not depend on who steps the segments --
// the options of 9.1 and their resolution, the partition of 9.2, the
// boundary certificate of 9.4 (four basis-free distances, in double) and the
// gauge rotation of 9.6. The host reference (reference_segments.hpp) and the
// engine's driver both use these, so a boundary is judged by one formula.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"

namespace mosaic {

// 9.1's deck keys, kAuto where the spec has `auto`.
struct SegmentParams {
  int segments = 1;                       // time_segments, P
  std::int64_t warmup = kAuto;            // segment_warmup, W
  InitMode warmup_init = InitMode::data;  // segment_warmup_init
  double tolerance = kAuto;               // segment_tolerance (kAuto: 1e-12 in double, none in float)
  int max_passes = kAuto;                 // segment_max_passes (kAuto: P)
  bool gauge_carry = true;                // segment_gauge: carry (false: free)
};

// 9.1's `auto` warm-up: ceil(1.3 ln(1/tol) / min(eta_mu, eta_S, eta_s,
// eta_U)), the steps two trajectories need to come within tol at the
// slowest of the rates (9.10), with a 30% margin.
// Rates so slow that it passes 2^62 steps are refused (it would not fit
// int64, and no stream is that long).
inline std::int64_t auto_segment_warmup(const MosaicParams& p, double tol) {
  const double slowest = std::min(std::min(p.eta_mu, p.eta_S), std::min(p.eta_s, p.eta_U));
  const double w = std::ceil(1.3 * std::log(1.0 / tol) / slowest);
  if (!(w <= 4.6e18))
    throw std::invalid_argument("segment_warmup: auto would be " + std::to_string(w) + " steps (the slowest rate is " +
                                std::to_string(slowest) + "); set it");
  return std::int64_t(w);
}

// 9.1's options with every `auto` resolved for a run of dtype T. A float run
// with P > 1 and no tolerance is refused: 9.8 has no float default (its
// two-run floor was not measured).
struct ResolvedSegments {
  int segments = 1;
  std::int64_t warmup = 0;
  InitMode warmup_init = InitMode::data;
  double tolerance = 1e-12;
  int max_passes = 1;
  bool gauge_carry = true;
};

template <class T>
ResolvedSegments resolve_segments(const SegmentParams& sp, const MosaicParams& p) {
  if (sp.segments < 1) throw std::invalid_argument("time_segments must be >= 1, got " + std::to_string(sp.segments));
  ResolvedSegments out;
  out.segments = sp.segments;
  out.warmup_init = sp.warmup_init;
  out.gauge_carry = sp.gauge_carry;
  if (sp.tolerance == kAuto) {
    if (!std::is_same<T, double>::value && sp.segments > 1)
      throw std::invalid_argument(
          "segment_tolerance has no default in float (ALGORITHM.md 9.8: the float two-run floor was not "
          "measured); set it, at least 100 times that floor, or run in double");
    out.tolerance = 1e-12;
  } else if (!(sp.tolerance > 0.0 && sp.tolerance < 1.0)) {
    // (The distances are relative: 1 certifies states with nothing in common.)
    throw std::invalid_argument("segment_tolerance must be in (0, 1), got " + std::to_string(sp.tolerance));
  } else {
    out.tolerance = sp.tolerance;
  }
  if (sp.warmup != kAuto && sp.warmup < 0)
    throw std::invalid_argument("segment_warmup must be >= 0 or auto, got " + std::to_string(sp.warmup));
  out.warmup = sp.warmup == kAuto ? auto_segment_warmup(p, out.tolerance) : sp.warmup;
  if (sp.max_passes != kAuto && sp.max_passes < 1)
    throw std::invalid_argument("segment_max_passes must be >= 1 or auto, got " + std::to_string(sp.max_passes));
  out.max_passes = sp.max_passes == kAuto ? sp.segments : sp.max_passes;
  return out;
}

// 9.2: segment q covers steps b_q + 1 .. b_{q+1}, b_q = floor(q T / P).
inline std::int64_t segment_begin(int q, std::int64_t T, int P) {
  // q T can pass 2^63 only for T beyond 2^59 steps at P = 16; the quotient
  // and remainder form is exact for every T.
  return (T / P) * q + (T % P) * q / P;
}

// 9.4's boundary mismatch: four basis-free distances of a worker's start
// state Z to its predecessor's end state E, in double whatever the dtype.
struct BoundaryMismatch {
  double mu = 0;   // max |mu_Z - mu_E| / sqrt(trace(Sigma_E) / d)
  double s2 = 0;   // |s2_Z - s2_E| / s2_E
  double cov = 0;  // ||U_Z S_Z U_Z^T - U_E S_E U_E^T||_F / ||S_E||_F, without cancellation
  double ang = 0;  // ||(I - Q Q^T) U_Z||_F, Q R = U_E
  // delta_q: the largest of the four; NaN (never certified) if any is not a number.
  double delta() const {
    for (double v : {mu, s2, cov, ang})
      if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
    return std::max(std::max(mu, s2), std::max(cov, ang));
  }
  // f_q of 9.4: a non-finite delta is false.
  bool within(double tol) const { return delta() <= tol; }
};

namespace detail {
// Row-major products of small matrices in double.
inline std::vector<double> small_product(const std::vector<double>& A, const std::vector<double>& B, int m, int k,
                                         int n) {
  std::vector<double> C(std::size_t(m) * std::size_t(n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int l = 0; l < k; ++l)
      for (int j = 0; j < n; ++j) C[std::size_t(i) * n + j] += A[std::size_t(i) * k + l] * B[std::size_t(l) * n + j];
  return C;
}
inline std::vector<double> small_transpose(const std::vector<double>& A, int m, int n) {
  std::vector<double> At(std::size_t(m) * std::size_t(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) At[std::size_t(j) * m + i] = A[std::size_t(i) * n + j];
  return At;
}
template <class T>
std::vector<double> widened_to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}
}  // namespace detail

template <class T>
BoundaryMismatch boundary_mismatch(const ReferenceState<T>& Z, const ReferenceState<T>& E) {
  const int d = E.d, r = E.r;
  if (r < 1 || r >= d || Z.d != d || Z.r != r)
    throw std::invalid_argument("boundary_mismatch: states of different or invalid shapes");
  BoundaryMismatch m;
  const std::vector<double> UE = detail::widened_to_double(E.U), UZ = detail::widened_to_double(Z.U),
                            SE = detail::widened_to_double(E.S), SZ = detail::widened_to_double(Z.S);
  for (double v : UE)
    if (!std::isfinite(v)) return BoundaryMismatch{NAN, NAN, NAN, NAN};
  // mu in units of the modelled per-coordinate spread.
  double trace_SE = 0;
  for (int j = 0; j < r; ++j) trace_SE += SE[std::size_t(j) * r + j];
  const double spread = std::sqrt((trace_SE + double(d - r) * double(E.s2)) / double(d));
  double mu_gap = 0;
  for (int i = 0; i < d; ++i) {
    const double g = std::fabs(double(Z.mu[i]) - double(E.mu[i]));
    mu_gap = std::isnan(g) ? g : std::max(mu_gap, g);
  }
  m.mu = mu_gap / spread;
  m.s2 = std::fabs(double(Z.s2) - double(E.s2)) / double(E.s2);
  // Q R = U_E (modified Gram-Schmidt, reorthogonalized: orthonormal to
  // rounding), R = Q^T U_E, so that Q R = U_E to rounding as well.
  std::vector<double> Q = UE;
  try {
    host::orthonormalize_columns(Q, d, r);
  } catch (const std::runtime_error&) {
    return BoundaryMismatch{NAN, NAN, NAN, NAN};  // a frame without r directions certifies nothing
  }
  const std::vector<double> Qt = detail::small_transpose(Q, d, r);
  const std::vector<double> R = detail::small_product(Qt, UE, r, d, r);
  const std::vector<double> P = detail::small_product(Qt, UZ, r, d, r);  // Q^T U_Z
  // E = U_Z - Q P, the part of U_Z outside span(U_E); ang = ||E||_F, F = E^T E.
  std::vector<double> Eo = UZ;
  const std::vector<double> QP = detail::small_product(Q, P, d, r, r);
  double ang2 = 0;
  for (std::size_t e = 0; e < Eo.size(); ++e) {
    Eo[e] -= QP[e];
    ang2 += Eo[e] * Eo[e];
  }
  m.ang = std::sqrt(ang2);
  const std::vector<double> F = detail::small_product(detail::small_transpose(Eo, d, r), Eo, r, d, r);
  // cov^2 = ||Sa - P S_Z P^T||^2 + 2 tr(P S_Z F S_Z P^T) + tr(S_Z F S_Z F),
  // Sa = R S_E R^T: the three mutually orthogonal parts of the difference
  // (inside span(Q), across, outside), each formed entry by entry.
  const std::vector<double> Sa =
      detail::small_product(detail::small_product(R, SE, r, r, r), detail::small_transpose(R, r, r), r, r, r);
  const std::vector<double> PS = detail::small_product(P, SZ, r, r, r);
  const std::vector<double> PSPt = detail::small_product(PS, detail::small_transpose(P, r, r), r, r, r);
  double inside = 0;
  for (std::size_t e = 0; e < Sa.size(); ++e) inside += (Sa[e] - PSPt[e]) * (Sa[e] - PSPt[e]);
  const std::vector<double> PSF = detail::small_product(PS, F, r, r, r);
  double across = 0;  // tr(PS F (PS)^T)
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) across += PSF[std::size_t(i) * r + j] * PS[std::size_t(i) * r + j];
  const std::vector<double> SF = detail::small_product(SZ, F, r, r, r);
  double outside = 0;  // tr(SF SF)
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) outside += SF[std::size_t(i) * r + j] * SF[std::size_t(j) * r + i];
  double norm_SE = 0;
  for (double v : SE) norm_SE += v * v;
  m.cov = std::sqrt(std::max(inside + 2 * across + outside, 0.0)) / std::sqrt(norm_SE);
  return m;
}

// 9.6: R = polar(U_Z^T U_E) = W V^T for U_Z^T U_E = W Sigma V^T (r x r,
// row-major), through the eigen-decomposition M^T M = V Sigma^2 V^T:
// R = M V Sigma^-1 V^T. Used only on certified boundaries, where M is
// orthogonal to within tol, so Sigma is 1 to within tol and the division is
// well conditioned. Throws if M is singular (the frames are not comparable).
template <class T>
std::vector<double> procrustes_rotation(const ReferenceState<T>& Z, const ReferenceState<T>& E) {
  const int d = E.d, r = E.r;
  const std::vector<double> M = detail::small_product(detail::small_transpose(detail::widened_to_double(Z.U), d, r),
                                                      detail::widened_to_double(E.U), r, d, r);
  std::vector<double> values, V;
  host::symmetric_eigen(detail::small_product(detail::small_transpose(M, r, r), M, r, r, r), r, values, V);
  std::vector<double> VS(std::size_t(r) * r);  // V Sigma^-1
  for (int j = 0; j < r; ++j) {
    if (!(values[j] > 0.0))
      throw std::runtime_error("procrustes_rotation: U_Z^T U_E is singular (the frames span different subspaces)");
    const double inv = 1.0 / std::sqrt(values[j]);
    for (int i = 0; i < r; ++i) VS[std::size_t(i) * r + j] = V[std::size_t(i) * r + j] * inv;
  }
  return detail::small_product(M, detail::small_product(VS, detail::small_transpose(V, r, r), r, r, r), r, r, r);
}

// (U G, G^T S G): a state mapped to another frame by the r x r matrix G
// (9.6's report in the sequential frame). The rest of the state is unchanged.
template <class T>
void apply_gauge(ReferenceState<T>& st, const std::vector<double>& G) {
  const int d = st.d, r = st.r;
  const std::vector<double> U = detail::small_product(detail::widened_to_double(st.U), G, d, r, r);
  const std::vector<double> S = detail::small_product(
      detail::small_product(detail::small_transpose(G, r, r), detail::widened_to_double(st.S), r, r, r), G, r, r, r);
  for (std::size_t e = 0; e < U.size(); ++e) st.U[e] = T(U[e]);
  for (std::size_t e = 0; e < S.size(); ++e) st.S[e] = T(S[e]);
}

}  // namespace mosaic
