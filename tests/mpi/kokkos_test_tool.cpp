// A minimal Kokkos Tools library for the MPI tests: it says that it was
// loaded, prints a help for --kokkos-tools-help and, at the end, which
// profiling regions the run pushed (check kokkos_tools: KOKKOS_TOOLS_LIBS and
// --kokkos-tools-libs load a tool on every Kokkos version) and the peak of
// the bytes Kokkos had allocated in each memory space at once (check
// memory_estimate: the run's estimate against what was allocated).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace {
// Kokkos calls the tool from whichever thread allocates or opens a region;
// the maps are guarded so that the tool stays correct if two threads do so
// at once.
std::mutex lock;
std::set<std::string> regions;
struct SpaceBytes {
  std::uint64_t now = 0, peak = 0;
};
std::map<std::string, SpaceBytes> allocated;  // by memory space name
}  // namespace

// Kokkos Tools' SpaceHandle.
struct SpaceHandle {
  char name[64];
};

extern "C" void kokkosp_allocate_data(SpaceHandle space, const char*, const void*, std::uint64_t size) {
  const std::lock_guard<std::mutex> guard(lock);
  SpaceBytes& b = allocated[space.name];
  b.now += size;
  b.peak = std::max(b.peak, b.now);
}

extern "C" void kokkosp_deallocate_data(SpaceHandle space, const char*, const void*, std::uint64_t size) {
  const std::lock_guard<std::mutex> guard(lock);
  allocated[space.name].now -= size;
}

extern "C" void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) {
  std::fprintf(stderr, "kokkos test tool: loaded\n");
}

extern "C" void kokkosp_print_help(char*) { std::fprintf(stderr, "kokkos test tool: help\n"); }

extern "C" void kokkosp_push_profile_region(const char* name) {
  const std::lock_guard<std::mutex> guard(lock);
  regions.insert(name);
}

extern "C" void kokkosp_finalize_library() {
  const std::lock_guard<std::mutex> guard(lock);
  std::string names;
  for (const auto& r : regions) names += (names.empty() ? "" : ",") + r;
  std::fprintf(stderr, "kokkos test tool: regions [%s]\n", names.c_str());
  for (const auto& [space, bytes] : allocated)
    std::fprintf(stderr, "kokkos test tool: peak bytes %s %llu\n", space.c_str(), (unsigned long long)bytes.peak);
}
