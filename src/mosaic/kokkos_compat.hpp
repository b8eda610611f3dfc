// The one place where Kokkos 3.4 (Debian's Trilinos 13.2 source) and Kokkos
// 4.x/5.x differ for this project: the home of the device math functions.
#pragma once

#include <Kokkos_Core.hpp>

namespace mosaic::kmath {
#if KOKKOS_VERSION >= 40000
using Kokkos::atan;
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::expm1;
using Kokkos::fabs;
using Kokkos::isfinite;
using Kokkos::log;
using Kokkos::sin;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::atan;
using Kokkos::Experimental::cos;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::expm1;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sin;
using Kokkos::Experimental::sqrt;
#endif
}  // namespace mosaic::kmath
