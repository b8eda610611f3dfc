// The exact blocked MOSAIC update (ALGORITHM.md section 6) and the maintained
// precision factorization, one Kokkos team per stream. Used by MosaicEngine
// (batched_engine.hpp) when algorithm.block_size > 1 (step_block) or
// algorithm.precision_solve is maintained.
//
// One call advances every healthy stream by the n <= k samples of a block.
// Per team (stream b), from the state (mu0, U0, S, s2) at the block start:
//   1. X~ = [mu0, x_1 .. x_n] is copied into a d x (n+1) work array (row i of
//      X~ contiguous on the host) while the first non-finite sample, if any,
//      is located: its column and later ones are excluded from every product
//      (the stream freezes at that step, as the sequential path does).
//   2. G^T = X~^T U0 ((n+1) x r) and H = X~^T X~ ((n+1) x (n+1)), in the run's
//      scalar type, then widened to double.
//   3. n sequential steps on the coefficients, all in double whatever the
//      scalar type (ALGORITHM.md: y_t = X~ c_t, U_t = U0 A + X~ B,
//      z = A^T G c + B^T H c, alpha = -A z, beta = c - B z,
//      rho^2 = alpha.alpha + 2 alpha^T G beta + beta^T H beta), with the
//      precision solve, trust-radius clamp, covariance update, direction,
//      rotation (on A and B), transport, s2 and mean (m += eta_mu c) of
//      section 2, and the same breakdown tests and codes. Only the columns
//      0..t of X~ are touched at step t, so a later sample can never poison
//      an earlier step. A negative rho^2 (rounding of the difference form,
//      e at rounding level) is taken as 0.
//   4. Block end (or the step before a breakdown): U = U0 A + X~ B (GEMM),
//      mu = X~ m, S, s2, counters; then Cholesky-QR of U (with S rotated) if
//      reorthonormalize_every > 0 and the block completed a step whose count
//      is a multiple of it (at most one pass per block, at the block end).
// The product U0^T U0 = I is assumed by the rho^2 formula (exact in exact
// arithmetic); the sequential kernel computes e and rho directly.
//
// GEMM kernels (BlockGemm): KokkosBatched::TeamGemm (Algo::Gemm::Blocked) or
// a row-wise form (for each row i of X~ / U0, axpy of that row into the
// outputs: unit-stride, vectorizing inner loops on a row-major host layout;
// every output entry is still summed in increasing i). The default is the
// row-wise form on host spaces and TeamGemm on devices; see
// docs/PERFORMANCE.md for the measurements behind that choice. Results do not
// depend on the team size with either kernel.
//
// Maintained precision solve (precision_solve: maintained): per stream an
// upper-triangular R (double) with R^T R = S is kept across steps and blocks:
//   S' = decay (S + c z z^T)       -> R' = sqrt(decay) cholupdate(R, sqrt(c) z)
//        ((1-eta) S + eta z z^T for first_order, likewise)
//   M^T S' M (M = I + (cos-1) gh gh^T) -> R' M = R' + ((cos-1) R' gh) gh^T is
//        re-triangularized by Givens rotations (QR rank-one update)
//   + s2 sin^2 gh gh^T             -> cholupdate(R, sqrt(s2) sin gh)
// all O(r^2). Every refactor_every steps (and at the first step, or after the
// state was overwritten) R is replaced by a fresh Cholesky factor of S; the
// largest relative difference max|R_maintained - R_fresh| / max|R_fresh| seen
// at those refactorizations is recorded per stream (StreamBatch::solve_drift).
// The regularized system S + gamma s2 I is factored densely every step: its
// shift changes by a full-rank multiple of I every step (s2 and the e^{-eta}
// scale of S), so it has no low-rank update; with gamma = 0 or
// subspace_direction: oja there is no second factorization at all.
#pragma once

#include <cstdint>

#include <Kokkos_Core.hpp>
#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Team_Impl.hpp>

#include "frame_rotation.hpp"
#include "kokkos_compat.hpp"
#include "stream_batch.hpp"

