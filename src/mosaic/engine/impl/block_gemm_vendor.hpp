// gemm::Vendor, the blocked update's GEMM kernel wherever Kokkos Kernels
// has a vendor BLAS for the space: [U0 | D] packed per stream, the products
// and the new basis as one strided GEMM each over the streams
// (strided_gemm.hpp), around the coefficient launch (blocked_step.hpp;
// MosaicEngine::launch_block runs the phases).
#pragma once

#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/impl/blocked_step_decl.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// [U0 | D] of every stream in one column-major d x (r + k) matrix Y (each
// sample a contiguous column, so packing D is a unit-stride copy on every
// backend), the GEMMs' products C = [W0 | G; H] and the coefficients
// W = [A; B] in the scalar type, all LayoutLeft views that Kokkos Kernels
// hands to the vendor library as they are, and the first non-finite sample
// and centred sample of each stream.
template <class Scalar, class ExecSpace>
struct BlockGemmWork<Scalar, ExecSpace, gemm::Vendor> {
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<Scalar**, Kokkos::LayoutLeft, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space> wY;  // B x (d x ldy)
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space>
      wC;  // B x (ldy x ldy): columns 0..r-1 W0 = U0^T U0, then [G; H]
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space> wW;  // B x (ldy x r)
  // B x 2: first sample with a non-finite x, with a non-finite x - mu0
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> first_bad;
  // Host spaces, phase timing on: each stream's seconds in pack and in the
  // products (PackGemmTag), which share one launch.
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> stream_seconds;
  int d = 0, r = 0, ldy = 0;

  void allocate(int B, int d_, int r_, int K) {
    d = d_;
    r = r_;
    ldy = r + K;
    wY = decltype(wY)("mosaic::block_Y", std::size_t(B) * d * ldy);
    wC = decltype(wC)("mosaic::block_C", std::size_t(B) * ldy * ldy);
    wW = decltype(wW)("mosaic::block_W", std::size_t(B) * ldy * r);
    first_bad = decltype(first_bad)("mosaic::block_first_bad", B, 2);
    // "None yet" for the pack's atomic minima; the coefficient kernel
    // resets it after reading it, so that no block needs a fill (a launch
    // and, on Cuda, a copy per block).
    Kokkos::deep_copy(first_bad, int(INT_MAX));
    stream_seconds = decltype(stream_seconds)("mosaic::block_stream_seconds", B, 2);
  }
  template <class Policy>
  Policy with_scratch(Policy p) const {
    return p;
  }
  KOKKOS_INLINE_FUNCTION matrix Y(int b) const { return matrix(wY.data() + std::size_t(b) * d * ldy, d, ldy); }
  KOKKOS_INLINE_FUNCTION matrix C(int b) const { return matrix(wC.data() + std::size_t(b) * ldy * ldy, ldy, ldy); }
  KOKKOS_INLINE_FUNCTION matrix W(int b) const { return matrix(wW.data() + std::size_t(b) * ldy * r, ldy, r); }
};

