// The synthetic source's kernels (synthetic_source.hpp): the drift-scaled
// latents, the generator (SynthFunctor, the operations of
// synthetic_element in the same order, tiled over samples on host spaces),
// and the construction of every stream's truth on the execution space.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <KokkosBlas3_trsm.hpp>
#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/rounded.hpp"
#include "mosaic/algorithm/synthetic.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/util/host_parallel.hpp"
namespace mosaic {
namespace detail {

// The drift-scaled latents (scaled_latents, synthetic.hpp) of samples
// first_step + offset(b) .. + n - 1 of every stream b: latent(b, 2j, k) = lc_j
// and latent(b, 2j + 1, k) = ls_j of sample k (B x 2r x n_pad, so that the
// generator's inner loop over samples is at unit stride); the padding
// columns n .. n_pad - 1 are zero.
template <class ExecSpace>
struct SynthLatentFunctor {
  using memory_space = typename ExecSpace::memory_space;
  SyntheticSpec spec;
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> sqrt_lambda;    // r
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> ids;     // B
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> offset;  // B: each stream's row offset
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> cs;           // B x 2 x (>= n): cos, sin (omega step)
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;
  std::uint64_t first_step = 0;
  int n = 1, n_pad = 1;

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    const int k = item % n_pad, j = (item / n_pad) % spec.r, b = item / (n_pad * spec.r);
    double lc = 0, ls = 0;
    if (k < n)
      scaled_latents(sqrt_lambda(j), synthetic_latent(spec, ids(b), first_step + offset(b) + std::uint64_t(k), j),
                     cs(b, 0, k), cs(b, 1, k), lc, ls);
    latent(b, 2 * j, k) = lc;
    latent(b, 2 * j + 1, k) = ls;
  }
};

// The generator's micro-kernels, on raw pointers and fixed trip counts (with
// the views' accessors inside, the compiler neither keeps the tile in
// registers nor vectorizes the normals). A host compiler gets them as
// functions of their own: inlined into the work item, g++ 12 spilled the
// tile to memory (seen in its assembly).
#if defined(__GNUC__) && !defined(__CUDACC__)
#define MOSAIC_SYNTH_TILE_FUNCTION __attribute__((noinline)) KOKKOS_FUNCTION
#else
#define MOSAIC_SYNTH_TILE_FUNCTION KOKKOS_INLINE_FUNCTION
#endif

// acc(q, kk) = m[q] + sum_j (v_q[j] lc_j[kk] + w_q[j] ls_j[kk]), each product
// rounded, then added in its turn (rounded.hpp: no fused multiply-add on any
// backend), increasing j: row q of V0 at v + q row_stride, its
// entries at stride js (W0 alike), the latents lc_j = lat[2j * lat_stride],
// ls_j = lat[(2j + 1) * lat_stride].
template <int rows, int kc>
MOSAIC_SYNTH_TILE_FUNCTION void synth_mix_tile(const int r, const double* m, const double* v, const double* w,
                                               const std::ptrdiff_t row_stride, const std::ptrdiff_t js,
                                               const double* lat, const std::ptrdiff_t lat_stride,
                                               double (&acc)[rows][kc]) {
  // The tile, the latents and the rows' entries of each j in local arrays:
  // with runtime strides the compiler otherwise pairs up j's (or keeps the
  // tile in memory: acc might alias the inputs) instead of vectorizing over
  // the samples.
  double t[rows][kc];
  for (int q = 0; q < rows; ++q)
    for (int kk = 0; kk < kc; ++kk) t[q][kk] = m[q];
  for (int j = 0; j < r; ++j) {
    double lc[kc], ls[kc], vq[rows], wq[rows];
    for (int kk = 0; kk < kc; ++kk) {
      lc[kk] = lat[(2 * j) * lat_stride + kk];
      ls[kk] = lat[(2 * j + 1) * lat_stride + kk];
    }
    for (int q = 0; q < rows; ++q) {
      vq[q] = v[q * row_stride + j * js];
      wq[q] = w[q * row_stride + j * js];
    }
    for (int q = 0; q < rows; ++q)
      for (int kk = 0; kk < kc; ++kk) {
        t[q][kk] = rounded::mul_add(vq[q], lc[kk], t[q][kk]);
        t[q][kk] = rounded::mul_add(wq[q], ls[kk], t[q][kk]);
      }
  }
  for (int q = 0; q < rows; ++q)
    for (int kk = 0; kk < kc; ++kk) acc[q][kk] = t[q][kk];
}

// z(2p, kk), z(2p + 1, kk) = the Box-Muller pair of words(2p, kk),
// words(2p + 1, kk) (counter_normal4's transform of a Philox block), a loop
// over the kc blocks that vectorizes on a CPU.
template <int kc>
MOSAIC_SYNTH_TILE_FUNCTION void box_muller_tile(const std::uint32_t (&words)[4][kc], double (&z)[4][kc]) {
  for (int pair = 0; pair < 2; ++pair)
    for (int kk = 0; kk < kc; ++kk) {
      const NormalPair p = box_muller(words[2 * pair][kk], words[2 * pair + 1][kk]);
      z[2 * pair][kk] = p.even;
      z[2 * pair + 1][kk] = p.odd;
    }
}

// z(q, kk) = noise index 4 g + q of sample first_step + kk: the Philox words
// of the kc samples, then their Box-Muller pairs.
template <int kc>
MOSAIC_SYNTH_TILE_FUNCTION void synth_noise_tile(const std::uint64_t seed, const std::uint64_t id,
                                                 const std::uint64_t first_step, const std::uint64_t g,
                                                 double (&z)[4][kc]) {
  std::uint32_t words[4][kc];
  for (int kk = 0; kk < kc; ++kk) {
    const Philox4 p = counter_block(seed, RngDomain::noise, id, first_step + std::uint64_t(kk), 4 * g);
    for (int q = 0; q < 4; ++q) words[q][kk] = p.v[q];
  }
  box_muller_tile<kc>(words, z);
}

// z(q, kk) = basis normal 4 (g + kk) + q (synthetic_basis_normals of group
// g + kk), kc groups at a time.
template <int kc>
MOSAIC_SYNTH_TILE_FUNCTION void synth_basis_tile(const std::uint64_t seed, const std::uint64_t id,
                                                 const std::uint64_t g, double (&z)[4][kc]) {
  std::uint32_t words[4][kc];
  for (int kk = 0; kk < kc; ++kk) {
    const Philox4 p = counter_block(seed, RngDomain::basis, id, 0, 4 * (g + std::uint64_t(kk)));
    for (int q = 0; q < 4; ++q) words[q][kk] = p.v[q];
  }
  box_muller_tile<kc>(words, z);
}

// Writes samples first_step + offset(b) .. + n - 1 of every stream b: Out is
// B x d (n == 1) or B x n x d. Work item (b, g) makes rows 4g .. 4g + 3 of
// stream b, kc samples at a time: the 4 x kc tile of [V0 W0] (latents) in
// registers (a GEMM micro-kernel; the loops have fixed trip counts, rows past
// d read row d - 1 and samples past n the zero padding, neither stored), then
// the tile's noise, one Philox call for the 4 rows of a sample
// (counter_normal4), a loop over the kc samples that vectorizes on a CPU.
// Each element is synthetic_element's formula with its operations in its
// order, so the samples are bitwise those of the host generator
// synthetic_sample (test SyntheticSource.DeviceEqualsHostBitwiseInDouble) on
// a host backend.
template <class Scalar, class ExecSpace, class OutView>
struct SynthFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using basis_view = Kokkos::View<double***, Kokkos::LayoutStride, memory_space>;
  using mat_view = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;
  static constexpr int rows = 4;  // the noise indices of one Philox call
  static constexpr int kc = Tuning<ExecSpace>::synthetic_samples_per_pass;

