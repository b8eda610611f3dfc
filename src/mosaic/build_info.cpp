#include "build_info.hpp"

namespace mosaic::build {
const char* version() { return MOSAIC_VERSION; }
const char* git_commit() { return MOSAIC_GIT_COMMIT; }
const char* build_type() { return MOSAIC_BUILD_TYPE; }
const char* kokkos_kernels_version() { return MOSAIC_KOKKOSKERNELS_VERSION; }
}  // namespace mosaic::build