namespace mosaic {

// Which kernel forms G, H and U = U0 A + X~ B in the blocked update.
enum class BlockGemm { automatic, kokkos_batched, rowwise };
inline const char* to_string(BlockGemm g) {
  return g == BlockGemm::automatic ? "auto" : g == BlockGemm::kokkos_batched ? "kokkos_batched" : "rowwise";
}

namespace detail {

// Indices of the double work vectors of one stream.
enum BlockVec : int {
  bv_c = 0, bv_m, bv_gc, bv_hc, bv_z, bv_w, bv_g, bv_gh, bv_u, bv_alpha, bv_beta, bv_gb, bv_hb,
  bv_av, bv_bv, bv_x, bv_count
};
// Indices of the double r x r work matrices of one stream.
enum BlockMat : int { bm_S = 0, bm_Sp, bm_F, bm_F2, bm_count };

template <class Base>
struct BlockFunctor {
  using Scalar = typename Base::scalar_type;
  using execution_space = typename Base::execution_space;
  using memory_space = typename Base::memory_space;
  using member_type = typename Base::member_type;
  static constexpr bool column_major = Base::column_major;
  template <class DataType>
  using view_t = Kokkos::View<DataType, Kokkos::LayoutRight, memory_space>;

  Base base;  // state views, options, sequential helpers (fail, reorthonormalize)
  // maintained solve, persistent (StreamBatch)
  view_t<double***> Rfac;
  Kokkos::View<std::int64_t*, memory_space> factor_age, refactors;
  Kokkos::View<double*, memory_space> solve_drift;
  // the block's samples, B x n x d
  Kokkos::View<const Scalar***, memory_space> Xb;
  int n = 0, kcap = 0;
  // work
  view_t<Scalar***> wX;   // B x d x (k+1): X~
  view_t<Scalar***> wG;   // B x (k+1) x r: G^T
  view_t<Scalar***> wH;   // B x (k+1) x (k+1)
  view_t<Scalar***> wAs;  // B x r x r: A in the scalar type
  view_t<Scalar***> wBs;  // B x (k+1) x r: B in the scalar type
  typename StreamBatch<Scalar, execution_space>::basis_view wUn;  // B x d x r: new U
  view_t<double***> dG, dH, dA, dB;  // double copies / coefficients
  view_t<double****> dM;             // B x bm_count x r x r
  view_t<double***> dv;              // B x bv_count x max(r, k+1)
  view_t<double**> dsc;              // B x 2: s2, clamped steps of the block
  bool maintained = false, use_kb = false;
  int refactor_every = 64;

