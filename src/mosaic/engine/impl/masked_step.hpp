// The sequential kernel with missing entries (ALGORITHM.md section 7; the
// host reference's reference_masked_step is its oracle): one call advances
// every stream of a StreamBatch by one sample whose NaN entries are missing,
// one Kokkos team per stream, over the section-2 kernel's parts
// (StepFunctor in sequential_step.hpp: the projection, the residual, the
// clamp and covariance update, the direction, the transport, the row
// rotation, the commit), so nothing of section 2 is written twice.
//
// Per team (stream b), in order (nothing of the state is written before
// every check has passed, as in section 2):
//   1. The observed set O: finite entries of coordinates already seen (7.6).
//      An infinite entry freezes the stream (breakdown_nonfinite_sample, an
//      input error as in section 2). y = x - mu on O, 0 on M (so every sum
//      over rows is the sum over O, and mu += eta_mu y leaves mu_M alone).
//   2. Nothing missing: section 2 (StepFunctor::section_two), bit for bit
//      the unmasked kernel. missing: drop: the sample is dropped;
//      zero_fill: section 2 on y with y_M = 0. n <= r: skipped (7.5). A
//      gapped sample under drop or zero_fill is first scored for section 4
//      on its observed rows (gapped_evaluation: part 1 and a factor of
//      S + s2 K), as the posterior would score it.
//   3. 7.3 part 1: b = U^T y; the rows of the smaller of O and M compacted by
//      a team scan, their Gram (N = U_M^T U_M or C = U_O^T U_O, each entry
//      one running sum over the rows in increasing i, as the reference;
//      gram_rows, a host and a device form of the same sums);
//      the Cholesky of C (failure: skipped), Z = L_C^-1 N, K = N + Z^T Z
//      (exactly symmetric); all of it kept from the step before when that step
//      left them for the same missing rows under the observed rotation
//      (7.8: U_M has not moved, so they are bitwise the same; an outage
//      pays its Gram and factors once); the tr(C^-1) guard (skipped),
//      z_ls = b + K b,
//      e = y - U z_ls zeroed on M, rho.
//   4. Part 2: posterior (Delta = s2 K, the Cholesky of S + Delta, w, z,
//      P = Delta - Y^T Y; section 4's score from that factor) or project
//      (w = S^-1 z_ls, z = z_ls, P = 0; the score from a factor of
//      S + s2 K of its own, observed_evaluation).
//   5. Parts 3-5 with section 2's code, P added with weight -expm1(-eta)
//      (exact) or eta (first_order).
//   6. Parts 6-7: observed rotation (v = g + K g, beta = sqrt(g^T v), the
//      rows of O rotated with vh = v / beta, the transport's extra noise term
//      s2 (cos-1)^2 gh^T K gh) or geodesic (section 2's rotation of every
//      row with e_M = 0).
//   7. Part 8 with n - r degrees of freedom; part 9 and the seen rule (an
//      unseen coordinate observed now takes x_i as its mean).
// Skipped and dropped samples count as steps (as in the reference).
//
// noise: diagonal (section 8; this kernel runs it with or without missing
// entries): step 1 whitens y_O by sqrt(psi_O), everything after it runs on
// the whitened sample unchanged, and the mean's step is x_O - mu_O in data
// units (DataY); after a step that was not skipped, 8.3 part 3 adds the
// whitened residuals to the accumulators (before the seen rule changes the
// mask), and every rewhiten_every steps (skipped and dropped ones counted)
// part 4 re-whitens: psi and the rows of U rescaled together, the
// Cholesky-QR, the leverages refreshed (rewhiten_when_due).
//
// Work: the rows' index list (B x d), 4 r-vectors and 8 r x r matrices per
// stream beyond the section-2 kernel's, and the reuse's step, row count and
// counter, allocated once by the engine.
#pragma once