  SyntheticSpec spec;
  basis_view V0, W0;
  mat_view mean, noise_std;                                                // B x d
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;       // B x 2r x n_pad
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> ids;     // B
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> offset;  // B: each stream's row offset
  OutView X;
  std::uint64_t first_step = 0;
  int n = 1, groups = 0;  // groups = ceil(d / 4)
  bool missing = false;   // spec.missing.any(): some entries are NaN

  KOKKOS_INLINE_FUNCTION void store(int b, int k, int i, double v) const {
    if constexpr (OutView::rank == 2) {
      X(b, i) = Scalar(v);
      (void)k;
    } else {
      X(b, k, i) = Scalar(v);
    }
  }
  // spec.missing's entries of sample k of stream b (id) made NaN (section 7).
  KOKKOS_INLINE_FUNCTION void store_missing(int b, int k, int i, std::uint64_t id) const {
    if (synthetic_missing(spec.missing, spec.seed, id, first_step + offset(b) + std::uint64_t(k), i))
      store(b, k, i, missing_value());
  }

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    const int b = item / groups, g = item % groups;
    const int i0 = rows * g, nr = spec.d - i0 < rows ? spec.d - i0 : rows;
    // The truth's arrays have ceil(d / 4) x 4 rows (zero past d): the tile
    // reads 4 rows in every group and stores the first nr.
    const std::ptrdiff_t row_stride = std::ptrdiff_t(V0.stride(1)), js = std::ptrdiff_t(V0.stride(2)),
                         lat_stride = std::ptrdiff_t(latent.stride(1));
    const double* m = &mean(b, i0);  // mean is LayoutRight: its 4 rows are adjacent
    const double* v = &V0(b, i0, 0);
    const double* w = &W0(b, i0, 0);
    const std::uint64_t id = ids(b);
    for (int k0 = 0; k0 < n; k0 += kc) {
      double acc[rows][kc];
      synth_mix_tile<rows, kc>(spec.r, m, v, w, row_stride, js, &latent(b, 0, k0), lat_stride, acc);
      double z[rows][kc];
      synth_noise_tile<kc>(spec.seed, id, first_step + offset(b) + std::uint64_t(k0), std::uint64_t(g), z);
      const int nk = n - k0 < kc ? n - k0 : kc;
      for (int q = 0; q < nr; ++q) {
        const double sd = noise_std(b, i0 + q);
        for (int kk = 0; kk < nk; ++kk) store(b, k0 + kk, i0 + q, rounded::mul_add(sd, z[q][kk], acc[q][kk]));
      }
      if (missing)
        for (int q = 0; q < nr; ++q)
          for (int kk = 0; kk < nk; ++kk) store_missing(b, k0 + kk, i0 + q, id);
    }
  }
};

