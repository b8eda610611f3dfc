#include "environment.hpp"

#include "build_info.hpp"

#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <fstream>
#include <string>
#include <thread>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace mosaic {
namespace {

std::string first_field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      auto value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  return "unknown";
}

nlohmann::json enabled_backends() {
  nlohmann::json b = nlohmann::json::array();
#if defined(KOKKOS_ENABLE_SERIAL)
  b.push_back("Serial");
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  b.push_back("OpenMP");
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  b.push_back("Threads");
#endif
#if defined(KOKKOS_ENABLE_CUDA)
  b.push_back("Cuda");
#endif
#if defined(KOKKOS_ENABLE_HIP)
  b.push_back("HIP");
#endif
#if defined(KOKKOS_ENABLE_SYCL)
  b.push_back("SYCL");
#endif
  return b;
}

nlohmann::json gpu_info() {
  nlohmann::json gpus = nlohmann::json::array();
#if defined(KOKKOS_ENABLE_CUDA)
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess)
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
      gpus.push_back({{"index", i},
                      {"model", prop.name},
                      {"memory_bytes", (long long)prop.totalGlobalMem},
                      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)}});
    }
#endif
  return gpus;
}

}  // namespace

long long peak_rss_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return (long long)usage.ru_maxrss * 1024;  // Linux reports KiB
}

long long device_memory_used_bytes() {
#if defined(KOKKOS_ENABLE_CUDA)
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    return (long long)(total_bytes - free_bytes);
#endif
  return -1;
}

nlohmann::json collect_environment() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(mpi_version, &len);
  std::string mpi(mpi_version, std::size_t(len));
  while (!mpi.empty() && (mpi.back() == '\n' || mpi.back() == '\0')) mpi.pop_back();
  const std::string mem_total = first_field("/proc/meminfo", "MemTotal");
  long long mem_bytes = -1;
  try {
    mem_bytes = std::stoll(mem_total) * 1024;  // "NNN kB"
  } catch (...) {
  }
#if defined(__clang__)
  const std::string compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  const std::string compiler = std::string("gcc ") + __VERSION__;
#else
  const std::string compiler = "unknown";
#endif
  return {
      {"hostname", host},
      {"cpu_model", first_field("/proc/cpuinfo", "model name")},
      {"cpu_cores_online", (long long)sysconf(_SC_NPROCESSORS_ONLN)},
      {"memory_bytes", mem_bytes},
      {"gpus", gpu_info()},
      {"kokkos_version", std::to_string(KOKKOS_VERSION / 10000) + "." +
                             std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                             std::to_string(KOKKOS_VERSION % 100)},
      {"kokkos_backends", enabled_backends()},
      {"kokkos_default_execution_space", Kokkos::DefaultExecutionSpace::name()},
      {"kokkos_default_concurrency", (long long)Kokkos::DefaultExecutionSpace().concurrency()},
      {"kokkos_kernels_version", build::kokkos_kernels_version()},
      {"mpi_library", mpi},
      {"compiler", compiler},
      {"build_type", build::build_type()},
      {"git_commit", build::git_commit()},
      {"mosaic_version", build::version()},
  };
}

}  // namespace mosaic
