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
// Host spaces factor left-looking (host_cholesky_upper): each panel of
// rows first receives all earlier pivots' updates in register tiles
// instead of loading and storing every trailing entry once per pass (the
// coefficient steps' time against the right-looking form:
// docs/PERFORMANCE.md, "The coefficient steps in register tiles"); each
// entry still receives its updates one by one in increasing pivot order,
// so the bits are the plain loops'. One host thread solves without the
// team loops (host_cholesky_solve), also with the plain loops' bits.
//
// No step is left to a single thread: every thread computes a pivot's
// square root (or a solve's next value) from the same shared entry, and the
// rows (or the solution entries) are spread over the team by team_span:
// consecutive threads on consecutive entries on devices (coalesced),
// contiguous shares on host (loops that vectorize); the host's tiles are
// spread over the team's threads. A value that every thread reads is
// overwritten only after the barrier that follows the reads: the pivot's
// diagonal, and a solve's previous entry, are written at the start of the
// next round. On devices the dependent chain per factorization is r pivots
// (two barriers each) plus, per pass of CP pivots, a share of the trailing
// triangle (cost_model.hpp counts it).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic::detail {

// Pivots per pass of device_cholesky_upper's trailing update (the cost
// model's device chain counts the same passes).
inline constexpr int team_cholesky_pivots_per_pass = 4;

// Host spaces: rows per panel and columns per register tile of
// host_cholesky_upper (each load of a pivot row's W entries serves P rows;
// W <= P keeps every tile inside the rows, see there).
inline constexpr int host_cholesky_panel_rows = 8;
inline constexpr int host_cholesky_tile_cols = 8;

// Pivots j0..j1-1 of a factorization: each pivot's row scaled, then its
// updates of the panel's later rows (columns from the row's diagonal on).
// False, on every thread, at a non-positive or non-finite pivot.
template <class Member>
KOKKOS_INLINE_FUNCTION bool team_cholesky_panel(const Member& m, double* A, long ld, int r, int j0, int j1) {
  for (int j = j0; j < j1; ++j) {
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
  return true;
}

// team_cholesky_upper on host spaces, left-looking: before panel [c0, c1)
// is factored, its rows receive the updates of every earlier pivot k < c0
// in tiles of P rows x W columns, a tile's P x W running values kept in
// registers while k runs (one load of row k's W entries serves P rows).
// The tiles end at column r and go leftwards; the leftmost may start left
// of the diagonal: it reads entries it does not need (never written, their
// values do not matter) and stores only the upper triangle's. Tiles are
// spread over the team's threads. A short last panel takes plain chains.
// A tile never starts before column 0: with tiles = ceil((r - c0) / W),
// i0 = r - tiles W > c0 - W >= 0, as c0 >= P >= W.
template <class Member>
KOKKOS_INLINE_FUNCTION bool host_cholesky_upper(const Member& m, double* A, long ld, int r) {
  constexpr int P = host_cholesky_panel_rows, W = host_cholesky_tile_cols;
  static_assert(W <= P, "the leftmost tile must start at or after column 0");
  const int ts = m.team_size();
  m.team_barrier();
  for (int c0 = 0; c0 < r; c0 += P) {
    const int c1 = c0 + P < r ? c0 + P : r;
    if (c0 > 0) {
      const int tiles = (r - c0 + W - 1) / W;
      for (int t = m.team_rank(); t < tiles; t += ts) {
        const int i0 = r - (t + 1) * W;  // the tile's columns [i0, i0 + W)
        if (c1 - c0 < P) {
          for (int c = c0; c < c1; ++c)
            for (int i = i0 > c ? i0 : c; i < i0 + W; ++i) {
              double v = A[c * ld + i];
              for (int k = 0; k < c0; ++k) v -= A[k * ld + i] * A[k * ld + c];
              A[c * ld + i] = v;
            }
          continue;
        }
        double acc[P * W];
        for (int p = 0; p < P; ++p)
          for (int w = 0; w < W; ++w) acc[p * W + w] = A[(c0 + p) * ld + i0 + w];
        for (int k = 0; k < c0; ++k) {
          const double* const rk = A + k * ld;
          for (int p = 0; p < P; ++p) {
            const double l = rk[c0 + p];
            MOSAIC_SIMD_LOOP
            for (int w = 0; w < W; ++w) acc[p * W + w] -= rk[i0 + w] * l;
          }
        }
        for (int p = 0; p < P; ++p)
          for (int w = 0; w < W; ++w)
            if (i0 + w >= c0 + p) A[(c0 + p) * ld + i0 + w] = acc[p * W + w];
      }
      m.team_barrier();
    }
    if (!team_cholesky_panel(m, A, ld, r, c0, c1)) return false;
  }
  return true;
}

template <class Member>
KOKKOS_INLINE_FUNCTION bool device_cholesky_upper(const Member& m, double* A, long ld, int r);

// In-place Cholesky of the symmetric r x r matrix whose upper triangle is in
// A (row-major, leading dimension ld): afterwards the upper triangle is R
// with R^T R = A (rows of R contiguous; the lower triangle is never
// written, and its values do not matter). False, on every thread, at the
// first non-positive or non-finite pivot (the rows before it are then
// already factored).
template <class Member>
KOKKOS_INLINE_FUNCTION bool team_cholesky_upper(const Member& m, double* A, long ld, int r) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    return host_cholesky_upper(m, A, ld, r);
  } else {
    return device_cholesky_upper(m, A, ld, r);
  }
}