// The truth's entries on the execution space, before the orthonormalization:
// Q (B x d_pad x k, rows past d zero) the Gaussian matrix, and the mean and
// noise std (B x >= d) of every stream (ids).
template <class ExecSpace>
void fill_truth_entries(
    const SyntheticSpec& spec,
    const Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, typename ExecSpace::memory_space>& ids,
    const Kokkos::View<double***, Kokkos::LayoutStride, typename ExecSpace::memory_space>& Q,
    const Kokkos::View<double**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& mean,
    const Kokkos::View<double**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& noise_std) {
  const int B = int(Q.extent(0)), d_pad = int(Q.extent(1)), k = int(Q.extent(2)), d = spec.d;
  // Row i of Q holds the entries i k .. i k + k - 1 of the flat Gaussian
  // sequence, four per Philox block, kc blocks per pass: a work item per
  // row (a block shared by two rows, when k is not a multiple of 4, is
  // drawn by both).
  constexpr int kc = Tuning<ExecSpace>::synthetic_basis_blocks_per_pass;
  Kokkos::parallel_for(
      "mosaic::synthetic_truth_normals", Kokkos::RangePolicy<ExecSpace>(0, B * d_pad), KOKKOS_LAMBDA(const int bi) {
        const int b = bi / d_pad, i = bi % d_pad;
        if (i >= d) {
          for (int j = 0; j < k; ++j) Q(b, i, j) = 0.0;
          return;
        }
        const std::int64_t e0 = std::int64_t(i) * k, e1 = e0 + k;
        for (std::int64_t g0 = e0 / 4; 4 * g0 < e1; g0 += kc) {
          double z[4][kc];
          synth_basis_tile<kc>(spec.seed, ids(b), std::uint64_t(g0), z);
          for (int kk = 0; kk < kc; ++kk)
            for (int q = 0; q < 4; ++q) {
              const std::int64_t e = 4 * (g0 + kk) + q;
              if (e >= e0 && e < e1) Q(b, i, int(e - e0)) = z[q][kk];
            }
        }
      });
  Kokkos::parallel_for(
      "mosaic::synthetic_truth_mean", Kokkos::RangePolicy<ExecSpace>(0, B * d), KOKKOS_LAMBDA(const int bi) {
        const int b = bi / d, i = bi % d;
        mean(b, i) = synthetic_mean(spec, ids(b), i);
        noise_std(b, i) = synthetic_noise_std(spec, ids(b), i);
      });
}

