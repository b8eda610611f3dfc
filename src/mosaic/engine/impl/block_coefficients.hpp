// The blocked update's coefficient steps (blocked_step.hpp, step 3), the
// same whatever its GEMM kernel: the state bound to the launch, the
// coefficient work arrays, the small algebra (the team Cholesky, the
// maintained factor's rank-one updates) and one MOSAIC step on the
// coefficients. The Cholesky-QR on the coefficients (step 4) is defined in
// block_reorthonormalize.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/frame_rotation.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/team_cholesky.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// Indices of the double work vectors of one stream.
enum BlockVec : int {
  bv_c = 0,
  bv_m,
  bv_gc,
  bv_hc,
  bv_z,
  bv_w,
  bv_g,
  bv_gh,
  bv_u,
  bv_alpha,
  bv_beta,
  bv_gb,
  bv_hb,
  bv_av,
  bv_bv,
  bv_x,
  bv_count
};
// Indices of the double r x r work matrices of one stream
// (At = A^T; W0 = U0^T U0, measured when the block ends with a Cholesky-QR.)
enum BlockMat : int { bm_S = 0, bm_Sp, bm_F, bm_F2, bm_At, bm_W0, bm_count };

// What the blocked update does the same way whatever its GEMM kernel: the
// bound state, the coefficient work arrays and the k coefficient steps.
template <class Base>
struct BlockCoefficients {
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
  view_t<std::int64_t*> factor_age, refactors;
  view_t<double*> solve_drift;
  // the block's samples, B x n x d (a block of a staged chunk: any strides)
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> Xb;
  int n = 0, kcap = 0;
  // The samples stream b takes of the n (a masked block cut into runs,
  // impl/masked_blocks.hpp): the first stream_n(b), none when 0; all n
  // when empty.
  view_t<const int*> stream_n;
  view_t<double***> dG, dH, dA, dB, dBt;  // double copies / coefficients (dBt: r x k = B^T)
  view_t<double***> dQ;                   // B x k x r: G^T A + H B (the coefficient Cholesky-QR)
  view_t<double****> dM;                  // B x bm_count x r x r
  view_t<double***> dv;                   // B x bv_count x max(r, k)
  view_t<double**> dsc;                   // B x 3: s2, clamped and unresolved-residual steps of the block
  bool maintained = false;
  // reorthonormalize_every: auto for float: a Cholesky-QR at every block end
  // (base.reorth_every is then 0).
  bool reorth_at_block_end = false;
  // Unit roundoff of the scalar type of D, G and H (the unresolved-residual test).
  static constexpr double scalar_eps = double(std::numeric_limits<Scalar>::epsilon());
  int refactor_every = 64;

  // y(a) (+)= sum_{j < J} M(j, a) x(j) for a < n, row j of M at Mp + j * ldm
  // (unit stride): every y(a) is one running sum in increasing j, vectorized
  // over a. Ends with a team barrier.
  KOKKOS_INLINE_FUNCTION static void rows_times(const member_type& m, int n, int J, const double* Mp, int ldm,
                                                const double* x, double* y, bool accumulate) {
    team_share(m, n, [&](const int lo, const int hi) {
      if (!accumulate)
        for (int a = lo; a < hi; ++a) y[a] = 0.0;
      for (int j = 0; j < J; ++j) {
        const double xj = x[j];
        const double* row = Mp + long(j) * ldm;
        for (int a = lo; a < hi; ++a) y[a] += row[a] * xj;
      }
    });
    m.team_barrier();
  }

