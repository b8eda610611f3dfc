// The synthetic drifting anisotropic stream of ALGORITHM.md section 5 for a
// whole batch, generated on the device, and the accuracy of a batch of states
// against its closed-form truth.
//
// Each stream's truth (V0, W0, mean, noise std) is built on the execution
// space (build_truth): its pointwise parts by synthetic.hpp's functions, the
// ones the host truth make_synthetic_truth calls, and [V0 W0] as the Q
// factor of the same Gaussian matrix by Cholesky-QR (gemm and trsm, the
// vendor library's), where the host truth uses modified Gram-Schmidt: the two
// agree to rounding (test SyntheticSource.TruthMatchesTheHostTruth), and
// truths_on_host() copies this one back. The device generator (SynthFunctor)
// computes each element with the operations of synthetic_element()
// (synthetic.hpp), the host generator synthetic_sample() it is tested
// against, in the same order, with cos/sin(omega t) evaluated on the host and
// passed in, so on a host backend generate() is bitwise equal to
// synthetic_sample() on truths_on_host() (a GPU compiler may fuse a multiply
// and an add into one rounding, so there the last bits can differ). Stream
// s's sample at step t depends only on (seed, s, t): not on the batch or
// block it sits in.
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

#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <KokkosBlas3_trsm.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/util/host_parallel.hpp"
#include "mosaic/algorithm/rounded.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/algorithm/synthetic.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"

namespace mosaic {

namespace detail {

// The drift-scaled latents (scaled_latents, synthetic.hpp) of samples
// first_step .. first_step + n - 1 of every stream: latent(b, 2j, k) = lc_j
// and latent(b, 2j + 1, k) = ls_j of sample k (B x 2r x n_pad, so that the
// generator's inner loop over samples is at unit stride); the padding
// columns n .. n_pad - 1 are zero.
template <class ExecSpace>
struct SynthLatentFunctor {
  using memory_space = typename ExecSpace::memory_space;
  SyntheticSpec spec;
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> sqrt_lambda;         // r
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> ids;          // B
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> cs;  // 2 x (>= n): cos, sin (omega step)
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;
  std::uint64_t first_step = 0;
  int n = 1, n_pad = 1;

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    const int k = item % n_pad, j = (item / n_pad) % spec.r, b = item / (n_pad * spec.r);
    double lc = 0, ls = 0;
    if (k < n)
      scaled_latents(sqrt_lambda(j), synthetic_latent(spec, ids(b), first_step + std::uint64_t(k), j), cs(0, k),
                     cs(1, k), lc, ls);
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

// Writes samples first_step .. first_step + n - 1 of every stream: Out is
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
  mat_view mean, noise_std;                                           // B x d
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;  // B x 2r x n_pad
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> ids;  // B
  OutView X;
  std::uint64_t first_step = 0;
  int n = 1, groups = 0;  // groups = ceil(d / 4)

