#include "vendor_blas.hpp"

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>

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

}  // namespace mosaic::vendor_blas
