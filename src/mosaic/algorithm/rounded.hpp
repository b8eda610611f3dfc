// Products rounded on their own on every backend, for the arithmetic that
// must give the same bits on a host and a device: the synthetic generator
// (ALGORITHM.md section 5: the samples do not depend on the backend) and
// its counter-based normals.
//
// nvcc contracts a * b + c into one fused multiply-add by default
// (--fmad=true), rounding once where the host rounds twice; the host
// compilers get -ffp-contract=off (CMakeLists.txt). A product of the device
// intrinsic __dmul_rn is never merged into a multiply-add (CUDA C++
// Programming Guide, "Intrinsic Functions"; HIP has the same intrinsic), so
// on a device the generator's products go through it, and the rest of the
// device code keeps nvcc's fused operations.
#pragma once

#include <Kokkos_Core.hpp>

namespace mosaic::rounded {

// a * b, rounded to double before any use.
KOKKOS_FORCEINLINE_FUNCTION double mul(double a, double b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// a * b + c with two roundings: the product's, then the sum's.
KOKKOS_FORCEINLINE_FUNCTION double mul_add(double a, double b, double c) { return mul(a, b) + c; }

}  // namespace mosaic::rounded
