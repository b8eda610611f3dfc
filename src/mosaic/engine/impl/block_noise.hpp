// ALGORITHM.md 8.5: the blocked update under the diagonal-noise model
// (noise: diagonal). Between re-whitenings psi is constant, so section 6 and
// 7.7.2 run unchanged on the whitened centred block
// D~ = Psi^-1/2 (X - mu0 1^T):
//  - WhitenedRunStart writes D~ (the sequential step's operations,
//    (x_i - mu_i) / sqrt(psi_i)), keeps U0 and clears a mean offset; the
//    blocked launch is bound to that offset as its mean, so it sees mu0 = 0,
//    packs D = D~ exactly, and leaves D~ m (whitened units) in the offset;
//  - the launch records every completed step's residual coefficients
//    [alpha_t; beta_t] and s2_old (BlockCoefficients::res_coef, res_s2);
//  - residual_gemms forms E = U0 [alpha_1 ..] + D~ [beta_1 ..], the
//    whitened residuals of the block's steps (two GEMMs, d x (r + k) x k);
//  - WhitenedRunEnd moves the mean in data units (mu += Psi^1/2 D~ m), adds
//    E's squared entries to 8.3 part 3's accumulators (per sample kappa and
//    s2_old, the frozen leverages, the observed rows of a shared-mask run)
//    and re-whitens a stream whose step count crossed a multiple of
//    rewhiten_every (the engine cuts its blocks there: block_length, so it
//    is the block's last step, where the sequential kernel re-whitens).
#pragma once

#include <cstddef>
#include <cstdint>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/impl/masked_blocks.hpp"
#include "mosaic/engine/impl/masked_step.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// The work of 8.5's blocked form for B streams, blocks of up to k samples.
template <class Scalar, class ExecSpace>
struct WhitenedBlockWork {
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> Dw, E;  // B x k x d: D~, the residuals
  typename StreamBatch<Scalar, ExecSpace>::basis_view U0;            // B x d x r, U's layout
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> mean;    // B x d: D~ m after the launch
  Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> coef;   // B x k x (r + k): [alpha_t; beta_t]
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> s2_old;  // B x k
  // B: sum of log psi_j over the launch's observed rows (section 4's
  // likelihood in data units; BlockCoefficients::logdet_psi)
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> logdet_psi;
  // B x d, host spaces: sqrt(psi) in the start, 8.3 part 3's h kappa in the end
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> row_scale;
  int k = 0;

  void allocate(int B, int d, int r, int kcap) {
    k = kcap;
    Dw = decltype(Dw)("mosaic::whitened_block", B, k, d);
    E = decltype(E)("mosaic::whitened_residuals", B, k, d);
    U0 = decltype(U0)("mosaic::whitened_U0", BasisLayout<ExecSpace>::layout(B, d, r));
    mean = decltype(mean)("mosaic::whitened_mean", B, d);
    coef = decltype(coef)("mosaic::whitened_residual_coef", B, k, r + k);
    s2_old = decltype(s2_old)("mosaic::whitened_s2_old", B, k);
    logdet_psi = decltype(logdet_psi)("mosaic::whitened_logdet_psi", B);
    if (is_host_space<ExecSpace>) row_scale = decltype(row_scale)("mosaic::whitened_row_scale", B, d);
  }
};

