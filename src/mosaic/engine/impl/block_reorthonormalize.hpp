// The Cholesky-QR of the new basis on the blocked update's coefficients
// (blocked_step.hpp, step 4): U^T U from the products and the
// coefficients, its Cholesky factor R, then A, B and S rotated by it, so
// that the one GEMM that forms U writes the re-orthonormalized basis. A
// shared-mask run (7.7.2) keeps U0's missing rows (or moves them to
// U0_M A_M under the geodesic rotation), so its U^T U swaps their A^T N A
// for N (A_M^T N A_M), and their R^-1 is applied when they are put back
// (impl/masked_blocks.hpp, SharedMaskRunEnd).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/engine/frame_rotation.hpp"
#include "mosaic/engine/impl/block_coefficients.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

template <class Base>
KOKKOS_INLINE_FUNCTION bool BlockCoefficients<Base>::reorthonormalize_coefficients(const member_type& m, int b,
                                                                                   int done, int mrows) const {
  const int r = base.r, K = done;
  auto W0 = Kokkos::subview(dM, b, int(bm_W0), Kokkos::ALL(), Kokkos::ALL());
  auto P = Kokkos::subview(dM, b, int(bm_F), Kokkos::ALL(), Kokkos::ALL());    // W0 A + G B
  auto Gr = Kokkos::subview(dM, b, int(bm_F2), Kokkos::ALL(), Kokkos::ALL());  // U^T U, then R
  auto S = Kokkos::subview(dM, b, int(bm_S), Kokkos::ALL(), Kokkos::ALL());
  auto T1 = Kokkos::subview(dM, b, int(bm_Sp), Kokkos::ALL(), Kokkos::ALL());  // S rotation work
  // P = W0 A + G B (r x r), Q = G^T A + H B (K x r), then U^T U = A^T P + B^T Q,
  // each row a combination of unit-stride rows (of A and B, then of P and
  // Q; A^T's and B^T's rows are those of At and Bt), every entry one
  // running sum in increasing q then j.
  auto combine = [&](double* out, const double* ca, const double* cb, const double* rows_a, const double* rows_b,
                     int ldb, int nb) {
    rows_combination(r, r, out, ca, 1, rows_a, false);
    rows_combination(r, nb, out, cb, ldb, rows_b, true);
  };
  const double* const Ap = &dA(b, 0, 0);
  const double* const Bp = &dB(b, 0, 0);
  team_share(m, r, [&](const int lo, const int hi) {
    for (int p = lo; p < hi; ++p) combine(&P(p, 0), &W0(p, 0), &dG(b, 0, p), Ap, Bp, r, K);  // G(p, j) = dG(b, j, p)
  });
  team_share(m, K, [&](const int lo, const int hi) {
    for (int j = lo; j < hi; ++j) combine(&dQ(b, j, 0), &dG(b, j, 0), &dH(b, j, 0), Ap, Bp, 1, K);
  });
  m.team_barrier();
  team_share(m, r, [&](const int lo, const int hi) {
    for (int a = lo; a < hi; ++a) combine(&Gr(a, 0), &dM(b, bm_At, a, 0), &dBt(b, a, 0), &P(0, 0), &dQ(b, 0, 0), 1, K);
  });
  m.team_barrier();
  if (mrows > 0) {  // Gr += N_M - A^T N A (T1 = N A): N_M = N, or A_M^T N A_M under the geodesic rotation
    auto N = Kokkos::subview(dM, b, int(bm_N), Kokkos::ALL(), Kokkos::ALL());
    if (geodesic) missing_rows_gram(m, b);
    auto NM = Kokkos::subview(dM, b, int(geodesic ? bm_Nt : bm_N), Kokkos::ALL(), Kokkos::ALL());
    team_share(m, r, [&](const int lo, const int hi) {
      for (int q = lo; q < hi; ++q) combine(&T1(q, 0), &N(q, 0), &N(q, 0), Ap, Ap, 1, 0);
    });
    m.team_barrier();
    team_share(m, r, [&](const int lo, const int hi) {
      for (int a = lo; a < hi; ++a) {
        double* const row = &P(a, 0);  // (A^T N A)(a, :)
        combine(row, &dM(b, bm_At, a, 0), &dM(b, bm_At, a, 0), &T1(0, 0), &T1(0, 0), 1, 0);
        for (int c = 0; c < r; ++c) Gr(a, c) += NM(a, c) - row[c];
      }
    });
    m.team_barrier();
  }
  if (!cholesky_upper(m, Gr, r)) return false;
  // Rows x of A and B: x <- x R^-1 (x R = old x).
  rows_times_inverse_upper(m, &Gr(0, 0), long(Gr.stride(0)), r, r + K,
                           [&](const int p) { return p < r ? &dA(b, p, 0) : &dB(b, p - r, 0); });
  // S <- R S R^T = L^T S L with L = R^T.
  rotate_S_by_factor<double>(
      m, r, [&](const int t, const int c) { return Gr(c, t); }, S, T1, P);
  Kokkos::single(Kokkos::PerTeam(m), [&]() { base.reorths(b) += 1; });
  m.team_barrier();
  return true;
}

}  // namespace detail
}  // namespace mosaic
