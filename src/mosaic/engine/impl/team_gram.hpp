// The Gram of a set of basis rows, G = R^T R (ALGORITHM.md 7.8's SYRK of the
// missing or the observed rows), shared by the masked sequential step
// (impl/masked_step.hpp: the rows of the state's basis, by index) and the
// shared-mask blocked form (impl/block_coefficients.hpp: the missing rows
// saved at the run's start).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic::detail {

// The lower triangle of G = sum_k row_k row_k^T over rows k < rows, each
// entry one running sum over k in increasing order, in G's value type (its
// upper triangle would be the same numbers: u_a u_c = u_c u_a).
// row_ptr(k): row k's r entries at unit stride (host spaces); entry(k, a):
// its entry a (devices). Device: one entry of G per thread, the rows'
// reads coalesced down a column-major basis. Host: rank-one updates row
// after row into the lower triangle, each thread its block of rows of G
// (k outermost, so a row is read once and its r entries are contiguous):
// the same sums in the same order, without the device form's strided
// gathers (7.8's SYRK measured at 1-2 GFLOP/s that way). Ends with a team
// barrier.
template <class ExecSpace, class Member, class RowPtr, class Entry, class GM>
KOKKOS_INLINE_FUNCTION void team_gram_lower(const Member& m, int r, int rows, const RowPtr& row_ptr, const Entry& entry,
                                            const GM& G) {
  using T = typename GM::non_const_value_type;
  if constexpr (is_host_space<ExecSpace>) {
    const int nt = m.team_size(), t = m.team_rank();
    const int a0 = r * t / nt, a1 = r * (t + 1) / nt;
    for (int a = a0; a < a1; ++a)
      for (int c = 0; c <= a; ++c) G(a, c) = T(0);
    for (int k = 0; k < rows; ++k) {
      const auto* ui = row_ptr(k);
      for (int a = a0; a < a1; ++a) {
        const T ua = T(ui[a]);
        T* ga = &G(a, 0);
        for (int c = 0; c <= a; ++c) ga[c] += ua * T(ui[c]);
      }
    }
  } else {
    for_each_entry(m, r, r, [&](const int a, const int c) {
      if (c > a) return;
      T s = 0;
      for (int k = 0; k < rows; ++k) s += T(entry(k, a)) * T(entry(k, c));
      G(a, c) = s;
    });
  }
  m.team_barrier();
}

}  // namespace mosaic::detail
