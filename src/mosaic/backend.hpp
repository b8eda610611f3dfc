// The backend layer: what differs between host and device execution spaces,
// chosen once at compile time from the execution space, never by a run-time
// flag inside a kernel.
//   - gemm::TeamBatched / gemm::HostTiled: the GEMM kernels of the blocked
//     update as tag types (as KokkosBatched's Algo tags); MosaicEngine picks
//     one when it launches a block. HostTiled (tile_gemm.hpp, tuned for host
//     vector registers) is instantiated for host spaces only, so no device
//     kernel contains it.
//   - HostTuning / DeviceTuning: the tuning points of the sequential and
//     blocked kernels, kept apart so that tuning one backend cannot move the
//     other (Kokkos Kernels batched keeps host and device tuning apart in the
//     same way).
#pragma once

#include <type_traits>

#include <Kokkos_Core.hpp>

namespace mosaic {

// True for execution spaces that run on the host (OpenMP, Serial, Threads):
// they read host memory and get the host kernels and tuning.
template <class ExecSpace>
inline constexpr bool is_host_space = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;

namespace gemm {
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
  using block_gemm = gemm::HostTiled;
};

// Device spaces: U column-major per stream, one team of many threads per
// stream, coalesced accesses (neighbouring threads, neighbouring rows).
struct DeviceTuning {
  static constexpr int reduction_chunks = 128;  // about one per GPU thread of a team
  static constexpr int rotation_rows_per_thread = 1;
  using block_gemm = gemm::TeamBatched;
};

template <class ExecSpace>
using Tuning = std::conditional_t<is_host_space<ExecSpace>, HostTuning, DeviceTuning>;

}  // namespace mosaic
