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
#include "mosaic/engine/impl/team_gram.hpp"
#include "mosaic/engine/impl/team_rows_times.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/team_cholesky.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// What a coefficient step did besides moving the state (coef_step), counted
// per block.
struct StepFlags {
  bool clamped = false, unresolved = false, recomputed = false;
};

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
  bv_zls,  // the shared-mask form (7.7.2): z_ls = C^-1 b, v = C^-1 g, vh = v / beta
  bv_v,
  bv_vh,
  bv_epart,  // section 6's resolve rule: partial sums of ||e||^2 over fixed chunks of rows
  bv_count
};
// Indices of the double r x r work matrices of one stream
// (At = A^T; W0 = U0^T U0, measured when the block ends with a Cholesky-QR;
// the shared-mask form's N = U0_M^T U0_M, K = C^-1 - I, the posterior
// covariance P and a scratch Y; under missing_rotation: geodesic the
// missing rows' coefficient A_M (U_M = U0_M A_M) and Nt = A_M^T N A_M.)
enum BlockMat : int { bm_S = 0, bm_Sp, bm_F, bm_F2, bm_At, bm_W0, bm_N, bm_K, bm_P, bm_Y, bm_AM, bm_Nt, bm_count };

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
  // B x 5: s2, clamped and unresolved-residual steps of the block, log det
  // C of a shared-mask run's current factors (section 4's likelihood), and
  // the block's explicit residual recomputations (section 6's resolve rule)
  view_t<double**> dsc;
  // A launch of 7.7.2's shared-mask form (impl/masked_blocks.hpp): stream
  // b's run shares the missing rows whose U0 rows are saved_rows(b, 0..
  // shared_missing(b)) (0: the stream's block has nothing missing); empty
  // when the launch has no missing entries. The samples' missing entries
  // hold mu0 (D_M = 0).
  view_t<const int*> shared_missing;
  view_t<const int**> missing_rows;  // B x d: the run's missing rows, ascending (the first shared_missing(b))
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> saved_rows;  // B x d x r
  view_t<std::int64_t*> skipped_steps, missing_entries;
  double cond_max = 1e4;  // missing_cond_max (7.5)
  // missing_rotation: geodesic (7.7.2's last item): the rotation moves the
  // missing rows too (U_M = U0_M A_M), so C and K are formed again for
  // every sample from Nt = A_M^T N A_M.
  bool geodesic = false;
  // noise: diagonal (8.5, impl/block_noise.hpp; unbound otherwise): each
  // completed step's residual coefficients, column t - 1 of stream b =
  // [alpha_t; beta_t] (e_t = U0 alpha_t + D beta_t; rows r + t.. zero), and
  // its s2 before the step (-1: sample t left no residual).
  view_t<Scalar***> res_coef;  // B x k x (r + k)
  view_t<double**> res_s2;     // B x k
  bool maintained = false;
  // reorthonormalize_every: auto for float: a Cholesky-QR at every block end
  // (base.reorth_every is then 0).
  bool reorth_at_block_end = false;
  // noise: diagonal: per stream, the launch's sum of log psi over its
  // observed rows, which puts section 4's likelihood of the whitened
  // samples in data units (WhitenedRunStart; unbound otherwise).
  view_t<const double*> logdet_psi;
  // Unit roundoff of the scalar type of D, G and H (the unresolved-residual test).
  static constexpr double scalar_eps = double(std::numeric_limits<Scalar>::epsilon());
  int refactor_every = 64;

  // y(a) (+)= sum_{j < J} M(j, a) x(j) for a < n, row j of M at Mp + j * ldm
  // (unit stride), each y(a) one running sum in increasing j
  // (impl/team_rows_times.hpp: register tiles on host spaces, a register
  // per result on devices). Ends with a team barrier.
  KOKKOS_INLINE_FUNCTION static void rows_times(const member_type& m, int n, int J, const double* Mp, int ldm,
                                                const double* x, double* y, bool accumulate) {
    team_rows_times(m, n, J, Mp, ldm, x, y, accumulate);
  }

  // Where a step factors S and S + gamma s2 I (the dense precision solve and
  // the regularized direction: shifted_solve): in level-0 team scratch when
  // the launch grants it (factor_ld > 0, then factor_scratch_ld(r)), else
  // in the work array dM(b, bm_F2). On devices team scratch is shared
  // memory, so the factorization's and the solve's dependent rounds read and
  // write it instead of global memory. Kokkos 3.4 and 4.6 grant about 40 KB
  // per team on Cuda (r <= 71 with the odd leading dimension) and 32 KB on
  // host spaces (r <= 63); a larger r keeps the work array (MosaicEngine::
  // launch_block decides). The same bits either way.
  int factor_ld = 0;
  using scratch_doubles = Kokkos::View<double*, Kokkos::LayoutRight, typename execution_space::scratch_memory_space,
                                       Kokkos::MemoryUnmanaged>;
  // Odd on devices: the entries of a column (the backward substitution
  // reads columns) then fall in different shared-memory banks.
  KOKKOS_INLINE_FUNCTION static constexpr int factor_scratch_ld(int r) {
    return is_host_space<execution_space> ? r : (r | 1);
  }
  // The factor and the solve's vector.
  KOKKOS_INLINE_FUNCTION static constexpr std::size_t factor_scratch_doubles(int r) {
    return std::size_t(r) * std::size_t(factor_scratch_ld(r)) + std::size_t(r);
  }
  static std::size_t factor_scratch_bytes(int r) { return scratch_doubles::shmem_size(factor_scratch_doubles(r)); }
  // The team's factor workspace, taken once per launch by every thread of
  // the team (the same memory for all); null when the launch has none.
  KOKKOS_INLINE_FUNCTION double* factor_scratch(const member_type& m) const {
    return factor_ld > 0 ? scratch_doubles(m.team_scratch(0), factor_scratch_doubles(base.r)).data() : nullptr;
  }

  // x = (A + shift I)^-1 y for stream b's symmetric r x r A (whole rows
  // read): the Cholesky factor of A + shift I and the solve in the team's
  // scratch (`scratch`, from factor_scratch), or in dM(b, bm_F2) and x
  // itself. logdet, when given, receives log det(A + shift I). False at a
  // failed pivot (x then unspecified). Ends with a team barrier.
  template <class AM, class YV, class XV>
  KOKKOS_INLINE_FUNCTION bool shifted_solve(const member_type& m, int b, double* scratch, const AM& A, double shift,
                                            const YV& y, const XV& x, double* logdet) const {
    const int r = base.r;
    double* const R = scratch != nullptr ? scratch : &dM(b, bm_F2, 0, 0);
    const long ld = scratch != nullptr ? long(factor_ld) : long(dM.stride(2));
    double* const v = scratch != nullptr ? scratch + long(r) * ld : &x(0);
    copy_shift_diagonal(
        m, r, A, [&](const int a, const int c) -> double& { return R[a * ld + c]; }, shift);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { v[j] = y(j); });
    if (!team_cholesky_upper(m, R, ld, r)) return false;
    team_cholesky_solve(m, R, ld, v, r);
    if (logdet != nullptr) *logdet = logdet_from_factor(r, R, ld);
    if (scratch != nullptr) {
      m.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { x(j) = v[j]; });
    }
    m.team_barrier();
    return true;
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

  // 7.7.2: the Gram of a run's missing rows, the mrows rows saved_rows(b,
  // ...) of U0, in double: N = U0_M^T U0_M (bm_N); A_M = I under the
  // geodesic rotation. Then 7.3 part 1's factors from N
  // (observed_gram_factors).
  KOKKOS_INLINE_FUNCTION bool shared_mask_factors(const member_type& m, int b, int mrows) const {
    const int r = base.r;
    auto N = Kokkos::subview(dM, b, int(bm_N), Kokkos::ALL(), Kokkos::ALL());
    team_gram_lower<execution_space>(
        m, r, mrows, [&](const int k) { return &saved_rows(b, k, 0); },
        [&](const int k, const int a) { return saved_rows(b, k, a); }, N);
    for_each_entry(m, r, r, [&](const int a, const int c) {
      if (a < c) N(a, c) = N(c, a);
      if (geodesic) dM(b, bm_AM, a, c) = a == c ? 1.0 : 0.0;
    });
    m.team_barrier();
    return observed_gram_factors(m, b, N);
  }

  // Under the geodesic rotation, before sample t >= 2 of a shared-mask run:
  // Nt = A_M^T N A_M (each entry one running sum, in increasing index, of
  // running sums; Sp as scratch, free before a step), then its factors.
  KOKKOS_INLINE_FUNCTION bool geodesic_sample_factors(const member_type& m, int b) const {
    missing_rows_gram(m, b);
    return observed_gram_factors(m, b, Kokkos::subview(dM, b, int(bm_Nt), Kokkos::ALL(), Kokkos::ALL()));
  }

  // Nt = A_M^T N A_M (bm_Nt), the Gram of the missing rows U0_M A_M; Sp as
  // scratch.
  KOKKOS_INLINE_FUNCTION void missing_rows_gram(const member_type& m, int b) const {
    const int r = base.r;
    auto N = Kokkos::subview(dM, b, int(bm_N), Kokkos::ALL(), Kokkos::ALL());
    auto AM = Kokkos::subview(dM, b, int(bm_AM), Kokkos::ALL(), Kokkos::ALL());
    auto NA = Kokkos::subview(dM, b, int(bm_Sp), Kokkos::ALL(), Kokkos::ALL());
    auto Nt = Kokkos::subview(dM, b, int(bm_Nt), Kokkos::ALL(), Kokkos::ALL());
    team_share(m, r, [&](const int lo, const int hi) {  // NA(q, :) = sum_p N(q, p) A_M(p, :)
      for (int q = lo; q < hi; ++q) rows_combination(r, r, &NA(q, 0), &N(q, 0), 1, &AM(0, 0), false);
    });
    m.team_barrier();
    team_share(m, r, [&](const int lo, const int hi) {  // Nt(a, :) = sum_q A_M(q, a) NA(q, :)
      for (int a = lo; a < hi; ++a) rows_combination(r, r, &Nt(a, 0), &AM(0, a), r, &NA(0, 0), false);
    });
    m.team_barrier();
    symmetrize(m, r, Nt, NA);
    m.team_barrier();
    for_each_entry(m, r, r, [&](const int a, const int c) { Nt(a, c) = NA(a, c); });
    m.team_barrier();
  }

  // out[c] (+)= sum_{q < nq} coef[q * ldc] rows[q * r + c] for c < r: one
  // running sum per entry in increasing q, along unit-stride rows of length r.
  KOKKOS_INLINE_FUNCTION static void rows_combination(int r, int nq, double* out, const double* coef, long ldc,
                                                      const double* rows, bool accumulate) {
    if (!accumulate)
      for (int c = 0; c < r; ++c) out[c] = 0.0;
    for (int q = 0; q < nq; ++q) {
      const double cq = coef[q * ldc];
      const double* const row = rows + long(q) * r;
      for (int c = 0; c < r; ++c) out[c] += cq * row[c];
    }
  }

  // 7.3 part 1's factors from the missing rows' Gram N (symmetric): C = I
  // - N = R_C^T R_C, K = N + Z^T Z with Z = R_C^-T N (= C^-1 - I), in bm_K.
  // False when C does not factor or tr(C^-1) = r + tr(K) exceeds cond_max
  // (7.5: the sample is skipped, and under the observed rotation every
  // sample of the run). Y and F2 as scratch.
  template <class NM>
  KOKKOS_INLINE_FUNCTION bool observed_gram_factors(const member_type& m, int b, const NM& N) const {
    const int r = base.r;
    auto K = Kokkos::subview(dM, b, int(bm_K), Kokkos::ALL(), Kokkos::ALL());
    auto Z = Kokkos::subview(dM, b, int(bm_Y), Kokkos::ALL(), Kokkos::ALL());
    auto RC = Kokkos::subview(dM, b, int(bm_F2), Kokkos::ALL(), Kokkos::ALL());
    for_each_entry(m, r, r, [&](const int a, const int c) {
      RC(a, c) = (a == c ? 1.0 : 0.0) - N(a, c);
      Z(a, c) = N(a, c);
    });
    m.team_barrier();
    if (!cholesky_upper(m, RC, r)) return false;
    const double logdet_c = logdet_from_factor(r, &RC(0, 0), long(RC.stride(0)));
    Kokkos::single(Kokkos::PerTeam(m), [&]() { dsc(b, 3) = logdet_c; });
    lower_solve_columns(
        m, r, [&](const int i, const int k) { return RC(k, i); }, Z);
    plus_gram(m, r, N, 1.0, Z, K);  // N symmetric: K exactly so
    double trK = 0;
    for (int j = 0; j < r; ++j) trK += K(j, j);
    return double(r) + trK <= cond_max;
  }

  // Section 6's resolve rule: ||e||^2 of the explicit residual
  // e = U0 alpha + D beta of sample t (alpha, beta in dv), with D's columns
  // 0..T-1 formed as the GEMM kernels form them (x - mu0 in the scalar type)
  // and, in a shared-mask run, e_M left out (7.7.2's rho^2 uses U0_O:
  // C = I - N; D_M = 0 there). Each e_i is formed in double; partial sum c
  // of `chunks` takes the rows c, c + chunks, ... in increasing order
  // (neighbouring threads read neighbouring rows: coalesced on devices),
  // then the partial sums are added in order, so the value does not depend
  // on the team size. One product of length d, for an unresolved step
  // only. Ends with a team barrier.
  KOKKOS_INLINE_FUNCTION double explicit_residual_norm2(const member_type& m, int b, int T, int mrows) const {
    const int d = base.d, r = base.r;
    const int chunks = dv.extent_int(2);
    const typename Base::Basis U0{&base.U(b, 0, 0), d, r};
    const Scalar* const mu0 = &base.mu(b, 0);
    const long sx = long(Xb.stride(2)), sj = long(Xb.stride(1));
    const Scalar* const x = &Xb(b, 0, 0);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, chunks), [&](const int c) {
      int q = 0;  // the first missing row at or after i (the list is ascending)
      double sum = 0;
      for (int i = c; i < d; i += chunks) {
        while (q < mrows && missing_rows(b, q) < i) ++q;
        if (q < mrows && missing_rows(b, q) == i) continue;
        double e = 0;
        for (int p = 0; p < r; ++p) e += double(U0(i, p)) * dv(b, bv_alpha, p);
        for (int j = 0; j < T; ++j) e += double(Scalar(x[j * sj + i * sx] - mu0[i])) * dv(b, bv_beta, j);
        sum += e * e;
      }
      dv(b, bv_epart, c) = sum;
    });
    m.team_barrier();
    double total = 0;
    for (int c = 0; c < chunks; ++c) total += dv(b, bv_epart, c);
    m.team_barrier();
    return total;
  }

  // One MOSAIC step on the coefficients with sample t (1-based: column t - 1
  // of D). Returns 0 or a BreakdownCode; nothing is modified on failure.
  // mrows > 0: 7.7.2's step for a run with mrows missing rows
  // (shared_mask_factors has formed N and K): b = A^T G c + B^T H c,
  // z_ls = b + K b, alpha = -A z_ls, beta = c - B z_ls, rho^2 with
  // alpha^T C alpha, the posterior (7.3 part 2), v = C^-1 g and the rotation
  // A += ((cos-1) A vh + sin alpha / rho) gh^T (B alike), n - r degrees of
  // freedom; the rest is section 2's. Under the geodesic rotation K is the
  // sample's (geodesic_sample_factors), the rotation section 2's (vh = gh)
  // and A_M += (cos-1) A_M gh gh^T; rho^2 keeps U0's C = I - N.
  // `flags`: the step was clamped; its coefficient rho^2 was below 64 eps
  // ||y_t||^2 (unresolved, file comment) and was then recomputed from the
  // explicit residual (section 6's resolve rule, explicit_residual_norm2).
  // `preq`: section 4's quantities of the sample (n = 0 when the step
  // breaks down before they are complete). `factor_ws`: the team's factor
  // workspace (factor_scratch; null: the work array).
  KOKKOS_INLINE_FUNCTION int coef_step(const member_type& m, int b, int t, int mrows, double* factor_ws,
                                       StepFlags& flags, PrequentialSample& preq) const {
    const int r = base.r, T = t;
    auto V = [&](int k) { return Kokkos::subview(dv, b, k, Kokkos::ALL()); };
    const auto c = V(bv_c), mv = V(bv_m), gc = V(bv_gc), hc = V(bv_hc), z = V(bv_z), w = V(bv_w), g = V(bv_g),
               gh = V(bv_gh), u = V(bv_u), alpha = V(bv_alpha), beta = V(bv_beta), gb = V(bv_gb), hb = V(bv_hb),
               av = V(bv_av), bvv = V(bv_bv), xv = V(bv_x), zls = V(bv_zls), v = V(bv_v), vh = V(bv_vh);
    const bool masked = mrows > 0;
    auto S = Kokkos::subview(dM, b, int(bm_S), Kokkos::ALL(), Kokkos::ALL());
    auto Sp = Kokkos::subview(dM, b, int(bm_Sp), Kokkos::ALL(), Kokkos::ALL());
    auto F = Kokkos::subview(dM, b, int(bm_F), Kokkos::ALL(), Kokkos::ALL());
    auto F2 = Kokkos::subview(dM, b, int(bm_F2), Kokkos::ALL(), Kokkos::ALL());
    auto Nm = Kokkos::subview(dM, b, int(bm_N), Kokkos::ALL(), Kokkos::ALL());
    auto Km = Kokkos::subview(dM, b, int(bm_K), Kokkos::ALL(), Kokkos::ALL());
    auto P = Kokkos::subview(dM, b, int(bm_P), Kokkos::ALL(), Kokkos::ALL());
    auto Y = Kokkos::subview(dM, b, int(bm_Y), Kokkos::ALL(), Kokkos::ALL());
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
    // 7.7.2: z_ls = b + K b (here b = z).
    if (masked) rows_times(m, r, r, &Km(0, 0), r, &z(0), &zls(0), false);
    if (masked) Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { zls(j) += z(j); });
    m.team_barrier();
    const double* const zc = masked ? &zls(0) : &z(0);  // the coordinate the residual removes
    // e = U0 alpha + D beta: alpha = -A z (rows of At), beta = c - B z (rows of Bt).
    rows_times(m, r, r, dAtp, r, zc, &alpha(0), false);
    rows_times(m, T, r, dBtp, K, zc, &beta(0), false);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) { alpha(p) = -alpha(p); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { beta(j) = c(j) - beta(j); });
    m.team_barrier();
    rows_times(m, r, T, dGp, r, &beta(0), &gb(0), false);
    rows_times(m, T, T, dHp, K, &beta(0), &hb(0), false);
    // 7.7.2: alpha^T C alpha = alpha^T alpha - alpha^T N alpha (U0_O^T U0_O = C).
    if (masked) rows_times(m, r, r, &Nm(0, 0), r, &alpha(0), &xv(0), false);
    double aa = 0, agb = 0, bhb = 0, yy = 0;
    for (int a = 0; a < r; ++a) {
      aa += alpha(a) * (masked ? alpha(a) - xv(a) : alpha(a));
      agb += alpha(a) * gb(a);
    }
    for (int j = 0; j < T; ++j) {
      bhb += beta(j) * hb(j);
      yy += c(j) * hc(j);  // ||y_t||^2 = c^T H c
    }
    double rho2 = aa + 2.0 * agb + bhb;
    flags.unresolved = rho2 < 64.0 * scalar_eps * yy;  // the same on every thread: each summed the same terms
    if (flags.unresolved) {
      rho2 = explicit_residual_norm2(m, b, T, mrows);
      flags.recomputed = true;
    }
    if (rho2 < 0.0) rho2 = 0.0;
    const double rho = kmath::sqrt(rho2);
    const double s2_old = dsc(b, 0);

    // Precision solve w = S^{-1} z; 7.7.2: the posterior (7.3 part 2) with
    // Delta = s2 K: R^T R = S + Delta, w = (S + Delta)^-1 z_ls, z = z_ls -
    // Delta w, P = Delta - Y^T Y with Y = R^-T Delta.
    if (masked) {
      for_each_entry(m, r, r, [&](const int a, const int e) {
        F(a, e) = S(a, e) + s2_old * Km(a, e);
        Y(a, e) = s2_old * Km(a, e);
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { w(j) = zls(j); });
      if (!cholesky_upper(m, F, r)) return breakdown_s_not_spd;
      solve_upper(m, F, w, r);
      for (int j = 0; j < r; ++j) preq.quad += zls(j) * w(j);
      preq.logdet_sd = logdet_from_factor(r, &F(0, 0), long(F.stride(0)));
      preq.logdet_c = dsc(b, 3);
      rows_times(m, r, r, &Km(0, 0), r, &w(0), &xv(0), false);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { z(j) = zls(j) - s2_old * xv(j); });
      lower_solve_columns(
          m, r, [&](const int i, const int k) { return F(k, i); }, Y);
      for_each_entry(m, r, r, [&](const int a, const int e) { F2(a, e) = s2_old * Km(a, e); });
      m.team_barrier();
      plus_gram(m, r, F2, -1.0, Y, P);  // Delta symmetric: P exactly so
    } else if (maintained) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { w(j) = z(j); });
      if (!ensure_factor(m, b)) return breakdown_s_not_spd;
      auto R = Kokkos::subview(Rfac, b, Kokkos::ALL(), Kokkos::ALL());
      solve_upper(m, R, w, r);
      preq.logdet_sd = logdet_from_factor(r, &R(0, 0), long(R.stride(0)));
    } else if (!shifted_solve(m, b, factor_ws, S, 0.0, z, w, &preq.logdet_sd)) {
      return breakdown_s_not_spd;
    }
    double q = 0;
    for (int j = 0; j < r; ++j) q += z(j) * w(j);
    preq.n = base.d - mrows;
    preq.r = r;
    preq.yy = yy;
    preq.rho2 = rho2;
    preq.s2 = s2_old;
    if (logdet_psi.extent(0) > 0) preq.logdet_psi = logdet_psi(b);
    if (!masked) preq.quad = q;

    // Step length, clamp, covariance update in the old frame.
    const double ell = eta_S * kmath::sqrt((q - 1) * (q - 1) + double(r - 1));
    double eta = eta_S;
    flags.clamped = false;
    if (ell > max_step) {
      eta = eta_S * max_step / ell;
      flags.clamped = true;
    }
    const double cc = q > 0.0 ? kmath::expm1(eta * q) / q : eta;
    const double decay = kmath::exp(-eta);
    if (base.exact) {
      for_each_entry(m, r, r, [&](const int a, const int e) { Sp(a, e) = decay * (S(a, e) + cc * z(a) * z(e)); });
    } else {
      for_each_entry(m, r, r, [&](const int a, const int e) { Sp(a, e) = (1 - eta) * S(a, e) + eta * z(a) * z(e); });
    }
    if (masked) {  // 7.3 part 4: P with weight 1 - exp(-eta) (exact) or eta
      const double p_weight = base.exact ? -kmath::expm1(-eta) : eta;
      m.team_barrier();
      for_each_entry(m, r, r, [&](const int a, const int e) { Sp(a, e) += p_weight * P(a, e); });
    }

    // Subspace direction g (old S).
    if (base.precision) {
      if (base.gamma_zero) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = w(j); });
      } else {
        const double shift = double(base.gamma) * s2_old;
        if (!shifted_solve(m, b, factor_ws, S, shift, z, g, nullptr)) return breakdown_regularized_not_spd;
      }
    } else {
      oja_direction<double>(
          m, r, [&](const int j) { return S(j, j); }, z, g);
    }
    m.team_barrier();
    // 7.7.2: v = g + K g (= C^-1 g), beta = sqrt(g^T g + g^T K g) in place
    // of ||g||, and the transport's extra noise term with gh^T K gh (the
    // observed rotation; the geodesic one is section 2's).
    const bool observed_rotation = masked && !geodesic;
    double gnorm = 0, ghKgh = 0;
    if (observed_rotation) {
      rows_times(m, r, r, &Km(0, 0), r, &g(0), &v(0), false);
      double gg = 0, gKg = 0;
      for (int a = 0; a < r; ++a) {
        gg += g(a) * g(a);
        gKg += g(a) * v(a);
      }
      m.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) { v(a) += g(a); });
      m.team_barrier();
      const double beta2 = gg + gKg;
      gnorm = kmath::sqrt(beta2);
      ghKgh = beta2 > 0.0 ? gKg / beta2 : 0.0;
    } else {
      gnorm = direction_norm<double>(g, r);
    }

    // Rotation angle and transport of S'.
    const FrameRotation<double> rot = rotate_frame_transport_S<double>(m, r, rho, gnorm, double(base.tiny),
                                                                       double(base.eta_U), s2_old, ghKgh, g, gh, u, Sp);
    const bool rotate = rot.rotate;
    const double theta = rot.theta, sn = rot.sn, cm1 = rot.cm1;
    const double s2_new = (1 - double(base.eta_s)) * s2_old + double(base.eta_s) * rho2 / double(base.d - mrows - r);

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
      // A vh and B vh: vh = v / beta (7.7.2's observed rotation), else gh.
      if (observed_rotation)
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) { vh(a) = v(a) / gnorm; });
      m.team_barrier();
      const double* const vhp = observed_rotation ? &vh(0) : &gh(0);
      rows_times(m, r, r, dAtp, r, vhp, &av(0), false);   // A vh
      rows_times(m, T, r, dBtp, K, vhp, &bvv(0), false);  // B vh
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
      if (masked && geodesic) {  // A_M += (cos - 1) (A_M gh) gh^T (v as work)
        auto AM = Kokkos::subview(dM, b, int(bm_AM), Kokkos::ALL(), Kokkos::ALL());
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) {
          double s = 0;
          for (int a = 0; a < r; ++a) s += AM(p, a) * gh(a);
          v(p) = cm1 * s;
        });
        m.team_barrier();
        for_each_entry(m, r, r, [&](const int p, const int a) { AM(p, a) += v(p) * gh(a); });
        m.team_barrier();
      }
    }
    symmetrize(m, r, Sp, S);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { mv(j) += double(base.eta_mu) * c(j); });
    if (res_s2.extent(0) > 0) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r + K), [&](const int p) {
        res_coef(b, t - 1, p) = Scalar(p < r ? alpha(p) : (p - r < T ? beta(p - r) : 0.0));
      });
      Kokkos::single(Kokkos::PerTeam(m), [&]() { res_s2(b, t - 1) = s2_old; });
    }
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
  // step 4), after `done` steps: U^T U = R^T R (R left in dM(b, bm_F2)),
  // A <- A R^-1, B <- B R^-1, S <- R S R^T. mrows > 0: a shared-mask run
  // whose mrows missing rows stay U0's (7.7.2). False (nothing changed) if
  // U^T U does not factor.
  KOKKOS_INLINE_FUNCTION bool reorthonormalize_coefficients(const member_type& m, int b, int done, int mrows) const;
};

}  // namespace detail
}  // namespace mosaic
