// Loop shapes shared by the kernels' team code (batched_engine.hpp,
// blocked_step.hpp, frame_rotation.hpp).
#pragma once

#include <type_traits>
#include <utility>

#include <Kokkos_Core.hpp>

// Before a host loop whose iterations are independent, such as the update
// of a register tile's running values (host_cholesky_upper,
// BlockCoefficients::rows_times): it lets the compiler vectorize the loop
// across the tile's lanes without proving the independence itself. Only
// OpenMP builds see it (-fopenmp); elsewhere it is empty.
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#define MOSAIC_SIMD_LOOP _Pragma("omp simd")
#else
#define MOSAIC_SIMD_LOOP
#endif

namespace mosaic::detail {

// f(a, c) for every entry of a rows x cols matrix: rows over the team's
// threads, the columns of a row in the vector loop (unit stride and
// vectorizable on host, no integer division per entry as a flattened index
// would need).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void for_each_entry(const Member& m, int rows, int cols, const F& f) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, rows), [&](const int a) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, cols), [&](const int c) { f(a, c); });
  });
}

// True when every entry v(a, c) of a rows x cols matrix is finite: v - v
// is 0 for a finite v and NaN otherwise, a branch-free test whose loop
// vectorizes (a count of !isfinite with a branch per entry did not).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION bool all_entries_finite(const Member& m, int rows, int cols, const F& v) {
  int bad = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(m, rows),
      [&](const int a, int& nb) {
        int row_bad = 0;
        for (int c = 0; c < cols; ++c) {
          const auto x = v(a, c);
          row_bad |= int(!(x - x == 0));
        }
        nb += row_bad;
      },
      bad);
  // Callers may reduce again at once; Kokkos 3.4's Cuda team reductions
  // share one scratch buffer (init_data.hpp).
  m.team_barrier();
  return bad == 0;
}

// dst = (src + src^T) / 2 for r x r matrices, with the diagonal copied
// exactly; the diagonal is rewritten after each row instead of tested per
// entry, so that the row loop has no branch.
template <class Member, class Src, class Dst>
KOKKOS_INLINE_FUNCTION void symmetrize(const Member& m, int r, const Src& src, const Dst& dst) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
    for (int c = 0; c < r; ++c) dst(a, c) = (src(a, c) + src(c, a)) / 2;
    dst(a, a) = src(a, a);
  });
}

// dst = src + shift I for r x r matrices (diagonal added after each row's copy).
template <class Member, class Src, class Dst, class T>
KOKKOS_INLINE_FUNCTION void copy_shift_diagonal(const Member& m, int r, const Src& src, const Dst& dst, T shift) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
    for (int c = 0; c < r; ++c) dst(a, c) = src(a, c);
    dst(a, a) = src(a, a) + shift;
  });
}

// f(lo, hi) on each team thread's contiguous share of [0, n).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void team_share(const Member& m, int n, const F& f) {
  const int ts = m.team_size();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, ts),
                       [&](const int part) { f(int((long(n) * part) / ts), int((long(n) * (part + 1)) / ts)); });
}

// f(i) for every i in [lo, hi), spread over the team: on devices
// consecutive threads take consecutive i (coalesced accesses); on host
// spaces each thread takes a contiguous share, a plain loop that vectorizes.
// Use it for short loops repeated inside a dependent chain (the Cholesky's
// rows, a solve's updates), where the order between threads does not matter.
// It spreads over team threads only: with a vector length above 1 every
// vector lane would run f(i) again, so its launches keep the default of 1.
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void team_span(const Member& m, int lo, int hi, const F& f) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    // team_share's partition, computed in place: this runs once per row of
    // a factorization pass, where a team loop over the parts costs more
    // than the row. A team of one thread (the host's usual team: a stream
    // per thread) skips the partition's two divisions.
    const int ts = m.team_size();
    if (ts == 1) {
      for (int i = lo; i < hi; ++i) f(i);
      return;
    }
    const int n = hi - lo, part = m.team_rank();
    const int b = lo + int((long(n) * part) / ts), e = lo + int((long(n) * (part + 1)) / ts);
    for (int i = b; i < e; ++i) f(i);
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, lo, hi), f);
  }
}

