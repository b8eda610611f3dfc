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

// team_gram_lower on host spaces: register tiles of host_tile_rows x
// host_tile_cols entries on and below the diagonal, each tile's running
// sums kept in registers while k runs (one load of a row's W entries
// serves P rows of G), spread over the team's threads; the entries outside
// whole tiles (r not a multiple of the tile) as plain sums. No load and
// store of G per row (the rank-one updates this replaced).
template <class Member, class RowPtr, class GM>
KOKKOS_INLINE_FUNCTION void host_gram_lower(const Member& m, int r, int rows, const RowPtr& row_ptr, const GM& G) {
  using T = typename GM::non_const_value_type;
  constexpr int P = host_tile_rows, W = host_tile_cols;
  const int nt = m.team_size(), tiles_a = r / P, tiles_c = r / W;
  int t = -1;
  for (int ta = 0; ta < tiles_a; ++ta)
    for (int tc = 0; tc < tiles_c && tc * W <= ta * P + P - 1; ++tc) {
      if (++t % nt != m.team_rank()) continue;
      const int a0 = ta * P, c0 = tc * W;
      T acc[P * W];
      for (int e = 0; e < P * W; ++e) acc[e] = T(0);
      for (int k = 0; k < rows; ++k) {
        const auto* const ui = row_ptr(k);
        T uc[W];
        for (int w = 0; w < W; ++w) uc[w] = T(ui[c0 + w]);
        for (int p = 0; p < P; ++p) {
          const T ua = T(ui[a0 + p]);
          MOSAIC_SIMD_LOOP
          for (int w = 0; w < W; ++w) acc[p * W + w] += ua * uc[w];
        }
      }
      for (int p = 0; p < P; ++p)
        for (int w = 0; w < W && c0 + w <= a0 + p; ++w) G(a0 + p, c0 + w) = acc[p * W + w];
    }
  for (int a = 0; a < r; ++a)  // rows a >= tiles_a P, or columns c >= tiles_c W
    for (int c = 0; c <= a; ++c) {
      if (a < tiles_a * P && c < tiles_c * W) continue;
      if (++t % nt != m.team_rank()) continue;
      T s = T(0);
      for (int k = 0; k < rows; ++k) {
        const auto* const ui = row_ptr(k);
        s += T(ui[a]) * T(ui[c]);
      }
      G(a, c) = s;
    }
  m.team_barrier();
}

// team_gram_lower on devices (and the CPU suite's check of what a GPU
// runs): one entry of G per thread, the rows' reads coalesced down a
// column-major basis.
template <class Member, class Entry, class GM>
KOKKOS_INLINE_FUNCTION void device_gram_lower(const Member& m, int r, int rows, const Entry& entry, const GM& G) {
  using T = typename GM::non_const_value_type;
  for_each_entry(m, r, r, [&](const int a, const int c) {
    if (c > a) return;
    T s = 0;
    for (int k = 0; k < rows; ++k) s += T(entry(k, a)) * T(entry(k, c));
    G(a, c) = s;
  });
  m.team_barrier();
}

// The lower triangle of G = sum_k row_k row_k^T over rows k < rows, each
// entry one running sum over k in increasing order, in G's value type (its
// upper triangle would be the same numbers: u_a u_c = u_c u_a), so the
// bits do not depend on the form or the team size.
// row_ptr(k): row k's r entries at unit stride (host spaces, host_gram_lower:
// register tiles, 7.8's SYRK at 1-2 GFLOP/s in the device form's strided
// gathers); entry(k, a): its entry a (devices, device_gram_lower). Ends
// with a team barrier.
template <class ExecSpace, class Member, class RowPtr, class Entry, class GM>
KOKKOS_INLINE_FUNCTION void team_gram_lower(const Member& m, int r, int rows, const RowPtr& row_ptr, const Entry& entry,
                                            const GM& G) {
  if constexpr (is_host_space<ExecSpace>) {
    host_gram_lower(m, r, rows, row_ptr, G);
  } else {
    device_gram_lower(m, r, rows, entry, G);
  }
}

}  // namespace mosaic::detail
