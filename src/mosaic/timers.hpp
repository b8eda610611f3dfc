// Named wall-clock timers for the phases of a run (init, generate, update,
// diagnostics, reduce, output). Each timed region is fenced on both sides so
// asynchronous device work is charged to the phase that launched it.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include <Kokkos_Core.hpp>

namespace mosaic {

class TimerSet {
 public:
  // Runs f() inside a fenced, timed region accumulated under `name`.
  template <class F>
  void time(const std::string& name, F&& f) {
    Kokkos::fence();
    const auto start = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    add(name, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  void add(const std::string& name, double seconds) { seconds_[name] += seconds; }
  double seconds(const std::string& name) const {
    const auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }
  const std::map<std::string, double>& all() const { return seconds_; }
  void reset() { seconds_.clear(); }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace mosaic
