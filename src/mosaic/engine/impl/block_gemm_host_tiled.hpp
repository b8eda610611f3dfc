// gemm::HostTiled, the blocked update's GEMM kernel on host spaces without
// a BLAS: register-tiled micro-kernels (tile_gemm.hpp) over chunks of
// [U0 | D] packed into team scratch; D is never stored whole
// (blocked_step.hpp).
#pragma once

#include <algorithm>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/impl/blocked_step_decl.hpp"
#include "mosaic/engine/tile_gemm.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// [G^T | H] and [A; B] in the scalar type, zero-padded to whole tiles; the
// packed chunk of rows of [U0 | D] (dc x ldq) lives in team scratch;
// materialize's packed rows (materialize_chunk_panels panels of MR rows, each
// (r + k) x MR) and the MR x ldw results of one panel in thread scratch.
template <class Scalar, class ExecSpace>
struct BlockGemmWork<Scalar, ExecSpace, gemm::HostTiled> {
  static_assert(is_host_space<ExecSpace>, "gemm::HostTiled (tile_gemm.hpp) runs on host execution spaces only");
  template <class DataType>
  using view_t = Kokkos::View<DataType, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  using scratch_view =
      Kokkos::View<Scalar*, Kokkos::LayoutRight, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static constexpr int materialize_chunk_panels = 32;  // rows packed at once in materialize: 32 MR
  view_t<Scalar***> wC;                                // B x (r + k + MR) x ldq
  view_t<Scalar***> wW;                                // B x (r + k) x ldw
  int ldq = 0, ldw = 0, dc = 0, rk = 0;

