// Numerical-stability diagnostics of a whole batch (ALGORITHM.md section 4),
// computed per stream on the device (U^T U by gemm, the rest by one team
// per stream), then reduced over the B streams on the host (B numbers per
// field).
//
// Per stream, in double whatever the state's scalar type:
//   ||U^T U - I||_F, ||S - S^T||_F / ||S||_F, the extreme eigenvalues of S's
//   symmetric part (Householder + QL on a copy, tridiagonal_eigen.hpp: to a few ulps
//   of ||S||), condition max/min, s2, the count of non-finite
//   entries of mu, U, S, s2, and the checksum below.
//
// Per-stream checksum (for cross-rank / cross-backend verification):
//   checksum = sum_i mu_i + 3 s2 + trace(S) + 0.5 ||S||_F^2.
// Every term is basis-free: trace(S) = trace(U S U^T) and ||S||_F =
// ||U S U^T||_F when U is orthonormal, so the checksum does not depend on the
// frame U (which is only defined up to U -> U R) and therefore not on how the
// streams were distributed over ranks. Its summation order is fixed
// (sequential in i, then a, c), so one state always gives the same double.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/prequential.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {

struct BreakdownRecord {
  std::uint64_t stream_id = 0;
  std::int64_t step = -1;  // the stream's `steps` when it broke down (0-based index of the failed step)
  int code = 0;            // BreakdownCode (stream_batch.hpp)
};

struct BatchDiagnostics {
  double orthonormality_error_max = 0;  // ||U^T U - I||_F
  double symmetry_error_max = 0;        // ||S - S^T||_F / ||S||_F
  // Extreme eigenvalues of S over the streams with finite states (to a few
  // ulps of ||S||, Householder + QL); s_condition_max is +inf if some S has a
  // non-positive eigenvalue.
  double s_min_eig_min = 0, s_max_eig_max = 0, s_condition_max = 0;
  double s2_min = 0;
  std::int64_t nonfinite_count = 0;  // non-finite entries of mu, U, S, s2, all streams
  std::int64_t clamped_steps = 0;    // total over the streams
  // Blocked steps whose residual rho^2 from the coefficients was not
  // resolved (below 64 eps ||y||^2, ALGORITHM.md section 6), and those
  // recomputed from the explicit residual (the resolve rule), totals over
  // the streams.
  std::int64_t unresolved_residual_steps = 0;
  std::int64_t residual_recomputations = 0;
  std::int64_t breakdown_streams = 0;
  std::int64_t ended_streams = 0;  // streams whose data ended before the run's end (status stream_ended)
  // precision_solve: maintained: the largest relative drift of the
  // maintained Cholesky factor corrected by a refactorization, and the count
  // of such refactorizations (both 0 with the dense solve).
  double maintained_solve_drift_max = 0;
  std::int64_t maintained_refactorizations = 0;
  // Missing data (ALGORITHM.md 7.10), totals over the streams: steps that
  // moved only the mean (7.5), samples dropped (missing: drop), NaN entries
  // of the samples stepped, and coordinates not yet observed (7.6).
  std::int64_t skipped_steps = 0, dropped_samples = 0, missing_entries = 0, unseen_coordinates = 0;
  std::int64_t stepped_entries = 0;  // d x the steps taken, summed over the streams (missing_entries' denominator)
  // Heterogeneous noise (ALGORITHM.md section 8, noise: diagonal): the
  // re-whitenings done, total over the streams, and the range of the noise
  // profile psi over every coordinate of every stream (1 and 1 with
  // isotropic noise). A coordinate's noise variance is s2 psi_j.
  std::int64_t rewhitenings = 0;
  double noise_profile_min = 1, noise_profile_max = 1;
  std::vector<BreakdownRecord> breakdowns;
  std::vector<double> per_stream_checksum;
  // Per-stream values behind the maxima (same order as the batch).
  std::vector<double> per_stream_orthonormality_error, per_stream_s_min_eig, per_stream_s_max_eig;
  // Section 4's prequential running sums of each stream (preq_columns per
  // stream, algorithm/prequential.hpp) and the streams' global ids: the run
  // adds them in id order, so the totals do not depend on the rank count.
  std::vector<double> per_stream_prequential;
  std::vector<unsigned long long> per_stream_ids;
};

