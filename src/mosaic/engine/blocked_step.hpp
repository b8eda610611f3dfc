// The exact blocked MOSAIC update (ALGORITHM.md section 6) and the maintained
// precision factorization, one Kokkos team per stream. Used by MosaicEngine
// (batched_engine.hpp) when algorithm.block_size > 1 (step_block) or
// algorithm.precision_solve is maintained.
//
// One call advances every healthy stream by the n <= k samples of a block.
// Per team (stream b), from the state (mu0, U0, S, s2) at the block start:
//   1-2. With the centred block D = [x_1 - mu0, .., x_n - mu0] (d x n, formed
//      in the run's scalar type while the samples are packed or copied, see
//      the GEMM kernels below, exactly as the sequential kernel forms
//      y = x - mu): G^T = D^T U0 (n x r) and H = D^T D (n x n), in the run's
//      scalar type, then widened to double; and the first non-finite
//      sample, if any: its column and later ones are never used (the stream
//      freezes at that step, as the sequential path does).
//   3. n sequential steps on the coefficients, all in double whatever the
//      scalar type (ALGORITHM.md section 6: mu_t = mu0 + D m_t,
//      y_t = D c_t with c_t = delta_t - m_{t-1}, U_t = U0 A + D B,
//      z = A^T G c + B^T H c, alpha = -A z, beta = c - B z,
//      rho^2 = alpha.alpha + 2 alpha^T G beta + beta^T H beta), with the
//      precision solve, trust-radius clamp, covariance update, direction,
//      rotation (on A and B), transport, s2 and mean (m += eta_mu c) of
//      section 2, and the same breakdown tests and codes. Only the columns
//      0..t-1 of D are touched at step t, so a later sample can never poison
//      an earlier step. The terms of rho^2 are of the size of ||y_t||^2, so
//      its rounding error is about eps ||y_t||^2 (eps of the scalar type the
//      GEMMs ran in): a step whose computed rho^2 < 64 eps c^T H c
//      (= 64 eps ||y_t||^2) has a residual at rounding level and is counted
//      (StreamBatch::unresolved_residual_steps); a negative rho^2 is taken
//      as 0.
//   4. Block end (or the step before a breakdown): U = U0 A + D B (GEMM),
//      mu = mu0 + D m, S, s2, counters. When the re-orthonormalization
//      schedule asks for it (at every block end: reorthonormalize_every:
//      auto in float; or when the block completed a step whose count is a
//      multiple of reorthonormalize_every: the driver ends blocks there, so
//      the pass falls on the same steps as in the sequential kernel), the
//      Cholesky-QR of the new U is done on the coefficients, before U is
//      formed: the GEMM of step 1-2 then also forms W0 = U0^T U0 (the
//      measured Gram of the stored U0, not the identity it should be), so
//      U^T U = [A; B]^T [[W0, G], [G^T, H]] [A; B] = R^T R (Cholesky, in
//      double), A <- A R^-1, B <- B R^-1, S <- R S R^T, and the one GEMM
//      U = U0 A + D B writes the re-orthonormalized U: no extra pass over U.
//      In exact arithmetic this is the sequential kernel's Cholesky-QR
//      (U^T U = L L^T, U <- U L^-T, S <- L^T S L, with R = L^T).
// The product U0^T U0 = I is assumed by the rho^2 formula (exact in exact
// arithmetic); the sequential kernel computes e and rho directly.
//
// GEMM kernels (BlockGemm: MosaicEngine::set_block_gemm, the bench's --gemm
// and the result's block_gemm; the tag types gemm::Vendor, gemm::HostTiled
// and gemm::TeamBatched of backend.hpp in the code, one BlockFunctor type
// each, chosen by MosaicEngine when it launches a block):
//   vendor (default wherever Kokkos Kernels has a vendor TPL for the space):
//     Y = [U0 | D] packed per stream, GEMMs for W0, G and the needed half
//     of H (in panels of columns) and for U = Y W, around one launch of the
//     coefficient steps (BlockFunctor<Base, gemm::Vendor>'s phases below;
//     MosaicEngine::launch_block runs them). The GEMMs of all streams are
//     one StridedGemm each (strided_gemm.hpp): one cuBLAS strided-batched
//     call on Cuda, KokkosBlas::gemm stream by stream on host spaces (one
//     host thread per stream where the BLAS allows it).
//   tiled (default on host spaces without a BLAS TPL, and only on host
//     spaces): register-tiled micro-kernels over packed
//     buffers (tile_gemm.hpp). D is never stored whole: its columns are
//     formed from mu0 and the block's samples (read in place) while chunks
//     are packed. G^T and H come from one product [G^T | H] = D^T [U0 | D],
//     reduced over d in chunks of rows that are packed (transposed) into
//     team scratch and stay in the L2 cache; only the lower triangle of H is
//     formed. U = [U0 D] [A; B] is formed MR rows at a time from a packed
//     panel of those rows and written in place (row i of the new U depends
//     on row i of U0 and of D only), together with mu = mu0 + D m. Samples
//     are checked for non-finite entries after the product: a sample with
//     one has a non-finite H(t, t), so only samples whose H(t, t) is not
//     finite are scanned entry by entry.
//   kokkos_batched (default on devices without cuBLAS): D is formed in a d x k array and
//     KokkosBatched::TeamGemm (Algo::Gemm::Blocked) forms G^T, H and the
//     new U.
// Every output entry is summed in increasing i (G, H) or in increasing p
// then j (U) by tiled and kokkos_batched, so their results do not depend on
// the team size, and the tiled kernel gives bitwise the results of the
// naive loops; vendor sums in the library's order. docs/PERFORMANCE.md
// gives the measurements behind the defaults.
//
// Small coefficient algebra: every O(r^2 + r k + k^2) matrix-vector product
// of a step is written as a combination of unit-stride rows (A and B are kept
// together with their transposes At and Bt, updated by the same rank-one
// terms, so A z and A^T x both read rows), so the loops vectorize on host
// without reassociating any sum: each entry is still one running sum in a
// fixed order.
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

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>
#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Team_Impl.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/frame_rotation.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/engine/team_cholesky.hpp"
#include "mosaic/util/team_loops.hpp"
#include "mosaic/engine/tile_gemm.hpp"

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