// y(i) = x(i sx) - mu0(i) for i in [i0, i1), a non-finite difference
// stored as 0; true when every difference was finite. Branch-free (v - v
// is 0 exactly when v is finite) so that the loop vectorizes on host;
// callers take UnitStride = true where sx is 1, since with a run-time
// stride the loop does not vectorize.
template <bool UnitStride, class Scalar>
KOKKOS_INLINE_FUNCTION bool centre_rows(const Scalar* x, long sx, const Scalar* mu0, Scalar* y, int i0, int i1) {
  const long stride = UnitStride ? 1 : sx;
  int nonfinite = 0;
  for (int i = i0; i < i1; ++i) {
    const Scalar v = x[i * stride] - mu0[i];
    const bool finite = v - v == Scalar(0);
    nonfinite |= int(!finite);
    y[i] = finite ? v : Scalar(0);
  }
  return nonfinite == 0;
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::pack_rows(int b, int i0, int i1, int& bad_x, int& bad_y) const {
  const VendorWork& w = gw;
  const auto Y = w.Y(b);
  const int d = base.d, r = base.r;
  const Basis Ub{&base.U(b, 0, 0), d, r};
  const Scalar* const mu0 = &base.mu(b, 0);
  for (int s0 = i0; s0 < i1; s0 += slice_rows) {
    const int s1 = s0 + slice_rows < i1 ? s0 + slice_rows : i1;
    for (int a = 0; a < r; ++a)
      for (int i = s0; i < s1; ++i) Y(i, a) = Ub(i, a);
  }
  const long sx = long(Xb.stride(2));
  for (int t = 0; t < n; ++t) {
    const Scalar* const x = &Xb(b, t, 0);
    Scalar* const y = &Y(0, r + t);
    const bool finite = sx == 1 ? centre_rows<true>(x, sx, mu0, y, i0, i1) : centre_rows<false>(x, sx, mu0, y, i0, i1);
    if (finite) continue;  // else x - mu0 is non-finite somewhere: is x?
    if (t < bad_y) bad_y = t;
    for (int i = i0; i < i1 && t < bad_x; ++i)
      if (!kmath::isfinite(x[i * sx])) bad_x = t;
  }
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::init_w_row(int b, int p) const {
  const VendorWork& w = gw;
  const auto W = w.W(b);
  for (int a = 0; a < base.r; ++a) W(p, a) = Scalar(p == a ? 1 : 0);
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::operator()(PackTag, const member_type& m) const {
  const VendorWork& w = gw;
  const int chunks = (base.d + pack_chunk_rows - 1) / pack_chunk_rows;
  const int b = m.league_rank() / chunks, c = m.league_rank() % chunks;
  const int i0 = c * pack_chunk_rows, i1 = i0 + pack_chunk_rows < base.d ? i0 + pack_chunk_rows : base.d;
  int bad_x = n, bad_y = n;
  if constexpr (is_host_space<typename Base::execution_space>) {
    Kokkos::single(Kokkos::PerTeam(m), [&]() { pack_rows(b, i0, i1, bad_x, bad_y); });
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, i0, i1), [&](const int i) {
      int bx = n, by = n;
      pack_rows(b, i, i + 1, bx, by);
      if (bx < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 0), bx);
      if (by < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 1), by);
    });
  }
  if (bad_x < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 0), bad_x);
  if (bad_y < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 1), bad_y);
  if (c == 0) Kokkos::parallel_for(Kokkos::TeamThreadRange(m, w.ldy), [&](const int p) { init_w_row(b, p); });
}

template <class Base, class Gemm>
void BlockFunctor<Base, Gemm>::gemm_products(int b0, int count) const {
  const VendorWork& w = gw;
  const int d = base.d, r = base.r;
  const int P = panel_cols;
  const Scalar* const Y = w.Y(b0).data();
  Scalar* const C = w.C(b0).data();
  StridedGemm<Scalar> g;
  g.transa = 'T';
  g.k = d;
  g.lda = g.ldb = d;
  g.stride_a = g.stride_b = std::ptrdiff_t(d) * w.ldy;
  g.ldc = w.ldy;
  g.stride_c = std::ptrdiff_t(w.ldy) * w.ldy;
  g.count = count;
  if (with_w0) {
    g.m = g.n = r;
    g.a = g.b = Y;
    g.c = C;
    strided_gemm<typename Base::execution_space>(g);
  }
  for (int t0 = 0; t0 < n; t0 += P) {
    const int t1 = t0 + P < n ? t0 + P : n;
    g.m = r + t1;
    g.n = t1 - t0;
    g.a = Y;
    g.b = Y + std::ptrdiff_t(r + t0) * d;
    g.c = C + std::ptrdiff_t(r + t0) * w.ldy;
    strided_gemm<typename Base::execution_space>(g);
  }
}

