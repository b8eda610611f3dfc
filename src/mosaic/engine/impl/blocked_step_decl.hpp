// The blocked update's launch (blocked_step.hpp): BlockFunctor<Base, Gemm>
// runs one block on one team per stream: steps 1-2 (G, H) and 4
// (U = U0 A + D B) in the GEMM kernel Gemm's form, around the coefficient
// steps. Declared here with the block itself (operator()); each kernel's
// forms and work arrays are defined in block_gemm_<kernel>.hpp.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/impl/block_coefficients.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {

// Which kernel forms G, H and U = U0 A + D B in the blocked update.
enum class BlockGemm { automatic, vendor, kokkos_batched, tiled };
inline const char* to_string(BlockGemm g) {
  return g == BlockGemm::automatic        ? "auto"
         : g == BlockGemm::vendor         ? "vendor"
         : g == BlockGemm::kokkos_batched ? "kokkos_batched"
                                          : "tiled";
}

namespace detail {

// The work arrays of one GEMM kernel of the blocked update (B streams, d x r
// bases, blocks of up to k samples), allocated by allocate().
template <class Scalar, class ExecSpace, class Gemm>
struct BlockGemmWork;

// One launch of the blocked update with the GEMM kernel Gemm (a tag of
// backend.hpp): the coefficient part plus the kernel's own work arrays and
// its forms of steps 1-2 (G, H) and 4 (U = U0 A + D B).
template <class Base, class Gemm>
struct BlockFunctor : BlockCoefficients<Base> {
  using Coefficients = BlockCoefficients<Base>;
  using typename Coefficients::member_type;
  using typename Coefficients::Scalar;
  using Basis = typename Base::Basis;
  using Coefficients::base;
  using Coefficients::coef_step;
  using Coefficients::dA;
  using Coefficients::dB;
  using Coefficients::dBt;
  using Coefficients::dG;
  using Coefficients::dH;
  using Coefficients::dM;
  using Coefficients::dsc;
  using Coefficients::dv;
  using Coefficients::factor_age;
  using Coefficients::geodesic;
  using Coefficients::geodesic_sample_factors;
  using Coefficients::maintained;
  using Coefficients::missing_entries;
  using Coefficients::n;
  using Coefficients::reorth_at_block_end;
  using Coefficients::reorthonormalize_coefficients;
  using Coefficients::shared_mask_factors;
  using Coefficients::shared_missing;
  using Coefficients::skipped_steps;
  using Coefficients::stream_n;
  using Coefficients::Xb;

  BlockGemmWork<Scalar, typename Base::execution_space, Gemm> gw;  // the GEMM kernel's work arrays

  BlockFunctor(const Coefficients& c, const decltype(gw)& w) : Coefficients(c), gw(w) {}

  // ---------------------------------------------------------------- GEMMs
  // Each kernel's forms of steps 1-2 and 4, overloaded on its tag (gemm::*
  // of backend.hpp) and defined in impl/block_gemm_<kernel>.hpp.

  // gemm::TeamBatched: D into gw.wX, then G, H (and W0) over the samples
  // before the first non-finite one; returns that sample (n if none).
  KOKKOS_INLINE_FUNCTION int form_gh(gemm::TeamBatched, const member_type& m, int b, bool with_w0) const;

  // D into gw.wX; returns the first non-finite sample (n if none).
  KOKKOS_INLINE_FUNCTION int copy_x(const member_type& m, int b) const;

  // G^T = D^T U0 (K x r) and H = D^T D (K x K) over the
  // first K columns, into dG / dH.
  // With `with_w0`, also U0^T U0 into dM(bm_W0).
  KOKKOS_INLINE_FUNCTION void form_gh_kb(const member_type& m, int b, int K, bool with_w0) const;

  // U <- U0 A + D B over the first K columns of D; mu <- mu0 + D m.
  // gemm::TeamBatched: A and B rounded to the scalar type, two TeamGemm into
  // gw.wUn, copied back with the new mean.
  KOKKOS_INLINE_FUNCTION void materialize(gemm::TeamBatched, const member_type& m, int b, int K) const;

  // gemm::HostTiled: the lower triangle of [U0 | D]^T [U0 | D] over all n columns of
  // D, rows p of the product in C (p < r: U0's column p, from `with_w0`
  // only; p >= r: D's column p - r), into dG / dH (H mirrored) and, with
  // `with_w0`, dM(bm_W0) = U0^T U0. A column of a non-finite sample only
  // spoils its own entries and later ones, which are not used. Returns the
  // first non-finite sample (n if none): a sample with a non-finite entry
  // has a non-finite H(t, t) = sum_i (x_i - mu0_i)^2, so only such samples
  // (or ones whose sum of squares overflowed) are scanned entry by entry.
  KOKKOS_INLINE_FUNCTION int form_gh(gemm::HostTiled, const member_type& m, int b, bool with_w0) const;