  // ---------------------------------------------------------------- small algebra
  // The r x r Cholesky factorization and solve of team_cholesky.hpp on
  // views: a's upper triangle becomes R (R^T R = A), false on a failed
  // pivot; x <- (R^T R)^{-1} x.
  template <class M>
  KOKKOS_INLINE_FUNCTION static bool cholesky_upper(const member_type& m, const M& a, int r) {
    return team_cholesky_upper(m, &a(0, 0), long(a.stride(0)), r);
  }
  template <class M, class V>
  KOKKOS_INLINE_FUNCTION static void solve_upper(const member_type& m, const M& R, const V& x, int r) {
    team_cholesky_solve(m, &R(0, 0), long(R.stride(0)), &x(0), r);
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
    for_each_entry(m, r, r, [&](const int a, const int e) { F(a, e) = dM(b, bm_S, a, e); });
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

  // One MOSAIC step on the coefficients with sample t (1-based: column t - 1
  // of D). Returns 0 or a BreakdownCode; nothing is modified on failure.
  // `unresolved`: the computed rho^2 is below 64 eps ||y_t||^2 (file comment).
  KOKKOS_INLINE_FUNCTION int coef_step(const member_type& m, int b, int t, bool& clamped, bool& unresolved) const {
    const int r = base.r, T = t;
    auto V = [&](int k) { return Kokkos::subview(dv, b, k, Kokkos::ALL()); };
    const auto c = V(bv_c), mv = V(bv_m), gc = V(bv_gc), hc = V(bv_hc), z = V(bv_z), w = V(bv_w), g = V(bv_g),
               gh = V(bv_gh), u = V(bv_u), alpha = V(bv_alpha), beta = V(bv_beta), gb = V(bv_gb), hb = V(bv_hb),
               av = V(bv_av), bvv = V(bv_bv), xv = V(bv_x);
    auto S = Kokkos::subview(dM, b, int(bm_S), Kokkos::ALL(), Kokkos::ALL());
    auto Sp = Kokkos::subview(dM, b, int(bm_Sp), Kokkos::ALL(), Kokkos::ALL());
    auto F = Kokkos::subview(dM, b, int(bm_F), Kokkos::ALL(), Kokkos::ALL());
    auto F2 = Kokkos::subview(dM, b, int(bm_F2), Kokkos::ALL(), Kokkos::ALL());
    const double eta_S = double(base.eta_S), max_step = double(base.max_step);

    // y_t = D c, c = delta_t - m; z = A^T (G c) + B^T (H c) (rows of G^T, H, A, B).
    const int K = dH.extent_int(2);
    double* const dGp = &dG(b, 0, 0);
    double* const dHp = &dH(b, 0, 0);
    double* const dAp = &dA(b, 0, 0);
    double* const dAtp = &dM(b, bm_At, 0, 0);
    double* const dBp = &dB(b, 0, 0);
    double* const dBtp = &dBt(b, 0, 0);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { c(j) = (j == t - 1 ? 1.0 : 0.0) - mv(j); });
    m.team_barrier();
    rows_times(m, r, T, dGp, r, &c(0), &gc(0), false);
    rows_times(m, T, T, dHp, K, &c(0), &hc(0), false);
    rows_times(m, r, r, dAp, r, &gc(0), &z(0), false);
    rows_times(m, r, T, dBp, r, &hc(0), &z(0), true);
    // e = U0 alpha + D beta: alpha = -A z (rows of At), beta = c - B z (rows of Bt).
    rows_times(m, r, r, dAtp, r, &z(0), &alpha(0), false);
    rows_times(m, T, r, dBtp, K, &z(0), &beta(0), false);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) { alpha(p) = -alpha(p); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { beta(j) = c(j) - beta(j); });
    m.team_barrier();
    rows_times(m, r, T, dGp, r, &beta(0), &gb(0), false);
    rows_times(m, T, T, dHp, K, &beta(0), &hb(0), false);
    double aa = 0, agb = 0, bhb = 0, yy = 0;
    for (int a = 0; a < r; ++a) {
      aa += alpha(a) * alpha(a);
      agb += alpha(a) * gb(a);
    }
    for (int j = 0; j < T; ++j) {
      bhb += beta(j) * hb(j);
      yy += c(j) * hc(j);  // ||y_t||^2 = c^T H c
    }
    double rho2 = aa + 2.0 * agb + bhb;
    unresolved = rho2 < 64.0 * scalar_eps * yy;
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
      for_each_entry(m, r, r, [&](const int a, const int e) { F(a, e) = S(a, e); });
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
      for_each_entry(m, r, r, [&](const int a, const int e) { Sp(a, e) = decay * (S(a, e) + cc * z(a) * z(e)); });
    } else {
      for_each_entry(m, r, r, [&](const int a, const int e) { Sp(a, e) = (1 - eta) * S(a, e) + eta * z(a) * z(e); });
    }

    // Subspace direction g (old S).
    if (base.precision) {
      if (base.gamma_zero) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = w(j); });
      } else {
        const double shift = double(base.gamma) * s2_old;
        copy_shift_diagonal(m, r, S, F2, shift);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = z(j); });
        if (!cholesky_upper(m, F2, r)) return breakdown_regularized_not_spd;
        solve_upper(m, F2, g, r);
      }
    } else {
      oja_direction<double>(
          m, r, [&](const int j) { return S(j, j); }, z, g);
    }
    m.team_barrier();
    const double gnorm = direction_norm<double>(g, r);

    // Rotation angle and transport of S'.
    const FrameRotation<double> rot = rotate_frame_transport_S<double>(m, r, rho, gnorm, double(base.tiny),
                                                                       double(base.eta_U), s2_old, 0.0, g, gh, u, Sp);
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
      const bool finite = all_entries_finite(m, r, r, [&](const int a, const int e) { return F(a, e); });
      m.team_barrier();
      if (!finite) return breakdown_nonfinite_update;
    }

    // Commit: rotate the coefficients (A, At, B, Bt by the same rank-one
    // terms, so At and Bt stay the exact transposes), S, s2, mean
    // coefficients, factor.
    if (rotate) {
      rows_times(m, r, r, dAtp, r, &gh(0), &av(0), false);   // A gh
      rows_times(m, T, r, dBtp, K, &gh(0), &bvv(0), false);  // B gh
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r),
                           [&](const int p) { av(p) = cm1 * av(p) + sn * alpha(p) / rho; });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T),
                           [&](const int j) { bvv(j) = cm1 * bvv(j) + sn * beta(j) / rho; });
      m.team_barrier();
      team_share(m, r, [&](const int lo, const int hi) {
        for (int p = lo; p < hi; ++p) {  // A(p, :) += coef(p) gh^T
          const double coef = av(p);
          double* row = dAp + long(p) * r;
          for (int a = 0; a < r; ++a) row[a] += coef * gh(a);
        }
        for (int a = lo; a < hi; ++a) {  // At(a, :) += gh(a) coef^T
          const double ga = gh(a);
          double* rowt = dAtp + long(a) * r;
          for (int p = 0; p < r; ++p) rowt[p] += av(p) * ga;
          double* rowbt = dBtp + long(a) * K;
          for (int j = 0; j < T; ++j) rowbt[j] += bvv(j) * ga;
        }
      });
      team_share(m, T, [&](const int lo, const int hi) {
        for (int j = lo; j < hi; ++j) {  // B(j, :) += coef(j) gh^T
          const double coef = bvv(j);
          double* row = dBp + long(j) * r;
          for (int a = 0; a < r; ++a) row[a] += coef * gh(a);
        }
      });
      m.team_barrier();
    }
    symmetrize(m, r, Sp, S);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { mv(j) += double(base.eta_mu) * c(j); });
    if (maintained) for_each_entry(m, r, r, [&](const int a, const int e) { Rfac(b, a, e) = F(a, e); });
    m.team_barrier();
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      dsc(b, 0) = s2_new;
      if (maintained) factor_age(b) += 1;
    });
    m.team_barrier();
    return 0;
  }
  // The Cholesky-QR of U = U0 A + D B on the coefficients (file comment,
  // step 4), after `done` steps: U^T U = R^T R, A <- A R^-1, B <- B R^-1,
  // S <- R S R^T. False (nothing changed) if U^T U does not factor.
  KOKKOS_INLINE_FUNCTION bool reorthonormalize_coefficients(const member_type& m, int b, int done) const;
};

}  // namespace detail
}  // namespace mosaic
