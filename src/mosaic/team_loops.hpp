// Loop shapes shared by the kernels' team code (batched_engine.hpp,
// blocked_step.hpp, frame_rotation.hpp).
#pragma once

#include <Kokkos_Core.hpp>

namespace mosaic::detail {

// f(a, c) for every entry of a rows x cols matrix: rows over the team's
// threads, the columns of a row in the vector loop (unit stride and
// vectorizable on host, no integer division per entry as a flattened index
// would need).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void for_each_entry(const Member& m, int rows, int cols, const F& f) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, rows), [&](const int a) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, cols), [&](const int c) { f(a, c); });
  });
}

// Number of entries of a rows x cols matrix for which bad(a, c) holds.
template <class Member, class F>
KOKKOS_INLINE_FUNCTION int count_entries(const Member& m, int rows, int cols, const F& bad) {
  int count = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(m, rows),
      [&](const int a, int& nb) {
        for (int c = 0; c < cols; ++c)
          if (bad(a, c)) nb += 1;
      },
      count);
  return count;
}

// f(lo, hi) on each team thread's contiguous share of [0, n).
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void team_share(const Member& m, int n, const F& f) {
  const int ts = m.team_size();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, ts), [&](const int part) {
    f(int((long(n) * part) / ts), int((long(n) * (part + 1)) / ts));
  });
}

}  // namespace mosaic::detail
