#include "mosaic/io/environment.hpp"

#include "mosaic/engine/vendor_blas.hpp"
#include "mosaic/io/build_info.hpp"

#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

extern char** environ;

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

#if defined(KOKKOS_ENABLE_CUDA)
// "12.4" from CUDA's 12040.
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
#endif

// Every OMP_* and KOKKOS_* variable of this process.
nlohmann::json openmp_and_kokkos_variables() {
  nlohmann::json vars = nlohmann::json::object();
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (name.rfind("OMP_", 0) == 0 || name.rfind("KOKKOS_", 0) == 0) vars[name] = entry.substr(eq + 1);
  }
  return vars;
}

std::string variable_or_unset(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "unset";
}

// Kokkos Kernels' vendor TPLs. Its BLAS TPL is the library of the host
// spaces' GEMMs (backend.hpp's vendor_gemm_tpl); on Cuda the GEMMs call
// cuBLAS through the project's own handle whether or not "cuBLAS" is listed
// (strided_gemm.hpp).
nlohmann::json kokkos_kernels_tpls() {
  nlohmann::json tpls = nlohmann::json::array();
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  tpls.push_back("BLAS: " + vendor_blas::host_library());
#endif
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  tpls.push_back("cuBLAS");
#endif
  return tpls;
}

}  // namespace

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

long long peak_rss_bytes() {
  // VmHWM is the high-water mark of this process image's own address space.
  // getrusage's ru_maxrss is not: exec() folds the replaced image's peak
  // into it, so a rank started by fork+exec from a large process (a Python
  // driver, a launcher) would report that process's memory.
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.compare(0, 6, "VmHWM:") == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return (long long)usage.ru_maxrss * 1024;  // no /proc: Linux reports KiB
}

long long device_memory_used_bytes() {
#if defined(KOKKOS_ENABLE_CUDA)
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) return (long long)(total_bytes - free_bytes);
#endif
  return -1;
}

nlohmann::json build_environment() {
#if defined(__clang__)
  const std::string compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  const std::string compiler = std::string("gcc ") + __VERSION__;
#else
  const std::string compiler = "unknown";
#endif
  nlohmann::json arch = nlohmann::json::array();
  std::istringstream arch_names(build::kokkos_arch());
  for (std::string name; arch_names >> name;) arch.push_back(name);
  return {
      {"mosaic_version", build::version()},
      {"git_commit", build::git_commit()},
      {"git_dirty", build::git_dirty()},
      {"compiler", compiler},
      {"build_type", build::build_type()},
      {"compile_flags", build::compile_flags()},
      {"kokkos_version", std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
                             "." + std::to_string(KOKKOS_VERSION % 100)},
      {"kokkos_backends", enabled_backends()},
      {"kokkos_default_execution_space", Kokkos::DefaultExecutionSpace::name()},
      {"kokkos_arch", arch},
      {"kokkos_kernels_version", build::kokkos_kernels_version()},
      {"kokkos_kernels_tpls", kokkos_kernels_tpls()},
  };
}

nlohmann::json rank_environment(int rank) {
#if defined(KOKKOS_ENABLE_CUDA)
  int id = 0;
  cudaGetDevice(&id);  // the device Kokkos::initialize made current
  cudaDeviceProp prop;
  const bool known = cudaGetDeviceProperties(&prop, id) == cudaSuccess;
  const nlohmann::json device = {{"id", id}, {"model", known ? std::string(prop.name) : "unknown"}};
#else
  const nlohmann::json device = "host";
#endif
  return {{"rank", rank},
          {"hostname", host_name()},
          {"device", device},
          {"concurrency", (long long)Kokkos::DefaultExecutionSpace().concurrency()}};
}

nlohmann::json collect_environment(nlohmann::json ranks) {
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
  nlohmann::json env = build_environment();
  env.update({
      {"hostname", host_name()},
      {"cpu_model", first_field("/proc/cpuinfo", "model name")},
      {"cpu_cores_online", (long long)sysconf(_SC_NPROCESSORS_ONLN)},
      {"memory_bytes", mem_bytes},
      {"gpus", gpu_info()},
      {"kokkos_default_concurrency", (long long)Kokkos::DefaultExecutionSpace().concurrency()},
      {"mpi_library", mpi},
      {"environment_variables", openmp_and_kokkos_variables()},
      {"openmp_binding",
       {{"OMP_PROC_BIND", variable_or_unset("OMP_PROC_BIND")}, {"OMP_PLACES", variable_or_unset("OMP_PLACES")}}},
      {"ranks", std::move(ranks)},
  });
#if defined(KOKKOS_ENABLE_CUDA)
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) env["cuda_runtime_version"] = cuda_version(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess) env["cuda_driver_version"] = cuda_version(driver);
#endif
  return env;
}

}  // namespace mosaic
