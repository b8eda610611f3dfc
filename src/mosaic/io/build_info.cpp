#include "mosaic/io/build_info.hpp"

namespace mosaic::build {
const char* version() { return MOSAIC_VERSION; }
const char* git_commit() { return MOSAIC_GIT_COMMIT; }
bool git_dirty() { return MOSAIC_GIT_DIRTY; }
const char* build_type() { return MOSAIC_BUILD_TYPE; }
const char* compile_flags() { return MOSAIC_COMPILE_FLAGS; }
const char* kokkos_arch() { return MOSAIC_KOKKOS_ARCH; }
const char* kokkos_kernels_version() { return MOSAIC_KOKKOSKERNELS_VERSION; }
}  // namespace mosaic::build