// Before a blocked launch of n samples (stream b's first len(b); all when
// len is empty): Dw(b, j, :) = (X(b, j, :) - mu(b, :)) / sqrt(psi(b, :))
// for j < len(b), 0 after; U0(b) = U(b); mean(b, :) = 0; logdet_psi(b) =
// sum of log psi over the rows that are not missing_rows(b, 0..missing(b))
// (a shared-mask run's; every row when missing is empty).
template <class Scalar, class ExecSpace>
struct WhitenedRunStart {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> X;  // B x n x d
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> len;
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> mu, psi;
  typename StreamBatch<Scalar, ExecSpace>::basis_view U;
  WhitenedBlockWork<Scalar, ExecSpace> w;
  int n = 0, d = 0, r = 0;
  Kokkos::View<const int**, Kokkos::LayoutRight, memory_space> missing_rows;  // B x d
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> missing;        // B

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank(), l = len.extent(0) > 0 ? len(b) : n;
    if (l == 0) return;
    double all = 0, absent = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, double& s) { s += kmath::log(double(psi(b, i))); }, all);
    m.team_barrier();
    const int nm = missing.extent(0) > 0 ? missing(b) : 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, nm),
        [&](const int k, double& s) { s += kmath::log(double(psi(b, missing_rows(b, k)))); }, absent);
    m.team_barrier();
    Kokkos::single(Kokkos::PerTeam(m), [&]() { w.logdet_psi(b) = all - absent; });
    if constexpr (is_host_space<ExecSpace>) {
      // A thread per sample, its entries a plain loop that vectorizes (the
      // square roots once per stream; unit stride where X has it).
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d),
                           [&](const int i) { w.row_scale(b, i) = double(kmath::sqrt(psi(b, i))); });
      m.team_barrier();
      const long xs = long(X.stride(2));
      const Scalar* const mub = &mu(b, 0);
      const double* const sq = &w.row_scale(b, 0);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int j) {
        Scalar* const o = &w.Dw(b, j, 0);
        const Scalar* const x = &X(b, j, 0);
        if (j >= l)
          for (int i = 0; i < d; ++i) o[i] = Scalar(0);
        else if (xs == 1)
          for (int i = 0; i < d; ++i) o[i] = (x[i] - mub[i]) / Scalar(sq[i]);
        else
          for (int i = 0; i < d; ++i) o[i] = (x[i * xs] - mub[i]) / Scalar(sq[i]);
      });
    } else {
      const Scalar* const x = X.data();
      for_each_sample_entry<ExecSpace>(m, n, d, long(X.stride(2)), [&](const int j, const int i, const long ix) {
        w.Dw(b, j, i) = j < l ? (x[sample_row_offset(X, b, j) + ix] - mu(b, i)) / kmath::sqrt(psi(b, i)) : Scalar(0);
      });
    }
    // U's block of one stream is contiguous (BasisLayout), U0's alike.
    const Scalar* const from = stream_block_data(U, b);
    Scalar* const to = stream_block_data(w.U0, b);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d * r), [&](const int e) { to[e] = from[e]; });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) { w.mean(b, i) = Scalar(0); });
  }
};

// E = U0 A_res + D~ B_res for the launch's n samples of every stream
// (A_res = rows 0..r-1 of the recorded coefficients, B_res rows r..r+n-1),
// column-major d x n per stream (host code: strided_gemm.hpp). A column
// whose step did not complete is not read afterwards.
template <class ExecSpace, class Scalar>
void residual_gemms(const WhitenedBlockWork<Scalar, ExecSpace>& w, int B, int d, int r, int n) {
  const int k = w.k, ldc = r + k;
  StridedGemm<Scalar> g;
  g.m = d;
  g.n = n;
  g.count = B;
  g.b = w.coef.data();
  g.ldb = ldc;
  g.stride_b = std::ptrdiff_t(k) * ldc;
  g.c = w.E.data();
  g.ldc = d;
  g.stride_c = std::ptrdiff_t(k) * d;
  // U0 A_res: U0 column-major d x r (ld d), or row-major (U0^T column-major, ld r).
  g.k = r;
  g.a = w.U0.data();
  g.stride_a = std::ptrdiff_t(w.U0.stride(0));
  if constexpr (BasisLayout<ExecSpace>::column_major) {
    g.lda = d;
  } else {
    g.transa = 'T';
    g.lda = r;
  }
  strided_gemm<ExecSpace>(g);
  // + D~ B_res
  g.transa = 'N';
  g.k = n;
  g.a = w.Dw.data();
  g.lda = d;
  g.stride_a = std::ptrdiff_t(k) * d;
  g.b = w.coef.data() + r;
  g.beta = Scalar(1);
  strided_gemm<ExecSpace>(g);
}

