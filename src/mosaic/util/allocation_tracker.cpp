#include "mosaic/util/allocation_tracker.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>

#include <Kokkos_Core.hpp>

namespace mosaic {
namespace {

struct SpaceBytes {
  std::int64_t now = 0, peak = 0;
};

// Kokkos calls the callbacks from whichever thread allocates; the counts
// are guarded so that two threads allocating at once stay exact.
struct TrackerState {
  std::mutex lock;
  std::map<std::string, SpaceBytes> spaces;
  // The size of each live allocation seen, by address: a deallocation of
  // memory allocated before install() is not subtracted.
  std::unordered_map<const void*, std::uint64_t> live;
  Kokkos::Tools::allocateDataFunction next_allocate = nullptr;
  Kokkos::Tools::deallocateDataFunction next_deallocate = nullptr;
};

// Never destroyed: Kokkos keeps calling the callbacks after finalize, and
// a View freed during static destruction must still find the state.
TrackerState& state() {
  static TrackerState* s = new TrackerState;
  return *s;
}

void on_allocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void* ptr, std::uint64_t size) {
  TrackerState& s = state();
  if (s.next_allocate) s.next_allocate(space, label, ptr, size);
  const std::lock_guard<std::mutex> guard(s.lock);
  s.live[ptr] = size;
  SpaceBytes& b = s.spaces[space.name];
  b.now += std::int64_t(size);
  b.peak = std::max(b.peak, b.now);
}

void on_deallocate(const Kokkos::Tools::SpaceHandle space, const char* label, const void* ptr, std::uint64_t size) {
  TrackerState& s = state();
  if (s.next_deallocate) s.next_deallocate(space, label, ptr, size);
  const std::lock_guard<std::mutex> guard(s.lock);
  const auto it = s.live.find(ptr);
  if (it == s.live.end()) return;
  s.spaces[space.name].now -= std::int64_t(it->second);
  s.live.erase(it);
}

}  // namespace

bool AllocationTracker::installed() {
  return Kokkos::Tools::Experimental::get_callbacks().allocate_data == &on_allocate;
}

void AllocationTracker::install() {
  if (installed()) return;
  TrackerState& s = state();
  auto events = Kokkos::Tools::Experimental::get_callbacks();
  {
    const std::lock_guard<std::mutex> guard(s.lock);
    s.next_allocate = events.allocate_data;
    s.next_deallocate = events.deallocate_data;
  }
  events.allocate_data = &on_allocate;
  events.deallocate_data = &on_deallocate;
  Kokkos::Tools::Experimental::set_callbacks(events);
}

std::int64_t AllocationTracker::bytes_now(const std::string& space) {
  TrackerState& s = state();
  const std::lock_guard<std::mutex> guard(s.lock);
  const auto it = s.spaces.find(space);
  return it == s.spaces.end() ? 0 : it->second.now;
}

std::int64_t AllocationTracker::peak_bytes(const std::string& space) {
  TrackerState& s = state();
  const std::lock_guard<std::mutex> guard(s.lock);
  const auto it = s.spaces.find(space);
  return it == s.spaces.end() ? 0 : it->second.peak;
}

void AllocationTracker::reset_peak() {
  TrackerState& s = state();
  const std::lock_guard<std::mutex> guard(s.lock);
  for (auto& [name, bytes] : s.spaces) bytes.peak = bytes.now;
}

}  // namespace mosaic
