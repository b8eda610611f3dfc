// The backend layer's GEMM: every GEMM of the engine, the diagnostics and
// the synthetic source on execution-space memory goes through here (a CI
// check, scripts/check_device_code.py's vendor-gemm rule, fails on a
// KokkosBlas::gemm call anywhere else), so that the library and the
// reduction order behind each product are chosen in one place.
//
// One GEMM shape over `count` equally strided problems (every stream's
// arrays are the same size and lie at a fixed stride), column-major with
// BLAS's conventions:
//   C_i = alpha op(A_i) op(B_i) + beta C_i,  X_i = X + i stride_x,  i < count.
// On Cuda all problems go to cuBLAS in one call of the project's own handle
// (cublas<t>gemmStridedBatched: one launch per phase per block whatever the
// number of streams, issue 28), whether or not Kokkos Kernels has its cuBLAS
// TPL: Kokkos Kernels' gemm("T", "N") on a GPU (its cuBLAS specialization
// below M N = 1600, its native one likewise) splits each dot product over
// teams and adds the parts with atomics, so its rounding changes from run to
// run (issue 36). cuBLAS without atomics (set on the handle) gives the same
// bits for the same call on the same GPU model and library
// (docs/REPRODUCIBILITY.md). Elsewhere problem by problem through
// KokkosBlas::gemm (the BLAS TPL on host spaces). Both read the same
// description, so the host build's tests check the pointers, leading
// dimensions and strides that the device's call receives.
#pragma once

#include <cstddef>
#include <type_traits>

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/vendor_blas.hpp"

namespace mosaic {

template <class Scalar>
struct StridedGemm {
  char transa = 'N', transb = 'N';  // 'N' or 'T'
  int m = 0, n = 0, k = 0;          // op(A_i) is m x k, op(B_i) k x n, C_i m x n
  Scalar alpha = 1, beta = 0;
  const Scalar* a = nullptr;
  int lda = 1;
  std::ptrdiff_t stride_a = 0;
  const Scalar* b = nullptr;
  int ldb = 1;
  std::ptrdiff_t stride_b = 0;
  Scalar* c = nullptr;
  int ldc = 1;
  std::ptrdiff_t stride_c = 0;
  int count = 1;

  // Problem i alone.
  StridedGemm problem(int i) const {
    StridedGemm g = *this;
    g.a += i * stride_a;
    g.b += i * stride_b;
    g.c += i * stride_c;
    g.count = 1;
    return g;
  }
};

// True where strided_gemm hands all problems to cuBLAS in one call: every
// Cuda build links cuBLAS (src/CMakeLists.txt).
template <class ExecSpace>
constexpr bool gemm_by_cublas() {
#if defined(KOKKOS_ENABLE_CUDA)
  return std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
  return false;
#endif
}

namespace vendor_blas {
// All problems of g in one cublas<t>gemmStridedBatched call on the default
// Kokkos::Cuda instance's stream; throws on a cuBLAS error. Defined
// (vendor_blas.cpp) and called only where gemm_by_cublas.
void cublas_strided_gemm(const StridedGemm<float>& g);
void cublas_strided_gemm(const StridedGemm<double>& g);
}  // namespace vendor_blas

namespace detail {

// Problem 0 of g by KokkosBlas::gemm on column-major Views of the memory
// space (rows [0, rows) of an ld x cols array: Kokkos Kernels hands the
// leading dimension to the library).
template <class ExecSpace, class Scalar>
void strided_gemm_first(const StridedGemm<Scalar>& g) {
  using memory_space = typename ExecSpace::memory_space;
  using unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  using const_matrix = Kokkos::View<const Scalar**, Kokkos::LayoutLeft, memory_space, unmanaged>;
  using matrix = Kokkos::View<Scalar**, Kokkos::LayoutLeft, memory_space, unmanaged>;
  const int a_rows = g.transa == 'N' ? g.m : g.k, a_cols = g.transa == 'N' ? g.k : g.m;
  const int b_rows = g.transb == 'N' ? g.k : g.n, b_cols = g.transb == 'N' ? g.n : g.k;
  const auto rows = [](const auto& v, int count) {
    return Kokkos::subview(v, Kokkos::make_pair(0, count), Kokkos::ALL());
  };
  const char ta[2] = {g.transa, '\0'}, tb[2] = {g.transb, '\0'};
  KokkosBlas::gemm(ta, tb, g.alpha, rows(const_matrix(g.a, g.lda, a_cols), a_rows),
                   rows(const_matrix(g.b, g.ldb, b_cols), b_rows), g.beta, rows(matrix(g.c, g.ldc, g.n), g.m));
}

}  // namespace detail

// Runs every problem of g on the execution space (host code; on host spaces
// also from inside a parallel region, one problem per thread: the blocked
// update's vendor path). Host spaces: one problem after another, each
// spread over the BLAS's threads where it has them.
template <class ExecSpace, class Scalar>
void strided_gemm(const StridedGemm<Scalar>& g) {
  if (g.count < 1 || g.m < 1 || g.n < 1) return;
  if constexpr (gemm_by_cublas<ExecSpace>()) {
    vendor_blas::cublas_strided_gemm(g);
  } else {
    for (int i = 0; i < g.count; ++i) detail::strided_gemm_first<ExecSpace>(g.problem(i));
  }
}

// f(b) for every stream b of a batch of B, where f makes one stream's
// vendor BLAS calls (strided_gemm of one problem, Kokkos Kernels' trsm) from
// host code outside any parallel region. On host spaces one stream's calls
// per thread where the BLAS runs single-threaded inside a parallel region
// (as the blocked update's vendor path, batched_engine.hpp): these
// per-stream calls are too small to spread one over the threads well.
// Elsewhere one stream after another, each call spread over the device (or
// the BLAS's own threads).
template <class ExecSpace, class F>
void for_each_stream_blas(const int B, const F& f) {
  if constexpr (Tuning<ExecSpace>::vendor_gemm_over_streams) {
    if (B >= ExecSpace().concurrency() && vendor_blas::host_calls_nest_single_threaded()) {
      Kokkos::parallel_for("mosaic::for_each_stream_blas", Kokkos::RangePolicy<ExecSpace>(0, B), f);
      return;
    }
  }
  for (int b = 0; b < B; ++b) f(b);
}

// Every problem of g, one per stream, from host code outside any parallel
// region: on Cuda one cuBLAS call for all (strided_gemm), on host spaces
// one stream per thread where for_each_stream_blas allows it.
template <class ExecSpace, class Scalar>
void strided_gemm_over_streams(const StridedGemm<Scalar>& g) {
  if constexpr (gemm_by_cublas<ExecSpace>()) {
    strided_gemm<ExecSpace>(g);
  } else {
    for_each_stream_blas<ExecSpace>(g.count, [=](const int i) { strided_gemm<ExecSpace>(g.problem(i)); });
  }
}

}  // namespace mosaic
