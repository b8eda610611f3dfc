// Register-tiled GEMM micro-kernels for the blocked update on host spaces
// (blocked_step.hpp: the gemm::HostTiled kernel of backend.hpp, instantiated
// for host execution spaces only; their widths are tuned to host vector
// registers, and on a GPU they spilled:
// results/cuda_build/ptxas_sm90_0c5f441.txt). Plain C++ over contiguous, packed,
// zero-padded buffers: a fixed MR x NR tile of the output is accumulated in a
// local array that the compiler keeps in vector registers (the inner loop over
// NR columns vectorizes; no intrinsics, no reassociation). Every output entry
// is still one running sum in increasing order of the reduction index, in the
// scalar type, so the tiles give bitwise the results of the naive loops (and
// of each other) whatever the tile shape, the padding or the thread split.
//
// Why these shapes: MR x NR accumulators must fit the vector register file
// with room for one row of Q / W and a broadcast. With AVX-512 (32 vector
// registers) MR = 6 rows of NR = 256 bytes (24 zmm accumulators) was the
// fastest of the shapes tried on the development machine (AMD EPYC, g++ 12
// -O3 -march=native; 6 and 12 rows of 128 bytes, 4 rows of 256 bytes were
// slower in a standalone test). The committed measurement of this kernel is
// mosaic_bench's sgemm reference (docs/PERFORMANCE.md). A remainder narrower
// than NR columns runs as NR_MID tiles, then NR_TAIL tiles over zero-padded
// columns (with 32-byte tiles only, k = 32 and 96 at r = 64 ran markedly
// slower than k = 64: results/cpu/blocked_bench_28a4182_run*.txt, in git
// at commit 08b1dfb).
// Without AVX-512 the widths are counted in elements, not bytes: g++ 12
// -O3 -march=native on an AVX2 machine (AMD EPYC without AVX-512, the
// project's CI machine kind) compiles a 16-element tile row badly, for float
// and double alike (it keeps the accumulators in memory): mosaic_bench's
// sgemm reference ran at 2.66 GFLOP/s on one core with the 64-byte (16-float)
// rows this file used to choose for AVX2, and at 46.78 with rows of 32
// elements, a 12-element middle tile and 4-element tails, the shapes below
// (results/cpu/block_size_rule_dbf5cdc133df.txt; docs/PERFORMANCE.md,
// "tile widths on AVX2").
#pragma once

#include <Kokkos_Core.hpp>

namespace mosaic::tile {

constexpr int MR = 6;
#if defined(__AVX512F__)
template <class T>
constexpr int NR = 256 / int(sizeof(T));
template <class T>
constexpr int NR_MID = NR<T> / 2;
template <class T>
constexpr int NR_TAIL = 32 / int(sizeof(T));
#else
template <class T>
constexpr int NR = 32;
template <class T>
constexpr int NR_MID = 12;
template <class T>
constexpr int NR_TAIL = 4;
#endif

KOKKOS_INLINE_FUNCTION constexpr int round_up(int n, int m) { return (n + m - 1) / m * m; }

// C(0..MR, 0..W) += sum_{i0 <= i < i1} P(i, 0..MR) Q(i, 0..W) with P(i, a) at
// P[i * ldp + a], Q(i, c) at Q[i * ldq + c], C(a, c) at C[a * ldc + c].
template <class T, int W>
KOKKOS_INLINE_FUNCTION void inner_tile(int i0, int i1, const T* P, int ldp, const T* Q, int ldq, T* C, int ldc) {
  T acc[MR][W];
  for (int a = 0; a < MR; ++a)
    for (int c = 0; c < W; ++c) acc[a][c] = C[a * ldc + c];
  for (int i = i0; i < i1; ++i) {
    const T* p = P + long(i) * ldp;
    const T* q = Q + long(i) * ldq;
    for (int a = 0; a < MR; ++a) {
      const T pa = p[a];
      for (int c = 0; c < W; ++c) acc[a][c] += pa * q[c];
    }
  }
  for (int a = 0; a < MR; ++a)
    for (int c = 0; c < W; ++c) C[a * ldc + c] = acc[a][c];
}

// O(0..MR, 0..W) = sum_{0 <= p < kk} Pt(p, 0..MR) Wm(p, 0..W) with Pt packed
// (Pt(p, a) at Pt[p * MR + a]), Wm(p, c) at Wm[p * ldw + c], O(a, c) at
// O[a * ldo + c].
template <class T, int W>
KOKKOS_INLINE_FUNCTION void outer_tile(int kk, const T* Pt, const T* Wm, int ldw, T* O, int ldo) {
  T acc[MR][W];
  for (int a = 0; a < MR; ++a)
    for (int c = 0; c < W; ++c) acc[a][c] = T(0);
  for (int p = 0; p < kk; ++p) {
    const T* w = Wm + long(p) * ldw;
    const T* pt = Pt + long(p) * MR;
    for (int a = 0; a < MR; ++a) {
      const T pa = pt[a];
      for (int c = 0; c < W; ++c) acc[a][c] += pa * w[c];
    }
  }
  for (int a = 0; a < MR; ++a)
    for (int c = 0; c < W; ++c) O[a * ldo + c] = acc[a][c];
}

// Column tiles covering [0, ncols) (ncols a multiple of NR_TAIL): full NR
// tiles, then NR_MID tiles, then NR_TAIL ones (so a remainder
// does not run as many narrow tiles). f(c0, width) for each.
template <class T, class F>
KOKKOS_INLINE_FUNCTION void for_each_column_tile(int ncols, const F& f) {
  int c0 = 0;
  for (; c0 + NR<T> <= ncols; c0 += NR<T>) f(c0, NR<T>);
  for (; c0 + NR_MID<T> <= ncols; c0 += NR_MID<T>) f(c0, NR_MID<T>);
  for (; c0 < ncols; c0 += NR_TAIL<T>) f(c0, NR_TAIL<T>);
}

// inner_tile / outer_tile for a width chosen at run time among the three.
template <class T>
KOKKOS_INLINE_FUNCTION void inner_tile_w(int width, int i0, int i1, const T* P, int ldp, const T* Q, int ldq, T* C,
                                         int ldc) {
  if (width == NR<T>) inner_tile<T, NR<T>>(i0, i1, P, ldp, Q, ldq, C, ldc);
  else if (width == NR_MID<T>) inner_tile<T, NR_MID<T>>(i0, i1, P, ldp, Q, ldq, C, ldc);
  else inner_tile<T, NR_TAIL<T>>(i0, i1, P, ldp, Q, ldq, C, ldc);
}
template <class T>
KOKKOS_INLINE_FUNCTION void outer_tile_w(int width, int kk, const T* Pt, const T* Wm, int ldw, T* O, int ldo) {
  if (width == NR<T>) outer_tile<T, NR<T>>(kk, Pt, Wm, ldw, O, ldo);
  else if (width == NR_MID<T>) outer_tile<T, NR_MID<T>>(kk, Pt, Wm, ldw, O, ldo);
  else outer_tile<T, NR_TAIL<T>>(kk, Pt, Wm, ldw, O, ldo);
}

}  // namespace mosaic::tile
