#include "mosaic/engine/vendor_blas.hpp"

#include <string>

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>

#include "mosaic/engine/strided_gemm.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <stdexcept>

#include <cublas_v2.h>
#endif

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
// OpenBLAS's own queries; weak, so that another BLAS links too (then they are null).
extern "C" char* openblas_get_config() __attribute__((weak));
extern "C" int openblas_get_parallel() __attribute__((weak));
#endif

namespace mosaic::vendor_blas {

std::string host_library() {
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  if (openblas_get_config) {
    std::string name = openblas_get_config();
    if (openblas_get_parallel) {
      const int p = openblas_get_parallel();
      name += p == 0 ? " (sequential)" : p == 1 ? " (pthreads)" : p == 2 ? " (OpenMP)" : " (threading unknown)";
    }
    return name;
  }
  return "the BLAS of Kokkos Kernels' BLAS TPL";
#else
  return "none";
#endif
}

bool host_calls_nest_single_threaded() {
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#if KOKKOS_VERSION >= 40000
  // Kokkos Kernels 4.x opens a profiling region in every gemm and trsm, and
  // with a Kokkos Tools library loaded Kokkos 4.x fences every execution
  // space when a region opens: called inside a parallel region of the same
  // OpenMP instance, that fence waits on the region's own lock (seen as a
  // deadlock with Kokkos 4.6.01 in the truth's Cholesky-QR).
  if (Kokkos::Profiling::profileLibraryLoaded()) return false;
#endif
  if (!openblas_get_parallel) return false;
  const int p = openblas_get_parallel();
  return p == 0 || p == 2;
#else
  return false;
#endif
}

#if defined(KOKKOS_ENABLE_CUDA)
namespace {

// The project's cuBLAS handle: made at the first call, destroyed when Kokkos
// finalizes (before the CUDA context goes). Host code of the main thread.
// Atomics are not allowed (cuBLAS' default, set so that no build or
// environment changes it): cuBLAS then gives bitwise the same result for the
// same call on the same GPU model and library version
// (docs/REPRODUCIBILITY.md).
cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = nullptr;
  if (!handle) {
    cublasHandle_t made = nullptr;
    cublasStatus_t status = cublasCreate(&made);
    if (status != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasCreate failed (cuBLAS status " + std::to_string(int(status)) + ")");
    status = cublasSetAtomicsMode(made, CUBLAS_ATOMICS_NOT_ALLOWED);
    if (status != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(made);
      throw std::runtime_error("cublasSetAtomicsMode failed (cuBLAS status " + std::to_string(int(status)) + ")");
    }
    handle = made;
    Kokkos::push_finalize_hook([] {
      cublasDestroy(handle);
      handle = nullptr;
    });
  }
  return handle;
}

cublasOperation_t op(char t) { return t == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T; }

void check(cublasStatus_t status, const char* call, int m, int n, int k, int count) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed (cuBLAS status " + std::to_string(int(status)) + ") for " +
                             std::to_string(count) + " problems of " + std::to_string(m) + " x " + std::to_string(n) +
                             " x " + std::to_string(k));
}

// All problems in one call of `gemm` (cublasSgemmStridedBatched or
// cublasDgemmStridedBatched), on the stream of the default Kokkos::Cuda
// instance, which the blocked update's kernels use: the library's launch is
// ordered after the pack and before the coefficient kernel, with no fence
// in between.
template <class Scalar, class Gemm>
void strided_batched(Gemm gemm, const char* name, const StridedGemm<Scalar>& g) {
  const cublasHandle_t h = cublas_handle();
  check(cublasSetStream(h, Kokkos::Cuda().cuda_stream()), "cublasSetStream", g.m, g.n, g.k, g.count);
  check(gemm(h, op(g.transa), op(g.transb), g.m, g.n, g.k, &g.alpha, g.a, g.lda, (long long)g.stride_a, g.b, g.ldb,
             (long long)g.stride_b, &g.beta, g.c, g.ldc, (long long)g.stride_c, g.count),
        name, g.m, g.n, g.k, g.count);
}

}  // namespace

void cublas_strided_gemm(const StridedGemm<float>& g) {
  strided_batched(cublasSgemmStridedBatched, "cublasSgemmStridedBatched", g);
}
void cublas_strided_gemm(const StridedGemm<double>& g) {
  strided_batched(cublasDgemmStridedBatched, "cublasDgemmStridedBatched", g);
}
#endif

}  // namespace mosaic::vendor_blas