  // gemm::HostTiled: W = [A; B] in the scalar type (columns padded with
  // zeros), then chunks of MCH rows: pack them as panels
  // Pt(p, a) = [U0 | D](i0 + a, p) of MR rows (each sample read with unit
  // stride), multiply panel by panel, and write the rows back in place with
  // their new mean.
  KOKKOS_INLINE_FUNCTION void materialize(gemm::HostTiled, const member_type& m, int b, int K) const;

  // ---------------------------------------------------------------- gemm::Vendor
  // The phases around the coefficient launch (operator() below): pack
  // (PackTag, or pack_rows in PackGemmTag on host spaces), the products
  // (gemm_products), and after it the new basis (gemm_materialize).
  using VendorWork = BlockGemmWork<Scalar, typename Base::execution_space, gemm::Vendor>;
  struct PackTag {};         // one team per (stream, chunk of pack_chunk_rows rows)
  struct PackGemmTag {};     // host spaces: one thread per stream, pack and products
  struct MaterializeTag {};  // host spaces: one thread per stream, gemm_materialize
  static constexpr int pack_chunk_rows = 256;
  bool with_w0 = false;      // the products include W0 = U0^T U0 (a Cholesky-QR may be due)
  bool time_phases = false;  // PackGemmTag records gw.stream_seconds
  int panel_cols = Tuning<typename Base::execution_space>::vendor_panel_cols;  // columns of D per GEMM of the products

  // Rows [i0, i1) of stream b's Y = [U0 | D]; bad_x / bad_y are lowered to
  // the first sample with a non-finite x / x - mu0 among them. A non-finite
  // entry of D is stored as 0 so that no product meets a NaN: the steps
  // stop before its sample (form_gh), and a column the steps did not use
  // meets a zero row of W in gemm_materialize. Rows inner: unit-stride on
  // host, coalesced on devices (one row per thread); on host in slices of
  // slice_rows rows, so that the slice of a row-major U0 is read from cache.
  static constexpr int slice_rows = is_host_space<typename Base::execution_space> ? 32 : 1;
  KOKKOS_INLINE_FUNCTION void pack_rows(int b, int i0, int i1, int& bad_x, int& bad_y) const;

  // W = [I; 0]: the new basis is U0 unless the coefficient launch writes
  // [A; B] (a stream that is frozen, or completes no step, keeps U0: the
  // product adds exact zeros).
  KOKKOS_INLINE_FUNCTION void init_w_row(int b, int p) const;

  KOKKOS_INLINE_FUNCTION void operator()(PackTag, const member_type& m) const;

  // The products of streams [b0, b0 + count) (host code; strided_gemm.hpp:
  // one cuBLAS call per GEMM for all of them on Cuda, stream by stream
  // elsewhere): with with_w0, W0 = U0^T U0 into C(0:r, 0:r); then for each
  // panel of columns [t0, t1) of D: C(0:r+t1, r+t0:r+t1) = [U0 | D_{<t1}]^T
  // D_{t0..t1} (G's columns and H's entries H(l, t) with l < t1: all l <= t).
  // Y and C are column-major, ld d and ldy, one per stream at a fixed stride.
  void gemm_products(int b0, int count) const;

  // U = [U0 | D] W of streams [b0, b0 + count) (host code, as
  // gemm_products), written over the state's basis (Y is a copy): a
  // column-major U directly, a row-major one as U^T = W^T Y^T (the same
  // memory as a column-major r x d matrix).
  void gemm_materialize(int b0, int count) const;

  // Host spaces, one thread per stream: pack, then the products while
  // [U0 | D] is in this thread's cache.
  void operator()(PackGemmTag, const int b) const;
  void operator()(MaterializeTag, const int b) const { gemm_materialize(b, 1); }

  // Steps 1-2 from the products: G, H (mirrored from the computed
  // triangle) and W0 widened to double. Returns the first sample with a
  // non-finite x; a finite sample whose x - mu0 overflowed gets an infinite
  // H(t, t), so its step ends the block with breakdown_nonfinite_update, as
  // the sequential step's non-finite y does.
  KOKKOS_INLINE_FUNCTION int form_gh(gemm::Vendor, const member_type& m, int b, bool w0) const;

  // Step 4's coefficients: W = [A; B] in the scalar type (rows past r + K
  // stay zero), and mu <- mu0 + D m; the basis is formed by gemm_materialize.
  KOKKOS_INLINE_FUNCTION void materialize(gemm::Vendor, const member_type& m, int b, int K) const;

  // ---------------------------------------------------------------- block
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    const int nb = stream_n.extent(0) > 0 ? stream_n(b) : n;  // this stream's samples
    if (base.status(b) != 0 || nb == 0) {
      // form_gh does not run: reset the pack's minima here (see allocate).
      if constexpr (std::is_same_v<Gemm, gemm::Vendor>)
        Kokkos::single(Kokkos::PerTeam(m), [&]() { gw.first_bad(b, 0) = gw.first_bad(b, 1) = INT_MAX; });
      return;
    }
    const int r = base.r;
    const std::int64_t step0 = base.steps(b);
    // 7.7.2: the run's missing rows (0: nothing missing).
    const int mrows = shared_missing.extent(0) > 0 ? shared_missing(b) : 0;

