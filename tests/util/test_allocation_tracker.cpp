// AllocationTracker (util/allocation_tracker.hpp): its bytes and
// high-water mark against allocation patterns whose sizes are known, on
// the host memory space and the default execution space's memory space;
// a tool installed before it still sees every event; memory allocated
// before install() does not count; allocations from several threads at
// once. Each case runs in its own process under ctest (the cases that need
// a tracker not yet installed say so when run together).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/util/allocation_tracker.hpp"

namespace {

using mosaic::AllocationTracker;
using HostVector = Kokkos::View<double*, Kokkos::LayoutRight, Kokkos::HostSpace>;
using ExecMemory = Kokkos::DefaultExecutionSpace::memory_space;
using ExecVector = Kokkos::View<float*, Kokkos::LayoutRight, ExecMemory>;

const std::string host_space = Kokkos::HostSpace::name();
const std::string exec_space = ExecMemory::name();

TEST(AllocationTracker, PeakOfAKnownPattern) {
  AllocationTracker::install();
  AllocationTracker::reset_peak();
  const std::int64_t base = AllocationTracker::bytes_now(exec_space);
  ASSERT_EQ(AllocationTracker::peak_bytes(exec_space), base);
  {
    ExecVector a("a", 1000);  // 4,000 bytes
    EXPECT_EQ(AllocationTracker::bytes_now(exec_space), base + 4000);
    {
      ExecVector b("b", 3000);  // 12,000
      EXPECT_EQ(AllocationTracker::bytes_now(exec_space), base + 16000);
    }
    ExecVector c("c", 500);  // 2,000: the peak stays at a and b together
    EXPECT_EQ(AllocationTracker::bytes_now(exec_space), base + 6000);
    ExecVector copy = c;  // a copy allocates nothing
    EXPECT_EQ(AllocationTracker::bytes_now(exec_space), base + 6000);
    EXPECT_EQ(AllocationTracker::peak_bytes(exec_space), base + 16000);
  }
  EXPECT_EQ(AllocationTracker::bytes_now(exec_space), base);
  EXPECT_EQ(AllocationTracker::peak_bytes(exec_space), base + 16000);
  // Without initialization, and kokkos_malloc's bytes, count the same.
  {
    ExecVector big(Kokkos::ViewAllocateWithoutInitializing("big"), 25000);  // 100,000
    void* raw = Kokkos::kokkos_malloc<ExecMemory>("raw", 7777);
    EXPECT_EQ(AllocationTracker::bytes_now(exec_space), base + 107777);
    Kokkos::kokkos_free<ExecMemory>(raw);
  }
  EXPECT_EQ(AllocationTracker::peak_bytes(exec_space), base + 107777);
  // A sweep point's peak restarts from what is held now.
  HostVector held("held", 100);  // 800 bytes of host memory
  AllocationTracker::reset_peak();
  EXPECT_EQ(AllocationTracker::peak_bytes(exec_space), AllocationTracker::bytes_now(exec_space));
  EXPECT_EQ(AllocationTracker::peak_bytes(host_space), AllocationTracker::bytes_now(host_space));
  { HostVector more("more", 50); }
  EXPECT_EQ(AllocationTracker::peak_bytes(host_space), AllocationTracker::bytes_now(host_space) + 400);
  // A space nothing was allocated in.
  EXPECT_EQ(AllocationTracker::peak_bytes("NoSuchSpace"), 0);
}

TEST(AllocationTracker, MemoryFromBeforeInstallDoesNotCount) {
  if (AllocationTracker::installed()) GTEST_SKIP() << "needs a process where the tracker is not installed yet";
  auto before = std::make_unique<HostVector>("before", 1000);
  AllocationTracker::install();
  ASSERT_TRUE(AllocationTracker::installed());
  HostVector after("after", 10);
  EXPECT_EQ(AllocationTracker::bytes_now(host_space), 80);
  before.reset();  // 8,000 bytes freed that were never counted: not subtracted
  EXPECT_EQ(AllocationTracker::bytes_now(host_space), 80);
  EXPECT_EQ(AllocationTracker::peak_bytes(host_space), 80);
  AllocationTracker::install();  // again: changes nothing
  EXPECT_EQ(AllocationTracker::bytes_now(host_space), 80);
}

// A tool the user loaded before the tracker (KOKKOS_TOOLS_LIBS sets
// Kokkos' callbacks in Kokkos::initialize): these count what it is handed.
std::atomic<std::int64_t> tool_allocated{0}, tool_freed{0};
void tool_allocate(Kokkos::Tools::SpaceHandle, const char*, const void*, std::uint64_t size) {
  tool_allocated += std::int64_t(size);
}
void tool_deallocate(Kokkos::Tools::SpaceHandle, const char*, const void*, std::uint64_t size) {
  tool_freed += std::int64_t(size);
}

TEST(AllocationTracker, AUsersToolStillSeesEveryEvent) {
  if (AllocationTracker::installed()) GTEST_SKIP() << "needs a process where the tracker is not installed yet";
  auto events = Kokkos::Tools::Experimental::get_callbacks();
  events.allocate_data = &tool_allocate;
  events.deallocate_data = &tool_deallocate;
  Kokkos::Tools::Experimental::set_callbacks(events);
  AllocationTracker::install();
  { HostVector a("a", 64), b("b", 32); }
  EXPECT_EQ(tool_allocated.load(), 768);
  EXPECT_EQ(tool_freed.load(), 768);
  EXPECT_EQ(AllocationTracker::peak_bytes(host_space), 768);
  EXPECT_EQ(AllocationTracker::bytes_now(host_space), 0);
}

TEST(AllocationTracker, ThreadsAllocatingAtOnce) {
  AllocationTracker::install();
  const std::int64_t base = AllocationTracker::bytes_now(host_space);
  std::vector<std::thread> threads;
  std::vector<HostVector> kept(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &kept] {
      // Without initializing: no kernel launches from several threads.
      for (int i = 0; i < 200; ++i) HostVector scratch(Kokkos::ViewAllocateWithoutInitializing("scratch"), 16 + i);
      kept[t] = HostVector(Kokkos::ViewAllocateWithoutInitializing("kept"), 1000);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(AllocationTracker::bytes_now(host_space), base + 4 * 8000);
  kept.clear();
  EXPECT_EQ(AllocationTracker::bytes_now(host_space), base);
}

}  // namespace
