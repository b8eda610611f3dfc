// The places where Kokkos 3.4 (Debian's Trilinos 13.2 source) and Kokkos
// 4.x/5.x differ for this project: the home of the device math functions,
// and of the rank-2 team GEMV (KokkosBatched::TeamGemv in Kokkos Kernels
// 3.4; from 4.0 on KokkosBatched's is the rank-3 batched API, whose rank-2
// Blocked form static_asserts (4.0) or aborts at run time (4.1 on), and the
// rank-2 one is KokkosBlas::TeamGemv). Checked: 3.4.01 and 4.6.01.
#pragma once

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40000
#include <KokkosBlas2_team_gemv.hpp>
#else
#include <KokkosBatched_Gemv_Decl.hpp>
#endif

namespace mosaic::kmath {
#if KOKKOS_VERSION >= 40000
using Kokkos::atan;
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::expm1;
using Kokkos::fabs;
using Kokkos::isfinite;
using Kokkos::isinf;
using Kokkos::isnan;
using Kokkos::log;
using Kokkos::pow;
using Kokkos::sin;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::atan;
using Kokkos::Experimental::cos;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::expm1;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::isinf;
using Kokkos::Experimental::isnan;
using Kokkos::Experimental::log;
using Kokkos::Experimental::pow;
using Kokkos::Experimental::sin;
using Kokkos::Experimental::sqrt;
#endif
}  // namespace mosaic::kmath

namespace mosaic {
// y <- beta y + alpha A x for a rank-2 A on one team (Trans::NoTranspose,
// Algo::Gemv::Blocked); ends without a barrier, as the library call does.
template <class Member, class Scalar, class AV, class XV, class YV>
KOKKOS_INLINE_FUNCTION void team_gemv_blocked(const Member& m, Scalar alpha, const AV& A, const XV& x, Scalar beta,
                                              const YV& y) {
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40000
  KokkosBlas::TeamGemv<Member, KokkosBlas::Trans::NoTranspose, KokkosBlas::Algo::Gemv::Blocked>::invoke(m, alpha, A, x,
                                                                                                        beta, y);
#else
  KokkosBatched::TeamGemv<Member, KokkosBatched::Trans::NoTranspose, KokkosBatched::Algo::Gemv::Blocked>::invoke(
      m, alpha, A, x, beta, y);
#endif
}
}  // namespace mosaic
