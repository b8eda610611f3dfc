// The blocked update's r x r Cholesky factorization and its solves
// (blocked_step.hpp: the precision solve, the regularized direction, the
// maintained factor's refactorization and the Cholesky-QR on the
// coefficients), in double, cooperative over one Kokkos team.
//
// The factor and the solution are bitwise those of the plain sequential
// loops (the right-looking factorization, column-oriented substitutions)
// whatever the team size: every entry receives its updates one by one in
// the loops' order; only which thread applies them changes. So a device's
// wide team and a host's one thread give the same bits, and the CPU suite
// checks the team form against the plain loops (tests/engine/test_team_cholesky.cpp).
//
// No step is left to a single thread: every thread computes a pivot's
// square root (or a solve's next value) from the same shared entry, and the
// rows (or the solution entries) are spread over the team by team_span:
// consecutive threads on consecutive entries on devices (coalesced),
// contiguous shares on host (loops that vectorize). A value that every
// thread reads is overwritten only after the barrier that follows the
// reads: the pivot's diagonal, and a solve's previous entry, are written at
// the start of the next round. The dependent chain per factorization is r
// pivots (two barriers each) plus, per pass of CP pivots, the trailing rows
// (cost_model.hpp counts it).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic::detail {

// Pivots per pass of team_cholesky_upper's trailing update (the cost
// model's device chain counts the same passes).
inline constexpr int team_cholesky_pivots_per_pass = 4;

// In-place Cholesky of the symmetric r x r matrix whose upper triangle is in
// A (row-major, leading dimension ld): afterwards the upper triangle is R
// with R^T R = A (rows of R contiguous; the lower triangle is not read or
// written). False, on every thread, at the first non-positive or non-finite
// pivot (the rows before it are then already factored).
// The trailing rows take CP pivots per pass (CP subtractions per load and
// store of an entry), each entry still in increasing pivot order.
template <class Member>
KOKKOS_INLINE_FUNCTION bool team_cholesky_upper(const Member& m, double* A, long ld, int r) {
  constexpr int CP = team_cholesky_pivots_per_pass;
  m.team_barrier();
  for (int j0 = 0; j0 < r; j0 += CP) {
    const int j1 = j0 + CP < r ? j0 + CP : r;
    for (int j = j0; j < j1; ++j) {  // the panel: pivot j, then its updates of the panel's later rows
      double* const aj = A + j * ld;
      const double piv = aj[j];
      if (!(piv > 0.0) || !kmath::isfinite(piv)) return false;
      const double rjj = kmath::sqrt(piv);
      team_span(m, j + 1, r, [&](const int i) { aj[i] /= rjj; });
      m.team_barrier();  // row j scaled; every thread has read aj[j]
      if (m.team_rank() == 0) aj[j] = rjj;
      for (int c = j + 1; c < j1; ++c) {
        const double lc = aj[c];
        double* const ac = A + c * ld;
        team_span(m, c, r, [&](const int i) { ac[i] -= aj[i] * lc; });
      }
      m.team_barrier();
    }
    const int nj = j1 - j0;
    const double* const p0 = A + j0 * ld;
    for (int c = j1; c < r; ++c) {  // the trailing rows, CP pivots per pass
      double* const ac = A + c * ld;
      if (nj == CP) {  // a fixed trip count, unrolled (a loop to nj was clearly slower on host)
        double l[CP];
        for (int j = 0; j < CP; ++j) l[j] = p0[j * ld + c];
        team_span(m, c, r, [&](const int i) {
          double v = ac[i];
          for (int j = 0; j < CP; ++j) v -= p0[j * ld + i] * l[j];
          ac[i] = v;
        });
      } else {
        for (int j = 0; j < nj; ++j) {
          const double* const pj = p0 + j * ld;
          const double lc = pj[c];
          team_span(m, c, r, [&](const int i) { ac[i] -= pj[i] * lc; });
        }
      }
    }
    m.team_barrier();
  }
  return true;
}

// x <- (R^T R)^{-1} x for the upper-triangular R of team_cholesky_upper
// (row-major, leading dimension ld; x of length r, contiguous): R^T y = x
// by rows of R, then R x = y by columns.
template <class Member>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve(const Member& m, const double* R, long ld, double* x, int r) {
  m.team_barrier();
  double prev = 0;               // the last round's value: written once every thread has read it
  for (int k = 0; k < r; ++k) {  // R^T y = x
    const double yk = x[k] / R[k * ld + k];
    if (k > 0 && m.team_rank() == 0) x[k - 1] = prev;
    const double* const Rk = R + k * ld;
    team_span(m, k + 1, r, [&](const int i) { x[i] -= Rk[i] * yk; });
    m.team_barrier();
    prev = yk;
  }
  if (r > 0 && m.team_rank() == 0) x[r - 1] = prev;
  m.team_barrier();
  for (int j = r - 1; j >= 0; --j) {  // R x = y, by columns (independent updates)
    const double xj = x[j] / R[j * ld + j];
    if (j < r - 1 && m.team_rank() == 0) x[j + 1] = prev;
    team_span(m, 0, j, [&](const int i) { x[i] -= R[i * ld + j] * xj; });
    m.team_barrier();
    prev = xj;
  }
  if (r > 0 && m.team_rank() == 0) x[0] = prev;
  m.team_barrier();
}

}  // namespace mosaic::detail
