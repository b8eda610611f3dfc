// Where and how a run happened, for the result file: host, CPU, memory, GPU,
// Kokkos and Kokkos Kernels, MPI library, compiler and flags, build, git
// commit, the OpenMP/Kokkos environment, and each rank's host and device.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mosaic {

// What this binary was built from and with; needs no Kokkos initialization
// (--version prints it): mosaic version, git commit and dirty flag,
// compiler, build type, compile flags, Kokkos version, backends, default
// execution space and arch, Kokkos Kernels version and TPLs.
nlohmann::json build_environment();

// This rank's part (call on every rank after Kokkos::initialize): rank,
// hostname, the device it computes on ("host", or the GPU Kokkos chose) and
// the default execution space's concurrency (threads, on host backends).
nlohmann::json rank_environment(int rank);

// The whole report, on the calling rank (after Kokkos::initialize and
// MPI_Init): build_environment(), this host, CPU, memory, GPUs, MPI library,
// CUDA runtime and driver (Cuda builds), the OMP_* and KOKKOS_* variables,
// the OpenMP binding, and `ranks`: every rank's rank_environment(), in rank
// order.
nlohmann::json collect_environment(nlohmann::json ranks);

// This host's name (gethostname).
std::string host_name();

// Now, in UTC, ISO 8601 to the second: "2026-12-01T16:45:00Z".
std::string utc_timestamp();

// Peak resident set size of this process image in bytes: VmHWM from
// /proc/self/status (getrusage where /proc is missing, which can include
// the memory of the process that exec'ed this one).
long long peak_rss_bytes();

// Bytes of device memory in use now, or -1 where the backend has no such query.
long long device_memory_used_bytes();

}  // namespace mosaic