// Rows and columns of the host forms' register tiles below (P x W running
// values kept in registers while the sum's index runs: one load of a row's
// W entries serves P rows). plus_gram's tiles are square (P = W), so that
// the upper triangle's tiles mirror onto the lower one's.
inline constexpr int host_tile_rows = 8;
inline constexpr int host_tile_cols = 8;

// The value type of a matrix accessed as M(i, j).
template <class M>
using entry_t = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<const M&>()(0, 0))>>;

// Rows i0..i1 - 1 of column c of lower_solve_columns as plain chains (the
// rows before i0 final): each X(i, c) its subtractions in increasing k,
// then its division, the arithmetic of every form.
template <class LowerEntry, class XM>
KOKKOS_INLINE_FUNCTION void forward_substitute_rows(int c, int i0, int i1, const LowerEntry& L, const XM& X) {
  for (int i = i0; i < i1; ++i) {
    entry_t<XM> v = X(i, c);
    for (int k = 0; k < i; ++k) v -= L(i, k) * X(k, c);
    X(i, c) = v / L(i, i);
  }
}

// lower_solve_columns on devices (and the CPU suite's check of what a GPU
// runs): one column per thread.
template <class Member, class LowerEntry, class XM>
KOKKOS_INLINE_FUNCTION void device_lower_solve_columns(const Member& m, int r, const LowerEntry& L, const XM& X) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int c) { forward_substitute_rows(c, 0, r, L, X); });
  m.team_barrier();
}

// Columns c0..c0 + W - 1 of host_lower_solve_columns: rows in panels of
// P, whose P x W running values take every earlier row's subtraction in
// registers, then the panel's own rows in order (each row's division waits
// on the row before it: W columns of doubles are W / 8 independent chains
// of vector divisions on AVX-512, W / 16 in float, which is why the tiles
// are 2 host_tile_cols wide where they fit). A short last panel takes
// plain chains.
template <int P, int W, class LowerEntry, class XM>
KOKKOS_INLINE_FUNCTION void host_lower_solve_tile(int r, int c0, const LowerEntry& L, const XM& X) {
  for (int i0 = 0; i0 < r; i0 += P) {
    if (r - i0 < P) {
      for (int c = c0; c < c0 + W; ++c) forward_substitute_rows(c, i0, r, L, X);
      continue;
    }
    entry_t<XM> acc[P * W];
    for (int p = 0; p < P; ++p)
      for (int w = 0; w < W; ++w) acc[p * W + w] = X(i0 + p, c0 + w);
    for (int k = 0; k < i0; ++k)
      for (int p = 0; p < P; ++p) {
        const auto l = L(i0 + p, k);
        MOSAIC_SIMD_LOOP
        for (int w = 0; w < W; ++w) acc[p * W + w] -= l * X(k, c0 + w);
      }
    for (int p = 0; p < P; ++p) {  // the panel's rows: row q < p final before row p's subtraction
      for (int q = 0; q < p; ++q) {
        const auto l = L(i0 + p, i0 + q);
        MOSAIC_SIMD_LOOP
        for (int w = 0; w < W; ++w) acc[p * W + w] -= l * acc[q * W + w];
      }
      const auto lpp = L(i0 + p, i0 + p);
      MOSAIC_SIMD_LOOP
      for (int w = 0; w < W; ++w) acc[p * W + w] = acc[p * W + w] / lpp;
    }
    for (int p = 0; p < P; ++p)
      for (int w = 0; w < W; ++w) X(i0 + p, c0 + w) = acc[p * W + w];
  }
}

// lower_solve_columns on host spaces: the columns in tiles of 2W (W where
// fewer are left, plain chains for the last fewer than W), spread over the
// team's threads; the columns are independent, so a thread solves its
// tiles from the first row to the last without a barrier.
template <class Member, class LowerEntry, class XM>
KOKKOS_INLINE_FUNCTION void host_lower_solve_columns(const Member& m, int r, const LowerEntry& L, const XM& X) {
  constexpr int P = host_tile_rows, W = host_tile_cols;
  const int ts = m.team_size(), wide = r / (2 * W), narrow = (r - wide * 2 * W) / W;
  const int c_plain = wide * 2 * W + narrow * W;
  for (int t = m.team_rank(); t < wide + narrow + (c_plain < r ? 1 : 0); t += ts) {
    if (t < wide) {
      host_lower_solve_tile<P, 2 * W>(r, t * 2 * W, L, X);
    } else if (t < wide + narrow) {
      host_lower_solve_tile<P, W>(r, wide * 2 * W + (t - wide) * W, L, X);
    } else {
      for (int c = c_plain; c < r; ++c) forward_substitute_rows(c, 0, r, L, X);
    }
  }
  m.team_barrier();
}

