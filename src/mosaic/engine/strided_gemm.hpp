// One GEMM shape over `count` equally strided problems (the blocked
// update's per-stream products and bases: every stream's arrays are the
// same size and lie at a fixed stride), column-major with BLAS's
// conventions:
//   C_i = alpha op(A_i) op(B_i) + beta C_i,  X_i = X + i stride_x,  i < count.
// On Cuda with Kokkos Kernels' cuBLAS TPL all problems go to the library in
// one call (cublas<t>gemmStridedBatched: one launch per phase per block
// whatever the number of streams, issue 28); elsewhere problem by problem
// through KokkosBlas::gemm (the BLAS TPL on host spaces). Both read the same
// description, so the host build's tests check the pointers, leading
// dimensions and strides that the device's call receives.
#pragma once

#include <cstddef>
#include <type_traits>

#include <KokkosKernels_config.h>
#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

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

// True where strided_gemm hands all problems to cuBLAS in one call.
template <class ExecSpace>
constexpr bool strided_gemm_batched_by_cublas() {
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  return std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
  return false;
#endif
}

namespace vendor_blas {
// All problems of g in one cublas<t>gemmStridedBatched call on the default
// Kokkos::Cuda instance's stream; throws on a cuBLAS error. Defined
// (vendor_blas.cpp) and called only where strided_gemm_batched_by_cublas.
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

// Runs every problem of g on the execution space (host code).
template <class ExecSpace, class Scalar>
void strided_gemm(const StridedGemm<Scalar>& g) {
  if (g.count < 1 || g.m < 1 || g.n < 1) return;
  if constexpr (strided_gemm_batched_by_cublas<ExecSpace>()) {
    vendor_blas::cublas_strided_gemm(g);
  } else {
    for (int i = 0; i < g.count; ++i) detail::strided_gemm_first<ExecSpace>(g.problem(i));
  }
}

}  // namespace mosaic
