// A minimal Kokkos Tools library for the MPI tests (check kokkos_tools): it
// says that it was loaded, prints a help for --kokkos-tools-help and, at the
// end, which profiling regions the run pushed, so that the tests see
// KOKKOS_TOOLS_LIBS and --kokkos-tools-libs load a tool on every Kokkos
// version.
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

namespace {
std::set<std::string> regions;
}

extern "C" void kokkosp_init_library(int, std::uint64_t, std::uint32_t, void*) {
  std::fprintf(stderr, "kokkos test tool: loaded\n");
}

extern "C" void kokkosp_print_help(char*) { std::fprintf(stderr, "kokkos test tool: help\n"); }

extern "C" void kokkosp_push_profile_region(const char* name) { regions.insert(name); }

extern "C" void kokkosp_finalize_library() {
  std::string names;
  for (const auto& r : regions) names += (names.empty() ? "" : ",") + r;
  std::fprintf(stderr, "kokkos test tool: regions [%s]\n", names.c_str());
}