// X <- L^-1 X for each column of an r x r matrix X (in place), L lower
// triangular given entry by entry as L(i, k) (a lower factor, or the
// transpose of an upper one): forward substitution, each X(i, c) its
// subtractions in increasing k, then its division, in every form (so the
// bits do not depend on the form or the team size). Devices: one column
// per thread (device_lower_solve_columns); host spaces: register tiles
// (host_lower_solve_columns; docs/PERFORMANCE.md, "The posterior's r x r
// algebra in register tiles"). Ends with a team barrier.
template <class Member, class LowerEntry, class XM>
KOKKOS_INLINE_FUNCTION void lower_solve_columns(const Member& m, int r, const LowerEntry& L, const XM& X) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    host_lower_solve_columns(m, r, L, X);
  } else {
    device_lower_solve_columns(m, r, L, X);
  }
}

// Entry (a, c) of plus_gram's Y^T Y as a plain sum: from 0, over k in
// increasing order, the arithmetic of every form.
template <class T, class YM>
KOKKOS_INLINE_FUNCTION T gram_entry(int r, const YM& Y, int a, int c) {
  T v = 0;
  for (int k = 0; k < r; ++k) v += Y(k, a) * Y(k, c);
  return v;
}

// plus_gram on devices (and the CPU suite's check of what a GPU runs): one
// entry per thread.
template <class Member, class AM, class T, class YM, class OM>
KOKKOS_INLINE_FUNCTION void device_plus_gram(const Member& m, int r, const AM& A, T s, const YM& Y, const OM& out) {
  for_each_entry(m, r, r, [&](const int a, const int c) { out(a, c) = A(a, c) + s * gram_entry<T>(r, Y, a, c); });
  m.team_barrier();
}

// plus_gram on host spaces: square tiles of B x B entries on and above the
// diagonal, spread over the team's threads; a tile's running sums stay in
// registers while k runs, and each sum serves out(a, c) and out(c, a) (the
// same products: half the multiply-adds of the whole matrix). Short edge
// tiles take plain sums.
template <class Member, class AM, class T, class YM, class OM>
KOKKOS_INLINE_FUNCTION void host_plus_gram(const Member& m, int r, const AM& A, T s, const YM& Y, const OM& out) {
  constexpr int B = host_tile_rows;
  static_assert(host_tile_cols == host_tile_rows, "plus_gram's tiles mirror across the diagonal");
  const int ts = m.team_size(), tiles = (r + B - 1) / B;
  int t = -1;
  for (int ta = 0; ta < tiles; ++ta)
    for (int tc = ta; tc < tiles; ++tc) {
      if (++t % ts != m.team_rank()) continue;
      const int a0 = ta * B, c0 = tc * B;
      const int na = r - a0 < B ? r - a0 : B, nc = r - c0 < B ? r - c0 : B;
      T acc[B * B];
      if (na == B && nc == B) {
        for (int e = 0; e < B * B; ++e) acc[e] = T(0);
        for (int k = 0; k < r; ++k)
          for (int p = 0; p < B; ++p) {
            const auto y = Y(k, a0 + p);  // the product in Y's type, as the other forms
            MOSAIC_SIMD_LOOP
            for (int w = 0; w < B; ++w) acc[p * B + w] += y * Y(k, c0 + w);
          }
      } else {
        for (int p = 0; p < na; ++p)
          for (int w = 0; w < nc; ++w) acc[p * B + w] = gram_entry<T>(r, Y, a0 + p, c0 + w);
      }
      for (int p = 0; p < na; ++p)
        for (int w = 0; w < nc; ++w) {
          out(a0 + p, c0 + w) = A(a0 + p, c0 + w) + s * acc[p * B + w];
          out(c0 + w, a0 + p) = A(c0 + w, a0 + p) + s * acc[p * B + w];
        }
    }
  m.team_barrier();
}