    // 1-2. G, H (widened to double) and the first non-finite sample; the
    // coefficients start at A = I, B = 0, m = 0.
    // A Cholesky-QR at this block's end (step 4) needs U0^T U0 too.
    const int every = base.reorth_every;
    const bool reorth_planned = reorth_at_block_end || (every > 0 && (step0 + nb) / every > step0 / every);
    const int first_bad = form_gh(Gemm{}, m, b, reorth_planned);
    const int n_ok = first_bad < nb ? first_bad : nb;  // samples before the first non-finite one
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n_ok), [&](const int j) {
      for (int a = 0; a < r; ++a) {
        dB(b, j, a) = 0.0;
        dBt(b, a, j) = 0.0;
      }
      dv(b, bv_m, j) = 0.0;
    });
    if (Coefficients::res_s2.extent(0) > 0)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nb), [&](const int j) { Coefficients::res_s2(b, j) = -1.0; });
    for_each_entry(m, r, r, [&](const int a, const int e) {
      dA(b, a, e) = a == e ? 1.0 : 0.0;
      dM(b, bm_At, a, e) = a == e ? 1.0 : 0.0;
      dM(b, bm_S, a, e) = double(base.S(b, a, e));
    });
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      dsc(b, 0) = double(base.s2(b));
      dsc(b, 1) = 0.0;
      dsc(b, 2) = 0.0;
      dsc(b, 4) = 0.0;
    });
    m.team_barrier();

    // 3. The n steps on the coefficients. A shared-mask run whose C fails
    // 7.5's tests skips every sample from there: its mean moves (m_t),
    // nothing else (a skipped step leaves U, hence C, as it was). Under the
    // geodesic rotation C is formed again before every sample.
    bool skip_run = mrows > 0 && !shared_mask_factors(m, b, mrows);
    double* const factor_ws = Coefficients::factor_scratch(m);
    int done = 0, code = 0, skipped = 0;
    for (int t = 1; t <= nb; ++t) {
      if (t - 1 >= n_ok) {
        code = breakdown_nonfinite_sample;
        break;
      }
      if (!skip_run && mrows > 0 && geodesic && t > 1) skip_run = !geodesic_sample_factors(m, b);
      if (skip_run) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, t), [&](const int j) {
          dv(b, bv_m, j) += double(base.eta_mu) * ((j == t - 1 ? 1.0 : 0.0) - dv(b, bv_m, j));
        });
        m.team_barrier();
        done = t;
        ++skipped;
        continue;
      }
      StepFlags flags;
      PrequentialSample preq;
      code = coef_step(m, b, t, mrows, factor_ws, flags, preq);
      if (code != 0) break;
      Kokkos::single(Kokkos::PerTeam(m), [&]() {
        if (flags.clamped) dsc(b, 1) += 1.0;
        if (flags.unresolved) dsc(b, 2) += 1.0;
        if (flags.recomputed) dsc(b, 4) += 1.0;
        if (preq.n > 0) preq.add_to(&base.prequential(b, 0));
      });
      done = t;
    }
    m.team_barrier();

    // 4. The Cholesky-QR (on the coefficients) when the block completed and
    // one is due, then the state after the last completed step. Not after a
    // skipped step (a shared-mask run's last samples skipped by 7.5): a
    // skipped step performs 7.3 part 9 only, as the reference's.
    int reorth_code = 0;
    if (code == 0 && done > 0 && reorth_planned && !skip_run) {
      if (!reorthonormalize_coefficients(m, b, done, mrows)) reorth_code = breakdown_reorthonormalize;
      // S was rotated (S <- R S R^T): the maintained factor no longer
      // matches it; take a fresh one at the next step (no drift recorded).
      else if (maintained) Kokkos::single(Kokkos::PerTeam(m), [&]() { factor_age(b) = -1; });
      m.team_barrier();
    }
    if (done > 0) {
      materialize(Gemm{}, m, b, done);
      for_each_entry(m, r, r, [&](const int a, const int e) { base.S(b, a, e) = Scalar(dM(b, bm_S, a, e)); });
    }
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      if (done > 0) base.s2(b) = Scalar(dsc(b, 0));
      base.steps(b) = step0 + done;
      if (mrows > 0) {  // as the masked step counts them: every sample taken, the failing one too
        missing_entries(b) += std::int64_t(mrows) * (done + (code != 0 ? 1 : 0));
        skipped_steps(b) += skipped;
      }
      base.clamped_steps(b) += std::int64_t(dsc(b, 1));
      base.unresolved_residual_steps(b) += std::int64_t(dsc(b, 2));
      base.residual_recomputations(b) += std::int64_t(dsc(b, 4));
    });
    m.team_barrier();
    if (code != 0) base.fail(m, b, code, step0 + done);
    else if (reorth_code != 0) base.fail(m, b, reorth_code, step0 + done - 1);
  }
};

}  // namespace detail
}  // namespace mosaic
