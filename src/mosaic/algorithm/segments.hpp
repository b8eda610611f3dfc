// ALGORITHM.md section 9 (../shared/ALGORITHM-9-segments.md): the parts of
// parallel-in-time segments that do not depend on who steps the segments --
// the options of 9.1 and their resolution, the partition of 9.2, the
// boundary certificate of 9.4 (four basis-free distances, in double) and the
// gauge rotation of 9.6. The host reference (reference_segments.hpp) and the
// engine's driver both use these, so a boundary is judged by one formula.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// One stream of a segmented run: its id, T of 9.2 (its section-2 steps)
// and the row of its data that step 1 consumes (n0 of 9.2: the samples its
// init consumed, section 3's window included).
struct SegmentedStream {
  std::uint64_t id = 0;
  std::int64_t steps = 0;
  std::int64_t first_row = 0;
};

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

// Whether two states hold the same mu, U, S, s2, bit for bit (9.5's exact
// restart).
template <class T>
bool same_state_bits(const ReferenceState<T>& a, const ReferenceState<T>& b) {
  auto same = [](const std::vector<T>& x, const std::vector<T>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
  };
  return same(a.mu, b.mu) && same(a.U, b.U) && same(a.S, b.S) && std::memcmp(&a.s2, &b.s2, sizeof(T)) == 0;
}

namespace detail {
inline std::vector<double> identity_matrix(int r) {
  std::vector<double> I(std::size_t(r) * r, 0.0);
  for (int j = 0; j < r; ++j) I[std::size_t(j) * r + j] = 1.0;
  return I;
}
}  // namespace detail

// What section 4 counts over a run of steps: the clamped steps, the
// re-orthonormalizations and the prequential sums.
struct SegmentCounters {
  std::int64_t clamped_steps = 0;
  std::int64_t reorthonormalizations = 0;
  std::array<double, preq_columns> prequential{};

  template <class T>
  void add(const ReferenceState<T>& st) {
    clamped_steps += st.clamped_steps;
    reorthonormalizations += st.reorthonormalizations;
    for (std::size_t c = 0; c < prequential.size(); ++c) prequential[c] += st.prequential[c];
  }
};

// 9.7's record of one stream, and the states behind it. The host reference
// (reference_run_segments) and the mini-app's driver (app/time_segments.hpp)
// both fill it, pass by pass, through record_pass and finish.
template <class T>
struct SegmentedRun {
  // E_{P-1} with the stream's counters (the sum of the segments' final runs);
  // in the sequential frame when the run is certified and gauge_carry is set,
  // in the last worker's own frame otherwise.
  ReferenceState<T> final_state;
  std::vector<ReferenceState<T>> end_states;  // E_q in each worker's own frame
  int init_samples_used = 0;                  // n0 of 9.2 (section 3's window; 0 for init: random)
  int passes = 0;
  bool certified = false;
  int first_uncertified = -1;  // the index of the first uncertified segment; -1 when certified
  // Per pass, the P - 1 values delta_q (q = 1..P-1); their components for
  // pass 1 and for the last pass.
  std::vector<std::vector<double>> boundary_mismatch;
  std::vector<BoundaryMismatch> first_pass_components, last_pass_components;
  std::vector<int> segments_certified;  // after each pass (segment 0 included)
  int trivial_boundaries = 0;           // pass-1 workers with w_q <= 0
  int cold_data_starts = 0, cold_random_starts = 0;
  std::vector<int> cold_init_samples;  // per worker, the samples its cold init: data used (0: none)
  // Runs that broke down (a NumericalBreakdown; in the mini-app also a bad
  // row of a file) from a start that was not exactly their predecessor's
  // end: their end state counts as not a number, so they and their
  // successors are not certified and are re-run from an exact start.
  int broken_runs = 0;
  std::vector<std::int64_t> worker_steps_per_pass;
  std::vector<double> pass_seconds;
  double modelled_speedup = 0;                 // T / sum of worker_steps_per_pass
  SegmentCounters counters;                    // the segments' final runs
  SegmentCounters warmup_counters;             // pass 1's warm-ups
  std::vector<std::vector<double>> rotations;  // R_q of 9.6 (r x r, row-major), q = 0..P-1 (R_0 = I)