// Indices of the double work vectors of one stream.
enum BlockVec : int {
  bv_c = 0, bv_m, bv_gc, bv_hc, bv_z, bv_w, bv_g, bv_gh, bv_u, bv_alpha, bv_beta, bv_gb, bv_hb,
  bv_av, bv_bv, bv_x, bv_count
};
// Indices of the double r x r work matrices of one stream
// (At = A^T; W0 = U0^T U0, measured when the block ends with a Cholesky-QR.)
enum BlockMat : int { bm_S = 0, bm_Sp, bm_F, bm_F2, bm_At, bm_W0, bm_count };

// The work arrays of one GEMM kernel of the blocked update (B streams, d x r
// bases, blocks of up to k samples), allocated by allocate().
template <class Scalar, class ExecSpace, class Gemm>
struct BlockGemmWork;

template <class Scalar, class ExecSpace>
struct BlockGemmWork<Scalar, ExecSpace, gemm::TeamBatched> {
  template <class DataType>
  using view_t = Kokkos::View<DataType, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  view_t<Scalar***> wX;   // B x d x k: D
  view_t<Scalar***> wG;   // B x k x r: G^T
  view_t<Scalar***> wH;   // B x k x k
  view_t<Scalar***> wAs;  // B x r x r: A in the scalar type; U0^T U0 before the steps
  view_t<Scalar***> wBs;  // B x k x r: B in the scalar type
  typename StreamBatch<Scalar, ExecSpace>::basis_view wUn;  // B x d x r: new U

  void allocate(int B, int d, int r, int K) {
    wX = view_t<Scalar***>("mosaic::block_X", B, d, K);
    wG = view_t<Scalar***>("mosaic::block_G", B, K, r);
    wH = view_t<Scalar***>("mosaic::block_H", B, K, K);
    wAs = view_t<Scalar***>("mosaic::block_As", B, r, r);
    wBs = view_t<Scalar***>("mosaic::block_Bs", B, K, r);
    wUn = decltype(wUn)(Kokkos::view_alloc(std::string("mosaic::block_Unew")),
                        BasisLayout<ExecSpace>::layout(B, d, r));
  }
  // No scratch memory.
  template <class Policy>
  Policy with_scratch(Policy p) const {
    return p;
  }
};

// [G^T | H] and [A; B] in the scalar type, zero-padded to whole tiles; the
// packed chunk of rows of [U0 | D] (dc x ldq) lives in team scratch;
// materialize's packed rows (materialize_chunk_panels panels of MR rows, each
// (r + k) x MR) and the MR x ldw results of one panel in thread scratch.
template <class Scalar, class ExecSpace>
struct BlockGemmWork<Scalar, ExecSpace, gemm::HostTiled> {
  static_assert(is_host_space<ExecSpace>, "gemm::HostTiled (tile_gemm.hpp) runs on host execution spaces only");
  template <class DataType>
  using view_t = Kokkos::View<DataType, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  using scratch_view =
      Kokkos::View<Scalar*, Kokkos::LayoutRight, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static constexpr int materialize_chunk_panels = 32;  // rows packed at once in materialize: 32 MR
  view_t<Scalar***> wC;  // B x (r + k + MR) x ldq
  view_t<Scalar***> wW;  // B x (r + k) x ldw
  int ldq = 0, ldw = 0, dc = 0, rk = 0;

  void allocate(int B, int d, int r, int K) {
    // The lower triangle of [U0 | D]^T [U0 | D]: rows in MR-row tiles from
    // row 0 or r (the tiles read zero padding up to MR - 1 columns past
    // r + K of a packed row), columns to whole tail tiles; [A; B] likewise.
    const int rows_cap = r + K + tile::MR;
    ldq = tile::round_up(rows_cap, tile::NR_TAIL<Scalar>);
    ldw = tile::round_up(r, tile::NR_TAIL<Scalar>);
    rk = r + K;
    // Rows per packed chunk of [U0 | X~]: about 256 KiB, so that the chunk
    // stays in a 1 MiB L2 cache while every output tile streams over it, and
    // each sample is read in long unit-stride runs (of 96 and 256 KiB tried
    // on the development machine, 256 KiB was slightly faster).
    dc = std::max(tile::MR, std::min(d, int((256 * 1024) / (sizeof(Scalar) * ldq))));
    wC = view_t<Scalar***>("mosaic::block_C", B, rows_cap, ldq);
    wW = view_t<Scalar***>("mosaic::block_W", B, r + K, ldw);
  }
  // Level-1 scratch: the packed chunk per team, materialize's panels per thread.
  template <class Policy>
  Policy with_scratch(Policy p) const {
    const std::size_t team = scratch_view::shmem_size(std::size_t(dc) * ldq);
    const std::size_t thread = scratch_view::shmem_size(std::size_t(rk) * materialize_chunk_panels * tile::MR +
                                                        std::size_t(tile::MR) * ldw);
    return p.set_scratch_size(1, Kokkos::PerTeam(team), Kokkos::PerThread(thread));
  }
};

// [U0 | D] of every stream in one column-major d x (r + k) matrix Y (each
// sample a contiguous column, so packing D is a unit-stride copy on every
// backend), the GEMMs' products C = [W0 | G; H] and the coefficients
// W = [A; B] in the scalar type, all LayoutLeft views that Kokkos Kernels
// hands to the vendor library as they are, and the first non-finite sample
// and centred sample of each stream.
template <class Scalar, class ExecSpace>
struct BlockGemmWork<Scalar, ExecSpace, gemm::Vendor> {
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<Scalar**, Kokkos::LayoutLeft, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space> wY;  // B x (d x ldy)
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space> wC;  // B x (ldy x ldy): columns 0..r-1 W0 = U0^T U0, then [G; H]
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space> wW;  // B x (ldy x r)
  // B x 2: first sample with a non-finite x, with a non-finite x - mu0
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> first_bad;
  // Host spaces, phase timing on: each stream's seconds in pack and in the
  // products (PackGemmTag), which share one launch.
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> stream_seconds;
  int d = 0, r = 0, ldy = 0;

