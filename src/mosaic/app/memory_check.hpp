// The memory check before a run: each rank's estimate (memory_estimate.hpp)
// for the largest point of the deck, summed over the ranks that share a
// node, against the memory the node has available; on a device backend also
// the execution-space part, summed over the ranks that share a device,
// against the device's free memory. A run that cannot fit is refused before
// anything is allocated, with the keys that set the size, the largest items
// and what is available, instead of dying later in std::bad_alloc.
//
// Host memory available: MemAvailable of /proc/meminfo, lowered to the
// cgroup's limit less its usage where one is set (a batch job's memory
// limit: cgroup v2 memory.max, v1 memory.limit_in_bytes). Nothing is
// refused where neither can be read.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "mosaic/config/run_config.hpp"

namespace mosaic {

struct HostMemoryAvailable {
  long long bytes = -1;  // -1: unknown
  std::string source;    // "MemAvailable (/proc/meminfo)", "cgroup memory.max less memory.current", ...
};

HostMemoryAvailable host_memory_available();

// Before Kokkos starts (collective): "" or the refusal, the same on every
// rank. `points` have their npy steps resolved (preflight_npy_streams).
std::string check_host_memory(const std::vector<SweepPoint>& points, const std::string& deck, MPI_Comm comm);

// After Kokkos started, on a device backend (collective; "" on host
// backends): the execution-space bytes against the device's free memory.
std::string check_device_memory(const std::vector<SweepPoint>& points, const std::string& deck, MPI_Comm comm);

// --dry-run's line for one point: the estimate for rank 0.
std::string describe_rank0_memory(const RunConfig& c, int nranks);

}  // namespace mosaic
