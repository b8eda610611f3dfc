// The backend layer: what differs between host and device execution spaces,
// chosen once at compile time from the execution space, never by a run-time
// flag inside a kernel.
//   - gemm::Vendor / gemm::TeamBatched / gemm::HostTiled: the GEMM kernels
//     of the blocked update as tag types (as KokkosBatched's Algo tags);
//     MosaicEngine picks one when it launches a block. HostTiled
//     (tile_gemm.hpp, tuned for host vector registers) is instantiated for
//     host spaces only, so no device kernel contains it.
//   - HostTuning / DeviceTuning: the tuning points of the sequential and
//     blocked kernels, kept apart so that tuning one backend cannot move the
//     other (Kokkos Kernels batched keeps host and device tuning apart in the
//     same way).
#pragma once

#include <type_traits>

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>

namespace mosaic {

// True for execution spaces that run on the host (OpenMP, Serial, Threads):
// they read host memory and get the host kernels and tuning.
template <class ExecSpace>
inline constexpr bool is_host_space = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;

namespace gemm {
// GEMMs per stream on [U0 | D] held in one d x (r + k) array through the
// backend's GEMM (strided_gemm.hpp): Kokkos Kernels' BLAS TPL on host
// spaces, one strided-batched cuBLAS call for all streams on Cuda, Kokkos
// Kernels' native GEMM elsewhere. The
// block is then split into phases (pack, GEMMs, one launch of the
// coefficient steps, GEMM) instead of one launch.
struct Vendor {};
// KokkosBatched::TeamGemm (Algo::Gemm::Blocked) over a d x k copy of the
// centred block: any execution space.
struct TeamBatched {};
// The register-tiled micro-kernels of tile_gemm.hpp over packed chunks in
// team scratch: host execution spaces only.
struct HostTiled {};
}  // namespace gemm

// Host spaces: U row-major per stream (stream_batch.hpp), a few threads per
// team at most, L1/L2-sized work.
struct HostTuning {
  // Fixed chunks of the length-d reductions of the sequential kernel: a few
  // per host thread. Part of the result's rounding (it must not depend on
  // the thread count).
  static constexpr int reduction_chunks = 16;
  // Rows of U per thread in the frame rotation: four independent dot-product
  // chains per thread (each still summed in increasing j).
  static constexpr int rotation_rows_per_thread = 4;
  // gemm::Vendor: with at least as many streams as threads (and a BLAS that
  // runs single-threaded inside a parallel region, vendor_blas.hpp), each
  // thread packs and multiplies whole streams, so that a stream's [U0 | D]
  // is still in cache for its GEMMs; otherwise one GEMM at a time with the
  // library's threads.
  static constexpr bool vendor_gemm_over_streams = true;
  // Samples per pass of the synthetic generator (synthetic_source.hpp): its
  // 4 rows x 8 accumulators are eight AVX2 registers of 4 doubles.
  static constexpr int synthetic_samples_per_pass = 8;
  // Philox blocks per pass of the truth's Gaussian matrix: its Box-Muller
  // transform vectorizes over them.
  static constexpr int synthetic_basis_blocks_per_pass = 8;
  // Columns of D per GEMM of H = D^T D: panel j forms [U0 | D]^T D_j over
  // the columns up to j's, so about half of H's k^2 (plus one panel) is
  // computed instead of all of it. Each call packs its [U0 | D_{<t1}] again
  // (OpenBLAS), so fewer, wider panels win on host: d = 8192, r = 64,
  // k = 128, float, 2 threads, the products took 28.7-31.5 us per sample
  // with 32 columns, 24.6-25.8 with 64 and 24.9-26.4 with 128 (one call,
  // all of H) (docs/PERFORMANCE.md, "Panels of the products").
  static constexpr int vendor_panel_cols = 64;
};

// Device spaces: U column-major per stream, one team of many threads per
// stream, coalesced accesses (neighbouring threads, neighbouring rows).
struct DeviceTuning {
  static constexpr int reduction_chunks = 128;  // about one per GPU thread of a team
  static constexpr int rotation_rows_per_thread = 1;
  static constexpr bool vendor_gemm_over_streams = false;    // one strided-batched cuBLAS call for all streams
  static constexpr int synthetic_samples_per_pass = 1;       // a GPU thread's accumulators are registers
  static constexpr int synthetic_basis_blocks_per_pass = 1;  // one block per thread (a work item per row)
  static constexpr int vendor_panel_cols = 32;
};

// True where the backend's GEMM (strided_gemm.hpp) on this space's views
// calls a vendor library: Kokkos Kernels' BLAS TPL on host spaces, cuBLAS
// on Cuda (which every Cuda build links).
template <class ExecSpace>
constexpr bool vendor_gemm_tpl() {
  if constexpr (is_host_space<ExecSpace>) {
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
    return true;
#endif
  }
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) return true;
#endif
  return false;
}

template <class ExecSpace>
using Tuning = std::conditional_t<is_host_space<ExecSpace>, HostTuning, DeviceTuning>;

}  // namespace mosaic