#include <cstdint>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/engine/frame_rotation.hpp"
#include "mosaic/engine/impl/sequential_step.hpp"
#include "mosaic/engine/impl/team_gram.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// r-vectors and r x r matrices of the masked step's work (beyond StepFunctor's).
enum MaskedVec : int { mv_b = 0, mv_zls, mv_v, mv_vh, mv_count };
enum MaskedMat : int { mm_N = 0, mm_C, mm_Z, mm_Kraw, mm_K, mm_Delta, mm_L, mm_P, mm_count };

template <class Scalar, class ExecSpace>
struct MaskedStepFunctor {
  using Base = StepFunctor<Scalar, ExecSpace>;
  using member_type = typename Base::member_type;
  using execution_space = ExecSpace;
  template <class DataType>
  using view_t = typename Base::template view_t<DataType>;

  Base base;  // the bound state and the sample (base.X), section 2's parts
  view_t<std::uint8_t**> seen;
  view_t<std::int64_t*> skipped_steps, dropped_samples, missing_entries;
  // The streams that take this sample (a masked block cut into runs,
  // impl/masked_blocks.hpp): those with active(b) != 0; all when empty.
  view_t<const int*> active;
  // 7.8's reuse of the Gram (observed rotation, the missing rows' Gram):
  // gram_step(b) is the stream's step count after the step that left N,
  // L_C (in C's lower triangle) and K of the missing rows widx(b, 0..
  // gram_count(b)) in wm, -1 when none. The step right after it (no other
  // step, Cholesky-QR or state write between, so U_M is bitwise the same)
  // with the same missing rows reuses them: bitwise what it would compute.
  // gram_reused counts the steps that did.
  view_t<std::int64_t*> gram_step, gram_reused;
  view_t<int*> gram_count;
  bool reuse_gram = true;
  view_t<int**> widx;     // B x d: the compacted rows of the smaller of O and M
  view_t<Scalar***> wv;   // B x mv_count x r
  view_t<Scalar****> wm;  // B x mm_count x r x r
  MissingMode mode = MissingMode::posterior;
  bool observed_rotation = true;
  Scalar cond_max = Scalar(1e4);
  // noise: diagonal (ALGORITHM.md section 8; unbound under isotropic noise):
  // the batch's profile, frozen leverages, accumulators and re-whitening
  // count, and 8.3's options.
  bool diagonal = false;
  view_t<Scalar**> psi, leverage;
  view_t<double**> noise_residuals;
  view_t<std::int64_t**> noise_counts;
  view_t<std::int64_t*> rewhitenings;
  int rewhiten_every = 1000, rewhiten_min_count = 100;
  double rewhiten_fmax = 4, leverage_floor = 0.1;

  KOKKOS_INLINE_FUNCTION bool observed(int b, int i) const { return !kmath::isnan(base.X(b, i)) && seen(b, i) != 0; }

  // The mean's step in data units (part 9): x_i - mu_i on the observed rows,
  // 0 elsewhere; wy itself under isotropic noise, the same numbers computed
  // afresh where wy holds the whitened sample (8.3 part 1).
  struct DataY {
    const MaskedStepFunctor* f;
    int b;
    KOKKOS_INLINE_FUNCTION Scalar operator()(int i) const {
      if (!f->diagonal) return f->base.wy(b, i);
      return f->observed(b, i) ? f->base.X(b, i) - f->base.mu(b, i) : Scalar(0);
    }
  };