template <class Base, class Gemm>
void BlockFunctor<Base, Gemm>::gemm_materialize(int b0, int count) const {
  const VendorWork& w = gw;
  const int d = base.d, r = base.r;
  const Scalar* const Y = w.Y(b0).data();  // d x (r + n) used, ld d
  const Scalar* const W = w.W(b0).data();  // (r + n) x r used, ld ldy
  StridedGemm<Scalar> g;
  g.k = r + n;
  g.c = stream_block_data(base.U, b0);
  g.stride_c = std::ptrdiff_t(base.U.stride(0));
  g.count = count;
  if constexpr (Base::column_major) {
    g.m = d;
    g.n = r;
    g.a = Y;
    g.lda = d;
    g.stride_a = std::ptrdiff_t(d) * w.ldy;
    g.b = W;
    g.ldb = w.ldy;
    g.stride_b = std::ptrdiff_t(w.ldy) * r;
    g.ldc = d;
  } else {
    g.transa = g.transb = 'T';
    g.m = r;
    g.n = d;
    g.a = W;
    g.lda = w.ldy;
    g.stride_a = std::ptrdiff_t(w.ldy) * r;
    g.b = Y;
    g.ldb = d;
    g.stride_b = std::ptrdiff_t(d) * w.ldy;
    g.ldc = r;
  }
  strided_gemm<typename Base::execution_space>(g);
}

template <class Base, class Gemm>
void BlockFunctor<Base, Gemm>::operator()(PackGemmTag, const int b) const {
  const VendorWork& w = gw;
  using clock = std::chrono::steady_clock;
  const auto since = [&](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  auto t = time_phases ? clock::now() : clock::time_point();  // the clock is read only while timing
  int bad_x = n, bad_y = n;
  pack_rows(b, 0, base.d, bad_x, bad_y);
  w.first_bad(b, 0) = bad_x;
  w.first_bad(b, 1) = bad_y;
  for (int p = 0; p < w.ldy; ++p) init_w_row(b, p);
  if (time_phases) {
    w.stream_seconds(b, 0) += since(t);
    t = clock::now();
  }
  gemm_products(b, 1);
  if (time_phases) w.stream_seconds(b, 1) += since(t);
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION int BlockFunctor<Base, Gemm>::form_gh(gemm::Vendor, const member_type& m, int b, bool w0) const {
  const VendorWork& w = gw;
  const int r = base.r;
  const auto C = w.C(b);
  const int bad_x = w.first_bad(b, 0) < n ? w.first_bad(b, 0) : n,
            bad_y = w.first_bad(b, 1) < n ? w.first_bad(b, 1) : n;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int j) {
    for (int a = 0; a < r; ++a) dG(b, j, a) = double(C(a, r + j));
    for (int l = 0; l < n; ++l) dH(b, j, l) = double(l <= j ? C(r + l, r + j) : C(r + j, r + l));
    if (j >= bad_y) dH(b, j, j) = HUGE_VAL;
  });
  if (w0)
    for_each_entry(m, r, r, [&](const int a, const int c) { dM(b, bm_W0, a, c) = double(a <= c ? C(a, c) : C(c, a)); });
  m.team_barrier();  // every thread has read first_bad
  Kokkos::single(Kokkos::PerTeam(m), [&]() { w.first_bad(b, 0) = w.first_bad(b, 1) = INT_MAX; });
  return bad_x;
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::materialize(gemm::Vendor, const member_type& m, int b,
                                                                  int K) const {
  const VendorWork& w = gw;
  const int d = base.d, r = base.r;
  const auto W = w.W(b);
  const auto Y = w.Y(b);
  for_each_entry(m, r + K, r,
                 [&](const int p, const int a) { W(p, a) = Scalar(p < r ? dA(b, p, a) : dB(b, p - r, a)); });
  // Rows in slices (unit-stride columns of D on host), each row's sum in increasing j.
  const int slices = (d + slice_rows - 1) / slice_rows;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, slices), [&](const int sl) {
    const int i0 = sl * slice_rows, i1 = i0 + slice_rows < d ? i0 + slice_rows : d;
    double s[slice_rows] = {};
    for (int j = 0; j < K; ++j) {
      const double mj = dv(b, bv_m, j);
      const Scalar* const col = &Y(0, r + j);
      for (int i = i0; i < i1; ++i) s[i - i0] += double(col[i]) * mj;
    }
    for (int i = i0; i < i1; ++i) base.mu(b, i) = Scalar(double(base.mu(b, i)) + s[i - i0]);
  });
  m.team_barrier();
}

}  // namespace detail
}  // namespace mosaic
