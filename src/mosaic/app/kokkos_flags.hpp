// Kokkos' own command-line flags (--kokkos-*), the same on every Kokkos the
// project builds with: Kokkos 3.4 (Debian) and a user's 4.x/5.x spell some
// of them differently (--kokkos-threads in 3.4, --kokkos-num-threads from
// 4.0), 3.4 lacks a few (--kokkos-print-configuration,
// --kokkos-map-device-id-by) and 4.0 removed a few (--kokkos-numa,
// --kokkos-num-devices). Both spellings are accepted on every version and
// handed to Kokkos::initialize in the one the Kokkos built against parses;
// what that Kokkos lacks, the driver does. Kokkos itself ignores (3.4) or
// only warns about (4.x) a flag it does not know, so a misspelt flag would
// silently change nothing: here it is an error, with the closest name.
#pragma once

#include <string>
#include <vector>

namespace mosaic::kokkos_flags {

// What the driver does with the Kokkos flags of one command line.
struct Translation {
  // For Kokkos::initialize, after argv[0], in the spelling of the Kokkos
  // this was translated for.
  std::vector<std::string> arguments;
  bool help = false;  // --kokkos-help: print the help, run nothing
  // A flag or one of Kokkos' environment variables (KOKKOS_DEVICE_ID, ...)
  // chose each rank's GPU: the driver does not. device_chosen_by names the
  // first such variable (empty when only a flag chose).
  bool device_chosen = false;
  std::string device_chosen_by;
  // Flags Kokkos < 4 lacks, carried out by the driver there (on Kokkos >= 4
  // they are in `arguments`):
  bool print_configuration = false;  // Kokkos::print_configuration after initialize
  std::string map_device_id_by;      // "random", "mpi_rank" (the driver's default) or ""
  // --kokkos-num-threads (or --kokkos-threads), the last one given; 0: none.
  int host_threads = 0;
};

// Checks and translates `flags` (each "--kokkos-NAME[=VALUE]", in command-line
// order) for Kokkos major version `kokkos_major`. For Kokkos < 4 the 4.x
// environment variables that 3.4 does not read (KOKKOS_TOOLS_LIBS,
// KOKKOS_TOOLS_ARGS, KOKKOS_PRINT_CONFIGURATION, KOKKOS_MAP_DEVICE_ID_BY) are
// taken as their flags, given before the command line's. Throws
// std::invalid_argument naming the flag: an unknown one (with the closest
// known name), a missing or malformed value, or a flag that Kokkos version
// lacks and the driver cannot stand in for.
Translation translate(const std::vector<std::string>& flags, int kokkos_major);

// The threads per process Kokkos' host backend starts, and what set them.
struct HostThreads {
  int count = 0;
  std::string set_by;  // e.g. "--kokkos-num-threads=768", "KOKKOS_NUM_THREADS=768", "OMP_NUM_THREADS"
};

// The host threads Kokkos::initialize will start: the flag's value, else
// the environment variable KOKKOS_NUM_THREADS (which every Kokkos reads;
// std::invalid_argument naming it unless it is an integer >= 1), else
// `default_threads` (the OpenMP backend's omp_get_max_threads(), i.e.
// OMP_NUM_THREADS).
HostThreads host_threads(const Translation& t, int default_threads);

// The most threads the OpenMP backend of every supported Kokkos can start in
// one process: a fixed pool (MAX_THREAD_COUNT in Kokkos 3.4's OpenMPExec and
// 4.x's OpenMPTraits); past it Kokkos::initialize writes beyond the pool and
// the process crashes.
constexpr int kOpenMPMaxThreads = 512;

// The accepted flags, one per line: value, meaning, other spellings, and
// which Kokkos versions have them.
std::string help();

}  // namespace mosaic::kokkos_flags