  void allocate(int B, int d, int r, int K) {
    // The lower triangle of [U0 | D]^T [U0 | D]: rows in MR-row tiles from
    // row 0 or r (the tiles read zero padding up to MR - 1 columns past
    // r + K of a packed row), columns to whole tail tiles; [A; B] likewise.
    const int rows_cap = r + K + tile::MR;
    ldq = tile::round_up(rows_cap, tile::NR_TAIL<Scalar>);
    ldw = tile::round_up(r, tile::NR_TAIL<Scalar>);
    rk = r + K;
    // Rows per packed chunk of [U0 | X~]: about 256 KiB, so that the chunk
    // stays in a 1 MiB L2 cache while every output tile streams over it, and
    // each sample is read in long unit-stride runs (of 96 and 256 KiB tried
    // on the development machine, 256 KiB was slightly faster).
    dc = std::max(tile::MR, std::min(d, int((256 * 1024) / (sizeof(Scalar) * ldq))));
    wC = view_t<Scalar***>("mosaic::block_C", B, rows_cap, ldq);
    wW = view_t<Scalar***>("mosaic::block_W", B, r + K, ldw);
  }
  // Level-1 scratch: the packed chunk per team, materialize's panels per thread.
  template <class Policy>
  Policy with_scratch(Policy p) const {
    const std::size_t team = scratch_view::shmem_size(std::size_t(dc) * ldq);
    const std::size_t thread =
        scratch_view::shmem_size(std::size_t(rk) * materialize_chunk_panels * tile::MR + std::size_t(tile::MR) * ldw);
    return p.set_scratch_size(1, Kokkos::PerTeam(team), Kokkos::PerThread(thread));
  }
};

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION int BlockFunctor<Base, Gemm>::form_gh(gemm::HostTiled, const member_type& m, int b,
                                                             bool with_w0) const {
  const int d = base.d, r = base.r, K = n;
  const int p_begin = with_w0 ? 0 : r;
  const int nrow_tiles = (r + K - p_begin + tile::MR - 1) / tile::MR;
  const int ncols = tile::round_up(r + K, tile::NR_TAIL<Scalar>);
  const Basis Ub{&base.U(b, 0, 0), d, r};
  Scalar* const C = &gw.wC(b, 0, 0);
  typename decltype(gw)::scratch_view Q(m.team_scratch(1), std::size_t(gw.dc) * gw.ldq);
  Scalar* const Qp = &Q(0);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nrow_tiles * tile::MR * gw.ldq),
                       [&](const int e) { C[std::size_t(p_begin) * gw.ldq + e] = Scalar(0); });
  // Zero the packed chunk's padding columns once (never written below).
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, gw.dc), [&](const int i) {
    for (int c = r + K; c < gw.ldq; ++c) Qp[std::size_t(i) * gw.ldq + c] = Scalar(0);
  });
  // The output tiles: rows p0 (of MR) x column tiles; strictly upper tiles
  // are skipped.
  for (int i0 = 0; i0 < d; i0 += gw.dc) {
    const int rows = d - i0 < gw.dc ? d - i0 : gw.dc;
    m.team_barrier();
    // Pack rows i0.. of [U0 | D]: U0 row by row, each column of D from a
    // sample with unit-stride reads (and mu0).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, rows), [&](const int i) {
      Scalar* q = Qp + std::size_t(i) * gw.ldq;
      for (int a = 0; a < r; ++a) q[a] = Ub(i0 + i, a);
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int t) {
      Scalar* q = Qp + r + t;
      const Scalar* x = &Xb(b, t, i0);
      const Scalar* mu0 = &base.mu(b, i0);
      const long sx = long(Xb.stride(2));
      for (int i = 0; i < rows; ++i) q[std::size_t(i) * gw.ldq] = x[i * sx] - mu0[i];
    });
    m.team_barrier();
    team_share(m, nrow_tiles, [&](const int lo, const int hi) {
      for (int rt = lo; rt < hi; ++rt) {
        const int p0 = p_begin + rt * tile::MR;
        tile::for_each_column_tile<Scalar>(ncols, [&](const int c0, const int width) {
          if (c0 > p0 + tile::MR - 1) return;  // strictly upper part
          tile::inner_tile_w(width, 0, rows, Qp + p0, gw.ldq, Qp + c0, gw.ldq, C + std::size_t(p0) * gw.ldq + c0,
                             gw.ldq);
        });
      }
    });
  }
  m.team_barrier();
  int first_bad = n;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(m, n),
      [&](const int t, int& fb) {
        if (kmath::isfinite(C[std::size_t(r + t) * gw.ldq + r + t])) return;
        for (int i = 0; i < d; ++i)
          if (!kmath::isfinite(Xb(b, t, i))) {
            if (t < fb) fb = t;
            break;
          }
      },
      Kokkos::Min<int>(first_bad));  // INT_MAX when all are finite
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
    const Scalar* cj = C + std::size_t(r + j) * gw.ldq;
    for (int a = 0; a < r; ++a) dG(b, j, a) = double(cj[a]);
    for (int l = 0; l <= j; ++l) dH(b, j, l) = double(cj[r + l]);
  });
  if (with_w0)
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
      const Scalar* ca = C + std::size_t(a) * gw.ldq;
      for (int c = 0; c <= a; ++c) dM(b, bm_W0, a, c) = double(ca[c]);
    });
  m.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
    for (int l = j + 1; l < K; ++l) dH(b, j, l) = dH(b, l, j);
  });
  if (with_w0)
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
      for (int c = a + 1; c < r; ++c) dM(b, bm_W0, a, c) = dM(b, bm_W0, c, a);
    });
  m.team_barrier();
  return first_bad < n ? first_bad : n;
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::materialize(gemm::HostTiled, const member_type& m, int b,
                                                                  int K) const {
  const int d = base.d, r = base.r;
  const Basis Ub{&base.U(b, 0, 0), d, r};
  const int kk = r + K;
  Scalar* const Wm = &gw.wW(b, 0, 0);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, kk), [&](const int p) {
    Scalar* w = Wm + std::size_t(p) * gw.ldw;
    for (int a = 0; a < r; ++a) w[a] = Scalar(p < r ? dA(b, p, a) : dB(b, p - r, a));
    for (int a = r; a < gw.ldw; ++a) w[a] = Scalar(0);
  });
  m.team_barrier();
  constexpr int MR = tile::MR, MCH = decltype(gw)::materialize_chunk_panels * tile::MR;
  typename decltype(gw)::scratch_view work(m.thread_scratch(1), std::size_t(kk) * MCH + std::size_t(MR) * gw.ldw);
  Scalar* const panels = &work(0);
  Scalar* const out = panels + std::size_t(kk) * MCH;
  const std::size_t panel = std::size_t(kk) * MR;
  const int nchunks = (d + MCH - 1) / MCH;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nchunks), [&](const int ch) {
    const int i0 = ch * MCH;
    const int npan = ((d - i0 < MCH ? d - i0 : MCH) + MR - 1) / MR;
    for (int pn = 0; pn < npan; ++pn)
      for (int a = 0; a < MR; ++a) {
        const int i = i0 + pn * MR + a;
        Scalar* pt = panels + pn * panel + a;
        if (i < d) {
          for (int p = 0; p < r; ++p) pt[p * MR] = Ub(i, p);
        } else {
          for (int p = 0; p < kk; ++p) pt[p * MR] = Scalar(0);
        }
      }
    for (int j = 0; j < K; ++j)
      for (int pn = 0; pn < npan; ++pn) {
        Scalar* pt = panels + pn * panel + (r + j) * MR;
        const int ib = i0 + pn * MR;
        for (int a = 0; a < MR && ib + a < d; ++a) pt[a] = Xb(b, j, ib + a) - base.mu(b, ib + a);
      }
    for (int pn = 0; pn < npan; ++pn) {
      const Scalar* pt = panels + pn * panel;
      tile::for_each_column_tile<Scalar>(gw.ldw, [&](const int c0, const int width) {
        tile::outer_tile_w(width, kk, pt, Wm + c0, gw.ldw, out + c0, gw.ldw);
      });
      double mu_new[MR] = {};  // (D m) of the MR rows: independent sums, each in increasing j
      for (int j = 0; j < K; ++j) {
        const double mj = dv(b, bv_m, j);
        for (int a = 0; a < MR; ++a) mu_new[a] += double(pt[(r + j) * MR + a]) * mj;
      }
      const int ib = i0 + pn * MR;
      for (int a = 0; a < MR && ib + a < d; ++a) {
        for (int c = 0; c < r; ++c) Ub(ib + a, c) = out[a * gw.ldw + c];
        base.mu(b, ib + a) = Scalar(double(base.mu(b, ib + a)) + mu_new[a]);
      }
    }
  });
  m.team_barrier();
}

}  // namespace detail
}  // namespace mosaic