// Cholesky-QR passes of a stream stop once max |Q^T Q - I| <= this: far
// below what the accuracy against the truth resolves, and above the error a
// pass leaves on a well-conditioned Q, which grows about as sqrt(d) eps (test
// SyntheticSource.TruthMatchesTheHostTruth prints it: 1.7e-15 at d = 4500,
// 2r = 120, after one pass).
constexpr double truth_orthonormality_tolerance = 1e-13;
constexpr int truth_cholesky_qr_passes_max = 6;

// Orthonormalizes the columns of every stream's Q (B x d_pad x k, BasisLayout
// order within a stream, rows past d zero) in place: the Q factor of the QR
// decomposition with R's diagonal positive, as Gram-Schmidt's. Per stream
// Cholesky-QR passes, G = Q^T Q (gemm), G = L L^T (host::cholesky on the
// host: k x k), Q <- Q L^-T (trsm), until G (measured after each pass) is the
// identity to truth_orthonormality_tolerance. A G that does not factor (Q
// too ill-conditioned, which a Gaussian matrix with k <= d is only rarely)
// gets the shift of shifted Cholesky-QR (Fukaya, Kannan, Nakatsukasa,
// Yamamoto and Yanagisawa, SIAM J. Sci. Comput. 42 (2020)), 11 (d k +
// k (k + 1)) eps trace(G), and factors. Each stream's passes depend on its
// own Q only, so its truth does not depend on the batch. Returns the error
// max |Q^T Q - I| reached per stream, measured on the last G.
template <class ExecSpace>
std::vector<double> cholesky_qr_per_stream(
    const Kokkos::View<double***, Kokkos::LayoutStride, typename ExecSpace::memory_space>& Q, const int d,
    const std::vector<std::uint64_t>& ids) {
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<double**, Kokkos::LayoutLeft, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  constexpr bool column_major = BasisLayout<ExecSpace>::column_major;
  const int B = int(Q.extent(0)), rows = int(Q.extent(1)), k = int(Q.extent(2));
  const std::size_t per = Q.stride(0);
  double* const q0 = Q.data();
  // Stream b's Q as a LayoutLeft matrix: d_pad x k (column-major order), or
  // its transpose, k x d_pad (row-major order).
  auto stream_q = [=](const int b) {
    return column_major ? matrix(q0 + std::size_t(b) * per, rows, k) : matrix(q0 + std::size_t(b) * per, k, rows);
  };
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> G("mosaic::truth_gram", B, k, k),
      L("mosaic::truth_cholesky", B, k, k);
  const auto hG = transfer::host_buffer(G);
  const auto hL = transfer::host_buffer(L);
  // The streams a step works on, as a view the per-stream BLAS calls read.
  auto host_list = [](const std::vector<int>& streams) {
    Kokkos::View<int*, Kokkos::LayoutRight, Kokkos::HostSpace> list("mosaic::truth_streams", streams.size());
    for (std::size_t i = 0; i < streams.size(); ++i) list(i) = streams[i];
    return list;
  };
  // G_b = Q_b^T Q_b (strided_gemm.hpp), k x k: Q_b^T Q_b of the d_pad x k
  // column-major Q_b, or Q_b^T (Q_b^T)^T of the k x d_pad matrix Q_b^T.
  StridedGemm<double> gram_of;
  gram_of.transa = column_major ? 'T' : 'N';
  gram_of.transb = column_major ? 'N' : 'T';
  gram_of.m = gram_of.n = k;
  gram_of.k = rows;
  gram_of.a = gram_of.b = q0;
  gram_of.lda = gram_of.ldb = column_major ? rows : k;
  gram_of.stride_a = gram_of.stride_b = std::ptrdiff_t(per);
  gram_of.c = G.data();
  gram_of.ldc = k;
  gram_of.stride_c = std::ptrdiff_t(k) * k;
  gram_of.count = B;
  auto gram = [&](const std::vector<int>& streams) {
    const auto list = host_list(streams);
    for_each_stream_blas<ExecSpace>(int(streams.size()),
                                    [=](const int i) { strided_gemm<ExecSpace>(gram_of.problem(list(i))); });
    transfer::copy_to_host(hG, G);
  };
  std::vector<double> error(std::size_t(B), 0.0);
  std::vector<int> todo(static_cast<std::size_t>(B));
  for (int b = 0; b < B; ++b) todo[std::size_t(b)] = b;
  gram(todo);
  for (int pass = 0; !todo.empty(); ++pass) {
    std::vector<char> factor(std::size_t(B), 0);
    host_parallel_for("mosaic::truth_cholesky", int(todo.size()), [&](const int i) {
      const int b = todo[std::size_t(i)];
      std::vector<double> g(std::size_t(k) * k), l;
      double off = 0, trace = 0;
      for (int a = 0; a < k; ++a)
        for (int c = 0; c < k; ++c) {
          g[std::size_t(a) * k + c] = hG(b, a, c);
          off = std::max(off, std::fabs(hG(b, a, c) - (a == c ? 1.0 : 0.0)));
        }
      error[std::size_t(b)] = off;
      if (pass > 0 && off <= truth_orthonormality_tolerance) return;
      if (pass == truth_cholesky_qr_passes_max)
        throw std::runtime_error("synthetic source: the basis of stream " + std::to_string(ids[std::size_t(b)]) +
                                 " did not orthonormalize: max |Q^T Q - I| = " + std::to_string(off) + " after " +
                                 std::to_string(pass) + " Cholesky-QR passes");
      if (!host::cholesky(g, k, l)) {
        for (int a = 0; a < k; ++a) trace += g[std::size_t(a) * k + a];
        const double shift =
            11.0 * (double(d) * k + double(k) * (k + 1)) * std::numeric_limits<double>::epsilon() * trace;
        for (int a = 0; a < k; ++a) g[std::size_t(a) * k + a] += shift;
        if (!host::cholesky(g, k, l))
          throw std::runtime_error("synthetic source: the Gram matrix of stream " +
                                   std::to_string(ids[std::size_t(b)]) +
                                   "'s basis does not factor even shifted (non-finite or overflowing "
                                   "entries)");
      }
      // L row-major is L^T column-major: the upper factor the trsm reads.
      for (int a = 0; a < k; ++a)
        for (int c = 0; c < k; ++c) hL(b, a, c) = l[std::size_t(a) * k + c];
      factor[std::size_t(b)] = 1;
    });
    std::vector<int> next;
    for (const int b : todo)
      if (factor[std::size_t(b)]) next.push_back(b);
    if (next.empty()) break;
    transfer::copy_from_host(L, hL);
    const auto list = host_list(next);
    // Q <- Q L^-T: column-major, Q U^-1 with U = L^T; row-major, the
    // transpose L^-1 Q^T = U^-T Q^T.
    for_each_stream_blas<ExecSpace>(int(next.size()), [=](const int i) {
      const int b = list(i);
      const matrix u(L.data() + std::size_t(b) * k * k, k, k);
      KokkosBlas::trsm(column_major ? "R" : "L", "U", column_major ? "N" : "T", "N", 1.0, u, stream_q(b));
    });
    gram(next);
    todo = std::move(next);
  }
  return error;
}

}  // namespace detail
}  // namespace mosaic