  // ---------------------------------------------------------------- small algebra
  // In-place Cholesky of the symmetric matrix whose upper triangle is in a:
  // afterwards a's upper triangle is R with R^T R = A (right-looking, rows of
  // R contiguous; the lower triangle is not read or written). False (same on
  // every thread) on a non-positive or non-finite pivot.
  template <class M>
  KOKKOS_INLINE_FUNCTION bool cholesky_upper(const member_type& m, const M& a, int r) const {
    m.team_barrier();
    for (int j = 0; j < r; ++j) {
      const double piv = a(j, j);
      m.team_barrier();
      if (!(piv > 0.0) || !kmath::isfinite(piv)) return false;
      const double rjj = kmath::sqrt(piv);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, j + 1, r), [&](const int i) { a(j, i) /= rjj; });
      Kokkos::single(Kokkos::PerTeam(m), [&]() { a(j, j) = rjj; });
      m.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, j + 1, r), [&](const int c) {
        const double lc = a(j, c);
        for (int i = c; i < r; ++i) a(c, i) -= a(j, i) * lc;
      });
      m.team_barrier();
    }
    return true;
  }

  // x <- (R^T R)^{-1} x for upper-triangular R (one thread; O(r^2)).
  template <class M, class V>
  KOKKOS_INLINE_FUNCTION void solve_upper(const member_type& m, const M& R, const V& x, int r) const {
    m.team_barrier();
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      for (int k = 0; k < r; ++k) {  // R^T y = x
        const double yk = x(k) / R(k, k);
        x(k) = yk;
        for (int i = k + 1; i < r; ++i) x(i) -= R(k, i) * yk;
      }
      for (int j = r - 1; j >= 0; --j) {  // R x = y
        double s = x(j);
        for (int i = j + 1; i < r; ++i) s -= R(j, i) * x(i);
        x(j) = s / R(j, j);
      }
    });
    m.team_barrier();
  }

  // R^T R + v v^T = R'^T R' (v is overwritten). One thread.
  template <class M, class V>
  KOKKOS_INLINE_FUNCTION static void cholupdate(const M& R, const V& v, int r) {
    for (int k = 0; k < r; ++k) {
      const double rkk = R(k, k), vk = v(k);
      const double rr = kmath::sqrt(rkk * rkk + vk * vk);
      const double c = rr / rkk, s = vk / rkk;
      R(k, k) = rr;
      for (int i = k + 1; i < r; ++i) {
        const double rki = (R(k, i) + s * v(i)) / c;
        R(k, i) = rki;
        v(i) = c * v(i) - s * rki;
      }
    }
  }

  // R <- triangular factor of (R + w gh^T) (QR rank-one update by Givens
  // rotations; R's strictly lower part must be zero and is left zero). One thread.
  template <class M, class V>
  KOKKOS_INLINE_FUNCTION static void qr_rank_one(const M& R, const V& w, const V& gh, int r) {
    auto rot = [&](int k, double c, double s) {
      for (int i = k; i < r; ++i) {
        const double a = R(k, i), b = R(k + 1, i);
        R(k, i) = c * a + s * b;
        R(k + 1, i) = -s * a + c * b;
      }
    };
    for (int k = r - 2; k >= 0; --k) {  // w -> ||w|| e_0, R -> upper Hessenberg
      const double a = w(k), b = w(k + 1);
      const double rr = kmath::sqrt(a * a + b * b);
      if (rr == 0.0) continue;
      w(k) = rr;
      w(k + 1) = 0.0;
      rot(k, a / rr, b / rr);
    }
    for (int i = 0; i < r; ++i) R(0, i) += w(0) * gh(i);
    for (int k = 0; k + 1 < r; ++k) {  // Hessenberg -> triangular
      const double a = R(k, k), b = R(k + 1, k);
      const double rr = kmath::sqrt(a * a + b * b);
      if (rr == 0.0 || b == 0.0) continue;
      rot(k, a / rr, b / rr);
      R(k + 1, k) = 0.0;
    }
    for (int j = 0; j < r; ++j)  // positive diagonal (the unique Cholesky factor)
      if (R(j, j) < 0.0)
        for (int i = j; i < r; ++i) R(j, i) = -R(j, i);
  }

  // Maintained factor of stream b valid for the current S (dM(b, bm_S)):
  // refactors when due, recording the drift. False if S does not factor.
  KOKKOS_INLINE_FUNCTION bool ensure_factor(const member_type& m, int b) const {
    const int r = base.r;
    const std::int64_t age = factor_age(b);
    if (age >= 0 && age < refactor_every) return true;
    auto F = Kokkos::subview(dM, b, int(bm_F), Kokkos::ALL(), Kokkos::ALL());
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
      F(k / r, k % r) = dM(b, bm_S, k / r, k % r);
    });
    if (!cholesky_upper(m, F, r)) return false;
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      if (age >= 0) {
        double diff = 0, scale = 0;
        for (int j = 0; j < r; ++j)
          for (int i = j; i < r; ++i) {
            const double dd = kmath::fabs(Rfac(b, j, i) - F(j, i)), s = kmath::fabs(F(j, i));
            diff = dd > diff ? dd : diff;
            scale = s > scale ? s : scale;
          }
        const double rel = scale > 0 ? diff / scale : diff;
        if (!(rel <= solve_drift(b))) solve_drift(b) = rel;
        refactors(b) += 1;
      }
      for (int j = 0; j < r; ++j)
        for (int i = 0; i < r; ++i) Rfac(b, j, i) = i >= j ? F(j, i) : 0.0;
      factor_age(b) = 0;
    });
    m.team_barrier();
    return true;
  }

  // One MOSAIC step on the coefficients with column t (1-based) of X~.
  // Returns 0 or a BreakdownCode; nothing is modified on failure.
  KOKKOS_INLINE_FUNCTION int coef_step(const member_type& m, int b, int t, bool& clamped) const {
    const int r = base.r, T = t + 1;
    auto V = [&](int k) { return Kokkos::subview(dv, b, k, Kokkos::ALL()); };
    const auto c = V(bv_c), mv = V(bv_m), gc = V(bv_gc), hc = V(bv_hc), z = V(bv_z), w = V(bv_w),
               g = V(bv_g), gh = V(bv_gh), u = V(bv_u), alpha = V(bv_alpha), beta = V(bv_beta),
               gb = V(bv_gb), hb = V(bv_hb), av = V(bv_av), bvv = V(bv_bv), xv = V(bv_x);
    auto S = Kokkos::subview(dM, b, int(bm_S), Kokkos::ALL(), Kokkos::ALL());
    auto Sp = Kokkos::subview(dM, b, int(bm_Sp), Kokkos::ALL(), Kokkos::ALL());
    auto F = Kokkos::subview(dM, b, int(bm_F), Kokkos::ALL(), Kokkos::ALL());
    auto F2 = Kokkos::subview(dM, b, int(bm_F2), Kokkos::ALL(), Kokkos::ALL());
    const double eta_S = double(base.eta_S), max_step = double(base.max_step);

    // y_t = X~ c, c = e_t - m; z = A^T (G c) + B^T (H c).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { c(j) = (j == t ? 1.0 : 0.0) - mv(j); });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
      double s = 0;
      for (int j = 0; j < T; ++j) s += dG(b, j, a) * c(j);
      gc(a) = s;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) {
      double s = 0;
      for (int l = 0; l < T; ++l) s += dH(b, j, l) * c(l);
      hc(j) = s;
    });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
      double s = 0;
      for (int p = 0; p < r; ++p) s += dA(b, p, a) * gc(p);
      for (int j = 0; j < T; ++j) s += dB(b, j, a) * hc(j);
      z(a) = s;
    });
    m.team_barrier();
    // e = U0 alpha + X~ beta.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) {
      double s = 0;
      for (int a = 0; a < r; ++a) s += dA(b, p, a) * z(a);
      alpha(p) = -s;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) {
      double s = 0;
      for (int a = 0; a < r; ++a) s += dB(b, j, a) * z(a);
      beta(j) = c(j) - s;
    });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
      double s = 0;
      for (int j = 0; j < T; ++j) s += dG(b, j, a) * beta(j);
      gb(a) = s;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) {
      double s = 0;
      for (int l = 0; l < T; ++l) s += dH(b, j, l) * beta(l);
      hb(j) = s;
    });
    m.team_barrier();
    double aa = 0, agb = 0, bhb = 0;
    for (int a = 0; a < r; ++a) {
      aa += alpha(a) * alpha(a);
      agb += alpha(a) * gb(a);
    }
    for (int j = 0; j < T; ++j) bhb += beta(j) * hb(j);
    double rho2 = aa + 2.0 * agb + bhb;
    if (rho2 < 0.0) rho2 = 0.0;
    const double rho = kmath::sqrt(rho2);
    const double s2_old = dsc(b, 0);

    // Precision solve w = S^{-1} z.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { w(j) = z(j); });
    if (maintained) {
      if (!ensure_factor(m, b)) return breakdown_s_not_spd;
      auto R = Kokkos::subview(Rfac, b, Kokkos::ALL(), Kokkos::ALL());
      solve_upper(m, R, w, r);
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) { F(k / r, k % r) = S(k / r, k % r); });
      if (!cholesky_upper(m, F, r)) return breakdown_s_not_spd;
      solve_upper(m, F, w, r);
    }
    double q = 0;
    for (int j = 0; j < r; ++j) q += z(j) * w(j);

    // Step length, clamp, covariance update in the old frame.
    const double ell = eta_S * kmath::sqrt((q - 1) * (q - 1) + double(r - 1));
    double eta = eta_S;
    clamped = false;
    if (ell > max_step) {
      eta = eta_S * max_step / ell;
      clamped = true;
    }
    const double cc = q > 0.0 ? kmath::expm1(eta * q) / q : eta;
    const double decay = kmath::exp(-eta);
    if (base.exact) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
        const int a = k / r, e = k % r;
        Sp(a, e) = decay * (S(a, e) + cc * z(a) * z(e));
      });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
        const int a = k / r, e = k % r;
        Sp(a, e) = (1 - eta) * S(a, e) + eta * z(a) * z(e);
      });
    }

    // Subspace direction g (old S).
    if (base.precision) {
      if (base.gamma_zero) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = w(j); });
      } else {
        const double shift = double(base.gamma) * s2_old;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
          const int a = k / r, e = k % r;
          F2(a, e) = a == e ? S(a, e) + shift : S(a, e);
        });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = z(j); });
        if (!cholesky_upper(m, F2, r)) return breakdown_regularized_not_spd;
        solve_upper(m, F2, g, r);
      }
    } else {
      double trace = 0;
      for (int j = 0; j < r; ++j) trace += S(j, j);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = z(j) / (trace / double(r)); });
    }
    m.team_barrier();
    double gnorm = 0;
    for (int j = 0; j < r; ++j) gnorm += g(j) * g(j);
    gnorm = kmath::sqrt(gnorm);

    // Rotation angle and transport of S'.
    const FrameRotation<double> rot = rotate_frame_transport_S<double>(
        m, r, rho, gnorm, double(base.tiny), double(base.eta_U), s2_old, g, gh, u, Sp);
    const bool rotate = rot.rotate;
    const double theta = rot.theta, sn = rot.sn, cm1 = rot.cm1;
    const double s2_new = (1 - double(base.eta_s)) * s2_old + double(base.eta_s) * rho2 / double(base.d - r);

    if (!step_update_is_finite<double>(m, r, Sp, rho2, q, gnorm, theta, s2_new)) return breakdown_nonfinite_update;

    // Maintained factor of the new S, built aside in F (R^T R = S_new).
    if (maintained) {
      Kokkos::single(Kokkos::PerTeam(m), [&]() {
        for (int j = 0; j < r; ++j)
          for (int i = 0; i < r; ++i) F(j, i) = Rfac(b, j, i);
        const double a1 = base.exact ? cc : eta / (1 - eta);
        const double sa = kmath::sqrt(a1);
        for (int j = 0; j < r; ++j) xv(j) = sa * z(j);
        cholupdate(F, xv, r);
        const double scale = kmath::sqrt(base.exact ? decay : 1 - eta);
        for (int j = 0; j < r; ++j)
          for (int i = j; i < r; ++i) F(j, i) *= scale;
        if (rotate) {
          for (int j = 0; j < r; ++j) {  // w = (cos-1) R gh
            double s = 0;
            for (int i = j; i < r; ++i) s += F(j, i) * gh(i);
            xv(j) = cm1 * s;
          }
          qr_rank_one(F, xv, gh, r);
          const double sv = kmath::sqrt(s2_old) * sn;
          for (int j = 0; j < r; ++j) xv(j) = sv * gh(j);
          cholupdate(F, xv, r);
        }
      });
      m.team_barrier();
      int bad = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(m, r * r),
          [&](const int k, int& nb) {
            if (!kmath::isfinite(F(k / r, k % r))) nb += 1;
          },
          bad);
      m.team_barrier();
      if (bad != 0) return breakdown_nonfinite_update;
    }

    // Commit: rotate the coefficients, S, s2, mean coefficients, factor.
    if (rotate) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) {
        double s = 0;
        for (int a = 0; a < r; ++a) s += dA(b, p, a) * gh(a);
        av(p) = s;
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) {
        double s = 0;
        for (int a = 0; a < r; ++a) s += dB(b, j, a) * gh(a);
        bvv(j) = s;
      });
      m.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) {
        const double coef = cm1 * av(p) + sn * alpha(p) / rho;
        for (int a = 0; a < r; ++a) dA(b, p, a) += coef * gh(a);
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) {
        const double coef = cm1 * bvv(j) + sn * beta(j) / rho;
        for (int a = 0; a < r; ++a) dB(b, j, a) += coef * gh(a);
      });
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
      const int a = k / r, e = k % r;
      S(a, e) = a == e ? Sp(a, a) : (Sp(a, e) + Sp(e, a)) / 2;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { mv(j) += double(base.eta_mu) * c(j); });
    if (maintained)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
        Rfac(b, k / r, k % r) = F(k / r, k % r);
      });
    m.team_barrier();
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      dsc(b, 0) = s2_new;
      if (maintained) factor_age(b) += 1;
    });
    m.team_barrier();
    return 0;
  }

  // ---------------------------------------------------------------- GEMMs
  // G^T = X~^T U0 (K x r) and H = X~^T X~ (K x K) over the first K columns.
  KOKKOS_INLINE_FUNCTION void form_gh(const member_type& m, int b, int K) const {
    const int d = base.d, r = base.r;
    if (use_kb) {
      using namespace KokkosBatched;
      auto Xv = Kokkos::subview(wX, b, Kokkos::ALL(), Kokkos::make_pair(0, K));
      auto U0 = Kokkos::subview(base.U, b, Kokkos::ALL(), Kokkos::ALL());
      auto Gv = Kokkos::subview(wG, b, Kokkos::make_pair(0, K), Kokkos::ALL());
      auto Hv = Kokkos::subview(wH, b, Kokkos::make_pair(0, K), Kokkos::make_pair(0, K));
      TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(
          m, Scalar(1), Xv, U0, Scalar(0), Gv);
      TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(
          m, Scalar(1), Xv, Xv, Scalar(0), Hv);
      m.team_barrier();
    } else {
      // Row-wise: every thread owns a contiguous range of output rows j of
      // G^T and H and streams over i (four rows of X~ / U0 per pass, added in
      // increasing i), so each entry's order is independent of the team size.
      const Basis Ub{&base.U(b, 0, 0), d, r};
      const int ts = m.team_size();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, ts), [&](const int part) {
        const int j0 = int((long(K) * part) / ts), j1 = int((long(K) * (part + 1)) / ts);
        for (int j = j0; j < j1; ++j) {
          Scalar* gj = &wG(b, j, 0);
          Scalar* hj = &wH(b, j, 0);
          for (int a = 0; a < r; ++a) gj[a] = Scalar(0);
          for (int l = 0; l <= j; ++l) hj[l] = Scalar(0);
        }
        int i = 0;
        for (; i + 4 <= d; i += 4) {
          const Scalar* x0 = &wX(b, i, 0);
          const Scalar* x1 = &wX(b, i + 1, 0);
          const Scalar* x2 = &wX(b, i + 2, 0);
          const Scalar* x3 = &wX(b, i + 3, 0);
          const Scalar* u0 = &Ub(i, 0);
          const Scalar* u1 = &Ub(i + 1, 0);
          const Scalar* u2 = &Ub(i + 2, 0);
          const Scalar* u3 = &Ub(i + 3, 0);
          for (int j = j0; j < j1; ++j) {
            const Scalar a0 = x0[j], a1 = x1[j], a2 = x2[j], a3 = x3[j];
            Scalar* gj = &wG(b, j, 0);
            for (int a = 0; a < r; ++a) gj[a] = gj[a] + a0 * u0[a] + a1 * u1[a] + a2 * u2[a] + a3 * u3[a];
            Scalar* hj = &wH(b, j, 0);
            for (int l = 0; l <= j; ++l) hj[l] = hj[l] + a0 * x0[l] + a1 * x1[l] + a2 * x2[l] + a3 * x3[l];
          }
        }
        for (; i < d; ++i) {
          const Scalar* x0 = &wX(b, i, 0);
          const Scalar* u0 = &Ub(i, 0);
          for (int j = j0; j < j1; ++j) {
            const Scalar a0 = x0[j];
            Scalar* gj = &wG(b, j, 0);
            for (int a = 0; a < r; ++a) gj[a] += a0 * u0[a];
            Scalar* hj = &wH(b, j, 0);
            for (int l = 0; l <= j; ++l) hj[l] += a0 * x0[l];
          }
        }
      });
      m.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
        for (int l = j + 1; l < K; ++l) wH(b, j, l) = wH(b, l, j);
      });
      m.team_barrier();
    }
  }

  // U <- U0 A + X~ B over the first K columns of X~; mu <- X~ m.
  KOKKOS_INLINE_FUNCTION void materialize(const member_type& m, int b, int K) const {
    const int d = base.d, r = base.r;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
      wAs(b, k / r, k % r) = Scalar(dA(b, k / r, k % r));
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K * r), [&](const int k) {
      wBs(b, k / r, k % r) = Scalar(dB(b, k / r, k % r));
    });
    m.team_barrier();
    const Basis Ub{&base.U(b, 0, 0), d, r};
    const Basis Un{&wUn(b, 0, 0), d, r};
    if (use_kb) {
      using namespace KokkosBatched;
      auto U0 = Kokkos::subview(base.U, b, Kokkos::ALL(), Kokkos::ALL());
      auto Unv = Kokkos::subview(wUn, b, Kokkos::ALL(), Kokkos::ALL());
      auto As = Kokkos::subview(wAs, b, Kokkos::ALL(), Kokkos::ALL());
      auto Bs = Kokkos::subview(wBs, b, Kokkos::make_pair(0, K), Kokkos::ALL());
      auto Xv = Kokkos::subview(wX, b, Kokkos::ALL(), Kokkos::make_pair(0, K));
      TeamGemm<member_type, Trans::NoTranspose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(
          m, Scalar(1), U0, As, Scalar(0), Unv);
      m.team_barrier();
      TeamGemm<member_type, Trans::NoTranspose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(
          m, Scalar(1), Xv, Bs, Scalar(1), Unv);
    } else {
      // Row-wise: row i of the new U from row i of U0 and of X~ (axpy of the
      // rows of A and B, unit stride in the output column).
      constexpr int CW = 64;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
        const Scalar* xi = &wX(b, i, 0);
        for (int c0 = 0; c0 < r; c0 += CW) {
          const int nc = r - c0 < CW ? r - c0 : CW;
          Scalar acc[CW];
          for (int e = 0; e < nc; ++e) acc[e] = Scalar(0);
          for (int p = 0; p < r; ++p) {
            const Scalar a = Ub(i, p);
            const Scalar* ap = &wAs(b, p, c0);
            for (int e = 0; e < nc; ++e) acc[e] += a * ap[e];
          }
          for (int j = 0; j < K; ++j) {
            const Scalar a = xi[j];
            const Scalar* bp = &wBs(b, j, c0);
            for (int e = 0; e < nc; ++e) acc[e] += a * bp[e];
          }
          for (int e = 0; e < nc; ++e) Un(i, c0 + e) = acc[e];
        }
      });
    }
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
      for (int a = 0; a < r; ++a) Ub(i, a) = Un(i, a);
      double s = 0;
      for (int j = 0; j < K; ++j) s += double(wX(b, i, j)) * dv(b, bv_m, j);
      base.mu(b, i) = Scalar(s);
    });
    m.team_barrier();
  }

  using Basis = typename Base::Basis;

  // ---------------------------------------------------------------- block
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    if (base.status(b) != 0) return;
    const int d = base.d, r = base.r;
    const std::int64_t step0 = base.steps(b);

    // 1. X~ = [mu0, x_1..x_n]; first non-finite sample.
    int first_bad = n;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, int& fb) {
          wX(b, i, 0) = base.mu(b, i);
          for (int t = 0; t < n; ++t) {
            const Scalar x = Xb(b, t, i);
            wX(b, i, t + 1) = x;
            if (!kmath::isfinite(x) && t < fb) fb = t;
          }
        },
        Kokkos::Min<int>(first_bad));
    m.team_barrier();
    const int n_ok = first_bad < n ? first_bad : n;  // samples before the first non-finite one

    // 2. G, H over the usable columns, widened to double; coefficients start.
    const int Kx = n_ok + 1;
    if (n_ok > 0) form_gh(m, b, Kx);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, Kx), [&](const int j) {
      for (int a = 0; a < r; ++a) {
        dG(b, j, a) = double(wG(b, j, a));
        dB(b, j, a) = 0.0;
      }
      for (int l = 0; l < Kx; ++l) dH(b, j, l) = double(wH(b, j, l));
      dv(b, bv_m, j) = j == 0 ? 1.0 : 0.0;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
      const int a = k / r, e = k % r;
      dA(b, a, e) = a == e ? 1.0 : 0.0;
      dM(b, bm_S, a, e) = double(base.S(b, a, e));
    });
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      dsc(b, 0) = double(base.s2(b));
      dsc(b, 1) = 0.0;
    });
    m.team_barrier();

    // 3. The n steps on the coefficients.
    int done = 0, code = 0;
    for (int t = 1; t <= n; ++t) {
      if (t - 1 >= n_ok) {
        code = breakdown_nonfinite_sample;
        break;
      }
      bool clamped = false;
      code = coef_step(m, b, t, clamped);
      if (code != 0) break;
      if (clamped) Kokkos::single(Kokkos::PerTeam(m), [&]() { dsc(b, 1) += 1.0; });
      done = t;
    }
    m.team_barrier();

    // 4. Write the state after the last completed step.
    if (done > 0) {
      materialize(m, b, done + 1);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int k) {
        base.S(b, k / r, k % r) = Scalar(dM(b, bm_S, k / r, k % r));
      });
    }
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      if (done > 0) base.s2(b) = Scalar(dsc(b, 0));
      base.steps(b) = step0 + done;
      base.clamped_steps(b) += std::int64_t(dsc(b, 1));
    });
    m.team_barrier();
    if (code != 0) {
      base.fail(m, b, code, step0 + done);
      return;
    }
    const int every = base.reorth_every;
    if (every > 0 && done > 0 && (step0 + done) / every > step0 / every) {
      base.reorthonormalize(m, b, step0 + done - 1);
      // S was rotated (S <- L^T S L): the maintained factor no longer
      // matches it; take a fresh one at the next step (no drift recorded).
      if (maintained) Kokkos::single(Kokkos::PerTeam(m), [&]() { factor_age(b) = -1; });
    }
  }
};

}  // namespace detail
}  // namespace mosaic
