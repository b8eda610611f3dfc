// The configure-time probe of cmake/KokkosViewProbe.cmake (issue 37): Kokkos'
// mdspan-based View (Kokkos 4.6.99 develop, 4.7, 5.x) built by GCC 12 with
// optimization crashes at the first assignment to a default-constructed View
// (SIGSEGV in SharedAllocationRecord::decrement; kokkos/kokkos#7464). The
// engine holds its Views that way, so a user's Kokkos with the fault would
// crash the mini-app at its first step. This program does what the engine
// does with its Views (LayoutRight Views of double of rank 1, 2 and 3,
// default-constructed, then given a new allocation, copied, read through
// subviews, converted to const, released before Kokkos::finalize), compiled
// with the project's compiler and flags: exit 0 when all of it works, 1 with
// a message when a View is wrong; the fault itself shows as a crash.
//
// MOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL (the CMake option of the same name, for
// the tests of the probe only) raises SIGSEGV where the fault would crash, so
// that the configure-time message for a crash can be checked on a good Kokkos.
#include <Kokkos_Core.hpp>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <string>

namespace {

constexpr double kFill = 1.5;

// The last entries along the first dimension (rank 1: all but the first),
// at the last index of every other one: a strided View for rank >= 2, as the
// engine's per-stream slices.
template <int rank, class ViewType>
auto last_entries(const ViewType& view) {
  if constexpr (rank == 1) {
    return Kokkos::subview(view, Kokkos::pair<std::size_t, std::size_t>(1, view.extent(0)));
  } else if constexpr (rank == 2) {
    return Kokkos::subview(view, Kokkos::ALL, view.extent(1) - 1);
  } else {
    return Kokkos::subview(view, Kokkos::ALL, view.extent(1) - 1, view.extent(2) - 1);
  }
}

// A View of `ViewType` (rank = sizeof...(extents)) is default-constructed,
// then assigned a new allocation: the step that crashes with the fault. The
// copy, the subview and the const View share that allocation, so its count
// of users says whether the reference counting (where the fault lies) kept
// up. Returns false, with a message, when it did not or an entry read back
// is wrong.
template <class ViewType, class... Extents>
bool assign_copy_subview(const char* space_name, Extents... extents) {
  constexpr int rank = sizeof...(Extents);
  const std::string label = std::string("probe_rank") + std::to_string(rank) + "_" + space_name;
  ViewType assigned;
#ifdef MOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL
  std::raise(SIGSEGV);
#endif
  assigned = ViewType(label, extents...);
  Kokkos::deep_copy(assigned, kFill);
  const ViewType copy = assigned;
  const auto slice = last_entries<rank>(assigned);
  const Kokkos::View<typename ViewType::const_data_type, Kokkos::LayoutRight, typename ViewType::memory_space>
      read_only = copy;
  if (assigned.use_count() != 4 || read_only.data() != assigned.data()) {
    std::fprintf(stderr, "kokkos_view_probe: %s: %d users of the allocation (4 expected)\n", label.c_str(),
                 static_cast<int>(assigned.use_count()));
    return false;
  }
  const auto host_slice = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), slice);
  if (host_slice(0) != kFill || host_slice(host_slice.extent(0) - 1) != kFill) {
    std::fprintf(stderr, "kokkos_view_probe: %s: entries read back through a subview are wrong\n", label.c_str());
    return false;
  }
  return true;
}

template <class MemorySpace>
bool probe_space(const char* space_name) {
  using Rank1 = Kokkos::View<double*, Kokkos::LayoutRight, MemorySpace>;
  using Rank2 = Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace>;
  using Rank3 = Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace>;
  return assign_copy_subview<Rank1>(space_name, 7) && assign_copy_subview<Rank2>(space_name, 5, 3) &&
         assign_copy_subview<Rank3>(space_name, 4, 3, 2);
}

}  // namespace

int main() {
  // Two host threads: the OpenMP backend's default (every hardware thread)
  // fails past 512, which a large node has; the fault does not depend on it.
#if KOKKOS_VERSION >= 40000
  char threads_flag[] = "--kokkos-num-threads=2";
#else
  char threads_flag[] = "--kokkos-threads=2";
#endif
  char program_name[] = "kokkos_view_probe";
  char* arguments[] = {program_name, threads_flag, nullptr};
  int argument_count = 2;
  Kokkos::initialize(argument_count, arguments);
  const bool ok = probe_space<Kokkos::HostSpace>("HostSpace") &&
                  probe_space<Kokkos::DefaultExecutionSpace::memory_space>("default_memory_space");
  Kokkos::finalize();
  if (ok) std::printf("kokkos_view_probe: Views of rank 1, 2 and 3 assigned, copied and sliced\n");
  return ok ? 0 : 1;
}