namespace detail {

enum DiagField : int {
  diag_orth = 0,
  diag_sym,
  diag_min_eig,
  diag_max_eig,
  diag_s2,
  diag_nonfinite,
  diag_checksum,
  diag_fields
};

// The eigenvalues of S's symmetric part (S itself when symmetric;
// reference_invariants' definition), ascending, into w, by
// tridiagonal_eigen.hpp without vectors; A (r x r) and e (r) are work. False
// if QL did not converge.
template <class SMatrix, class Work, class Vec>
KOKKOS_INLINE_FUNCTION bool symmetric_part_eigenvalues(const SMatrix& S, const Work& A, const Vec& w, const Vec& e,
                                                       const int r) {
  for (int a = 0; a < r; ++a)
    for (int c = 0; c < r; ++c) A(a, c) = 0.5 * (double(S(a, c)) + double(S(c, a)));
  return tridiagonal_ql_eigen(A, w, e, r, false);
}

template <class Scalar, class ExecSpace>
struct DiagFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  // The batch's views (not the StreamBatch itself: it holds a host vector).
  struct Views {
    int d, r;
    decltype(StreamBatch<Scalar, ExecSpace>::mu) mu;
    typename StreamBatch<Scalar, ExecSpace>::basis_view U;
    decltype(StreamBatch<Scalar, ExecSpace>::S) S;
    decltype(StreamBatch<Scalar, ExecSpace>::s2) s2;
  } sb;
  Kokkos::View<const double***, Kokkos::LayoutRight, memory_space> G;  // B x r x r: U^T U (basis_gram)
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> A;        // B x r x r work
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> eig;      // B x 2 x r: eigenvalues, work
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> out;       // B x diag_fields
  double nan, eps;                                                     // from std::numeric_limits on the host

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank(), d = sb.d, r = sb.r;
    // Non-finite entries (integer count: order-free).
    std::int64_t bad = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, std::int64_t& nb) {
          if (!kmath::isfinite(sb.mu(b, i))) nb += 1;
          for (int j = 0; j < r; ++j)
            if (!kmath::isfinite(sb.U(b, i, j))) nb += 1;
        },
        bad);
    // A barrier after each team reduction: Kokkos 3.4's Cuda reductions
    // share one scratch buffer (init_data.hpp).
    m.team_barrier();
    std::int64_t bad_s = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, r * r),
        [&](const int k, std::int64_t& nb) {
          if (!kmath::isfinite(sb.S(b, k / r, k % r))) nb += 1;
        },
        bad_s);
    m.team_barrier();
    bad += bad_s + (kmath::isfinite(sb.s2(b)) ? 0 : 1);
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      double orth = 0;
      for (int a = 0; a < r; ++a)
        for (int c = 0; c < r; ++c) {
          const double g = G(b, a, c) - (a == c ? 1.0 : 0.0);
          orth += g * g;
        }
      double asym = 0, norm = 0, trace = 0;
      for (int a = 0; a < r; ++a) {
        trace += double(sb.S(b, a, a));
        for (int c = 0; c < r; ++c) {
          const double diff = double(sb.S(b, a, c)) - double(sb.S(b, c, a));
          asym += diff * diff;
          norm += double(sb.S(b, a, c)) * double(sb.S(b, a, c));
        }
      }
      double musum = 0;
      for (int i = 0; i < d; ++i) musum += double(sb.mu(b, i));
      const double s2 = double(sb.s2(b));
      out(b, diag_orth) = kmath::sqrt(orth);
      out(b, diag_sym) = norm > 0 ? kmath::sqrt(asym / norm) : 0.0;
      out(b, diag_s2) = s2;
      out(b, diag_nonfinite) = double(bad);
      out(b, diag_checksum) = musum + 3.0 * s2 + trace + 0.5 * norm;
      // Eigenvalues of S's symmetric part.
      if (bad != 0) {
        out(b, diag_min_eig) = nan;
        out(b, diag_max_eig) = nan;
        return;
      }
      const auto w = Kokkos::subview(eig, b, 0, Kokkos::ALL());
      const bool converged = symmetric_part_eigenvalues(Kokkos::subview(sb.S, b, Kokkos::ALL(), Kokkos::ALL()),
                                                        Kokkos::subview(A, b, Kokkos::ALL(), Kokkos::ALL()), w,
                                                        Kokkos::subview(eig, b, 1, Kokkos::ALL()), r);
      const double lo = converged ? w(0) : nan, hi = converged ? w(r - 1) : nan;
      out(b, diag_min_eig) = lo;
      out(b, diag_max_eig) = hi;
    });
  }
};

}  // namespace detail

