// A minimal Kokkos Tools library for the MPI tests: it says that it was
// loaded, prints a help for --kokkos-tools-help and, at the end, which
// profiling regions the run pushed (check kokkos_tools: KOKKOS_TOOLS_LIBS and
// --kokkos-tools-libs load a tool on every Kokkos version) and the peak of
// the bytes Kokkos had allocated in each memory space at once (check
// memory_estimate: the run's estimate against what was allocated), and, per
// mosaic:: phase region (timers.hpp), how often it was entered and the
// kernel launches, fences and deep copies inside it (check launch_budget:
// the launches and synchronizations of one block of the timed loop).
// Kokkos 3.4 and 4.x call the same entry points.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

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
std::map<const void*, std::uint64_t> live;    // the size of each live allocation, by address
struct RegionCounts {
  std::uint64_t entries = 0, launches = 0, fences = 0, deep_copies = 0;
};
std::vector<std::string> open_regions;             // the region stack (Kokkos' regions nest)
std::map<std::string, RegionCounts> phase_counts;  // by the innermost open mosaic:: region

// The counts of the innermost open mosaic:: region, or null outside every
// one (the lock is held).
RegionCounts* innermost_phase() {
  for (auto it = open_regions.rbegin(); it != open_regions.rend(); ++it)
    if (it->compare(0, 8, "mosaic::") == 0) return &phase_counts[*it];
  return nullptr;
}
void count(std::uint64_t RegionCounts::*field) {
  const std::lock_guard<std::mutex> guard(lock);
  if (RegionCounts* c = innermost_phase()) ++(c->*field);
}
}  // namespace

// Kokkos Tools' SpaceHandle.
struct SpaceHandle {
  char name[64];
};

extern "C" void kokkosp_allocate_data(SpaceHandle space, const char*, const void* ptr, std::uint64_t size) {
  const std::lock_guard<std::mutex> guard(lock);
  live[ptr] = size;
  SpaceBytes& b = allocated[space.name];
  b.now += size;
  b.peak = std::max(b.peak, b.now);
}

// Kokkos 3.4 reports some of its own unlabeled host buffers freed with a
// size other than the one allocated, or freed without an allocation event
// (made before the tool was loaded): the size subtracted is the one added
// for that address, and a free never seen allocated is not subtracted.
extern "C" void kokkosp_deallocate_data(SpaceHandle space, const char*, const void* ptr, std::uint64_t) {
  const std::lock_guard<std::mutex> guard(lock);
  const auto it = live.find(ptr);
  if (it == live.end()) return;
  allocated[space.name].now -= it->second;
  live.erase(it);
}

extern "C" void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) {
  std::fprintf(stderr, "kokkos test tool: loaded\n");
}

extern "C" void kokkosp_print_help(char*) { std::fprintf(stderr, "kokkos test tool: help\n"); }

extern "C" void kokkosp_push_profile_region(const char* name) {
  const std::lock_guard<std::mutex> guard(lock);
  regions.insert(name);
  open_regions.emplace_back(name);
  if (open_regions.back().compare(0, 8, "mosaic::") == 0) ++phase_counts[open_regions.back()].entries;
}

extern "C" void kokkosp_pop_profile_region() {
  const std::lock_guard<std::mutex> guard(lock);
  if (!open_regions.empty()) open_regions.pop_back();
}

extern "C" void kokkosp_begin_parallel_for(const char*, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  count(&RegionCounts::launches);
}
extern "C" void kokkosp_begin_parallel_reduce(const char*, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  count(&RegionCounts::launches);
}
extern "C" void kokkosp_begin_parallel_scan(const char*, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  count(&RegionCounts::launches);
}
extern "C" void kokkosp_begin_fence(const char*, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  count(&RegionCounts::fences);
}
extern "C" void kokkosp_begin_deep_copy(SpaceHandle, const char*, const void*, SpaceHandle, const char*, const void*,
                                        std::uint64_t) {
  count(&RegionCounts::deep_copies);
}

extern "C" void kokkosp_finalize_library() {
  const std::lock_guard<std::mutex> guard(lock);
  std::string names;
  for (const auto& r : regions) names += (names.empty() ? "" : ",") + r;
  std::fprintf(stderr, "kokkos test tool: regions [%s]\n", names.c_str());
  for (const auto& [space, bytes] : allocated)
    std::fprintf(stderr, "kokkos test tool: peak bytes %s %llu\n", space.c_str(), (unsigned long long)bytes.peak);
  for (const auto& [phase, c] : phase_counts)
    std::fprintf(stderr, "kokkos test tool: phase %s entries %llu launches %llu fences %llu deep_copies %llu\n",
                 phase.c_str(), (unsigned long long)c.entries, (unsigned long long)c.launches,
                 (unsigned long long)c.fences, (unsigned long long)c.deep_copies);
}