  KOKKOS_INLINE_FUNCTION void store(int b, int k, int i, double v) const {
    if constexpr (OutView::rank == 2) {
      X(b, i) = Scalar(v);
      (void)k;
    } else {
      X(b, k, i) = Scalar(v);
    }
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
      synth_noise_tile<kc>(spec.seed, id, first_step + std::uint64_t(k0), std::uint64_t(g), z);
      const int nk = n - k0 < kc ? n - k0 : kc;
      for (int q = 0; q < nr; ++q) {
        const double sd = noise_std(b, i0 + q);
        for (int kk = 0; kk < nk; ++kk) store(b, k0 + kk, i0 + q, rounded::mul_add(sd, z[q][kk], acc[q][kk]));
      }
    }
  }
};

// The truth's entries on the execution space, before the orthonormalization:
// Q (B x d_pad x k, rows past d zero) the Gaussian matrix, and the mean and
// noise std (B x >= d) of every stream (ids).
template <class ExecSpace>
void fill_truth_entries(const SyntheticSpec& spec,
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
  auto gram = [&](const std::vector<int>& streams) {
    const auto list = host_list(streams);
    for_each_stream_blas<ExecSpace>(int(streams.size()), [=](const int i) {
      const int b = list(i);
      const matrix g(G.data() + std::size_t(b) * k * k, k, k);
      KokkosBlas::gemm(column_major ? "T" : "N", column_major ? "N" : "T", 1.0, stream_q(b), stream_q(b), 0.0, g);
    });
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

template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
class SyntheticDriftSource final : public StreamSource<Scalar, ExecSpace> {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  // Samples on every backend with one row of d contiguous per stream and
  // sample: the generator's stores and the blocked pack's reads run along
  // it (coalesced on a device), and a stream's rows are one span to copy.
  using sample_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>;      // B x d
  using out_block_view = Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space>;  // B x n x d
  using typename StreamSource<Scalar, ExecSpace>::init_view;
  using typename StreamSource<Scalar, ExecSpace>::block_view;

  SyntheticDriftSource(const SyntheticSpec& spec, std::vector<std::uint64_t> stream_ids)
      : spec_(spec), ids_(std::move(stream_ids)) {
    spec_.validate();
    if (ids_.empty()) throw std::invalid_argument("SyntheticDriftSource: no streams");
    build_truth();
    reserve_block(1);  // generate() allocates nothing
  }

  const SyntheticSpec& spec() const { return spec_; }
  int batch() const override { return int(ids_.size()); }
  std::string describe(int b) const override { return "stream " + std::to_string(ids_.at(std::size_t(b))); }
  const std::vector<std::uint64_t>& stream_ids() const { return ids_; }
  // max |[V0 W0]^T [V0 W0] - I| of each stream's truth, as its construction
  // measured it.
  const std::vector<double>& truth_orthonormality_error() const { return truth_orth_error_; }

  // Every stream's truth copied to the host (checks and tests; the run never
  // needs it there).
  std::vector<SyntheticTruth> truths_on_host() const {
    const int B = batch(), d = spec_.d, r = spec_.r;
    const auto hV = transfer::to_host(V0_);
    const auto hW = transfer::to_host(W0_);
    const auto hm = transfer::to_host(mean_);
    const auto hn = transfer::to_host(noise_std_);
    const auto hl = transfer::to_host(sqrt_lambda_);
    std::vector<SyntheticTruth> out(static_cast<std::size_t>(B));
    for (int b = 0; b < B; ++b) {
      SyntheticTruth& t = out[std::size_t(b)];
      t.d = d;
      t.r = r;
      t.V0.resize(std::size_t(d) * r);
      t.W0.resize(std::size_t(d) * r);
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < r; ++j) {
          t.V0[std::size_t(i) * r + j] = hV(b, i, j);
          t.W0[std::size_t(i) * r + j] = hW(b, i, j);
        }
      t.sqrt_lambda.assign(hl.data(), hl.data() + r);
      for (int i = 0; i < d; ++i) {
        t.mean.push_back(hm(b, i));
        t.noise_std.push_back(hn(b, i));
      }
      t.noise_variance = noise_variance_[std::size_t(b)];
    }
    return out;
  }

  // X(b, :) = x_step of stream b. No allocation (one 2-double host-to-device
  // copy of cos/sin(omega step)).
  void generate(std::int64_t step, sample_view X) const {
    check(X.extent(0), X.extent(1), "generate");
    launch(std::uint64_t(step), 1, X, "mosaic::synthetic_generate");
  }

  // X(b, k, :) = x_{first_step + k} of stream b, k < n. Work arrays grow
  // to the largest n asked for and are reused.
  void generate_block(std::int64_t first_step, int n, out_block_view X) const {
    if (n < 1 || int(X.extent(1)) != n)
      throw std::invalid_argument("SyntheticDriftSource::generate_block: X must be B x n x d with n = " +
                                  std::to_string(n));
    check(X.extent(0), X.extent(2), "generate_block");
    reserve_block(n);
    launch(std::uint64_t(first_step), n, X, "mosaic::synthetic_generate_block");
  }

  // StreamSource: the samples are a pure function of (seed, stream, row), so
  // the source has no position of its own.
  void read_init(int n, init_view X) override { generate_block(0, n, X); }
  block_view next_block(std::int64_t first, int max_n) override {
    if (int(block_.extent(1)) < max_n)
      block_ = out_block_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("synthetic::block")),
                              batch(), max_n, spec_.d);
    // A B x max_n x d view over the buffer's memory (LayoutRight: contiguous).
    const out_block_view X(block_.data(), batch(), max_n, spec_.d);
    generate_block(first, max_n, X);
    return X;
  }
  SourcePosition position_at(std::int64_t) const override { return {}; }
  void resume_at(std::int64_t, SourcePosition) override {}
  std::optional<SourceIoStats> io_report() override { return std::nullopt; }
  std::optional<TruthAccuracy> accuracy(const StreamBatch<Scalar, ExecSpace>& sb,
                                        std::int64_t step) const override {
    return truth_accuracy(sb, step);
  }