  void allocate(int B, int d_, int r_, int K) {
    d = d_;
    r = r_;
    ldy = r + K;
    wY = decltype(wY)("mosaic::block_Y", std::size_t(B) * d * ldy);
    wC = decltype(wC)("mosaic::block_C", std::size_t(B) * ldy * ldy);
    wW = decltype(wW)("mosaic::block_W", std::size_t(B) * ldy * r);
    first_bad = decltype(first_bad)("mosaic::block_first_bad", B, 2);
    // "None yet" for the pack's atomic minima; the coefficient kernel
    // resets it after reading it, so that no block needs a fill (a launch
    // and, on Cuda, a copy per block).
    Kokkos::deep_copy(first_bad, int(INT_MAX));
    stream_seconds = decltype(stream_seconds)("mosaic::block_stream_seconds", B, 2);
  }
  template <class Policy>
  Policy with_scratch(Policy p) const {
    return p;
  }
  KOKKOS_INLINE_FUNCTION matrix Y(int b) const { return matrix(wY.data() + std::size_t(b) * d * ldy, d, ldy); }
  KOKKOS_INLINE_FUNCTION matrix C(int b) const { return matrix(wC.data() + std::size_t(b) * ldy * ldy, ldy, ldy); }
  KOKKOS_INLINE_FUNCTION matrix W(int b) const { return matrix(wW.data() + std::size_t(b) * ldy * r, ldy, r); }
};

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
    for_each_entry(m, r, r, [&](const int a, const int e) {
      F(a, e) = dM(b, bm_S, a, e);
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

  // One MOSAIC step on the coefficients with sample t (1-based: column t - 1
  // of D). Returns 0 or a BreakdownCode; nothing is modified on failure.
  // `unresolved`: the computed rho^2 is below 64 eps ||y_t||^2 (file comment).
  KOKKOS_INLINE_FUNCTION int coef_step(const member_type& m, int b, int t, bool& clamped, bool& unresolved) const {
    const int r = base.r, T = t;
    auto V = [&](int k) { return Kokkos::subview(dv, b, k, Kokkos::ALL()); };
    const auto c = V(bv_c), mv = V(bv_m), gc = V(bv_gc), hc = V(bv_hc), z = V(bv_z), w = V(bv_w),
               g = V(bv_g), gh = V(bv_gh), u = V(bv_u), alpha = V(bv_alpha), beta = V(bv_beta),
               gb = V(bv_gb), hb = V(bv_hb), av = V(bv_av), bvv = V(bv_bv), xv = V(bv_x);
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
      for_each_entry(m, r, r, [&](const int a, const int e) {
        Sp(a, e) = decay * (S(a, e) + cc * z(a) * z(e));
      });
    } else {
      for_each_entry(m, r, r, [&](const int a, const int e) {
        Sp(a, e) = (1 - eta) * S(a, e) + eta * z(a) * z(e);
      });
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
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int p) { av(p) = cm1 * av(p) + sn * alpha(p) / rho; });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) { bvv(j) = cm1 * bvv(j) + sn * beta(j) / rho; });
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
    if (maintained)
      for_each_entry(m, r, r, [&](const int a, const int e) {
        Rfac(b, a, e) = F(a, e);
      });
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
  KOKKOS_INLINE_FUNCTION bool reorthonormalize_coefficients(const member_type& m, int b, int done) const {
    const int r = base.r, K = done;
    auto W0 = Kokkos::subview(dM, b, int(bm_W0), Kokkos::ALL(), Kokkos::ALL());
    auto P = Kokkos::subview(dM, b, int(bm_F), Kokkos::ALL(), Kokkos::ALL());    // W0 A + G B
    auto Gr = Kokkos::subview(dM, b, int(bm_F2), Kokkos::ALL(), Kokkos::ALL());  // U^T U, then R
    auto S = Kokkos::subview(dM, b, int(bm_S), Kokkos::ALL(), Kokkos::ALL());
    auto T1 = Kokkos::subview(dM, b, int(bm_Sp), Kokkos::ALL(), Kokkos::ALL());  // S rotation work
    // P = W0 A + G B (r x r), Q = G^T A + H B (K x r), then U^T U = A^T P + B^T Q,
    // each row a combination of unit-stride rows (of A and B, then of P and
    // Q; A^T's and B^T's rows are those of At and Bt), every entry one
    // running sum in increasing q then j.
    auto combine = [&](double* out, const double* ca, const double* cb, const double* rows_a, const double* rows_b,
                       int ldb, int nb) {
      for (int c = 0; c < r; ++c) out[c] = 0.0;
      for (int q = 0; q < r; ++q) {
        const double coef = ca[q];
        const double* row = rows_a + long(q) * r;
        for (int c = 0; c < r; ++c) out[c] += coef * row[c];
      }
      for (int j = 0; j < nb; ++j) {
        const double coef = cb[long(j) * ldb];
        const double* row = rows_b + long(j) * r;
        for (int c = 0; c < r; ++c) out[c] += coef * row[c];
      }
    };
    const double* const Ap = &dA(b, 0, 0);
    const double* const Bp = &dB(b, 0, 0);
    team_share(m, r, [&](const int lo, const int hi) {
      for (int p = lo; p < hi; ++p) combine(&P(p, 0), &W0(p, 0), &dG(b, 0, p), Ap, Bp, r, K);  // G(p, j) = dG(b, j, p)
    });
    team_share(m, K, [&](const int lo, const int hi) {
      for (int j = lo; j < hi; ++j) combine(&dQ(b, j, 0), &dG(b, j, 0), &dH(b, j, 0), Ap, Bp, 1, K);
    });
    m.team_barrier();
    team_share(m, r, [&](const int lo, const int hi) {
      for (int a = lo; a < hi; ++a) combine(&Gr(a, 0), &dM(b, bm_At, a, 0), &dBt(b, a, 0), &P(0, 0), &dQ(b, 0, 0), 1, K);
    });
    m.team_barrier();
    if (!cholesky_upper(m, Gr, r)) return false;
    // Rows x of A and B: x <- x R^-1 (x R = old x, forward in the columns),
    // right-looking: once x[q] is final, subtract x[q] R(q, c) from every
    // later x[c] along R's row q (unit stride); each x[c] still receives
    // its subtractions in increasing q before its division.
    auto solve_row = [&](double* x) {
      for (int q = 0; q < r; ++q) {
        const double xq = x[q] / Gr(q, q);
        x[q] = xq;
        const double* const Rq = &Gr(q, 0);
        for (int c = q + 1; c < r; ++c) x[c] -= xq * Rq[c];
      }
    };
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r + K), [&](const int p) {
      solve_row(p < r ? &dA(b, p, 0) : &dB(b, p - r, 0));
    });
    // S <- R S R^T = L^T S L with L = R^T.
    rotate_S_by_factor<double>(m, r, [&](const int t, const int c) { return Gr(c, t); }, S, T1, P);
    Kokkos::single(Kokkos::PerTeam(m), [&]() { base.reorths(b) += 1; });
    m.team_barrier();
    return true;
  }
};

