// What this binary was built from: set at configure time on build_info.cpp
// alone, so that a new commit recompiles one file, not the kernels.
#pragma once

namespace mosaic::build {
const char* version();                 // the project version (CMake)
const char* git_commit();              // short hash of HEAD at configure time, or "unknown"
bool git_dirty();                      // `git status --porcelain` printed anything at configure time
const char* build_type();              // CMAKE_BUILD_TYPE
const char* compile_flags();           // the flags of the library's compilations (C++ flags, build type's, options)
const char* kokkos_arch();             // Kokkos_ARCH of the Kokkos found, space-separated ("" for none)
const char* kokkos_kernels_version();  // the Kokkos Kernels found at configure time
}  // namespace mosaic::build
