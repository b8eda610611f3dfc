// mosaic_tracker_cost: what the allocation tracker (util/allocation_tracker.hpp)
// costs the host per kernel launch and per View allocation. With any Kokkos
// Tools callback set, Kokkos takes its profiling path for every launch
// (begin/end events, the kernel's name string) and every allocation (its
// label); the mini-app installs the tracker for every run (run.hpp), so a
// launch-bound run pays that per launch.
//
//   mosaic_tracker_cost [LAUNCHES] [ALLOCATIONS] [REPEATS]
//
// Times LAUNCHES labelled launches of a one-iteration parallel_for on the
// default execution space (no fence between them, one at the end: on a
// device the host's launch path is what is timed), then ALLOCATIONS
// allocations and frees of a labelled 64-double View in its memory space,
// REPEATS times before the tracker is installed and REPEATS times after
// (it cannot be removed again), and prints each repeat and the medians'
// difference per launch and per allocation. Speed, not a test: compare
// within one run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/util/allocation_tracker.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Nanoseconds per launch over `launches` launches.
double launch_ns(int launches, const Kokkos::View<double*, Kokkos::LayoutRight, Exec::memory_space>& x) {
  Kokkos::fence();
  const auto t0 = Clock::now();
  for (int i = 0; i < launches; ++i)
    Kokkos::parallel_for(
        "mosaic::tracker_cost_launch", Kokkos::RangePolicy<Exec>(0, 1), KOKKOS_LAMBDA(const int j) { x(j) += 1.0; });
  Kokkos::fence();
  return 1e9 * seconds_since(t0) / launches;
}

// Nanoseconds per allocation and free of a labelled 64-double View.
double allocation_ns(int allocations) {
  Kokkos::fence();
  const auto t0 = Clock::now();
  for (int i = 0; i < allocations; ++i) {
    Kokkos::View<double*, Kokkos::LayoutRight, Exec::memory_space> v(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::tracker_cost_view")), 64);
  }
  Kokkos::fence();
  return 1e9 * seconds_since(t0) / allocations;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int positive_arg(int argc, char** argv, int i, int fallback) {
  if (argc <= i) return fallback;
  char* end = nullptr;
  const long v = std::strtol(argv[i], &end, 10);
  if (!end || *end || v < 1 || v > 100000000) {
    std::fprintf(stderr, "usage: %s [LAUNCHES] [ALLOCATIONS] [REPEATS] (positive integers; got '%s')\n", argv[0],
                 argv[i]);
    std::exit(2);
  }
  return int(v);
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = positive_arg(argc, argv, 1, 200000);
  const int allocations = positive_arg(argc, argv, 2, 20000);
  const int repeats = positive_arg(argc, argv, 3, 5);
  Kokkos::ScopeGuard kokkos(argc, argv);
  std::printf("# mosaic_tracker_cost: execution space %s, concurrency %d; %d launches, %d allocations, %d repeats\n",
              Exec::name(), Exec().concurrency(), launches, allocations, repeats);
  std::printf("# a Kokkos Tools library loaded: %s\n",
              Kokkos::Profiling::profileLibraryLoaded() ? "yes (its callbacks run in both halves)" : "no");
  Kokkos::View<double*, Kokkos::LayoutRight, Exec::memory_space> x("mosaic::tracker_cost_x", 1);
  launch_ns(launches / 10 + 1, x);  // warm-up (first-touch, the JIT of a device build)
  allocation_ns(allocations / 10 + 1);
  std::vector<double> launch[2], alloc[2];
  for (int phase = 0; phase < 2; ++phase) {
    if (phase == 1) mosaic::AllocationTracker::install();
    for (int rep = 0; rep < repeats; ++rep) {
      launch[phase].push_back(launch_ns(launches, x));
      alloc[phase].push_back(allocation_ns(allocations));
      std::printf("%-9s repeat %d: %10.1f ns per launch  %10.1f ns per allocation and free\n",
                  phase ? "tracker" : "none", rep, launch[phase].back(), alloc[phase].back());
    }
  }
  const double l0 = median(launch[0]), l1 = median(launch[1]), a0 = median(alloc[0]), a1 = median(alloc[1]);
  std::printf("median per launch: %.1f ns without the tracker, %.1f ns with it: %+.1f ns (%.2fx)\n", l0, l1, l1 - l0,
              l1 / l0);
  std::printf("median per allocation and free: %.1f ns without, %.1f ns with: %+.1f ns (%.2fx)\n", a0, a1, a1 - a0,
              a1 / a0);
  return 0;
}
