// Where and how a run happened, for the result file: host, CPU, memory, GPU,
// Kokkos and Kokkos Kernels, MPI library, compiler, build, git commit.
#pragma once

#include <nlohmann/json.hpp>

namespace mosaic {

// Collected on the calling rank (call after Kokkos::initialize and MPI_Init).
nlohmann::json collect_environment();

// Peak resident set size of this process in bytes (getrusage).
long long peak_rss_bytes();

// Bytes of device memory in use now, or -1 where the backend has no such query.
long long device_memory_used_bytes();

}  // namespace mosaic