// One launch of the blocked update with the GEMM kernel Gemm (a tag of
// backend.hpp): the coefficient part plus the kernel's own work arrays and
// its forms of steps 1-2 (G, H) and 4 (U = U0 A + D B).
template <class Base, class Gemm>
struct BlockFunctor : BlockCoefficients<Base> {
  using Coefficients = BlockCoefficients<Base>;
  using typename Coefficients::Scalar;
  using typename Coefficients::member_type;
  using Basis = typename Base::Basis;
  using Coefficients::base;
  using Coefficients::Xb;
  using Coefficients::n;
  using Coefficients::dG;
  using Coefficients::dH;
  using Coefficients::dA;
  using Coefficients::dB;
  using Coefficients::dBt;
  using Coefficients::dM;
  using Coefficients::dv;
  using Coefficients::dsc;
  using Coefficients::maintained;
  using Coefficients::factor_age;
  using Coefficients::reorth_at_block_end;
  using Coefficients::coef_step;
  using Coefficients::reorthonormalize_coefficients;

  BlockGemmWork<Scalar, typename Base::execution_space, Gemm> gw;  // the GEMM kernel's work arrays

  BlockFunctor(const Coefficients& c, const decltype(gw)& w) : Coefficients(c), gw(w) {}

  // ---------------------------------------------------------------- GEMMs

  // gemm::TeamBatched: D into gw.wX, then G, H (and W0) over the samples
  // before the first non-finite one; returns that sample (n if none).
  KOKKOS_INLINE_FUNCTION int form_gh(gemm::TeamBatched, const member_type& m, int b, bool with_w0) const {
    const int first_bad = copy_x(m, b);
    if (first_bad > 0) form_gh_kb(m, b, first_bad, with_w0);
    return first_bad;
  }

