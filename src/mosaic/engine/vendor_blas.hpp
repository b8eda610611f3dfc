// The BLAS library behind Kokkos Kernels' host GEMMs (its BLAS TPL), as far
// as the blocked update's vendor GEMM path (blocked_step.hpp, gemm::Vendor)
// and the bench's roofline line need to know it.
#pragma once

#include <string>

namespace mosaic::vendor_blas {

// The host library and its configuration (OpenBLAS names itself; another
// library is named only as "the BLAS TPL"); "none" without a BLAS TPL
// (backend.hpp's vendor_gemm_tpl says whether there is one).
std::string host_library();

// True when a GEMM called from inside a host parallel region runs on the
// calling thread alone, so the blocked update may give each host thread its
// own streams' GEMMs: OpenBLAS built for OpenMP (it then sees the enclosing
// region) or sequential. False for a pthreads OpenBLAS (its own thread pool
// would put twice as many threads as cores to work), for a library this
// cannot identify, without a BLAS TPL (Kokkos Kernels' native GEMM
// launches its own kernels), and with Kokkos 4.x or later while a Kokkos
// Tools library is loaded (vendor_blas.cpp: the nested calls would
// deadlock). Decided once per engine or call, after Kokkos::initialize.
bool host_calls_nest_single_threaded();

}  // namespace mosaic::vendor_blas