namespace detail {

// Rows i0 .. i0 + n - 1 of every stream's basis widened to double: W(b, i, :)
// = U(b, i0 + i, :), W B x (>= n) x r. Per stream the first n rows of W are
// the column-major r x n matrix W^T that gemm_rows_per_stream reads.
template <class Basis, class ExecSpace = typename Basis::execution_space>
void widen_basis_rows(const Basis& U, const int i0, const int n,
                      const Kokkos::View<double***, Kokkos::LayoutRight, typename Basis::memory_space>& W) {
  const int B = int(W.extent(0)), r = int(W.extent(2));
  const std::ptrdiff_t js = std::ptrdiff_t(U.stride(2));
  Kokkos::parallel_for(
      "mosaic::widen_basis_rows", Kokkos::RangePolicy<ExecSpace>(0, B * n), KOKKOS_LAMBDA(const int bi) {
        const int b = bi / n, i = bi % n;
        const auto* u = &U(b, i0 + i, 0);
        double* w = &W(b, i, 0);
        // A row at unit stride (the host layout) as its own loop: through
        // the view's run-time strides the compiler kept it scalar.
        if (js == 1)
          for (int j = 0; j < r; ++j) w[j] = double(u[j]);
        else
          for (int j = 0; j < r; ++j) w[j] = double(u[j * js]);
      });
}

// C_b = X_b^T Y_b + beta C_b for every stream b (strided_gemm.hpp), over the
// first n rows of X (B x rows x p) and Y (B x rows x q), both as
// widen_basis_rows writes them; C is B x p x q, column-major per stream.
template <class ExecSpace, class MemorySpace>
void gemm_rows_per_stream(const Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace>& X,
                          const Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace>& Y, const int n,
                          const double beta, const Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace>& C) {
  // Per stream the first n rows of X are the column-major p x n matrix X_b^T
  // (leading dimension p), likewise Y_b^T: C_b = X_b^T (Y_b^T)^T.
  StridedGemm<double> g;
  g.transb = 'T';
  g.m = int(X.extent(2));
  g.n = int(Y.extent(2));
  g.k = n;
  g.a = X.data();
  g.lda = g.m;
  g.stride_a = std::ptrdiff_t(X.stride(0));
  g.b = Y.data();
  g.ldb = g.n;
  g.stride_b = std::ptrdiff_t(Y.stride(0));
  g.beta = beta;
  g.c = C.data();
  g.ldc = g.m;
  g.stride_c = std::ptrdiff_t(C.stride(0));
  g.count = int(X.extent(0));
  strided_gemm_over_streams<ExecSpace>(g);
}

// U^T U of every stream in double (B x r x r), on chunks of basis_gram_rows
// rows of U widened to double: the work stays small (B x 2048 x r doubles)
// whatever d.
constexpr int basis_gram_rows = 2048;

}  // namespace detail

// compute_diagnostics' work arrays, kept by a caller that diagnoses a batch
// repeatedly (the run): allocated afresh at every point, their few MB were
// first touched page by page each time (page faults and page clearing in a
// perf profile of many-point runs).
template <class ExecSpace>
struct DiagnosticsWork {
  using view3 = Kokkos::View<double***, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  view3 basis_rows;  // B x min(d, basis_gram_rows) x r: rows of U widened (widen_basis_rows)
  view3 gram;        // B x r x r: U^T U
  view3 eigen_work;  // B x r x r
  view3 eigen;       // B x 2 x r: eigenvalues, work
  Kokkos::View<double**, Kokkos::LayoutRight, typename ExecSpace::memory_space> out;  // B x diag_fields

