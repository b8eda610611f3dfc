// Independent host-side work per stream (the small Cholesky factors of the
// synthetic truth's construction, synthetic_source.hpp) on the host
// execution space's threads.
// An exception cannot leave an OpenMP parallel region: each index's is
// caught and the one of the lowest index is rethrown after the loop, so the
// caller sees what the serial loop would have thrown first.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

namespace mosaic {

// Runs f(i) for i in [0, n) on Kokkos::DefaultHostExecutionSpace. f must not
// call Kokkos (no deep_copy or allocation inside a parallel region).
template <class F>
void host_parallel_for(const std::string& label, int n, const F& f) {
  std::vector<std::exception_ptr> failed(std::size_t(n > 0 ? n : 0));
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, n), [&](const int i) {
    try {
      f(i);
    } catch (...) {
      failed[std::size_t(i)] = std::current_exception();
    }
  });
  Kokkos::fence();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace mosaic
