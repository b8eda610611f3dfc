// Named wall-clock timers for the phases of a run, in the order they run:
// setup, init, warmup, generate, update, segments (ALGORITHM.md section 9's
// starts and certificate), verify, diagnostics, checkpoint, reduce, output (docs/PERFORMANCE.md, "mosaic_miniapp: what the timers cover"). Each timed
// region is fenced on both sides so asynchronous device work is charged to
// the phase that launched it, and is a Kokkos Tools profiling region named
// mosaic::<phase>, so a tool (space-time-stack, a kernel logger) sees the
// same phases as the result file.
#pragma once

#include <chrono>
#include <map>
#include <new>
#include <stdexcept>
#include <string>

#include <Kokkos_Core.hpp>

namespace mosaic {

// A std::bad_alloc, with the phase it happened in. (A failed Kokkos View
// allocation throws Kokkos' own error, which names the view and its size.)
struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The phases in execution order: the result's timers and the summary's
// table list them in this order.
inline const char* const kTimerPhases[] = {"setup",  "init",        "warmup",     "generate", "update", "segments",
                                           "verify", "diagnostics", "checkpoint", "reduce",   "output"};

class TimerSet {
 public:
  // The run's wall clock starts now: total_seconds() counts from here.
  TimerSet() : start_(clock::now()) {}

  // Runs f() inside a fenced, timed region accumulated under `name`.
  template <class F>
  void time(const std::string& name, F&& f) {
    Kokkos::fence();
    Kokkos::Profiling::pushRegion("mosaic::" + name);
    const auto start = clock::now();
    try {
      f();
    } catch (const std::bad_alloc&) {
      Kokkos::Profiling::popRegion();
      throw OutOfMemory("a host allocation failed (std::bad_alloc) in the " + name + " phase");
    }
    Kokkos::fence();
    add(name, std::chrono::duration<double>(clock::now() - start).count());
    Kokkos::Profiling::popRegion();
  }
  void add(const std::string& name, double seconds) { seconds_[name] += seconds; }
  double seconds(const std::string& name) const {
    const auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }
  // Wall time since the TimerSet was made (the start of the run point).
  double total_seconds() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  const std::map<std::string, double>& all() const { return seconds_; }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point start_;
  std::map<std::string, double> seconds_;
};

}  // namespace mosaic