  // Accuracy of the batch's states against the truth at `step` (the step
  // index of the last sample consumed), on the execution space: P = U^T V(t)
  // by gemm over chunks of rows of U and of V(t) = cos(omega t) V0 +
  // sin(omega t) W0 in double (batch_diagnostics.hpp's basis_gram_rows), the
  // eigenvalues of S's symmetric part by QL per stream; the host gets P (B x
  // r x r) and the eigenvalues. A frozen (broken-down) stream is included
  // with its frozen state.
  TruthAccuracy truth_accuracy(const StreamBatch<Scalar, ExecSpace>& sb, std::int64_t step) const {
    if (sb.batch != batch() || sb.d != spec_.d)
      throw std::invalid_argument("SyntheticDriftSource::accuracy: batch has B=" +
                                  std::to_string(sb.batch) + ", d=" + std::to_string(sb.d) +
                                  ", source has B=" + std::to_string(batch()) +
                                  ", d=" + std::to_string(spec_.d));
    using work_view = Kokkos::View<double***, Kokkos::LayoutRight, memory_space>;
    const int B = batch(), d = spec_.d, rs = spec_.r, rt = sb.r, k = std::min(rs, rt);
    const int rows = std::min(d, detail::basis_gram_rows);
    const double c = std::cos(spec_.drift * double(step)), s = std::sin(spec_.drift * double(step));
    // Work arrays kept between calls (as the diagnostics' DiagnosticsWork).
    accuracy_work_.reserve(B, d, rt);
    if (int(truth_rows_.extent(1)) != rows || int(products_.extent(1)) != rt) {
      truth_rows_ = work_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::truth_rows")), B,
                              rows, rs);
      products_ =
          work_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::truth_products")), B, rt, rs);
      converged_ = Kokkos::View<int*, Kokkos::LayoutRight, memory_space>("mosaic::truth_eigen_converged", B);
    }
    const work_view W = accuracy_work_.basis_rows, Vt = truth_rows_, P = products_;
    const basis_view V0 = V0_, W0 = W0_;
    const std::ptrdiff_t js = std::ptrdiff_t(V0.stride(2));
    for (int i0 = 0; i0 < d; i0 += rows) {
      const int n = std::min(rows, d - i0);
      detail::widen_basis_rows<decltype(sb.U), ExecSpace>(sb.U, i0, n, W);
      Kokkos::parallel_for(
          "mosaic::truth_basis_at", Kokkos::RangePolicy<ExecSpace>(0, B * n), KOKKOS_LAMBDA(const int bi) {
            const int b = bi / n, i = bi % n;
            const double* v = &V0(b, i0 + i, 0);
            const double* w = &W0(b, i0 + i, 0);
            double* out = &Vt(b, i, 0);
            // Unit stride (the host layout) as its own loop, as in
            // widen_basis_rows.
            if (js == 1)
              for (int j = 0; j < rs; ++j) out[j] = c * v[j] + s * w[j];
            else
              for (int j = 0; j < rs; ++j) out[j] = c * v[j * js] + s * w[j * js];
          });
      detail::gemm_rows_per_stream<ExecSpace>(W, Vt, n, i0 == 0 ? 0.0 : 1.0, P);
    }
    const work_view A = accuracy_work_.eigen_work, eig = accuracy_work_.eigen;
    const Kokkos::View<int*, Kokkos::LayoutRight, memory_space> converged = converged_;
    const auto S = sb.S;
    Kokkos::parallel_for(
        "mosaic::truth_spectrum", Kokkos::RangePolicy<ExecSpace>(0, B), KOKKOS_LAMBDA(const int b) {
          converged(b) = detail::symmetric_part_eigenvalues(
                             Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL()),
                             Kokkos::subview(A, b, Kokkos::ALL(), Kokkos::ALL()), Kokkos::subview(eig, b, 0, Kokkos::ALL()),
                             Kokkos::subview(eig, b, 1, Kokkos::ALL()), rt)
                             ? 1
                             : 0;
        });
    const auto hP = transfer::to_host(P);
    const auto hEig = transfer::to_host(eig);
    const auto hConv = transfer::to_host(converged);
    const auto hs2 = transfer::to_host(sb.s2);
    std::vector<double> lambda(k);
    double lnorm = 0;
    for (int j = 0; j < k; ++j) {
      lambda[j] = spec_.lambda(j);
      lnorm += lambda[j] * lambda[j];
    }
    lnorm = std::sqrt(lnorm);
    TruthAccuracy acc;
    for (int b = 0; b < B; ++b) {
      double pf = 0;
      for (int a = 0; a < rt; ++a)
        for (int j = 0; j < rs; ++j) pf += hP(b, a, j) * hP(b, a, j);
      const double proj = 1.0 - pf / double(k);
      const double noise_variance = noise_variance_[std::size_t(b)];
      const double noise = std::fabs(double(hs2(b)) - noise_variance) / noise_variance;
      // A non-finite S (the QL iteration does not converge) has no spectrum.
      double spec_err = std::numeric_limits<double>::quiet_NaN();
      if (hConv(b)) {
        // eig(b, 0, :) ascending: the j-th largest is rt - 1 - j.
        double diff = 0;
        for (int j = 0; j < k; ++j) {
          const double deb = std::max(hEig(b, 0, rt - 1 - j) - double(hs2(b)), 0.0);
          diff += (deb - lambda[j]) * (deb - lambda[j]);
        }
        spec_err = std::sqrt(diff) / lnorm;
      }
      acc.add_stream(proj, noise, spec_err, B);
    }
    return acc;
  }

 private:
  using basis_view = Kokkos::View<double***, Kokkos::LayoutStride, memory_space>;
  using mat_view = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;

  // The truth on the execution space (file comment): Q = the Gaussian
  // matrix, rows padded to the generator's groups of 4 (zero past d), its
  // columns orthonormalized in place; V0 and W0 are its first and last r
  // columns.
  void build_truth() {
    const int B = batch(), d = spec_.d, r = spec_.r, k = 2 * r;
    const int d_pad = (d + 3) / 4 * 4;
    const basis_view Q(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("synthetic::V0_W0")),
                       BasisLayout<ExecSpace>::layout(B, d_pad, k));
    mean_ = mat_view("synthetic::mean", B, d_pad);
    noise_std_ = mat_view("synthetic::noise_std", B, d_pad);
    sqrt_lambda_ = decltype(sqrt_lambda_)("synthetic::sqrt_lambda", r);
    ids_d_ = decltype(ids_d_)("synthetic::ids", B);
    {
      const auto hl = transfer::host_buffer(sqrt_lambda_);
      const auto hi = transfer::host_buffer(ids_d_);
      for (int j = 0; j < r; ++j) hl(j) = std::sqrt(spec_.lambda(j));
      for (int b = 0; b < B; ++b) hi(b) = ids_[std::size_t(b)];
      transfer::copy_from_host(sqrt_lambda_, hl);
      transfer::copy_from_host(ids_d_, hi);
    }
    detail::fill_truth_entries<ExecSpace>(spec_, ids_d_, Q, mean_, noise_std_);
    truth_orth_error_ = detail::cholesky_qr_per_stream<ExecSpace>(Q, d, ids_);
    V0_ = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::pair<int, int>(0, r));
    W0_ = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::pair<int, int>(r, k));
    const auto hn = transfer::to_host(noise_std_);
    noise_variance_.resize(std::size_t(B));
    for (int b = 0; b < B; ++b) noise_variance_[std::size_t(b)] = synthetic_noise_variance(stream_block_data(hn, b), d);
  }

  // Samples per generator pass (its tile width): the latents are padded to a
  // multiple of it.
  static constexpr int samples_per_pass = Tuning<ExecSpace>::synthetic_samples_per_pass;
  static int padded(int n) { return (n + samples_per_pass - 1) / samples_per_pass * samples_per_pass; }

  // The cos/sin and latent work arrays of generate_block for n samples.
  void reserve_block(int n) const {
    if (int(csb_.extent(1)) >= n) return;
    csb_ = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>("synthetic::cs_block", 2, n);
    csb_host_ = transfer::host_buffer(csb_);
    latentb_ = Kokkos::View<double***, Kokkos::LayoutRight, memory_space>("synthetic::latent_block", batch(),
                                                                           2 * spec_.r, padded(n));
  }

  // Samples first_step .. first_step + n - 1 of every stream into X (n <= the
  // work arrays' capacity): cos/sin(omega t) evaluated on the host (see the
  // file comment), the drift-scaled latents, then the samples.
  template <class OutView>
  void launch(std::uint64_t first_step, int n, const OutView& X, const char* label) const {
    for (int k = 0; k < n; ++k) {
      const double a = spec_.drift * double(first_step + std::uint64_t(k));
      csb_host_(0, k) = std::cos(a);
      csb_host_(1, k) = std::sin(a);
    }
    transfer::copy_from_host(csb_, csb_host_);
    const int n_pad = padded(n);
    // A B x 2r x n_pad view over the work array's memory (LayoutRight).
    const Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent(latentb_.data(), batch(), 2 * spec_.r,
                                                                            n_pad);
    Kokkos::parallel_for("mosaic::synthetic_latent", Kokkos::RangePolicy<ExecSpace>(0, batch() * spec_.r * n_pad),
                         detail::SynthLatentFunctor<ExecSpace>{spec_, sqrt_lambda_, ids_d_, csb_, latent, first_step, n,
                                                               n_pad});
    const int groups = (spec_.d + 3) / 4;
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(0, batch() * groups),
                         detail::SynthFunctor<Scalar, ExecSpace, OutView>{spec_, V0_, W0_, mean_, noise_std_, latent,
                                                                          ids_d_, X, first_step, n, groups});
  }

  void check(std::size_t b, std::size_t d, const char* what) const {
    if (int(b) != batch() || int(d) != spec_.d)
      throw std::invalid_argument(std::string("SyntheticDriftSource::") + what + ": X is " +
                                  std::to_string(b) + " x .. x " + std::to_string(d) +
                                  ", expected B=" + std::to_string(batch()) +
                                  ", d=" + std::to_string(spec_.d));
  }

  SyntheticSpec spec_;
  std::vector<std::uint64_t> ids_;
  basis_view V0_, W0_;  // the first and last r columns of one B x d_pad x 2r array
  std::vector<double> noise_variance_;    // per stream: what s2 should estimate
  std::vector<double> truth_orth_error_;  // per stream: max |[V0 W0]^T [V0 W0] - I|
  mat_view mean_, noise_std_;
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> sqrt_lambda_;
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> ids_d_;
  // The work arrays of generate / generate_block (grown on demand) and
  // next_block's buffer.
  mutable Kokkos::View<double**, Kokkos::LayoutRight, memory_space> csb_;
  mutable transfer::HostCopy<Kokkos::View<double**, Kokkos::LayoutRight, memory_space>> csb_host_;
  mutable Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latentb_;
  out_block_view block_;
  // truth_accuracy's work arrays: the rows of U widened and their eigenvalue
  // work (the diagnostics' kind), the rows of V(t), U^T V(t).
  mutable DiagnosticsWork<ExecSpace> accuracy_work_;
  mutable Kokkos::View<double***, Kokkos::LayoutRight, memory_space> truth_rows_, products_;
  mutable Kokkos::View<int*, Kokkos::LayoutRight, memory_space> converged_;
};

}  // namespace mosaic