// team_cholesky_upper on devices: right-looking; the trailing rows take CP
// pivots per pass (CP subtractions per load and store of an entry), each
// entry still in increasing pivot order. A pass's trailing triangle, the
// entries (c, i) with j1 <= c <= i < r, is spread over the team in two
// dimensions: rows paired as j1 + p with r - 1 - p (n + 1 entries together
// for n trailing rows) make a rectangle whose entries consecutive threads
// take in turn, so every thread gets about a T-th of the triangle instead
// of one entry per row whatever the row's length.
template <class Member>
KOKKOS_INLINE_FUNCTION bool device_cholesky_upper(const Member& m, double* A, long ld, int r) {
  constexpr int CP = team_cholesky_pivots_per_pass;
  m.team_barrier();
  for (int j0 = 0; j0 < r; j0 += CP) {
    const int j1 = j0 + CP < r ? j0 + CP : r;
    if (!team_cholesky_panel(m, A, ld, r, j0, j1)) return false;
    const int nj = j1 - j0, n = r - j1;
    const double* const p0 = A + j0 * ld;
    team_span(m, 0, n * (n + 1) / 2, [&](const int e) {
      const int p = e / (n + 1), q = e - p * (n + 1);
      const bool upper_row = q < n - p;  // row j1 + p (n - p entries), else row r - 1 - p (p + 1 entries)
      const int c = upper_row ? j1 + p : r - 1 - p;
      const int i = upper_row ? c + q : c + q - (n - p);
      double v = A[c * ld + i];
      if (nj == CP) {  // a fixed trip count, unrolled
        for (int j = 0; j < CP; ++j) v -= p0[j * ld + i] * p0[j * ld + c];
      } else {
        for (int j = 0; j < nj; ++j) v -= p0[j * ld + i] * p0[j * ld + c];
      }
      A[c * ld + i] = v;
    });
    m.team_barrier();
  }
  return true;
}

// team_cholesky_solve on one host thread: R^T y = x by rows of R; then
// R x = y in blocks of P rows from the bottom, a block's entries first
// receiving the updates of every later (final) entry as P interleaved
// chains along their unit-stride rows, then the block's own. Each entry
// receives its updates in the column form's order (decreasing column),
// without the column form's stride-ld reads.
KOKKOS_INLINE_FUNCTION void host_cholesky_solve(const double* R, long ld, double* x, int r) {
  for (int k = 0; k < r; ++k) {  // R^T y = x
    x[k] /= R[k * ld + k];
    const double yk = x[k];
    const double* const Rk = R + k * ld;
    for (int i = k + 1; i < r; ++i) x[i] -= Rk[i] * yk;
  }
  constexpr int P = host_cholesky_panel_rows;
  for (int b1 = r; b1 > 0; b1 -= P) {  // R x = y, block [b0, b1)
    const int b0 = b1 - P > 0 ? b1 - P : 0, nb = b1 - b0;
    double acc[P];
    for (int p = 0; p < nb; ++p) acc[p] = x[b0 + p];
    for (int j = r - 1; j >= b1; --j) {
      const double xj = x[j];
      for (int p = 0; p < nb; ++p) acc[p] -= R[(b0 + p) * ld + j] * xj;
    }
    for (int j = b1 - 1; j >= b0; --j) {
      const double xj = acc[j - b0] / R[j * ld + j];
      x[j] = xj;
      for (int p = 0; p < j - b0; ++p) acc[p] -= R[(b0 + p) * ld + j] * xj;
    }
  }
}

template <class Member>
KOKKOS_INLINE_FUNCTION void cooperative_cholesky_solve(const Member& m, const double* R, long ld, double* x, int r);

// x <- (R^T R)^{-1} x for the upper-triangular R of team_cholesky_upper
// (row-major, leading dimension ld; x of length r, contiguous): R^T y = x
// by rows of R, then R x = y by columns; on one host thread
// host_cholesky_solve, elsewhere cooperative_cholesky_solve (the same bits).
template <class Member>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve(const Member& m, const double* R, long ld, double* x, int r) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    if (m.team_size() == 1) {
      host_cholesky_solve(R, ld, x, r);
      return;
    }
  }
  cooperative_cholesky_solve(m, R, ld, x, r);
}

// team_cholesky_solve on a team of any size (devices, and host teams of
// several threads): the substitutions' updates spread by team_span.
template <class Member>
KOKKOS_INLINE_FUNCTION void cooperative_cholesky_solve(const Member& m, const double* R, long ld, double* x, int r) {
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
