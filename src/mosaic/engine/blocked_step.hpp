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
//      (= 64 eps ||y_t||^2) has a residual at rounding level: it is counted
//      (StreamBatch::unresolved_residual_steps) and its rho^2 recomputed
//      from the explicit residual e = U0 alpha + D beta, one product of
//      length d for that step only (section 6's resolve rule,
//      StreamBatch::residual_recomputations); a negative rho^2 is taken as
//      0.
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
//   vendor (default wherever a vendor library serves the space: Kokkos
//     Kernels' BLAS TPL on host spaces, cuBLAS on Cuda):
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
//   kokkos_batched (default on devices without a vendor library: not Cuda,
//     which links cuBLAS): D is formed in a d x k array and
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
//
// The code, along these seams (engine/impl/): the coefficient steps
// (block_coefficients.hpp), the Cholesky-QR on the coefficients
// (block_reorthonormalize.hpp), the launch and the block itself
// (blocked_step_decl.hpp), and each GEMM kernel's work arrays and forms of
// steps 1-2 and 4 (block_gemm_team_batched.hpp, block_gemm_host_tiled.hpp,
// block_gemm_vendor.hpp).
#pragma once

#include "mosaic/engine/impl/block_coefficients.hpp"
#include "mosaic/engine/impl/block_gemm_host_tiled.hpp"
#include "mosaic/engine/impl/block_gemm_team_batched.hpp"
#include "mosaic/engine/impl/block_gemm_vendor.hpp"
#include "mosaic/engine/impl/block_reorthonormalize.hpp"
#include "mosaic/engine/impl/blocked_step_decl.hpp"