  // D into gw.wX; returns the first non-finite sample (n if none).
  KOKKOS_INLINE_FUNCTION int copy_x(const member_type& m, int b) const {
    int first_bad = n;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, base.d),
        [&](const int i, int& fb) {
          const Scalar mu0 = base.mu(b, i);
          for (int t = 0; t < n; ++t) {
            const Scalar x = Xb(b, t, i);
            gw.wX(b, i, t) = x - mu0;
            if (!kmath::isfinite(x) && t < fb) fb = t;
          }
        },
        Kokkos::Min<int>(first_bad));  // the reducer's identity (INT_MAX) when all are finite
    m.team_barrier();
    return first_bad < n ? first_bad : n;
  }

  // G^T = D^T U0 (K x r) and H = D^T D (K x K) over the
  // first K columns, into dG / dH.
  // With `with_w0`, also U0^T U0 into dM(bm_W0).
  KOKKOS_INLINE_FUNCTION void form_gh_kb(const member_type& m, int b, int K, bool with_w0) const {
    using namespace KokkosBatched;
    auto Xv = Kokkos::subview(gw.wX, b, Kokkos::ALL(), Kokkos::make_pair(0, K));
    auto U0 = Kokkos::subview(base.U, b, Kokkos::ALL(), Kokkos::ALL());
    auto Gv = Kokkos::subview(gw.wG, b, Kokkos::make_pair(0, K), Kokkos::ALL());
    auto Hv = Kokkos::subview(gw.wH, b, Kokkos::make_pair(0, K), Kokkos::make_pair(0, K));
    TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), Xv, U0,
                                                                                             Scalar(0), Gv);
    TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), Xv, Xv,
                                                                                             Scalar(0), Hv);
    if (with_w0) {
      auto W0 = Kokkos::subview(gw.wAs, b, Kokkos::ALL(), Kokkos::ALL());
      TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), U0, U0,
                                                                                               Scalar(0), W0);
    }
    m.team_barrier();
    const int r = base.r;
    if (with_w0)
      for_each_entry(m, r, r, [&](const int a, const int c) { dM(b, bm_W0, a, c) = double(gw.wAs(b, a, c)); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
      for (int a = 0; a < r; ++a) dG(b, j, a) = double(gw.wG(b, j, a));
      for (int l = 0; l < K; ++l) dH(b, j, l) = double(gw.wH(b, j, l));
    });
    m.team_barrier();
  }

  // gemm::HostTiled: the lower triangle of [U0 | D]^T [U0 | D] over all n columns of
  // D, rows p of the product in C (p < r: U0's column p, from `with_w0`
  // only; p >= r: D's column p - r), into dG / dH (H mirrored) and, with
  // `with_w0`, dM(bm_W0) = U0^T U0. A column of a non-finite sample only
  // spoils its own entries and later ones, which are not used. Returns the
  // first non-finite sample (n if none): a sample with a non-finite entry
  // has a non-finite H(t, t) = sum_i (x_i - mu0_i)^2, so only such samples
  // (or ones whose sum of squares overflowed) are scanned entry by entry.
  KOKKOS_INLINE_FUNCTION int form_gh(gemm::HostTiled, const member_type& m, int b, bool with_w0) const {
    const int d = base.d, r = base.r, K = n;
    const int p_begin = with_w0 ? 0 : r;
    const int nrow_tiles = (r + K - p_begin + tile::MR - 1) / tile::MR;
    const int ncols = tile::round_up(r + K, tile::NR_TAIL<Scalar>);
    const Basis Ub{&base.U(b, 0, 0), d, r};
    Scalar* const C = &gw.wC(b, 0, 0);
    typename decltype(gw)::scratch_view Q(m.team_scratch(1), std::size_t(gw.dc) * gw.ldq);
    Scalar* const Qp = &Q(0);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nrow_tiles * tile::MR * gw.ldq),
                         [&](const int e) { C[std::size_t(p_begin) * gw.ldq + e] = Scalar(0); });
    // Zero the packed chunk's padding columns once (never written below).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, gw.dc), [&](const int i) {
      for (int c = r + K; c < gw.ldq; ++c) Qp[std::size_t(i) * gw.ldq + c] = Scalar(0);
    });
    // The output tiles: rows p0 (of MR) x column tiles; strictly upper tiles
    // are skipped.
    for (int i0 = 0; i0 < d; i0 += gw.dc) {
      const int rows = d - i0 < gw.dc ? d - i0 : gw.dc;
      m.team_barrier();
      // Pack rows i0.. of [U0 | D]: U0 row by row, each column of D from a
      // sample with unit-stride reads (and mu0).
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, rows), [&](const int i) {
        Scalar* q = Qp + std::size_t(i) * gw.ldq;
        for (int a = 0; a < r; ++a) q[a] = Ub(i0 + i, a);
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int t) {
        Scalar* q = Qp + r + t;
        const Scalar* x = &Xb(b, t, i0);
        const Scalar* mu0 = &base.mu(b, i0);
        const long sx = long(Xb.stride(2));
        for (int i = 0; i < rows; ++i) q[std::size_t(i) * gw.ldq] = x[i * sx] - mu0[i];
      });
      m.team_barrier();
      team_share(m, nrow_tiles, [&](const int lo, const int hi) {
        for (int rt = lo; rt < hi; ++rt) {
          const int p0 = p_begin + rt * tile::MR;
          tile::for_each_column_tile<Scalar>(ncols, [&](const int c0, const int width) {
            if (c0 > p0 + tile::MR - 1) return;  // strictly upper part
            tile::inner_tile_w(width, 0, rows, Qp + p0, gw.ldq, Qp + c0, gw.ldq, C + std::size_t(p0) * gw.ldq + c0, gw.ldq);
          });
        }
      });
    }
    m.team_barrier();
    int first_bad = n;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, n),
        [&](const int t, int& fb) {
          if (kmath::isfinite(C[std::size_t(r + t) * gw.ldq + r + t])) return;
          for (int i = 0; i < d; ++i)
            if (!kmath::isfinite(Xb(b, t, i))) {
              if (t < fb) fb = t;
              break;
            }
        },
        Kokkos::Min<int>(first_bad));  // INT_MAX when all are finite
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
      const Scalar* cj = C + std::size_t(r + j) * gw.ldq;
      for (int a = 0; a < r; ++a) dG(b, j, a) = double(cj[a]);
      for (int l = 0; l <= j; ++l) dH(b, j, l) = double(cj[r + l]);
    });
    if (with_w0)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
        const Scalar* ca = C + std::size_t(a) * gw.ldq;
        for (int c = 0; c <= a; ++c) dM(b, bm_W0, a, c) = double(ca[c]);
      });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
      for (int l = j + 1; l < K; ++l) dH(b, j, l) = dH(b, l, j);
    });
    if (with_w0)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int a) {
        for (int c = a + 1; c < r; ++c) dM(b, bm_W0, a, c) = dM(b, bm_W0, c, a);
      });
    m.team_barrier();
    return first_bad < n ? first_bad : n;
  }

  // U <- U0 A + D B over the first K columns of D; mu <- mu0 + D m.
  // gemm::TeamBatched: A and B rounded to the scalar type, two TeamGemm into
  // gw.wUn, copied back with the new mean.
  KOKKOS_INLINE_FUNCTION void materialize(gemm::TeamBatched, const member_type& m, int b, int K) const {
    const int d = base.d, r = base.r;
    const Basis Ub{&base.U(b, 0, 0), d, r};
    for_each_entry(m, r, r, [&](const int a, const int e) {
      gw.wAs(b, a, e) = Scalar(dA(b, a, e));
    });
    for_each_entry(m, K, r, [&](const int a, const int e) {
      gw.wBs(b, a, e) = Scalar(dB(b, a, e));
    });
    m.team_barrier();
    using namespace KokkosBatched;
    auto U0 = Kokkos::subview(base.U, b, Kokkos::ALL(), Kokkos::ALL());
    auto Unv = Kokkos::subview(gw.wUn, b, Kokkos::ALL(), Kokkos::ALL());
    auto As = Kokkos::subview(gw.wAs, b, Kokkos::ALL(), Kokkos::ALL());
    auto Bs = Kokkos::subview(gw.wBs, b, Kokkos::make_pair(0, K), Kokkos::ALL());
    auto Xv = Kokkos::subview(gw.wX, b, Kokkos::ALL(), Kokkos::make_pair(0, K));
    TeamGemm<member_type, Trans::NoTranspose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(
        m, Scalar(1), U0, As, Scalar(0), Unv);
    m.team_barrier();
    TeamGemm<member_type, Trans::NoTranspose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(
        m, Scalar(1), Xv, Bs, Scalar(1), Unv);
    m.team_barrier();
    const Basis Un{&gw.wUn(b, 0, 0), d, r};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
      for (int a = 0; a < r; ++a) Ub(i, a) = Un(i, a);
      double s = 0;
      for (int j = 0; j < K; ++j) s += double(gw.wX(b, i, j)) * dv(b, bv_m, j);
      base.mu(b, i) = Scalar(double(base.mu(b, i)) + s);
    });
    m.team_barrier();
  }

  // gemm::HostTiled: W = [A; B] in the scalar type (columns padded with
  // zeros), then chunks of MCH rows: pack them as panels
  // Pt(p, a) = [U0 | D](i0 + a, p) of MR rows (each sample read with unit
  // stride), multiply panel by panel, and write the rows back in place with
  // their new mean.
  KOKKOS_INLINE_FUNCTION void materialize(gemm::HostTiled, const member_type& m, int b, int K) const {
    const int d = base.d, r = base.r;
    const Basis Ub{&base.U(b, 0, 0), d, r};
    const int kk = r + K;
    Scalar* const Wm = &gw.wW(b, 0, 0);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, kk), [&](const int p) {
      Scalar* w = Wm + std::size_t(p) * gw.ldw;
      for (int a = 0; a < r; ++a) w[a] = Scalar(p < r ? dA(b, p, a) : dB(b, p - r, a));
      for (int a = r; a < gw.ldw; ++a) w[a] = Scalar(0);
    });
    m.team_barrier();
    constexpr int MR = tile::MR, MCH = decltype(gw)::materialize_chunk_panels * tile::MR;
    typename decltype(gw)::scratch_view work(m.thread_scratch(1), std::size_t(kk) * MCH + std::size_t(MR) * gw.ldw);
    Scalar* const panels = &work(0);
    Scalar* const out = panels + std::size_t(kk) * MCH;
    const std::size_t panel = std::size_t(kk) * MR;
    const int nchunks = (d + MCH - 1) / MCH;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nchunks), [&](const int ch) {
      const int i0 = ch * MCH;
      const int npan = ((d - i0 < MCH ? d - i0 : MCH) + MR - 1) / MR;
      for (int pn = 0; pn < npan; ++pn)
        for (int a = 0; a < MR; ++a) {
          const int i = i0 + pn * MR + a;
          Scalar* pt = panels + pn * panel + a;
          if (i < d) {
            for (int p = 0; p < r; ++p) pt[p * MR] = Ub(i, p);
          } else {
            for (int p = 0; p < kk; ++p) pt[p * MR] = Scalar(0);
          }
        }
      for (int j = 0; j < K; ++j)
        for (int pn = 0; pn < npan; ++pn) {
          Scalar* pt = panels + pn * panel + (r + j) * MR;
          const int ib = i0 + pn * MR;
          for (int a = 0; a < MR && ib + a < d; ++a) pt[a] = Xb(b, j, ib + a) - base.mu(b, ib + a);
        }
      for (int pn = 0; pn < npan; ++pn) {
        const Scalar* pt = panels + pn * panel;
        tile::for_each_column_tile<Scalar>(gw.ldw, [&](const int c0, const int width) {
          tile::outer_tile_w(width, kk, pt, Wm + c0, gw.ldw, out + c0, gw.ldw);
        });
        double mu_new[MR] = {};  // (D m) of the MR rows: independent sums, each in increasing j
        for (int j = 0; j < K; ++j) {
          const double mj = dv(b, bv_m, j);
          for (int a = 0; a < MR; ++a) mu_new[a] += double(pt[(r + j) * MR + a]) * mj;
        }
        const int ib = i0 + pn * MR;
        for (int a = 0; a < MR && ib + a < d; ++a) {
          for (int c = 0; c < r; ++c) Ub(ib + a, c) = out[a * gw.ldw + c];
          base.mu(b, ib + a) = Scalar(double(base.mu(b, ib + a)) + mu_new[a]);
        }
      }
    });
    m.team_barrier();
  }

  // ---------------------------------------------------------------- gemm::Vendor
  // The phases around the coefficient launch (operator() below): pack
  // (PackTag, or pack_rows in PackGemmTag on host spaces), the products
  // (gemm_products), and after it the new basis (gemm_materialize).
  using VendorWork = BlockGemmWork<Scalar, typename Base::execution_space, gemm::Vendor>;
  struct PackTag {};         // one team per (stream, chunk of pack_chunk_rows rows)
  struct PackGemmTag {};     // host spaces: one thread per stream, pack and products
  struct MaterializeTag {};  // host spaces: one thread per stream, gemm_materialize
  static constexpr int pack_chunk_rows = 256;
  bool with_w0 = false;  // the products include W0 = U0^T U0 (a Cholesky-QR may be due)
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
  KOKKOS_INLINE_FUNCTION void pack_rows(int b, int i0, int i1, int& bad_x, int& bad_y) const {
    const VendorWork& w = gw;
    const auto Y = w.Y(b);
    const int d = base.d, r = base.r;
    const Basis Ub{&base.U(b, 0, 0), d, r};
    const Scalar* const mu0 = &base.mu(b, 0);
    for (int s0 = i0; s0 < i1; s0 += slice_rows) {
      const int s1 = s0 + slice_rows < i1 ? s0 + slice_rows : i1;
      for (int a = 0; a < r; ++a)
        for (int i = s0; i < s1; ++i) Y(i, a) = Ub(i, a);
    }
    const long sx = long(Xb.stride(2));
    for (int t = 0; t < n; ++t) {
      const Scalar* const x = &Xb(b, t, 0);
      Scalar* const y = &Y(0, r + t);
      bool finite = true;
      for (int i = i0; i < i1; ++i) {
        const Scalar v = x[i * sx] - mu0[i];
        const bool f = kmath::isfinite(v);
        finite = finite && f;
        y[i] = f ? v : Scalar(0);
      }
      if (finite) continue;  // else x - mu0 is non-finite somewhere: is x?
      if (t < bad_y) bad_y = t;
      for (int i = i0; i < i1 && t < bad_x; ++i)
        if (!kmath::isfinite(x[i * sx])) bad_x = t;
    }
  }

  // W = [I; 0]: the new basis is U0 unless the coefficient launch writes
  // [A; B] (a stream that is frozen, or completes no step, keeps U0: the
  // product adds exact zeros).
  KOKKOS_INLINE_FUNCTION void init_w_row(int b, int p) const {
    const VendorWork& w = gw;
    const auto W = w.W(b);
    for (int a = 0; a < base.r; ++a) W(p, a) = Scalar(p == a ? 1 : 0);
  }

  KOKKOS_INLINE_FUNCTION void operator()(PackTag, const member_type& m) const {
    const VendorWork& w = gw;
    const int chunks = (base.d + pack_chunk_rows - 1) / pack_chunk_rows;
    const int b = m.league_rank() / chunks, c = m.league_rank() % chunks;
    const int i0 = c * pack_chunk_rows, i1 = i0 + pack_chunk_rows < base.d ? i0 + pack_chunk_rows : base.d;
    int bad_x = n, bad_y = n;
    if constexpr (is_host_space<typename Base::execution_space>) {
      Kokkos::single(Kokkos::PerTeam(m), [&]() { pack_rows(b, i0, i1, bad_x, bad_y); });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, i0, i1), [&](const int i) {
        int bx = n, by = n;
        pack_rows(b, i, i + 1, bx, by);
        if (bx < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 0), bx);
        if (by < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 1), by);
      });
    }
    if (bad_x < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 0), bad_x);
    if (bad_y < n) Kokkos::atomic_fetch_min(&w.first_bad(b, 1), bad_y);
    if (c == 0) Kokkos::parallel_for(Kokkos::TeamThreadRange(m, w.ldy), [&](const int p) { init_w_row(b, p); });
  }

  // The products of streams [b0, b0 + count) (host code; strided_gemm.hpp:
  // one cuBLAS call per GEMM for all of them on Cuda, stream by stream
  // elsewhere): with with_w0, W0 = U0^T U0 into C(0:r, 0:r); then for each
  // panel of columns [t0, t1) of D: C(0:r+t1, r+t0:r+t1) = [U0 | D_{<t1}]^T
  // D_{t0..t1} (G's columns and H's entries H(l, t) with l < t1: all l <= t).
  // Y and C are column-major, ld d and ldy, one per stream at a fixed stride.
  void gemm_products(int b0, int count) const {
    const VendorWork& w = gw;
    const int d = base.d, r = base.r;
    const int P = panel_cols;
    const Scalar* const Y = w.Y(b0).data();
    Scalar* const C = w.C(b0).data();
    StridedGemm<Scalar> g;
    g.transa = 'T';
    g.k = d;
    g.lda = g.ldb = d;
    g.stride_a = g.stride_b = std::ptrdiff_t(d) * w.ldy;
    g.ldc = w.ldy;
    g.stride_c = std::ptrdiff_t(w.ldy) * w.ldy;
    g.count = count;
    if (with_w0) {
      g.m = g.n = r;
      g.a = g.b = Y;
      g.c = C;
      strided_gemm<typename Base::execution_space>(g);
    }
    for (int t0 = 0; t0 < n; t0 += P) {
      const int t1 = t0 + P < n ? t0 + P : n;
      g.m = r + t1;
      g.n = t1 - t0;
      g.a = Y;
      g.b = Y + std::ptrdiff_t(r + t0) * d;
      g.c = C + std::ptrdiff_t(r + t0) * w.ldy;
      strided_gemm<typename Base::execution_space>(g);
    }
  }

  // U = [U0 | D] W of streams [b0, b0 + count) (host code, as
  // gemm_products), written over the state's basis (Y is a copy): a
  // column-major U directly, a row-major one as U^T = W^T Y^T (the same
  // memory as a column-major r x d matrix).
  void gemm_materialize(int b0, int count) const {
    const VendorWork& w = gw;
    const int d = base.d, r = base.r;
    const Scalar* const Y = w.Y(b0).data();  // d x (r + n) used, ld d
    const Scalar* const W = w.W(b0).data();  // (r + n) x r used, ld ldy
    StridedGemm<Scalar> g;
    g.k = r + n;
    g.c = stream_block_data(base.U, b0);
    g.stride_c = std::ptrdiff_t(base.U.stride(0));
    g.count = count;
    if constexpr (Base::column_major) {
      g.m = d;
      g.n = r;
      g.a = Y;
      g.lda = d;
      g.stride_a = std::ptrdiff_t(d) * w.ldy;
      g.b = W;
      g.ldb = w.ldy;
      g.stride_b = std::ptrdiff_t(w.ldy) * r;
      g.ldc = d;
    } else {
      g.transa = g.transb = 'T';
      g.m = r;
      g.n = d;
      g.a = W;
      g.lda = w.ldy;
      g.stride_a = std::ptrdiff_t(w.ldy) * r;
      g.b = Y;
      g.ldb = d;
      g.stride_b = std::ptrdiff_t(d) * w.ldy;
      g.ldc = r;
    }
    strided_gemm<typename Base::execution_space>(g);
  }

  // Host spaces, one thread per stream: pack, then the products while
  // [U0 | D] is in this thread's cache.
  void operator()(PackGemmTag, const int b) const {
    const VendorWork& w = gw;
    using clock = std::chrono::steady_clock;
    const auto since = [&](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
    auto t = time_phases ? clock::now() : clock::time_point();  // the clock is read only while timing
    int bad_x = n, bad_y = n;
    pack_rows(b, 0, base.d, bad_x, bad_y);
    w.first_bad(b, 0) = bad_x;
    w.first_bad(b, 1) = bad_y;
    for (int p = 0; p < w.ldy; ++p) init_w_row(b, p);
    if (time_phases) {
      w.stream_seconds(b, 0) += since(t);
      t = clock::now();
    }
    gemm_products(b, 1);
    if (time_phases) w.stream_seconds(b, 1) += since(t);
  }
  void operator()(MaterializeTag, const int b) const { gemm_materialize(b, 1); }

  // Steps 1-2 from the products: G, H (mirrored from the computed
  // triangle) and W0 widened to double. Returns the first sample with a
  // non-finite x; a finite sample whose x - mu0 overflowed gets an infinite
  // H(t, t), so its step ends the block with breakdown_nonfinite_update, as
  // the sequential step's non-finite y does.
  KOKKOS_INLINE_FUNCTION int form_gh(gemm::Vendor, const member_type& m, int b, bool w0) const {
    const VendorWork& w = gw;
    const int r = base.r;
    const auto C = w.C(b);
    const int bad_x = w.first_bad(b, 0) < n ? w.first_bad(b, 0) : n, bad_y = w.first_bad(b, 1) < n ? w.first_bad(b, 1) : n;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int j) {
      for (int a = 0; a < r; ++a) dG(b, j, a) = double(C(a, r + j));
      for (int l = 0; l < n; ++l) dH(b, j, l) = double(l <= j ? C(r + l, r + j) : C(r + j, r + l));
      if (j >= bad_y) dH(b, j, j) = HUGE_VAL;
    });
    if (w0) for_each_entry(m, r, r, [&](const int a, const int c) { dM(b, bm_W0, a, c) = double(a <= c ? C(a, c) : C(c, a)); });
    m.team_barrier();  // every thread has read first_bad
    Kokkos::single(Kokkos::PerTeam(m), [&]() { w.first_bad(b, 0) = w.first_bad(b, 1) = INT_MAX; });
    return bad_x;
  }

  // Step 4's coefficients: W = [A; B] in the scalar type (rows past r + K
  // stay zero), and mu <- mu0 + D m; the basis is formed by gemm_materialize.
  KOKKOS_INLINE_FUNCTION void materialize(gemm::Vendor, const member_type& m, int b, int K) const {
    const VendorWork& w = gw;
    const int d = base.d, r = base.r;
    const auto W = w.W(b);
    const auto Y = w.Y(b);
    for_each_entry(m, r + K, r, [&](const int p, const int a) {
      W(p, a) = Scalar(p < r ? dA(b, p, a) : dB(b, p - r, a));
    });
    // Rows in slices (unit-stride columns of D on host), each row's sum in increasing j.
    const int slices = (d + slice_rows - 1) / slice_rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, slices), [&](const int sl) {
      const int i0 = sl * slice_rows, i1 = i0 + slice_rows < d ? i0 + slice_rows : d;
      double s[slice_rows] = {};
      for (int j = 0; j < K; ++j) {
        const double mj = dv(b, bv_m, j);
        const Scalar* const col = &Y(0, r + j);
        for (int i = i0; i < i1; ++i) s[i - i0] += double(col[i]) * mj;
      }
      for (int i = i0; i < i1; ++i) base.mu(b, i) = Scalar(double(base.mu(b, i)) + s[i - i0]);
    });
    m.team_barrier();
  }

  // ---------------------------------------------------------------- block
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    if (base.status(b) != 0) {
      // form_gh does not run: reset the pack's minima here (see allocate).
      if constexpr (std::is_same_v<Gemm, gemm::Vendor>)
        Kokkos::single(Kokkos::PerTeam(m), [&]() { gw.first_bad(b, 0) = gw.first_bad(b, 1) = INT_MAX; });
      return;
    }
    const int r = base.r;
    const std::int64_t step0 = base.steps(b);

    // 1-2. G, H (widened to double) and the first non-finite sample; the
    // coefficients start at A = I, B = 0, m = 0.
    // A Cholesky-QR at this block's end (step 4) needs U0^T U0 too.
    const int every = base.reorth_every;
    const bool reorth_planned = reorth_at_block_end || (every > 0 && (step0 + n) / every > step0 / every);
    const int first_bad = form_gh(Gemm{}, m, b, reorth_planned);
    const int n_ok = first_bad < n ? first_bad : n;  // samples before the first non-finite one
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n_ok), [&](const int j) {
      for (int a = 0; a < r; ++a) {
        dB(b, j, a) = 0.0;
        dBt(b, a, j) = 0.0;
      }
      dv(b, bv_m, j) = 0.0;
    });
    for_each_entry(m, r, r, [&](const int a, const int e) {
      dA(b, a, e) = a == e ? 1.0 : 0.0;
      dM(b, bm_At, a, e) = a == e ? 1.0 : 0.0;
      dM(b, bm_S, a, e) = double(base.S(b, a, e));
    });
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      dsc(b, 0) = double(base.s2(b));
      dsc(b, 1) = 0.0;
      dsc(b, 2) = 0.0;
    });
    m.team_barrier();

    // 3. The n steps on the coefficients.
    int done = 0, code = 0;
    for (int t = 1; t <= n; ++t) {
      if (t - 1 >= n_ok) {
        code = breakdown_nonfinite_sample;
        break;
      }
      bool clamped = false, unresolved = false;
      code = coef_step(m, b, t, clamped, unresolved);
      if (code != 0) break;
      if (clamped || unresolved)
        Kokkos::single(Kokkos::PerTeam(m), [&]() {
          if (clamped) dsc(b, 1) += 1.0;
          if (unresolved) dsc(b, 2) += 1.0;
        });
      done = t;
    }
    m.team_barrier();

    // 4. The Cholesky-QR (on the coefficients) when the block completed and
    // one is due, then the state after the last completed step.
    int reorth_code = 0;
    if (code == 0 && done > 0 && reorth_planned) {
      if (!reorthonormalize_coefficients(m, b, done)) reorth_code = breakdown_reorthonormalize;
      // S was rotated (S <- R S R^T): the maintained factor no longer
      // matches it; take a fresh one at the next step (no drift recorded).
      else if (maintained) Kokkos::single(Kokkos::PerTeam(m), [&]() { factor_age(b) = -1; });
      m.team_barrier();
    }
    if (done > 0) {
      materialize(Gemm{}, m, b, done);
      for_each_entry(m, r, r, [&](const int a, const int e) {
        base.S(b, a, e) = Scalar(dM(b, bm_S, a, e));
      });
    }
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      if (done > 0) base.s2(b) = Scalar(dsc(b, 0));
      base.steps(b) = step0 + done;
      base.clamped_steps(b) += std::int64_t(dsc(b, 1));
      base.unresolved_residual_steps(b) += std::int64_t(dsc(b, 2));
    });
    m.team_barrier();
    if (code != 0) base.fail(m, b, code, step0 + done);
    else if (reorth_code != 0) base.fail(m, b, reorth_code, step0 + done - 1);
  }
};

}  // namespace detail
}  // namespace mosaic