  // 7.6's seen rule after the step (the mean of an unseen coordinate
  // observed now becomes its value).
  KOKKOS_INLINE_FUNCTION void mark_seen(const member_type& m, int b) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, base.d), [&](const int i) {
      const Scalar xi = base.X(b, i);
      if (seen(b, i) == 0 && !kmath::isnan(xi)) {
        base.mu(b, i) = xi;
        seen(b, i) = 1;
      }
    });
    m.team_barrier();
  }

  // A step that moves only the observed means (7.5), or nothing (drop).
  KOKKOS_INLINE_FUNCTION void mean_only(const member_type& m, int b, std::int64_t step_index, bool drop) const {
    const DataY data_y{this, b};
    if (!drop)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, base.d),
                           [&](const int i) { base.mu(b, i) += base.eta_mu * data_y(i); });
    m.team_barrier();
    mark_seen(m, b);
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      base.steps(b) = step_index + 1;
      if (drop) dropped_samples(b) += 1;
      else skipped_steps(b) += 1;
    });
    m.team_barrier();
  }

  // The lower triangle of G = U_R^T U_R over the rows R = widx(b, 0..rows)
  // (the missing or the observed ones), as the reference sums it.
  template <class BM, class GM>
  KOKKOS_INLINE_FUNCTION void gram_rows(const member_type& m, int b, const BM& Ub, int rows, const GM& G) const {
    team_gram_lower<ExecSpace>(
        m, base.r, rows, [&](const int k) { return &Ub(widx(b, k), 0); },
        [&](const int k, const int a) { return Ub(widx(b, k), a); }, G);
  }

  // 7.3 part 1's factors: the rows of the smaller of O and M (rows of them)
  // compacted into widx, their Gram, C = U_O^T U_O and N = U_M^T U_M (one
  // from the other), L_C in C's lower triangle, Z = L_C^-1 N and
  // K = N + Z^T Z (exactly symmetric). False when C is not positive definite.
  // Forced inline: as a call of its own (GCC 12, OpenMP) the masked step
  // added about 2.4x the time per sample (5% MCAR at d = 8192, r = 64: 3.7x
  // the unmasked step against 2.2x inline, mosaic_bench, docs/PERFORMANCE.md).
  template <class BM, class MM>
  KOKKOS_FORCEINLINE_FUNCTION bool gram_and_factor(const member_type& m, int b, const BM& Ub, bool from_missing,
                                                   int rows, const MM& N, const MM& C, const MM& Z, const MM& K) const {
    const int r = base.r;
    Kokkos::parallel_scan(Kokkos::TeamThreadRange(m, base.d), [&](const int i, int& pos, const bool final) {
      const bool take = observed(b, i) != from_missing;
      if (final && take) widx(b, pos) = i;
      pos += take ? 1 : 0;
    });
    m.team_barrier();
    gram_rows(m, b, Ub, rows, N);
    for_each_entry(m, r, r, [&](const int a, const int c) {
      const Scalar s = a >= c ? N(a, c) : N(c, a);
      const Scalar id = a == c ? Scalar(1) : Scalar(0);
      if (from_missing) {
        C(a, c) = id - s;
      } else {
        C(a, c) = s;
      }
    });
    m.team_barrier();
    if (!from_missing)
      for_each_entry(m, r, r, [&](const int a, const int c) { N(a, c) = (a == c ? Scalar(1) : Scalar(0)) - C(a, c); });
    else
      for_each_entry(m, r, r, [&](const int a, const int c) {
        if (a < c) N(a, c) = N(c, a);
      });
    m.team_barrier();
    if (!base.cholesky(m, C)) return false;  // C's lower triangle is L_C
    for_each_entry(m, r, r, [&](const int a, const int c) { Z(a, c) = N(a, c); });
    m.team_barrier();
    lower_solve_columns(m, r, C, Z);
    plus_gram(m, r, N, Scalar(1), Z, K);  // N symmetric: K exactly so
    return true;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    if (base.status(b) != 0) return;  // frozen after a breakdown
    if (active.extent(0) > 0 && active(b) == 0) return;
    const int d = base.d, r = base.r;
    const std::int64_t step_index = base.steps(b);
    auto y = Kokkos::subview(base.wy, b, Kokkos::ALL());
    auto e = Kokkos::subview(base.we, b, Kokkos::ALL());

    // 1. The observed set, the centred sample (0 on M; whitened with
    // diagonal noise, 8.3 part 1), the counts.
    int n_missing = 0, n_nan = 0, n_inf = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, int& nm) {
          const bool obs = observed(b, i);
          Scalar yi = obs ? base.X(b, i) - base.mu(b, i) : Scalar(0);
          if (diagonal) yi /= kmath::sqrt(psi(b, i));
          y(i) = yi;
          e(i) = yi;
          nm += obs ? 0 : 1;
        },
        n_missing);
    m.team_barrier();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, int& nn) { nn += kmath::isnan(base.X(b, i)) ? 1 : 0; }, n_nan);
    m.team_barrier();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, int& ni) { ni += kmath::isinf(base.X(b, i)) ? 1 : 0; }, n_inf);
    m.team_barrier();
    // (missing: error runs this kernel with diagonal noise: a NaN is then
    // section 1's input error.)
    if (n_inf != 0 || (mode == MissingMode::error && n_nan != 0)) {
      base.fail(m, b, breakdown_nonfinite_sample, step_index);
      return;
    }
    Kokkos::single(Kokkos::PerTeam(m), [&]() { missing_entries(b) += n_nan; });
    m.team_barrier();

    // 2. The cases that are not 7.3.
    const Scalar s2_old = base.s2(b);
    if (n_missing == 0 || mode == MissingMode::zero_fill) {
      const PrequentialSample gapped =
          n_missing > 0 ? gapped_evaluation(m, b, step_index, d - n_missing, n_missing) : PrequentialSample{};
      base.section_two(m, b, step_index, DataY{this, b}, n_missing == 0, n_missing == 0 ? logdet_psi(m, b) : 0.0,
                       gapped);
      m.team_barrier();
      if (base.status(b) != 0) return;
      if (diagonal) accumulate_residuals(m, b, s2_old, d, false);
      if (n_missing > 0) mark_seen(m, b);
    } else if (mode == MissingMode::drop) {
      add_prequential(m, b, gapped_evaluation(m, b, step_index, d - n_missing, n_missing));
      mean_only(m, b, step_index, true);
    } else if (d - n_missing < r + 1) {
      mean_only(m, b, step_index, false);
    } else {
      const bool stepped = masked_step(m, b, step_index, d - n_missing, n_missing);
      if (stepped) {  // the accumulators with this sample's mask, before the seen rule changes it
        if (diagonal && base.status(b) == 0) accumulate_residuals(m, b, s2_old, d - n_missing, true);
        mark_seen(m, b);
      }
      if (base.status(b) != 0) return;
    }
    if (diagonal) rewhiten_when_due(m, b);
  }

  // Section 4 with diagonal noise: sum of log psi_j over this sample's
  // observed rows (0 under isotropic noise), every thread of the team.
  KOKKOS_INLINE_FUNCTION double logdet_psi(const member_type& m, int b) const {
    if (!diagonal) return 0.0;
    return double(
        base.team_sum(m, b, base.d, [&](const int i) { return observed(b, i) ? kmath::log(psi(b, i)) : Scalar(0); }));
  }

  // 8.3 part 3 after a step that was not skipped (the whitened residual e
  // in we(b, :), 0 on M; n - r degrees of freedom; every row counts as
  // observed with zero_fill).
  KOKKOS_INLINE_FUNCTION void accumulate_residuals(const member_type& m, int b, Scalar s2_old, int n,
                                                   bool masked) const {
    double trN = 0;  // tr N = sum of the missing rows' frozen leverages
    if (masked)
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(m, base.d),
          [&](const int i, double& t) { t += observed(b, i) ? 0.0 : double(leverage(b, i)); }, trN);
    m.team_barrier();
    const double dof = double(n - base.r), kappa = dof / (dof + trN);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, base.d), [&](const int i) {
      if (masked && !observed(b, i)) return;
      const double hk = residual_scale(b, i, kappa);
      if (hk == 0.0) return;
      const double e = double(base.we(b, i));
      noise_residuals(b, i) += e * e / (hk * double(s2_old));
      noise_counts(b, i) += 1;
    });
    m.team_barrier();
  }

  // 8.3 part 3's denominator of coordinate i without s2_old, (1 - l_i)
  // kappa, or 0 where the coordinate takes no residual (1 - l_i under
  // leverage_floor). Shared with 8.5's blocked form (impl/block_noise.hpp).
  KOKKOS_INLINE_FUNCTION double residual_scale(int b, int i, double kappa) const {
    const double h = 1.0 - double(leverage(b, i));
    return h >= leverage_floor ? h * kappa : 0.0;
  }

  // 8.3 part 4's factor of coordinate i before its division by the
  // geometric mean (1 for a coordinate with too few residuals).
  KOKKOS_INLINE_FUNCTION double rewhiten_factor(int b, int i) const {
    const std::int64_t c = noise_counts(b, i);
    if (c < rewhiten_min_count) return 1.0;
    const double v = noise_residuals(b, i) / double(c), lo = 1.0 / rewhiten_fmax;
    return v < lo ? lo : (v > rewhiten_fmax ? rewhiten_fmax : v);
  }

  // 8.3 part 4 every rewhiten_every steps (skipped and dropped steps count,
  // as steps do).
  KOKKOS_INLINE_FUNCTION void rewhiten_when_due(const member_type& m, int b) const {
    if (base.steps(b) % rewhiten_every == 0) rewhiten(m, b);
  }

  // 8.3 part 4: psi <- psi f, U <- diag(f)^-1/2 U, the Cholesky-QR of U
  // with S rotated (the modelled signal covariance is unchanged), the
  // leverages refreshed, the accumulators cleared. psi and U are rescaled
  // together, so a Cholesky-QR that fails (breakdown_reorthonormalize)
  // freezes a stream whose model is still consistent.
  KOKKOS_INLINE_FUNCTION void rewhiten(const member_type& m, int b) const {
    const int d = base.d, r = base.r;
    double log_sum = 0;
    int updated = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, double& s) { s += kmath::log(rewhiten_factor(b, i)); },  // log 1 = 0 where not updated
        log_sum);
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, int& c) { c += noise_counts(b, i) >= rewhiten_min_count; },
        updated);
    m.team_barrier();
    const double gmean = updated > 0 ? kmath::exp(log_sum / updated) : 1.0;
    const typename Base::Basis Ub{&base.U(b, 0, 0), d, r};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
      const double f = noise_counts(b, i) >= rewhiten_min_count ? rewhiten_factor(b, i) / gmean : 1.0;
      const Scalar inv = Scalar(1.0 / kmath::sqrt(f));
      for (int j = 0; j < r; ++j) Ub(i, j) *= inv;
      psi(b, i) = Scalar(double(psi(b, i)) * f);
    });
    m.team_barrier();
    if (!base.cholesky_qr(m, b, base.steps(b) - 1)) return;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
      Scalar l = 0;
      for (int j = 0; j < r; ++j) l += Ub(i, j) * Ub(i, j);
      leverage(b, i) = l;
      noise_residuals(b, i) = 0;
      noise_counts(b, i) = 0;
    });
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      rewhitenings(b) += 1;
      gram_step(b) = -1;  // U_M moved: 7.8's reuse starts afresh
    });
    m.team_barrier();
  }

  // 7.3 part 1 on a sample with n observed and n_missing missing rows:
  // b = U^T y, the Gram of the smaller of O and M (kept from the step
  // before when `keep_gram` and its missing rows are this sample's), K,
  // z_ls = b + K b, e = y - U z_ls zeroed on M (in we), rho2 = ||e||^2.
  // False when the sample cannot be fitted (C not positive definite, or the
  // tr(C^-1) guard): 7.5's skip, for the caller to take.
  KOKKOS_FORCEINLINE_FUNCTION bool fit_observed(const member_type& m, int b, std::int64_t step_index, int n,
                                                int n_missing, bool keep_gram, Scalar& rho2) const {
    const int r = base.r;
    auto V = [&](int k) { return Kokkos::subview(wv, b, k, Kokkos::ALL()); };
    auto M = [&](int k) { return Kokkos::subview(wm, b, k, Kokkos::ALL(), Kokkos::ALL()); };
    const auto bv = V(mv_b), zls = V(mv_zls);
    const auto N = M(mm_N), C = M(mm_C), Z = M(mm_Z), K = M(mm_K);
    const typename Base::Basis Ub{&base.U(b, 0, 0), base.d, r};
    base.project(m, b, bv);
    const bool from_missing = n_missing <= n;
    bool reuse = false;
    if (keep_gram && gram_step(b) == step_index && gram_count(b) == n_missing) {
      int still_missing = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(m, n_missing), [&](const int k, int& s) { s += observed(b, widx(b, k)) ? 0 : 1; },
          still_missing);
      reuse = still_missing == n_missing;
    }
    if (reuse) {
      Kokkos::single(Kokkos::PerTeam(m), [&]() { gram_reused(b) += 1; });
    } else if (!gram_and_factor(m, b, Ub, from_missing, from_missing ? n_missing : n, N, C, Z, K)) {
      return false;
    }
    Scalar trK = 0;
    for (int j = 0; j < r; ++j) trK += K(j, j);
    if (!(Scalar(r) + trK <= cond_max)) return false;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) {
      Scalar kb = 0;
      for (int k = 0; k < r; ++k) kb += K(j, k) * bv(k);
      zls(j) = bv(j) + kb;
    });
    m.team_barrier();
    rho2 = base.residual(m, b, zls, [&](const int i) { return observed(b, i); });
    return true;
  }

  // Section 4 on the observed rows after fit_observed, the parts every mode
  // shares: n, ||y_O||^2 (y_M = 0 in wy, so the whole sum), rho2, s2, log
  // det C from C's factor L_C, the profile's log-determinant on O.
  KOKKOS_INLINE_FUNCTION PrequentialSample observed_sample(const member_type& m, int b, int n, Scalar rho2) const {
    const auto C = Kokkos::subview(wm, b, int(mm_C), Kokkos::ALL(), Kokkos::ALL());
    PrequentialSample preq;
    preq.n = n;
    preq.r = base.r;
    preq.yy = double(base.team_sum(m, b, base.d, [&](const int i) { return base.wy(b, i) * base.wy(b, i); }));
    preq.rho2 = double(rho2);
    preq.s2 = double(base.s2(b));
    preq.logdet_c = logdet_from_factor(base.r, &C(0, 0), long(C.stride(0)));
    preq.logdet_psi = logdet_psi(m, b);
    return preq;
  }

  // The whole of section 4 on the observed rows for a mode whose step does
  // not factor S + s2 K (project, zero_fill, drop): the state before the
  // step scored on the samples the posterior would score, so the modes
  // compare on one measure. Factors S + s2 K in the Delta scratch and
  // solves in v (both free until the posterior's part 2 or part 6).
  // Not evaluated (n = 0) where S + s2 K does not factor.
  KOKKOS_INLINE_FUNCTION PrequentialSample observed_evaluation(const member_type& m, int b, int n, Scalar rho2) const {
    const int r = base.r;
    const auto zls = Kokkos::subview(wv, b, int(mv_zls), Kokkos::ALL());
    const auto v = Kokkos::subview(wv, b, int(mv_v), Kokkos::ALL());
    const auto K = Kokkos::subview(wm, b, int(mm_K), Kokkos::ALL(), Kokkos::ALL());
    const auto SD = Kokkos::subview(wm, b, int(mm_Delta), Kokkos::ALL(), Kokkos::ALL());
    PrequentialSample preq = observed_sample(m, b, n, rho2);
    const Scalar s2_old = base.s2(b);
    for_each_entry(m, r, r, [&](const int a, const int c) { SD(a, c) = base.S(b, a, c) + s2_old * K(a, c); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { v(j) = zls(j); });
    m.team_barrier();
    if (!base.cholesky(m, SD)) return PrequentialSample{};
    base.cholesky_solve(m, SD, v);
    for (int j = 0; j < r; ++j) preq.quad += double(zls(j)) * double(v(j));
    preq.logdet_sd = logdet_from_factor(r, &SD(0, 0), long(SD.stride(0)));
    return preq;
  }

  // observed_evaluation of a sample that zero_fill or drop steps without
  // 7.3 (n observed, n_missing > 0 missing rows), where the posterior would
  // score it (n >= r + 1, a fit); we is y again afterwards, as section 2
  // expects. Not evaluated (n = 0) otherwise.
  KOKKOS_INLINE_FUNCTION PrequentialSample gapped_evaluation(const member_type& m, int b, std::int64_t step_index,
                                                             int n, int n_missing) const {
    PrequentialSample preq;
    Scalar rho2 = 0;
    if (n >= base.r + 1 && fit_observed(m, b, step_index, n, n_missing, false, rho2))
      preq = observed_evaluation(m, b, n, rho2);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, base.d), [&](const int i) { base.we(b, i) = base.wy(b, i); });
    m.team_barrier();
    return preq;
  }

  // Adds a sample scored apart from a commit to the stream's sums.
  KOKKOS_INLINE_FUNCTION void add_prequential(const member_type& m, int b, const PrequentialSample& preq) const {
    if (preq.n > 0) Kokkos::single(Kokkos::PerTeam(m), [&]() { preq.add_to(&base.prequential(b, 0)); });
    m.team_barrier();
  }

  // 7.3 (parts 1-9) on a sample with n observed and n_missing missing
  // rows, the seen rule left to the caller when it returns true (the state
  // committed); false when the step was skipped (7.5: only the mean moved,
  // the seen rule applied) or the stream froze before its commit.
  KOKKOS_INLINE_FUNCTION bool masked_step(const member_type& m, int b, std::int64_t step_index, int n,
                                          int n_missing) const {
    const int d = base.d, r = base.r;
    auto V = [&](int k) { return Kokkos::subview(wv, b, k, Kokkos::ALL()); };
    auto M = [&](int k) { return Kokkos::subview(wm, b, k, Kokkos::ALL(), Kokkos::ALL()); };
    const auto bv = V(mv_b), zls = V(mv_zls), v = V(mv_v), vh = V(mv_vh);
    const auto N = M(mm_N), C = M(mm_C), Z = M(mm_Z), Kraw = M(mm_Kraw), K = M(mm_K), Delta = M(mm_Delta), L = M(mm_L),
               P = M(mm_P);
    auto z = Kokkos::subview(base.wvec, b, 0, Kokkos::ALL());
    auto w = Kokkos::subview(base.wvec, b, 1, Kokkos::ALL());
    auto g = Kokkos::subview(base.wvec, b, 2, Kokkos::ALL());
    auto gh = Kokkos::subview(base.wvec, b, 3, Kokkos::ALL());
    auto u = Kokkos::subview(base.wvec, b, 4, Kokkos::ALL());
    auto Sp = Kokkos::subview(base.wmat, b, 2, Kokkos::ALL(), Kokkos::ALL());

    // 3. Part 1. The previous step's N, L_C and K when its missing rows are
    // this step's (7.8; the observed rotation, the missing rows' Gram).
    const bool keep_gram = reuse_gram && observed_rotation && n_missing <= n;
    Scalar rho2 = 0;
    if (!fit_observed(m, b, step_index, n, n_missing, keep_gram, rho2)) {
      mean_only(m, b, step_index, false);
      return false;
    }
    const Scalar rho = kmath::sqrt(rho2);
    const Scalar s2_old = base.s2(b);
    // Section 4 on the observed rows: the posterior's from its own factor
    // of S + Delta (below), project's from one of its own.
    PrequentialSample preq =
        mode == MissingMode::project ? observed_evaluation(m, b, n, rho2) : observed_sample(m, b, n, rho2);

    // 4. Part 2.
    if (mode == MissingMode::project) {
      for_each_entry(m, r, r, [&](const int a, const int c) {
        L(a, c) = base.S(b, a, c);
        P(a, c) = Scalar(0);
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { w(j) = zls(j); });
      if (!base.cholesky(m, L)) {
        base.fail(m, b, breakdown_s_not_spd, step_index);
        return false;
      }
      base.cholesky_solve(m, L, w);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { z(j) = zls(j); });
    } else {
      for_each_entry(m, r, r, [&](const int a, const int c) {
        Delta(a, c) = s2_old * K(a, c);
        L(a, c) = base.S(b, a, c) + s2_old * K(a, c);
        P(a, c) = s2_old * K(a, c);  // Y = L^-1 Delta, in place
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { w(j) = zls(j); });
      if (!base.cholesky(m, L)) {
        base.fail(m, b, breakdown_s_not_spd, step_index);
        return false;
      }
      base.cholesky_solve(m, L, w);
      for (int j = 0; j < r; ++j) preq.quad += double(zls(j)) * double(w(j));
      preq.logdet_sd = logdet_from_factor(r, &L(0, 0), long(L.stride(0)));
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) {
        Scalar dw = 0;
        for (int k = 0; k < r; ++k) dw += Delta(j, k) * w(k);
        z(j) = zls(j) - dw;
      });
      lower_solve_columns(m, r, L, P);
      plus_gram(m, r, Delta, Scalar(-1), P, Kraw);  // Delta - Y^T Y
      symmetrize(m, r, Kraw, P);
    }
    m.team_barrier();
    Scalar q = 0;
    for (int j = 0; j < r; ++j) q += z(j) * w(j);

    // 5. Parts 3-5.
    const typename Base::CovarianceStep cs = base.covariance_step(m, b, z, q, Sp);
    const Scalar p_weight = base.exact ? -kmath::expm1(-cs.eta) : cs.eta;
    m.team_barrier();
    for_each_entry(m, r, r, [&](const int a, const int c) { Sp(a, c) += p_weight * P(a, c); });
    m.team_barrier();
    if (!base.direction(m, b, z, w, g, s2_old, step_index)) return false;

    // 6. Parts 6-7.
    Scalar gg = 0, gKg = 0;
    for (int a = 0; a < r; ++a) gg += g(a) * g(a);
    if (observed_rotation) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
        Scalar kg = 0;
        for (int c = 0; c < r; ++c) kg += K(a, c) * g(c);
        vh(a) = kg;  // K g, until vh is formed below
        v(a) = g(a) + kg;
      });
      m.team_barrier();
      for (int a = 0; a < r; ++a) gKg += g(a) * vh(a);
      m.team_barrier();
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) { v(a) = g(a); });
      m.team_barrier();
    }
    const Scalar beta2 = gg + gKg, beta = kmath::sqrt(beta2);
    const Scalar ghKgh = beta2 > Scalar(0) ? gKg / beta2 : Scalar(0);
    const FrameRotation<Scalar> rot =
        rotate_frame_transport_S<Scalar>(m, r, rho, beta, base.tiny, base.eta_U, s2_old, ghKgh, g, gh, u, Sp);
    const Scalar s2_new = (1 - base.eta_s) * s2_old + base.eta_s * rho2 / Scalar(n - r);
    if (!step_update_is_finite<Scalar>(m, r, Sp, rho2, q, beta, rot.theta, s2_new)) {
      base.fail(m, b, breakdown_nonfinite_update, step_index);
      return false;
    }
    if (rot.rotate) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { vh(j) = v(j) / beta; });
      m.team_barrier();
      const bool every_row = !observed_rotation;
      base.rotate_rows(m, b, vh, gh, rho, rot, [&](const int i) { return every_row || observed(b, i); });
    }

    // 7. Parts 8-9 (mu_M stays: y_M = 0), the seen rule; U_M moved only if
    // a Cholesky-QR was due.
    base.commit(m, b, Sp, s2_new, step_index, cs.clamped, DataY{this, b}, preq);
    if (keep_gram)
      Kokkos::single(Kokkos::PerTeam(m), [&]() {
        const bool reorth = base.reorth_every > 0 && (step_index + 1) % base.reorth_every == 0;
        gram_step(b) = reorth ? -1 : step_index + 1;
        gram_count(b) = n_missing;
      });
    m.team_barrier();
    return true;
  }
};

}  // namespace detail
}  // namespace mosaic
