// The bytes this process holds in each Kokkos memory space and their
// high-water mark, counted from Kokkos Tools' allocate and deallocate events.
//
// Why events and not a device query: cudaMemGetInfo's used memory holds the
// CUDA context and every other process on the device, and a snapshot misses
// whatever was freed before it; the events see every View and
// kokkos_malloc allocation of every memory space (host and device alike)
// the moment it happens, so the high-water mark is exact on every backend.
//
// The tracker is chained into Kokkos' callbacks, not loaded as a tool: a
// tool the user loads (KOKKOS_TOOLS_LIBS, --kokkos-tools-libs) is still
// called, before the count, for every event. Only allocations made after
// install() are counted, and a deallocation of memory allocated before it
// is ignored, so the figures are those of what was allocated since.
#pragma once

#include <cstdint>
#include <string>

namespace mosaic {

class AllocationTracker {
 public:
  // Puts the tracker into Kokkos' allocate/deallocate callbacks (after
  // Kokkos::initialize, which loads the user's tools; every Kokkos version
  // the project builds with has get_callbacks/set_callbacks). A second call
  // while installed changes nothing.
  //
  // Why it costs something: with any callback set, Kokkos takes its
  // profiling path for every launch (it builds the kernel's name string)
  // and every View allocation (its label). On the host that measured about
  // 0.1 us per allocation and nothing resolvable per launch
  // (bench/tracker_cost.cpp, docs/PERFORMANCE.md "The allocation tracker's
  // cost"); on a GPU, bench/gpu_check.sh measures it (not yet run).
  static void install();
  static bool installed();

  // Bytes allocated in the memory space `space` (Kokkos' name of it:
  // "Host", "Cuda", "CudaUVM", "CudaHostPinned", ...) and not yet freed.
  static std::int64_t bytes_now(const std::string& space);

  // The most bytes held at once in `space` since install() or the last
  // reset_peak().
  static std::int64_t peak_bytes(const std::string& space);

  // Restarts every space's high-water mark from the bytes it holds now (a
  // sweep point's peak is its own).
  static void reset_peak();
};

}  // namespace mosaic