  // After a pass: its mismatches (`delta`, index q = 1..P-1), the
  // certificate after it, the largest number of steps a worker took and
  // the pass's wall time.
  void record_pass(const std::vector<BoundaryMismatch>& delta, const std::vector<bool>& c, std::int64_t worker_steps,
                   double seconds) {
    std::vector<double> deltas;
    for (std::size_t q = 1; q < delta.size(); ++q) deltas.push_back(delta[q].delta());
    passes += 1;
    boundary_mismatch.push_back(deltas);
    if (passes == 1) first_pass_components.assign(delta.begin() + 1, delta.end());
    last_pass_components.assign(delta.begin() + 1, delta.end());
    segments_certified.push_back(int(std::count(c.begin(), c.end(), true)));
    worker_steps_per_pass.push_back(worker_steps);
    pass_seconds.push_back(seconds);
  }
  // After the last pass of a stream of `steps` steps.
  void finish(const std::vector<bool>& c, std::int64_t steps) {
    certified = std::count(c.begin(), c.end(), true) == std::ptrdiff_t(c.size());
    first_uncertified = certified ? -1 : int(std::find(c.begin(), c.end(), false) - c.begin());
    std::int64_t total_worker_steps = 0;
    for (std::int64_t s : worker_steps_per_pass) total_worker_steps += s;
    modelled_speedup = double(steps) / double(total_worker_steps);
  }
  // 9.6's G_{P-1} = R_{P-1} ... R_1 when the run is certified and some R_q
  // is not the identity; empty otherwise (an exact restart leaves the
  // state's bits alone).
  std::vector<double> carried_gauge(int r) const {
    std::vector<double> G = detail::identity_matrix(r);
    bool rotated = false;
    carry_gauge(G, rotated, 1, int(rotations.size()), r);
    return certified && rotated ? G : std::vector<double>();
  }
  // G <- R_{end-1} ... R_begin G, the identities left out (`rotated` set
  // where one is not): 9.6's product, in this order however the segments
  // lie on ranks, so the carried gauge has the same bits.
  void carry_gauge(std::vector<double>& G, bool& rotated, int begin, int end, int r) const {
    const std::vector<double> I = detail::identity_matrix(r);
    for (int q = begin; q < end; ++q) {
      if (rotations[std::size_t(q)] == I) continue;
      G = detail::small_product(rotations[std::size_t(q)], G, r, r, r);
      rotated = true;
    }
  }
};

// 9.4 to 9.6 after one pass, for one stream's P workers: Z[q] and E[q] are
// worker q's start and end states (the run's dtype, bit for bit; s2 not a
// number for a run that broke down); `c` holds the certificate before the
// pass and gets the one after it (the inclusive AND prefix of delta_q <=
// tol, c[0] true); a boundary certified before the pass is left alone
// (neither side re-ran, 9.5: delta_q = 0), a restart from exactly E_{q-1}
// has delta_q = 0, and a boundary that certifies on a mismatch gets its
// Procrustes rotation R_q in `rotations`. A run that broke down keeps its
// boundary certified only from an exact start (where the sequential run
// breaks down at the same step); from a start within tol it is re-run from
// E_{q-1}. Returns delta_q at index q (index 0 unused).
// Only the boundaries q in [begin, end) are judged, c[begin - 1] as given
// (the segments of one stream on several ranks: each rank judges its own,
// the AND before them follows over the ranks).
template <class T>
std::vector<BoundaryMismatch> certify_pass(const std::vector<ReferenceState<T>>& Z,
                                           const std::vector<ReferenceState<T>>& E, double tol, std::vector<bool>& c,
                                           std::vector<std::vector<double>>& rotations, std::size_t begin = 1,
                                           std::size_t end = 0) {
  const std::size_t P = c.size();
  if (end == 0) end = P;
  std::vector<BoundaryMismatch> delta(P);
  c[0] = true;
  for (std::size_t q = std::max<std::size_t>(begin, 1); q < end; ++q) {
    if (c[q]) continue;
    const bool restart_exact = std::isfinite(double(Z[q].s2)) && same_state_bits(Z[q], E[q - 1]);
    delta[q] = restart_exact ? BoundaryMismatch{} : boundary_mismatch(Z[q], E[q - 1]);
    c[q] = c[q - 1] && delta[q].within(tol) && (restart_exact || std::isfinite(double(E[q].s2)));
    if (c[q] && !restart_exact) {
      try {
        rotations[q] = procrustes_rotation(Z[q], E[q - 1]);
      } catch (const std::runtime_error&) {
        c[q] = false;  // no rotation between the frames: a tolerance too loose to mean anything here
      }
    }
  }
  return delta;
}

}  // namespace mosaic