// After the launch (and a shared-mask run's end, which puts U0's missing
// rows back): the mean in data units, the accumulators, the re-whitening
// (file comment). A shared-mask run's missing rows are those where its
// first sample, X(b, off(b), :) of the block before gathering, is NaN.
template <class Scalar, class ExecSpace>
struct WhitenedRunEnd {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  MaskedStepFunctor<Scalar, ExecSpace> mf;  // bound: the state, profile, leverages, accumulators
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> len, shared_missing, shared_off;
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> X;  // the mask of a shared-mask run
  WhitenedBlockWork<Scalar, ExecSpace> w;
  int n = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank(), l = len.extent(0) > 0 ? len(b) : n;
    if (l == 0) return;
    const auto& base = mf.base;
    const int d = base.d, r = base.r;
    // A stream that froze inside the block keeps the mean of its last completed step.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d),
                         [&](const int i) { base.mu(b, i) += kmath::sqrt(mf.psi(b, i)) * w.mean(b, i); });
    m.team_barrier();
    if (base.status(b) != 0) return;
    const int mrows = shared_missing.extent(0) > 0 ? shared_missing(b) : 0;
    const auto missing = [&](const int i) { return mrows > 0 && kmath::isnan(X(b, shared_off(b), i)); };
    double trN = 0;  // tr N = the missing rows' frozen leverages (8.3 part 3)
    if (mrows > 0)
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(m, d),
          [&](const int i, double& t) { t += missing(i) ? double(mf.leverage(b, i)) : 0.0; }, trN);
    m.team_barrier();
    const double dof = double(d - mrows - r), kappa = dof / (dof + trN);
    // 8.3 part 3's denominator of row i without s2_old, 0 for a row that
    // takes no residual (missing, or under the leverage floor).
    const auto row_scale = [&](const int i) { return missing(i) ? 0.0 : mf.residual_scale(b, i, kappa); };
    if constexpr (is_host_space<ExecSpace>) {
      // Sample by sample over contiguous rows (E's rows of one sample are
      // d apart: a loop over the samples of one row would stride by d),
      // without branches (a row without residuals adds exact zeros).
      team_share(m, d, [&](const int lo, const int hi) {
        double* const hk = &w.row_scale(b, 0);
        double* const a = &mf.noise_residuals(b, 0);
        for (int i = lo; i < hi; ++i) hk[i] = row_scale(i);
        std::int64_t taken = 0;
        for (int t = 0; t < l; ++t) {
          const double s2 = w.s2_old(b, t);
          if (s2 < 0.0) continue;  // no residual (a skipped run's sample)
          ++taken;
          const Scalar* const e = &w.E(b, t, 0);
          for (int i = lo; i < hi; ++i) {
            const double q = double(e[i]) * double(e[i]) / ((hk[i] == 0.0 ? 1.0 : hk[i]) * s2);
            a[i] += hk[i] == 0.0 ? 0.0 : q;
          }
        }
        for (int i = lo; i < hi; ++i)
          if (hk[i] != 0.0) mf.noise_counts(b, i) += taken;
      });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
        const double hk = row_scale(i);
        if (hk == 0.0) return;
        double a = mf.noise_residuals(b, i);
        std::int64_t c = mf.noise_counts(b, i);
        for (int t = 0; t < l; ++t) {
          const double s2 = w.s2_old(b, t);
          if (s2 < 0.0) continue;
          const double e = double(w.E(b, t, i));
          a += e * e / (hk * s2);
          c += 1;
        }
        mf.noise_residuals(b, i) = a;
        mf.noise_counts(b, i) = c;
      });
    }
    m.team_barrier();
    const std::int64_t steps = base.steps(b), every = mf.rewhiten_every;
    if ((steps - l) / every < steps / every) mf.rewhiten(m, b);
  }
};

}  // namespace detail
}  // namespace mosaic
