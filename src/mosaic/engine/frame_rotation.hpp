// ALGORITHM.md steps 6-7 in the r dimension, shared by the sequential kernel
// (impl/sequential_step.hpp, in the run's scalar type) and the blocked
// kernel (impl/block_coefficients.hpp, in double): Oja's direction and the
// direction's norm, the rotation angle of the frame along the
// geodesic of e g^T and the transport of S' into the rotated frame,
//   S' <- S' + (cos-1)(u gh^T + gh u^T) + ((cos-1)^2 b + s2 sin^2) gh gh^T,
// with u = S' gh, b = gh^T u, and cos(theta)-1 = -2 sin^2(theta/2) (no
// cancellation for small theta). The caller applies the rotation to U (or to
// its block coefficients) with the returned sin and cos-1. Also the rotation
// of S by a Cholesky-QR's factor (section 4's re-orthonormalization).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic::detail {

// subspace_direction: oja: g = z / (tr(S) / r), the trace summed in
// increasing j from diag(j) = S(j, j) by every thread; g is written by the
// team (the caller's barrier completes it).
template <class T, class Member, class Diag, class Z, class G>
KOKKOS_INLINE_FUNCTION void oja_direction(const Member& m, int r, const Diag& diag, const Z& z, const G& g) {
  T trace = 0;
  for (int j = 0; j < r; ++j) trace += diag(j);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = z(j) / (trace / T(r)); });
}

// ||g||, summed in increasing j by every thread (after the barrier that
// completes g).
template <class T, class G>
KOKKOS_INLINE_FUNCTION T direction_norm(const G& g, int r) {
  T sum = 0;
  for (int j = 0; j < r; ++j) sum += g(j) * g(j);
  return kmath::sqrt(sum);
}

template <class T>
struct FrameRotation {
  bool rotate = false;  // false when rho ||g|| <= tiny: e g^T is undefined, the frame stays
  T theta = 0, sn = 0, cm1 = 0;
};

// Team-collective; ends with a team barrier. g (r) is read; gh and u (r) are
// work vectors; Sp (r x r) is S' on entry and the transported S on exit.
// `gnorm` is the norm that scales g to gh (||g||; 7.3's beta for the
// observed rotation of a masked step) and ghKgh is 7.3 part 7's gh^T K gh
// (0 in section 2), whose term s2 (cos-1)^2 ghKgh joins the gh gh^T
// coefficient as a separate addend.
template <class T, class Member, class G, class Gh, class Vu, class M>
KOKKOS_INLINE_FUNCTION FrameRotation<T> rotate_frame_transport_S(const Member& m, int r, T rho, T gnorm, T tiny,
                                                                 T eta_U, T s2_old, T ghKgh, const G& g, const Gh& gh,
                                                                 const Vu& u, const M& Sp) {
  FrameRotation<T> out;
  out.rotate = rho * gnorm > tiny;
  if (out.rotate) {
    out.theta = kmath::atan(eta_U * rho * gnorm);
    out.sn = kmath::sin(out.theta);
    out.cm1 = T(-2) * kmath::sin(out.theta / T(2)) * kmath::sin(out.theta / T(2));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { gh(j) = g(j) / gnorm; });
    m.team_barrier();
    rows_dot<T>(m, r, r, Sp, gh, u);  // u = S' gh
    m.team_barrier();
    T bq = 0;
    for (int a = 0; a < r; ++a) bq += gh(a) * u(a);
    const T cm1 = out.cm1, coef2 = cm1 * cm1 * bq + s2_old * out.sn * out.sn + s2_old * cm1 * cm1 * ghKgh;
    for_each_entry(m, r, r, [&](const int a, const int c) {
      Sp(a, c) += cm1 * (u(a) * gh(c) + gh(a) * u(c)) + coef2 * gh(a) * gh(c);
    });
  }
  m.team_barrier();
  return out;
}

// The step's "never write non-finite numbers" test, shared by both kernels
// and taken before any of the stream's state is written: every entry of the
// new S and the step's scalars finite, and the new s2 positive.
// Team-collective; ends with a team barrier.
template <class T, class Member, class M>
KOKKOS_INLINE_FUNCTION bool step_update_is_finite(const Member& m, int r, const M& S_new, T rho2, T q, T gnorm, T theta,
                                                  T s2_new) {
  const bool finite = all_entries_finite(m, r, r, [&](const int a, const int c) { return S_new(a, c); });
  m.team_barrier();
  return finite && kmath::isfinite(rho2) && kmath::isfinite(q) && kmath::isfinite(gnorm) && kmath::isfinite(theta) &&
         kmath::isfinite(s2_new) && s2_new > T(0);
}

// S <- L^T S L, symmetrized, for a lower-triangular L read as L(t, c) with
// t >= c: the rotation of S that goes with a Cholesky-QR U <- U L^-T, in the
// sequential kernel (on U) and in the blocked kernel (on the coefficients,
// L = R^T). SL and out are r x r work. Summed as reference_reorthonormalize
// does (S L first, then L^T (S L), each entry in increasing t).
template <class T, class Member, class LF, class SM, class WM>
KOKKOS_INLINE_FUNCTION void rotate_S_by_factor(const Member& m, int r, const LF& L, const SM& S, const WM& SL,
                                               const WM& out) {
  times_lower<T>(m, r, S, L, SL);
  // out's row a as a combination of SL's rows (unit stride), each entry
  // still one running sum in increasing t.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
    for (int c = 0; c < r; ++c) out(a, c) = T(0);
    for (int t = a; t < r; ++t) {
      const T l = L(t, a);
      for (int c = 0; c < r; ++c) out(a, c) += l * SL(t, c);
    }
  });
  m.team_barrier();
  symmetrize(m, r, out, S);
}

}  // namespace mosaic::detail
