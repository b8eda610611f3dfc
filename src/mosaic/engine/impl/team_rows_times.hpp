// The blocked update's matrix-vector products on the coefficients
// (impl/block_coefficients.hpp): y (+)= sum_{j < J} M(j, :) x(j) over
// unit-stride rows of M, every y(a) one running sum in increasing j, so the
// host and device forms give the plain loops' bits at every team size
// (tests/engine/test_team_cholesky.cpp holds both to them on host).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic::detail {

// Results per register tile of host_rows_times.
inline constexpr int host_rows_times_tile = 32;

// y(a) (+)= sum_{j < J} M(j, a) x(j) for a < n, row j of M at Mp + j * ldm,
// on host spaces: each thread's contiguous share of the results in tiles of
// host_rows_times_tile entries kept in registers while j runs (y loaded
// and stored once, not once per j), the rest as plain running sums. Ends
// with a team barrier.
template <class Member>
KOKKOS_INLINE_FUNCTION void host_rows_times(const Member& m, int n, int J, const double* Mp, int ldm, const double* x,
                                            double* y, bool accumulate) {
  constexpr int T = host_rows_times_tile;
  team_share(m, n, [&](const int lo, const int hi) {
    int a0 = lo;
    for (; a0 + T <= hi; a0 += T) {
      double acc[T];
      for (int w = 0; w < T; ++w) acc[w] = accumulate ? y[a0 + w] : 0.0;
      for (int j = 0; j < J; ++j) {
        const double xj = x[j];
        const double* const row = Mp + long(j) * ldm + a0;
        MOSAIC_SIMD_LOOP
        for (int w = 0; w < T; ++w) acc[w] += row[w] * xj;
      }
      for (int w = 0; w < T; ++w) y[a0 + w] = acc[w];
    }
    if (!accumulate)
      for (int a = a0; a < hi; ++a) y[a] = 0.0;
    for (int j = 0; j < J; ++j) {
      const double xj = x[j];
      const double* row = Mp + long(j) * ldm;
      for (int a = a0; a < hi; ++a) y[a] += row[a] * xj;
    }
  });
  m.team_barrier();
}

// The same on devices: consecutive threads on consecutive results (each
// row read coalesced), each result's running sum in a register while j
// runs, one store: no accumulation through global memory. Ends with a
// team barrier.
template <class Member>
KOKKOS_INLINE_FUNCTION void cooperative_rows_times(const Member& m, int n, int J, const double* Mp, int ldm,
                                                   const double* x, double* y, bool accumulate) {
  team_span(m, 0, n, [&](const int a) {
    double acc = accumulate ? y[a] : 0.0;
    for (int j = 0; j < J; ++j) acc += Mp[long(j) * ldm + a] * x[j];
    y[a] = acc;
  });
  m.team_barrier();
}

// host_rows_times on host spaces, cooperative_rows_times elsewhere.
template <class Member>
KOKKOS_INLINE_FUNCTION void team_rows_times(const Member& m, int n, int J, const double* Mp, int ldm, const double* x,
                                            double* y, bool accumulate) {
  if constexpr (is_host_space<typename Member::execution_space>) {
    host_rows_times(m, n, J, Mp, ldm, x, y, accumulate);
  } else {
    cooperative_rows_times(m, n, J, Mp, ldm, x, y, accumulate);
  }
}

}  // namespace mosaic::detail