  // Sized for a batch of B streams of d x r (a no-op when already so).
  void reserve(const int B, const int d, const int r) {
    const int rows = d < detail::basis_gram_rows ? d : detail::basis_gram_rows;
    if (int(basis_rows.extent(0)) == B && int(basis_rows.extent(1)) == rows && int(basis_rows.extent(2)) == r) return;
    basis_rows =
        view3(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::diag_basis_rows")), B, rows, r);
    gram = view3(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::diag_gram")), B, r, r);
    eigen_work = view3(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::diag_work")), B, r, r);
    eigen = view3(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::diag_eigen")), B, 2, r);
    out = Kokkos::View<double**, Kokkos::LayoutRight, typename ExecSpace::memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::diag_out")), B, int(detail::diag_fields));
  }
};

namespace detail {

// work.gram = U^T U of every stream (work reserved for the batch).
template <class Scalar, class ExecSpace>
void basis_gram(const StreamBatch<Scalar, ExecSpace>& sb, const DiagnosticsWork<ExecSpace>& work) {
  const int d = sb.d, rows = int(work.basis_rows.extent(1));
  for (int i0 = 0; i0 < d; i0 += rows) {
    const int n = d - i0 < rows ? d - i0 : rows;
    widen_basis_rows<decltype(sb.U), ExecSpace>(sb.U, i0, n, work.basis_rows);
    gemm_rows_per_stream<ExecSpace>(work.basis_rows, work.basis_rows, n, i0 == 0 ? 0.0 : 1.0, work.gram);
  }
}

}  // namespace detail

template <class Scalar, class ExecSpace>
BatchDiagnostics compute_diagnostics(const StreamBatch<Scalar, ExecSpace>& sb, DiagnosticsWork<ExecSpace>& work) {
  const int B = sb.batch;
  work.reserve(B, sb.d, sb.r);
  detail::basis_gram(sb, work);
  detail::DiagFunctor<Scalar, ExecSpace> f{{sb.d, sb.r, sb.mu, sb.U, sb.S, sb.s2},
                                           work.gram,
                                           work.eigen_work,
                                           work.eigen,
                                           work.out,
                                           std::numeric_limits<double>::quiet_NaN(),
                                           std::numeric_limits<double>::epsilon()};
  Kokkos::parallel_for("mosaic::diagnostics", Kokkos::TeamPolicy<ExecSpace>(ExecSpace(), B, Kokkos::AUTO), f);
  const auto out = transfer::to_host(f.out);
  const auto status = transfer::to_host(sb.status);
  const auto bstep = transfer::to_host(sb.breakdown_step);
  const auto clamped = transfer::to_host(sb.clamped_steps);
  const auto unresolved = transfer::to_host(sb.unresolved_residual_steps);
  const auto recomputed = transfer::to_host(sb.residual_recomputations);
  const auto drift = transfer::to_host(sb.solve_drift);
  const auto refactors = transfer::to_host(sb.refactors);
  const auto skipped = transfer::to_host(sb.skipped_steps);
  const auto dropped = transfer::to_host(sb.dropped_samples);
  const auto missing = transfer::to_host(sb.missing_entries);
  const auto steps = transfer::to_host(sb.steps);
  const auto preq = transfer::to_host(sb.prequential);
  std::int64_t unseen = 0;  // a B x d count on the execution space, one number back
  const auto seen = sb.seen;
  const std::int64_t sb_d = sb.d;
  Kokkos::parallel_reduce(
      "mosaic::unseen_coordinates", Kokkos::RangePolicy<ExecSpace>(0, std::int64_t(B) * sb.d),
      KOKKOS_LAMBDA(const std::int64_t k, std::int64_t& n) { n += seen(k / sb_d, k % sb_d) == 0 ? 1 : 0; }, unseen);

  BatchDiagnostics diag;
  const double inf = std::numeric_limits<double>::infinity();
  if (sb.diagonal_noise()) {
    const auto psi = sb.psi;
    double lo = inf, hi = -inf;
    Kokkos::parallel_reduce(
        "mosaic::noise_profile_min", Kokkos::RangePolicy<ExecSpace>(0, std::int64_t(B) * sb.d),
        KOKKOS_LAMBDA(const std::int64_t k, double& m) {
          const double v = double(psi(k / sb_d, k % sb_d));
          m = v < m ? v : m;
        },
        Kokkos::Min<double>(lo));
    Kokkos::parallel_reduce(
        "mosaic::noise_profile_max", Kokkos::RangePolicy<ExecSpace>(0, std::int64_t(B) * sb.d),
        KOKKOS_LAMBDA(const std::int64_t k, double& m) {
          const double v = double(psi(k / sb_d, k % sb_d));
          m = v > m ? v : m;
        },
        Kokkos::Max<double>(hi));
    diag.noise_profile_min = lo;
    diag.noise_profile_max = hi;
    const auto rewhitened = transfer::to_host(sb.rewhitenings);
    for (int b = 0; b < B; ++b) diag.rewhitenings += rewhitened(b);
  }
  diag.s_min_eig_min = inf;
  diag.s_max_eig_max = -inf;
  diag.s2_min = inf;
  bool any_eig = false;
  for (int b = 0; b < B; ++b) {
    const double orth = out(b, detail::diag_orth), lo = out(b, detail::diag_min_eig), hi = out(b, detail::diag_max_eig);
    diag.per_stream_orthonormality_error.push_back(orth);
    diag.per_stream_s_min_eig.push_back(lo);
    diag.per_stream_s_max_eig.push_back(hi);
    diag.per_stream_checksum.push_back(out(b, detail::diag_checksum));
    // std::max would drop a NaN; keep it visible.
    if (!(orth <= diag.orthonormality_error_max)) diag.orthonormality_error_max = orth;
    const double sym = out(b, detail::diag_sym);
    if (!(sym <= diag.symmetry_error_max)) diag.symmetry_error_max = sym;
    const double s2 = out(b, detail::diag_s2);
    if (!(s2 >= diag.s2_min)) diag.s2_min = s2;
    diag.nonfinite_count += std::int64_t(out(b, detail::diag_nonfinite));
    if (out(b, detail::diag_nonfinite) == 0) {
      any_eig = true;
      diag.s_min_eig_min = std::min(diag.s_min_eig_min, lo);
      diag.s_max_eig_max = std::max(diag.s_max_eig_max, hi);
      diag.s_condition_max = std::max(diag.s_condition_max, lo > 0 ? hi / lo : inf);
    }
    diag.clamped_steps += clamped(b);
    diag.unresolved_residual_steps += unresolved(b);
    diag.residual_recomputations += recomputed(b);
    if (!(drift(b) <= diag.maintained_solve_drift_max)) diag.maintained_solve_drift_max = drift(b);
    diag.maintained_refactorizations += refactors(b);
    diag.skipped_steps += skipped(b);
    diag.dropped_samples += dropped(b);
    diag.missing_entries += missing(b);
    diag.stepped_entries += steps(b) * std::int64_t(sb.d);
    for (int c = 0; c < preq_columns; ++c) diag.per_stream_prequential.push_back(preq(b, c));
    diag.per_stream_ids.push_back(sb.stream_ids[b]);
    if (status(b) == stream_ended) {
      diag.ended_streams += 1;
    } else if (status(b) != 0) {
      diag.breakdown_streams += 1;
      diag.breakdowns.push_back(BreakdownRecord{sb.stream_ids[b], bstep(b), status(b)});
    }
  }
  // (No stream with finite eigenvalues: 0. A batch of no streams keeps the
  // extremes' identities, so that a reduction over ranks ignores it.)
  if (!any_eig && B > 0) diag.s_min_eig_min = diag.s_max_eig_max = diag.s_condition_max = 0;
  diag.unseen_coordinates = unseen;
  return diag;
}

// The same with work arrays of its own (a single diagnosis: the tests).
template <class Scalar, class ExecSpace>
BatchDiagnostics compute_diagnostics(const StreamBatch<Scalar, ExecSpace>& sb) {
  DiagnosticsWork<ExecSpace> work;
  return compute_diagnostics(sb, work);
}

}  // namespace mosaic