// out = A + s (Y^T Y) for r x r matrices, each sum over k in increasing
// order from 0, in every form (so the bits do not depend on the form or
// the team size; with A symmetric, the callers' N and Delta, out(a, c) and
// out(c, a) are the same number and out needs no symmetrize). Devices: one
// entry per thread (device_plus_gram); host spaces: register tiles
// (host_plus_gram). out must not alias A or Y. Ends with a team barrier.
template <class Member, class AM, class T, class YM, class OM>
KOKKOS_INLINE_FUNCTION void plus_gram(const Member& m, int r, const AM& A, T s, const YM& Y, const OM& out) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    host_plus_gram(m, r, A, s, Y, out);
  } else {
    device_plus_gram(m, r, A, s, Y, out);
  }
}

// Entry (a, c) of times_lower's S L as a plain sum: from 0, over t >= c in
// increasing order (the entries of L above its diagonal are not read), the
// arithmetic of every form.
template <class T, class SM, class LowerEntry>
KOKKOS_INLINE_FUNCTION T lower_product_entry(int r, const SM& S, const LowerEntry& L, int a, int c) {
  T v = 0;
  for (int t = c; t < r; ++t) v += S(a, t) * L(t, c);
  return v;
}

// times_lower on devices (and the CPU suite's check of what a GPU runs):
// one entry per thread.
template <class T, class Member, class SM, class LowerEntry, class OM>
KOKKOS_INLINE_FUNCTION void device_times_lower(const Member& m, int r, const SM& S, const LowerEntry& L,
                                               const OM& out) {
  for_each_entry(m, r, r, [&](const int a, const int c) { out(a, c) = lower_product_entry<T>(r, S, L, a, c); });
  m.team_barrier();
}

// times_lower on host spaces: tiles of P rows x W columns spread over the
// team's threads, whose P W running sums stay in registers while t runs
// (one load of S(a, t) serves W sums, one of L(t, c) P sums). A column c
// starts at t = c, so the tile's first W - 1 values of t reach only its
// columns c <= t. Short edge tiles take plain sums.
template <class T, class Member, class SM, class LowerEntry, class OM>
KOKKOS_INLINE_FUNCTION void host_times_lower(const Member& m, int r, const SM& S, const LowerEntry& L, const OM& out) {
  constexpr int P = host_tile_rows, W = host_tile_cols;
  const int ts = m.team_size(), row_tiles = (r + P - 1) / P, col_tiles = (r + W - 1) / W;
  for (int tile = m.team_rank(); tile < row_tiles * col_tiles; tile += ts) {
    const int a0 = (tile / col_tiles) * P, c0 = (tile % col_tiles) * W;
    const int na = r - a0 < P ? r - a0 : P, nc = r - c0 < W ? r - c0 : W;
    if (na < P || nc < W) {
      for (int p = 0; p < na; ++p)
        for (int w = 0; w < nc; ++w) out(a0 + p, c0 + w) = lower_product_entry<T>(r, S, L, a0 + p, c0 + w);
      continue;
    }
    T acc[P * W];
    for (int e = 0; e < P * W; ++e) acc[e] = T(0);
    // The products in the entries' own types, as the other forms.
    using lower_type = std::decay_t<decltype(L(0, 0))>;
    for (int t = c0; t < c0 + W - 1; ++t)  // the tile's triangle: columns c0 .. t only
      for (int p = 0; p < P; ++p) {
        const auto s = S(a0 + p, t);
        for (int w = 0; c0 + w <= t; ++w) acc[p * W + w] += s * L(t, c0 + w);
      }
    for (int t = c0 + W - 1; t < r; ++t) {
      lower_type l[W];
      for (int w = 0; w < W; ++w) l[w] = L(t, c0 + w);
      for (int p = 0; p < P; ++p) {
        const auto s = S(a0 + p, t);
        MOSAIC_SIMD_LOOP
        for (int w = 0; w < W; ++w) acc[p * W + w] += s * l[w];
      }
    }
    for (int p = 0; p < P; ++p)
      for (int w = 0; w < W; ++w) out(a0 + p, c0 + w) = acc[p * W + w];
  }
  m.team_barrier();
}

// out = S L for an r x r S and the lower-triangular L (entry by entry as
// L(t, c), t >= c: a lower factor, or the transpose of an upper one), each
// entry one sum over t >= c in increasing order from 0, in every form (so
// the bits do not depend on the form or the team size). Devices: one entry
// per thread (device_times_lower); host spaces: register tiles
// (host_times_lower). out must not alias S. Ends with a team barrier.
template <class T, class Member, class SM, class LowerEntry, class OM>
KOKKOS_INLINE_FUNCTION void times_lower(const Member& m, int r, const SM& S, const LowerEntry& L, const OM& out) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    host_times_lower<T>(m, r, S, L, out);
  } else {
    device_times_lower<T>(m, r, S, L, out);
  }
}

