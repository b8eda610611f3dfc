// What this binary was built from: set at configure time on build_info.cpp
// alone, so that a new commit recompiles one file, not the kernels.
#pragma once

namespace mosaic::build {
const char* version();                 // the project version (CMake)
const char* git_commit();              // short hash of HEAD at configure time, or "unknown"
const char* build_type();              // CMAKE_BUILD_TYPE
const char* kokkos_kernels_version();  // the Kokkos Kernels found at configure time
}  // namespace mosaic::build
