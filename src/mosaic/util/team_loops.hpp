// Loop shapes shared by the kernels' team code (batched_engine.hpp,
// blocked_step.hpp, frame_rotation.hpp).
#pragma once

#include <type_traits>

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

// Rows of a right-looking pass taken at once by the host forms below: each
// entry is loaded and stored once per KP subtractions (or additions),
// which it still receives one by one in increasing order.
inline constexpr int team_rows_per_pass = 4;

// X <- L^-1 X for each column of an r x r matrix X (in place), L lower
// triangular given entry by entry as L(i, k) (a lower factor, or the
// transpose of an upper one): forward substitution, each X(i, c) its
// subtractions in increasing k, then its division (the same arithmetic in
// both forms). Devices: one column per thread. Host spaces: right-looking
// over whole rows (row k final, then subtracted from every later row, the
// columns a unit-stride loop that vectorizes; measured as a strided column
// loop, the posterior's r x r algebra cost 4x the rest of a blocked
// coefficient step at r = 64). Ends with a team barrier.
template <class Member, class LowerEntry, class XM>
KOKKOS_INLINE_FUNCTION void lower_solve_columns(const Member& m, int r, const LowerEntry& L, const XM& X) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    constexpr int KP = team_rows_per_pass;
    for (int k0 = 0; k0 < r; k0 += KP) {
      const int k1 = k0 + KP < r ? k0 + KP : r;
      for (int k = k0; k < k1; ++k) {  // the panel's rows final, one pivot at a time
        const auto lkk = L(k, k);
        team_span(m, 0, r, [&](const int c) { X(k, c) = X(k, c) / lkk; });
        m.team_barrier();
        team_span(m, k + 1, k1, [&](const int i) {
          const auto lik = L(i, k);
          for (int c = 0; c < r; ++c) X(i, c) -= lik * X(k, c);
        });
        m.team_barrier();
      }
      team_span(m, k1, r, [&](const int i) {  // the later rows, the panel's pivots in one pass
        if (k1 - k0 == KP) {
          std::remove_cv_t<std::remove_reference_t<decltype(L(i, k0))>> l[KP];
          for (int j = 0; j < KP; ++j) l[j] = L(i, k0 + j);
          for (int c = 0; c < r; ++c) {
            auto v = X(i, c);
            for (int j = 0; j < KP; ++j) v -= l[j] * X(k0 + j, c);
            X(i, c) = v;
          }
        } else {
          for (int k = k0; k < k1; ++k) {
            const auto lik = L(i, k);
            for (int c = 0; c < r; ++c) X(i, c) -= lik * X(k, c);
          }
        }
      });
      m.team_barrier();
    }
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int c) {
      for (int i = 0; i < r; ++i) {
        auto v = X(i, c);
        for (int k = 0; k < i; ++k) v -= L(i, k) * X(k, c);
        X(i, c) = v / L(i, i);
      }
    });
  }
  m.team_barrier();
}

// out = A + s (Y^T Y) for r x r matrices with A symmetric (the callers' N
// and Delta), each sum over k in increasing order (the same arithmetic in
// both forms, and out(a, c) and out(c, a) the same number). Devices: one
// entry per thread. Host spaces: each thread its rows a of out, all r
// columns a unit-stride loop, in passes of team_rows_per_pass k (the lower
// triangle alone, then mirrored, does half the multiply-adds, but its rows
// of varying length vectorize worse; docs/PERFORMANCE.md). out is exactly
// symmetric and needs no symmetrize; it must not alias A or Y. Ends with a
// team barrier.
template <class Member, class AM, class T, class YM, class OM>
KOKKOS_INLINE_FUNCTION void plus_gram(const Member& m, int r, const AM& A, T s, const YM& Y, const OM& out) {
  using space = typename Member::execution_space;
  if constexpr (Kokkos::SpaceAccessibility<space, Kokkos::HostSpace>::accessible) {
    constexpr int KP = team_rows_per_pass;
    team_share(m, r, [&](const int lo, const int hi) {
      for (int a = lo; a < hi; ++a) {
        for (int c = 0; c < r; ++c) out(a, c) = T(0);
        int k = 0;
        for (; k + KP <= r; k += KP) {
          T y[KP];
          for (int j = 0; j < KP; ++j) y[j] = Y(k + j, a);
          for (int c = 0; c < r; ++c) {
            auto v = out(a, c);
            for (int j = 0; j < KP; ++j) v += y[j] * Y(k + j, c);
            out(a, c) = v;
          }
        }
        for (; k < r; ++k) {
          const T yka = Y(k, a);
          for (int c = 0; c < r; ++c) out(a, c) += yka * Y(k, c);
        }
        for (int c = 0; c < r; ++c) out(a, c) = A(a, c) + s * out(a, c);
      }
    });
  } else {
    for_each_entry(m, r, r, [&](const int a, const int c) {
      T v = 0;
      for (int k = 0; k < r; ++k) v += Y(k, a) * Y(k, c);
      out(a, c) = A(a, c) + s * v;
    });
  }
  m.team_barrier();
}

}  // namespace mosaic::detail