// Rows of rows_times_inverse_upper and rows_dot that a host thread takes together.
inline constexpr int host_interleaved_rows = 8;

// rows_dot with each thread taking G rows at a time, their sums
// interleaved (G = 1: a row per thread).
template <int G, class T, class Member, class MM, class XV, class YV>
KOKKOS_INLINE_FUNCTION void rows_dot_in_groups(const Member& m, int rows, int cols, const MM& M, const XV& x,
                                               const YV& y) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, (rows + G - 1) / G), [&](const int group) {
    const int a0 = group * G, n = rows - a0 < G ? rows - a0 : G;
    T acc[G];
    for (int g = 0; g < G; ++g) acc[g] = T(0);
    if (n == G) {  // a whole group: fixed trip counts, so the sums stay in registers
      for (int c = 0; c < cols; ++c) {
        const auto xc = x(c);
        for (int g = 0; g < G; ++g) acc[g] += M(a0 + g, c) * xc;
      }
    } else {
      for (int c = 0; c < cols; ++c) {
        const auto xc = x(c);
        for (int g = 0; g < n; ++g) acc[g] += M(a0 + g, c) * xc;
      }
    }
    for (int g = 0; g < n; ++g) y(a0 + g) = acc[g];
  });
}

// y(a) = sum_{c < cols} M(a, c) x(c) for a < rows, each one running sum in
// increasing c from 0, in every form (the products in M's and x's types).
// Each sum is a chain of dependent additions: on devices a row per thread;
// on host spaces each thread takes host_interleaved_rows rows at a time and
// interleaves their chains. y must not alias M or x. No barrier.
template <class T, class Member, class MM, class XV, class YV>
KOKKOS_INLINE_FUNCTION void rows_dot(const Member& m, int rows, int cols, const MM& M, const XV& x, const YV& y) {
  using space = typename Member::execution_space;
  constexpr int G = Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible ? host_interleaved_rows : 1;
  rows_dot_in_groups<G, T>(m, rows, cols, M, x, y);
}

// rows_times_inverse_upper with each thread taking G rows at a time and
// applying every pivot to all of them (G = 1: a row per thread).
template <int G, class T, class Member, class RowPtr>
KOKKOS_INLINE_FUNCTION void rows_times_inverse_upper_in_groups(const Member& m, const T* R, long ld, int r, int rows,
                                                               const RowPtr& row) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, (rows + G - 1) / G), [&](const int group) {
    const int p0 = group * G, n = rows - p0 < G ? rows - p0 : G;
    T* x[G];
    for (int g = 0; g < n; ++g) x[g] = row(p0 + g);
    for (int q = 0; q < r; ++q) {
      const T* const Rq = R + q * ld;
      for (int g = 0; g < n; ++g) {
        T* const xg = x[g];
        const T xq = xg[q] / Rq[q];
        xg[q] = xq;
        MOSAIC_SIMD_LOOP
        for (int c = q + 1; c < r; ++c) xg[c] -= xq * Rq[c];
      }
    }
  });
  m.team_barrier();
}

// x <- x R^-1 for `rows` rows x = row(p) (r entries, unit stride) and the
// upper-triangular R (row-major, leading dimension ld; its diagonal and
// upper triangle are read): forward in the columns, right-looking along R's
// rows; each x[c] receives its subtractions x[q] R(q, c) in increasing q,
// then its division by R(c, c), in every form. The rows are independent:
// on devices one row per thread; on host spaces each thread takes
// host_interleaved_rows rows at a time, so that their chains of dependent
// divisions overlap. Ends with a team barrier.
template <class T, class Member, class RowPtr>
KOKKOS_INLINE_FUNCTION void rows_times_inverse_upper(const Member& m, const T* R, long ld, int r, int rows,
                                                     const RowPtr& row) {
  using space = typename Member::execution_space;
  constexpr int G = Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible ? host_interleaved_rows : 1;
  rows_times_inverse_upper_in_groups<G>(m, R, ld, r, rows, row);
}

}  // namespace mosaic::detail
